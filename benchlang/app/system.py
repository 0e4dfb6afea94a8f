"""``benchlang system show | check | tune | clean`` and the check ``run`` performs first: the host
state of this machine or of a spec's hosts, compared with the spec's ``machine`` block, and
the knobs ``tune`` sets and restores (docs/machine.md). Returns values, never prints."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from benchlang import model
from benchlang.backends.base import FixedHosts, HostDown
from benchlang.backends.host_state import HostState, Write, apply_writes, probe, writes_for
from benchlang.errors import UserError
from benchlang.lang.machine_text import cpu_ranges, format_bytes
from benchlang.report.machine import FORCED, HOST_STATE

TUNE_DEFAULTS = {"governor": "performance", "turbo": "off", "aslr": "on"}
"""What ``tune`` without a spec sets, as pyperf's ``system tune`` does: the performance
governor, turbo off, full address-space randomisation (pyperf docs, "System")."""


@attrs.frozen
class Preflight:
    """The state of each host a run will use and the requirements they do not meet."""

    states: dict[str, HostState]
    unmet: tuple[str, ...]
    note: str | None = None


def _local() -> Any:
    from benchlang.backends.local import LocalBackend

    return LocalBackend()


def _hosts_backend(experiment: model.Experiment | None, spec: str | None) -> Any:
    if experiment is None:
        return _local()
    from benchlang.app.spec import open_backend

    return open_backend(experiment, spec or ".")


async def _probe_all(backend: Any) -> dict[str, HostState]:
    async def one(host: str) -> HostState:
        try:
            session = await backend.open(host)
        except (OSError, HostDown) as err:
            raise UserError(f"cannot read the state of host {host}: {err}") from None
        try:
            return await probe(session)
        finally:
            await session.close()

    hosts = tuple(backend.hosts())
    return dict(zip(hosts, await asyncio.gather(*(one(h) for h in hosts)), strict=True))


def read_states(experiment: model.Experiment | None = None, spec: str | None = None):
    """The state of this machine (no spec) or of each host of the spec's backend."""
    backend = _hosts_backend(experiment, spec)
    if not isinstance(backend, FixedHosts):
        raise UserError(
            f"hosts {backend.kind} are allocated at run time: there is no host to read yet",
            "run 'benchlang system show' on an allocated node, or let 'run' read it",
        )
    return asyncio.run(_probe_all(backend))


def unmet_requirements(
    states: Mapping[str, HostState], experiment: model.Experiment
) -> tuple[str, ...]:
    """One line per requirement of the machine block a host does not meet, and per limit it
    cannot apply (a CPU it lacks, no writable memory cgroup)."""
    lines = []
    for host, state in states.items():
        machine = experiment.machine
        if machine is None:
            continue
        where = f"{host}: " if len(states) > 1 else ""
        for knob, wanted in machine.require:
            have = state.value_of(knob)
            if have is None:
                lines.append(f"{where}{knob}: {wanted} required, not available on this host")
            elif have != wanted:
                lines.append(f"{where}{knob}: {wanted} required, the host has {have}")
        missing = sorted(set(machine.cpus) - set(state.online)) if state.online else []
        if missing:
            lines.append(
                f"{where}cpus: CPU {cpu_ranges(missing)} required, the host has CPUs "
                f"{cpu_ranges(state.online)}"
            )
        if machine.memory is not None and "memory" not in state.cgroup_writable:
            lines.append(
                f"{where}memory: a {format_bytes(machine.memory)} limit needs a writable memory "
                "cgroup, not available on this host"
            )
    return tuple(lines)


def preflight(experiment: model.Experiment, backend: Any, force: bool) -> Preflight | None:
    """The check ``run`` performs first, when the spec has a machine block: refuses (exit 2)
    on an unmet requirement unless ``force``; None without a machine block."""
    if experiment.machine is None:
        return None
    if not isinstance(backend, FixedHosts):
        note = (
            f"the machine block's requirements are not checked before hosts {experiment.hosts.kind} "
            "are allocated"
        )
        return Preflight({}, (), note)
    states = asyncio.run(_probe_all(backend))
    unmet = unmet_requirements(states, experiment)
    if unmet and not force:
        raise UserError(
            "the hosts do not meet the spec's machine block:\n  " + "\n  ".join(unmet),
            "prepare them (benchlang system tune SPEC, as root), or run anyway with --force "
            "(the record then says what was forced past)",
        )
    return Preflight(states, unmet)


