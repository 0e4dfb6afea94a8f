"""Consent before code: what a bundle proves about itself, and what it would run.

``check_plan`` compiles the bundled spec with the published seed on the published hosts
(without opening a backend: nothing is contacted, nothing runs) and compares the plan hash
with the manifest's and, when the reader has one from the paper, with ``--plan-hash``. The
manifest is self-attested, so the first comparison catches a careless edit, not an
attacker; the second, a signature (``app.publish.signing``) or the reader's reading of the commands
``preview`` lists are what stop a fully consistent tampered bundle (docs/replicate.md).

Both work :func:`~benchlang.lang.outside.confined_to` the bundle's directory: a file the
spec names outside it (``nodes from file "/etc/shadow"``) is not read before consent, never
shown, and listed in ``not_read`` for the user to approve.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path
from typing import Any

import attrs

from benchlang import jsonin, model
from benchlang.app.plan import plan_offline, resolve_span
from benchlang.app.publish.bundle import files_read
from benchlang.app.publish.bundle_archive import shown
from benchlang.app.spec import compile_spec, open_backend
from benchlang.errors import UserError
from benchlang.lang.outside import confined_to, is_outside
from benchlang.plan.plan import Plan
from benchlang.run.commands import commands_of
from benchlang.run.store.records import plan_text

MIN_PREFIX = 16
"""Hex digits a ``--plan-hash`` prefix must have (64 bits; a paper should print all 64)."""


@attrs.frozen
class Checked:
    experiment: model.Experiment
    plan: Plan
    not_read: tuple[str, ...] = ()
    """Files the spec names outside the bundle: not read (nor shown) before consent."""


@attrs.frozen
class Preview:
    plan_hash: str
    commands: tuple[tuple[str, str], ...]
    hosts: tuple[str, ...]
    hosts_kind: str
    trials: int
    estimate: str
    network: bool
    """Whether the hosts are reached over the network (not ``local``)."""
    not_read: tuple[str, ...] = ()
    """Files the spec names outside the bundle, not read: the run would read them."""
    backend_opened: bool = True
    """False when opening the backend needed a file outside the bundle (power actions of a
    provider are then listed as the commands they stand for)."""


def published_plan(path: Path) -> dict[str, Any]:
    """The bundle's plan.json, its fields checked for type (seed, hosts, inventory)."""
    try:
        document = jsonin.loads(path.read_bytes())
    except (OSError, ValueError, UnicodeError):
        raise UserError(f"{path} is not JSON: not a benchlang bundle") from None
    if not isinstance(document, dict):
        document = {}
    inventory = document.get("inventory")
    inventory_ok = inventory is None or (
        isinstance(inventory, dict)
        and _texts(inventory.get("hosts"))
        and isinstance(inventory.get("facts"), dict)
    )
    if type(document.get("seed")) is not int or not _texts(document.get("hosts", [])):
        inventory_ok = False
    if not inventory_ok:
        raise UserError(f"{path} lacks an integer seed or a list of hosts: not a benchlang bundle")
    return document


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _experiment(spec: Path, seed: int) -> model.Experiment:
    experiment = attrs.evolve(compile_spec(spec).experiment, seed=seed)
    if experiment.design.span == "auto":
        experiment = resolve_span(experiment)  # reads the profiles' data files; runs nothing
    return experiment


def outside_files(spec: Path, root: Path | None) -> tuple[str, ...]:
    """The files ``spec`` names (``... from file``) that lie outside ``root`` (absolute,
    ``..`` or a link out), as the spec resolves them; none without a root."""
    if root is None:
        return ()
    try:
        names = files_read(spec.read_text(encoding="utf-8"))
    except (OSError, UnicodeError):
        return ()
    paths = (str(spec.parent / name) for name in names)
    return tuple(shown(p, 200) for p in paths if is_outside(p, root))


def _confined(root: Path | None):
    return confined_to(root) if root is not None else contextlib.nullcontext([])


