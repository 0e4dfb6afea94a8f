"""The host inventory: which hosts pass ``hosts where``, what level each has of every hardware
factor, and which of them an experiment uses (DataMill, de Oliveira et al. ICPE 2013, §4.1).

An inventory maps each host of the backend (in the backend's order) to its facts, as
``HostSession.facts`` reports them (docs/hardware-factors.md). Pure: the facts are gathered by
the caller (app.inventory) and recorded in the plan, so the same spec, seed and facts give the
same plan.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs

from benchlang import model
from benchlang.design.setcover import minimum_cover
from benchlang.entrypoints import entry_points_of
from benchlang.plan.configurations import covered_levels
from benchlang.plan.plan import PlanError
from benchlang.plan.redundancy import equal_classes

Inventory = Mapping[str, Mapping[str, str]]

_UNITS = {**model.QUANTITY_UNITS, "kB": (1024.0, "bytes")}  # /proc/meminfo's kB are KiB (proc(5))
_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*$")


def quantity(number: float, unit: str) -> tuple[float, str] | None:
    """(value in base units, dimension) of ``number unit``; None for an unknown unit."""
    scale = _UNITS.get(unit)
    return None if scale is None else (number * scale[0], scale[1])


def parse_quantity(text: str) -> tuple[float, str] | None:
    """A fact such as ``16384 kB`` or ``2400 MHz`` in base units, or None."""
    match = _QUANTITY.match(text)
    return quantity(float(match.group(1)), match.group(2)) if match else None


class HostFacts:
    """The built-in factor provider (``factor cpu from hosts "cpu_model"``): a host's level is
    its fact ``key`` as the backend reported it (whole numbers as integers)."""

    name: ClassVar[str] = "hosts"

    def check_key(self, key: str) -> str | None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
            return f"'{key}' is not a fact name (letters, digits, '_', '.', '-')"
        return None

    def level(self, facts: Mapping[str, str], key: str) -> Any:
        value = facts.get(key)
        if value is None:
            return None
        text = str(value).strip()
        return int(text) if text.isdigit() else text


@functools.cache
def factor_providers() -> dict[str, Any]:
    """The ``benchlang.factors`` entry points by name (loaded on first use)."""
    return {ep.name: ep for ep in entry_points_of("benchlang.factors")}


def provider(name: str) -> Any:
    """An instance of the named factor provider; PlanError if it is not installed."""
    point = factor_providers().get(name)
    if point is None:
        raise PlanError(
            f"no factor provider named '{name}' is installed", "see 'benchlang plugins'"
        )
    return point.load()()


def passes(facts: Mapping[str, str], condition: model.HostCondition) -> str | None:
    """None when the host passes ``condition``, else why not (shown by ``plan``)."""
    raw = facts.get(condition.fact)
    if raw is None:
        return f"has no fact '{condition.fact}'"
    text = str(raw).strip()
    options = condition.value if condition.op == "in" else (condition.value,)
    results = []
    for wanted in options:
        if isinstance(wanted, tuple):  # a quantity
            have = parse_quantity(text)
            if have is None or have[1] != wanted[1]:
                return f"{condition.fact} is '{text}', not in {wanted[1]} ({condition.text})"
            results.append(_compare(have[0], condition.op, wanted[0]))
        elif isinstance(wanted, int | float):
            try:
                have_number = float(text)
            except ValueError:
                return f"{condition.fact} is '{text}', not a number ({condition.text})"
            results.append(_compare(have_number, condition.op, float(wanted)))
        else:
            results.append(_compare(text, condition.op, str(wanted)))
    return None if any(results) else f"{condition.fact} is '{text}', fails {condition.text}"


def _compare(have: Any, op: str, wanted: Any) -> bool:
    return {
        ">=": have >= wanted,
        "<=": have <= wanted,
        ">": have > wanted,
        "<": have < wanted,
        "==": have == wanted,
        "in": have == wanted,
        "!=": have != wanted,
    }[op]


@attrs.frozen
class Selection:
    """The hosts an experiment uses, each host's hardware levels, and why (``plan``)."""

    hosts: tuple[str, ...]
    levels: dict[str, tuple[Any, ...]]
    """Each chosen host's level of every hardware factor, in declared order."""
    required: dict[str, tuple[Any, ...]]
    excluded: dict[str, str]
    reason: str
    facts: dict[str, dict[str, str]]
    """The facts the selection read, per host of the inventory (recorded in the plan)."""
    groups: tuple[tuple[str, ...], ...] | None = None
    """With ``design { redundancy N }``: the chosen hosts as groups of N equal hosts."""


