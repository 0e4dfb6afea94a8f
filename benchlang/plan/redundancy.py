"""DataMill's purposeful redundancy (de Oliveira et al., ICPE 2013, §4.2): every configuration
runs on several hosts with the same hardware levels, so that a host that fails loses no
configuration, and a result that differs between equal hosts shows (stats.equal_hosts).

Hosts are equal when they have the same level of every hardware factor (without hardware
factors, every eligible host is equal). The set cover (design.setcover) chooses among the
classes of equal hosts that have at least N members, and takes the first N hosts of each
chosen class, in the backend's order. Pure: the caller gives the hosts' levels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchlang.plan.plan import PlanError


def equal_classes(
    hosts: Sequence[str], levels: Mapping[str, tuple[Any, ...]], copies: int, names: Sequence[str]
) -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """The first ``copies`` hosts of every class of equal hosts that has that many, classes in
    the order of their first host; and why each host of a smaller class is left out."""
    classes: dict[tuple[Any, ...], list[str]] = {}
    for h in hosts:
        classes.setdefault(levels[h], []).append(h)
    kept: list[tuple[str, ...]] = []
    excluded: dict[str, str] = {}
    for key, members in classes.items():
        if len(members) >= copies:
            kept.append(tuple(members[:copies]))
            continue
        why = f"{_one_of(len(members), names, key)}; redundancy {copies} needs {copies} equal hosts"
        excluded.update(dict.fromkeys(members, why))
    return kept, excluded


def fixed_groups(hosts: Sequence[str], copies: int, kind: str) -> tuple[str, ...]:
    """The hosts of a redundant plan without an inventory (no hardware factor, no ``hosts
    where``): all hosts are equal, and the first ``copies`` run every configuration."""
    if len(hosts) < copies:
        raise PlanError(
            f"redundancy {copies} runs every configuration on {copies} equal hosts, and hosts "
            f"{kind} has {len(hosts)}",
            "hosts local { slots " + str(copies) + " }, more hosts, or a lower redundancy"
            if kind == "local"
            else "give the backend more hosts, or lower the redundancy",
        )
    return tuple(hosts[:copies])


def describe_levels(names: Sequence[str], levels: Sequence[Any]) -> str:
    """``cpu='EPYC', arch='x86_64'``: a host's hardware levels as ``plan`` shows them."""
    return ", ".join(f"{n}={v!r}" for n, v in zip(names, levels, strict=True))


def _one_of(n: int, names: Sequence[str], levels: Sequence[Any]) -> str:
    hosts = "host" if n == 1 else "hosts"
    which = f"{hosts} with {describe_levels(names, levels)}" if names else f"eligible {hosts}"
    return f"the only {which}" if n == 1 else f"one of only {n} {which}"