def record_preflight(store: Any, plan_hash: str, checked: Preflight | None) -> None:
    """The probed states and what ``--force`` went past, as events of the run."""
    if checked is None:
        return
    for host, state in checked.states.items():
        store.record_event(plan_hash, HOST_STATE, json.dumps(state.to_dict()), host)
    if checked.unmet:
        store.record_event(plan_hash, FORCED, "forced past: " + "; ".join(checked.unmet))
    if checked.note:
        store.record_event(plan_hash, FORCED, checked.note)


def tune_file() -> Path:
    """Where ``tune`` keeps the values it replaced, for ``tune --reset``."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "benchlang" / "system-tune.json"


def _saved() -> dict[str, list[list[str]]]:
    try:
        return json.loads(tune_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def tune(
    experiment: model.Experiment | None = None, spec: str | None = None, reset: bool = False
) -> tuple[list[str], bool]:
    """Set the wanted state (the spec's requirements, else ``TUNE_DEFAULTS``) on each host,
    saving what was replaced; or restore it with ``reset``. (lines, all done)."""
    backend = _hosts_backend(experiment, spec)
    if not isinstance(backend, FixedHosts):
        raise UserError(f"hosts {backend.kind} are allocated at run time: nothing to tune")
    return asyncio.run(_tune(backend, experiment, reset))


def plan_tune(
    host: str,
    state: HostState,
    wanted: Mapping[str, str] | None,
    saved: list[list[str]],
    required: bool = True,
) -> tuple[list[Write], list[str], bool]:
    """What ``tune`` writes on one host (``wanted`` None: restore ``saved``), the lines to
    print for what it cannot do (root-only actions without root, knobs the host lacks), and
    whether everything asked can be done. A knob the host lacks fails only when ``required``
    (a spec's requirement); the defaults (no spec) set what exists."""
    if wanted is None:
        writes = [Write("restore", path, old) for path, old in saved]
        lines, done = ([] if writes else [f"{host}: nothing to restore"]), True
    else:
        writes, cannot = writes_for(state, wanted)
        lines, done = [f"{host}: {line}" for line in cannot], not (cannot and required)
        if not writes and not cannot:
            lines.append(f"{host}: nothing to change")
    if writes and not state.root:
        for w in writes:
            what = f"restoring {w.path}" if wanted is None else f"{w.knob} {w.value}"
            lines.append(f"{host}: {what}: needs root (it writes {w.path}); run as root")
        return [], lines, False
    return writes, lines, done


async def _tune(backend: Any, experiment: model.Experiment | None, reset: bool):
    saved = _saved()
    lines: list[str] = []
    done = True
    for host in backend.hosts():
        session = await backend.open(host)
        try:
            state = await probe(session)
            machine = experiment.machine if experiment else None
            wanted = None if reset else dict(machine.require) if machine else {}
            wanted = dict(TUNE_DEFAULTS) if experiment is None and not reset else wanted
            writes, cannot, able = plan_tune(
                host, state, wanted, saved.get(host, []), required=experiment is not None
            )
            lines += cannot
            done = done and able
            results = await apply_writes(session, writes) if writes else []
        finally:
            await session.close()
        kept = {p: old for p, old in saved.get(host, [])}
        for status, path, old, error in results:
            if status == "ok":
                lines.append(f"{host}: {'restored' if reset else 'set'} {path} (was {old})")
                if reset:
                    kept.pop(path, None)
                else:
                    kept.setdefault(path, old)
            else:
                done = False
                lines.append(f"{host}: cannot write {path}: {error.strip() or 'refused'}")
        saved[host] = [[p, old] for p, old in kept.items()]
    _save({h: v for h, v in saved.items() if v})
    return lines, done


def _save(saved: dict[str, Any]) -> None:
    path = tune_file()
    if not saved:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(saved, indent=1, sort_keys=True), encoding="utf-8")


def builds() -> dict[str, str]:
    """Which build of each C program of the package this installation uses, or why none (a
    compile that failed once is recorded and not retried: ``benchlang.native``), without
    compiling anything."""
    from benchlang import native

    cc, enabled = native.choice()
    return {p.name: native.status(p, cc, enabled) for p in native.PROGRAMS}


def clean() -> tuple[list[str], bool]:
    """``benchlang system clean``: remove the cgroups that runs killed with SIGKILL left behind,
    wherever they sat (every cgroup mount is searched); what to say, and whether all went."""
    from benchlang.backends.cgroups import removal_lines, remove_stale_everywhere

    removed, failed = remove_stale_everywhere()
    return removal_lines(removed, failed) or ["benchlang: no stale benchlang cgroups"], not failed