def check_plan(
    spec: Path, plan_json: Path, stated: str, expected: str | None, root: Path | None = None
) -> Checked:
    """The bundled spec compiled with the published seed on the published hosts; refused
    unless its plan hash is the manifest's (``stated``) and, given, the paper's. With
    ``root`` (the bundle's directory) no file outside it is read."""
    document = published_plan(plan_json)
    inventory = document.get("inventory")
    hosts = tuple(inventory["hosts"] if inventory else document.get("hosts", ()))
    if expected is not None:
        wanted = expected.strip().lower().removeprefix("sha256:")
        if not re.fullmatch(rf"[0-9a-f]{{{MIN_PREFIX},64}}", wanted):
            raise UserError(
                f"--plan-hash {shown(expected, 80)}: give the plan hash the paper publishes, "
                f"sha256: and at least {MIN_PREFIX} of its 64 hex digits"
            )
    facts = inventory and inventory.get("facts")
    with _confined(root) as refused:
        experiment = _experiment(spec, document["seed"])
        plan = plan_offline(experiment, spec, hosts, facts)
    not_read = tuple(dict.fromkeys([*outside_files(spec, root), *map(shown, refused)]))
    checked = Checked(experiment, plan, not_read)
    got = checked.plan.hash
    if got != stated:
        raise UserError(
            f"the bundled spec compiles to plan {got[:23]}, not the {stated[:23]} its manifest "
            "states: the spec, its files or the plan were changed; refused before running anything"
        )
    if expected is not None and not got.removeprefix("sha256:").startswith(wanted):
        raise UserError(
            f"the bundle's plan is {got[:23]}, not the {shown(expected, 30)} given with "
            "--plan-hash: refused before running anything"
        )
    if plan_json.read_bytes() != checked.plan.json_text().encode():
        raise UserError(f"{plan_json} is not the plan its spec compiles to: refused")
    return checked


def check_store(store: Path, plan: Plan) -> None:
    """Refuse a published store that SQLite finds corrupt or that does not hold ``plan``
    as compiled (the trials are then another plan's)."""
    expected = plan.json_text()
    try:
        connection = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            (verdict,) = connection.execute("PRAGMA integrity_check(1)").fetchone()
            row = connection.execute(
                "SELECT plan_json FROM plans WHERE plan_hash = ?", (plan.hash,)
            ).fetchone()
            stored = None if row is None else plan_text(row[0], len(expected.encode()) + 1)
        finally:
            connection.close()
    except (sqlite3.Error, UnicodeError, ValueError) as err:
        raise UserError(f"the bundle's store {store} cannot be read: {shown(err, 80)}") from None
    if verdict != "ok":
        raise UserError(f"the bundle's store {store} is corrupt: {shown(verdict, 80)}")
    if stored != expected:
        raise UserError(f"the bundle's store {store} does not hold the bundle's plan: refused")


def preview(
    spec: Path,
    published: Checked,
    store: Path,
    replaced_hosts: bool,
    root: Path | None = None,
    own_files: tuple[str, ...] = (),
) -> Preview:
    """What a rerun of ``spec`` would run: its commands, hosts, trials and a duration
    estimated from the published trials. With ``replaced_hosts`` the spec's own backend
    names its hosts (``hosts()`` reads settings only: nothing is contacted). With ``root``
    no file outside it is read: a backend that needs one is not opened (the published
    hosts stand); ``own_files``, named by the user's ``--hosts``, are not the stranger's."""
    checked = published
    backend = None
    with _confined(root) as refused:
        if replaced_hosts:
            experiment = _experiment(spec, published.experiment.seed)
        else:
            try:
                backend = open_backend(checked.experiment, spec)
            except UserError:
                if not refused:
                    raise
    if replaced_hosts:  # the hosts statement is the user's own (--hosts): its files are read
        backend = open_backend(experiment, spec)
        checked = Checked(experiment, plan_offline(experiment, spec, backend.hosts()))
    listed = published.not_read
    if replaced_hosts:
        own = {shown(str(spec.parent / name), 200) for name in own_files}
        listed = tuple(p for p in outside_files(spec, root) if p not in own)
    not_read = (*listed, *map(shown, refused))
    commands = tuple((what, shown(c, 10_000)) for what, c in commands_of(
        checked.experiment, checked.plan, backend
    ))  # fmt: skip
    kind = checked.experiment.hosts.kind
    return Preview(
        checked.plan.hash,
        commands,
        tuple(shown(h) for h in checked.plan.hosts),
        shown(kind),
        checked.plan.n_trials,
        _estimate(store, published.plan.hash, checked.plan.n_trials),
        kind != "local",
        tuple(dict.fromkeys(not_read)),
        backend is not None,
    )


def _estimate(store: Path, plan_hash: str, trials: int) -> str:
    """The published run's time, scaled to ``trials`` (a span spreads series over it)."""
    from benchlang.report.record import format_duration

    try:
        connection = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            n, first, last, inside = connection.execute(
                "SELECT COUNT(*), MIN(started), MAX(ended), SUM(ended - started) FROM trials "
                "WHERE plan_hash = ?",
                (plan_hash,),
            ).fetchone()
        finally:
            connection.close()
    except (sqlite3.Error, TypeError, ValueError):
        return "unknown (the published store cannot be read)"
    if not n or first is None or last is None or not isinstance(inside, (int, float)):
        return "unknown (no published trial times)"
    wall = max(float(last) - float(first), 0.0) * trials / n
    return (
        f"about {format_duration(round(wall, 1))} (the published run: {n} trials in "
        f"{format_duration(round(float(last) - float(first), 1))}, "
        f"{format_duration(round(float(inside), 1))} of them inside the trials)"
    )
