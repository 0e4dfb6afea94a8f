"""Loading a spec: parse and check it once, against the installed backends; open its backend."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from benchlang import model
from benchlang.backends.registry import backend_kinds
from benchlang.errors import SettingError, UserError
from benchlang.lang.check import Compiled, check_file

if TYPE_CHECKING:
    from benchlang.backends.base import Backend


def compile_spec(path: str | Path) -> Compiled:
    """The compiled spec with its warnings; raises ``SpecError`` listing every error.

    The backend catalogue is handed to the checker (lang must not import backends), so a
    ``hosts`` block is checked against what is installed.
    """
    return check_file(path, backends=backend_kinds())


def open_backend(experiment: model.Experiment, spec_path: str | Path) -> Backend:
    """The experiment's backend, configured from its ``hosts`` settings (paths relative to
    the spec's directory)."""
    return open_backend_in(experiment, Path(spec_path).resolve().parent)


def open_backend_in(experiment: model.Experiment, spec_dir: Path) -> Backend:
    """The experiment's backend, its relative paths read from ``spec_dir``; no network and
    no allocation (``acquire`` does that)."""
    kind = experiment.hosts.kind
    cls = backend_kinds().get(kind)
    if cls is None:
        raise UserError(f"no backend named '{kind}' is installed", "see 'benchlang plugins'")
    settings = resolve_secrets(kind, experiment.hosts.settings, cls)
    try:
        return cls.from_settings(settings, spec_dir)
    except SettingError as err:
        raise UserError(f"hosts {kind}: {err.message}", err.hint) from None


def resolve_secrets(kind: str, settings: Mapping[str, Any], cls: Any) -> dict[str, Any]:
    """``key from env "NAME"`` settings read from the environment now: a ``Secret`` (masked
    in every repr) for the keys the backend marks secret, the plain text for the others."""
    from benchlang.backends.base import Secret

    secret = frozenset(getattr(cls, "secret_settings", ()))
    out = dict(settings)
    for key, value in settings.items():
        if not (isinstance(value, Mapping) and set(value) == {"env"}):
            continue
        name = value["env"]
        text = os.environ.get(name)
        if text is None:
            raise UserError(
                f"hosts {kind}: {key} is read from the environment variable {name}, which is not set",
                f"export {name}=... before running (the value is never stored)",
            )
        out[key] = Secret(name, text) if key in secret else text
    return out


def forget_secrets(experiment: model.Experiment) -> None:
    """Unset the environment variables the backend's secret settings were read from: trials
    inherit this process's environment, and a trial printing it would put the secret in the
    store. Called once the backend holds the values."""
    secret = frozenset(getattr(backend_kinds().get(experiment.hosts.kind), "secret_settings", ()))
    for key, value in experiment.hosts.settings.items():
        if key in secret and isinstance(value, Mapping) and set(value) == {"env"}:
            os.environ.pop(value["env"], None)


class Counts(NamedTuple):
    """What ``check`` says a plan holds; ``note`` when it could not count as ``plan`` does."""

    configurations: int
    trials: int
    note: str | None = None


def counts(experiment: model.Experiment, spec_path: str | Path | None = None) -> Counts:
    """Configurations and trials (warm-up included) of an experiment without building its
    plan, by :func:`benchlang.design.counting.plan_counts`, the arithmetic of ``plan``'s
    derived numbers. Given ``spec_path``, the hosts come from the backend, opened offline;
    hardware factors and ``hosts where`` read facts only where that needs no network or
    session (``hosts local``: this machine and its declared facts); elsewhere the counts are
    per host set, and ``note`` says so."""
    from benchlang.design.counting import plan_counts
    from benchlang.plan.configurations import configurations

    design = experiment.design
    configs = configurations(experiment)
    warm = {b.name: design.warmup if b.warmup is None else b.warmup for b in experiment.benchmarks}
    warmups = sum(warm[c.benchmark] for c in configs)
    n = len(configs)
    if design.redundancy > 1 and not experiment.needs_inventory:
        return Counts(*plan_counts(design, n, warmups, design.redundancy))
    if spec_path is None or not (warmups or experiment.needs_inventory):
        return Counts(*plan_counts(design, n, warmups))
    try:
        backend = open_backend(experiment, spec_path)
        hosts = tuple(backend.hosts())
    except UserError as err:
        return Counts(*plan_counts(design, n, warmups), f"counted on one host: {err.message}")
    if not experiment.needs_inventory:
        return Counts(*plan_counts(design, n, warmups, max(1, len(hosts))))
    if experiment.hosts.kind != "local":
        return Counts(
            *plan_counts(design, n, warmups),
            f"per host{' and its hardware levels' if experiment.hardware else ''}: the hosts "
            f"are chosen when planned ('benchlang plan' reads their facts from hosts "
            f"{experiment.hosts.kind})",
        )
    from benchlang.app.inventory import gather_inventory
    from benchlang.plan.inventory import select_hosts
    from benchlang.plan.plan import PlanError

    try:
        chosen = select_hosts(experiment, hosts, gather_inventory(backend))
    except PlanError as err:
        return Counts(*plan_counts(design, n, warmups), f"no plan: {err.message}")
    owners = None
    if experiment.hardware:
        owners = len(chosen.groups) if chosen.groups else len(chosen.hosts)
    return Counts(*plan_counts(design, n, warmups, len(chosen.hosts), owners))