def select_hosts(
    experiment: model.Experiment, hosts: Sequence[str], inventory: Inventory
) -> Selection:
    """Filter the hosts by ``hosts where``, read each one's hardware levels, and choose the
    minimum set cover of the required levels (design.setcover); PlanError when none fits."""
    used_keys = [c.fact for c in experiment.host_where] + [f.key for f in experiment.hardware]
    facts = {
        h: {k: str(inventory[h][k]) for k in dict.fromkeys(used_keys) if k in inventory.get(h, {})}
        for h in hosts
    }
    excluded: dict[str, str] = {}
    levels: dict[str, tuple[Any, ...]] = {}
    providers = {f.name: provider(f.provider) for f in experiment.hardware}
    for h in hosts:
        if h not in inventory:
            excluded[h] = "no facts"
            continue
        why = next(
            (w for c in experiment.host_where if (w := passes(inventory[h], c)) is not None), None
        )
        if why is None:
            mine = tuple(providers[f.name].level(inventory[h], f.key) for f in experiment.hardware)
            missing = [f.key for f, v in zip(experiment.hardware, mine, strict=True) if v is None]
            why = f"has no fact '{missing[0]}'" if missing else None
            levels[h] = mine
        if why is not None:
            excluded[h] = why
            levels.pop(h, None)
    eligible = [h for h in hosts if h in levels]
    if not eligible:
        shown = "; ".join(f"{h}: {w}" for h, w in excluded.items())
        raise PlanError(
            f"no host passes 'hosts where' ({shown})",
            "loosen the conditions, or add hosts whose facts pass them",
        )
    copies = experiment.design.redundancy
    names = [f.name for f in experiment.hardware]
    if copies > 1:
        units, too_few = equal_classes(eligible, levels, copies, names)
        if not units:
            raise PlanError(
                f"no {copies} eligible hosts have the same hardware levels (redundancy {copies}): "
                + "; ".join(f"{h}: {w}" for h, w in too_few.items()),
                "add equal hosts, or lower the redundancy",
            )
        excluded.update(too_few)
        eligible = [h for h in eligible if h not in too_few]
    else:
        units = [(h,) for h in eligible]
    if not experiment.hardware:
        picked = tuple(h for u in units[:1] for h in u) if copies > 1 else tuple(eligible)
        reason = f"{len(eligible)} of {len(hosts)} hosts pass 'hosts where'"
        if copies > 1:
            reason += f"; redundancy {copies}: the first {copies} ({', '.join(picked)})"
        groups: tuple[tuple[str, ...], ...] | None = (picked,) if copies > 1 else None
        return Selection(
            picked, levels, {}, excluded, _with_excluded(reason, excluded), facts, groups
        )
    required: dict[str, tuple[Any, ...]] = {}
    ids: dict[tuple[str, Any], int] = {}
    for j, f in enumerate(experiment.hardware):
        present = tuple(sorted({levels[h][j] for h in eligible}, key=lambda v: (str(type(v)), v)))
        kept = covered_levels(
            model.Factor(f.name, present, f.coverage), j, experiment.seed, "hardware"
        )
        required[f.name] = kept
        for level in kept:
            ids[(f.name, level)] = len(ids)
    covers = [
        frozenset(
            ids[(f.name, levels[u[0]][j])]
            for j, f in enumerate(experiment.hardware)
            if (f.name, levels[u[0]][j]) in ids
        )
        for u in units
    ]
    chosen = minimum_cover(covers, frozenset(ids.values()))
    if chosen is None:  # cannot happen: every required level is some eligible host's
        raise PlanError("no set of hosts covers the required hardware levels")
    picked_units = [units[i] for i in chosen]
    order = {h: i for i, h in enumerate(hosts)}
    picked = tuple(sorted((h for u in picked_units for h in u), key=order.__getitem__))
    why_each = "; ".join(
        f"{', '.join(u)} for "
        + ", ".join(
            f"{f.name}={levels[u[0]][j]!r}"
            for j, f in enumerate(experiment.hardware)
            if levels[u[0]][j] in required[f.name]
        )
        for u in picked_units
    )
    wanted = ", ".join(f"{name} {list(kept)}" for name, kept in required.items())
    what = "eligible hosts" if copies == 1 else f"eligible hosts in groups of {copies} equal hosts"
    reason = (
        f"{len(picked)} of {len(eligible)} {what}: the minimum set cover of {wanted} "
        f"(DataMill §4.1, Eq. 1a-1f; scipy.optimize.milp, first hosts among equal covers): {why_each}"
    )
    groups = tuple(picked_units) if copies > 1 else None
    return Selection(
        picked, levels, required, excluded, _with_excluded(reason, excluded), facts, groups
    )


def _with_excluded(reason: str, excluded: Mapping[str, str]) -> str:
    if not excluded:
        return reason
    return reason + "; excluded " + "; ".join(f"{h} ({w})" for h, w in excluded.items())
