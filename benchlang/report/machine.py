"""The machine a run used, as the record, the methods paragraph, the bundle and ``replicate``
state it: the spec's ``machine`` block (the limits in the plan, the host state required) and
the host state the probe measured at the run's start, with what ``--force`` went past
(docs/machine.md). Only what was set or measured is said; a requirement a run was forced past
is named as such, never as a property of the host."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from benchlang import model
from benchlang.lang.machine_text import cpu_ranges, format_bytes

if TYPE_CHECKING:  # the backends' module only where a run recorded a host state (4-5 ms)
    from benchlang.backends.host_state import HostState

HOST_STATE = "host_state"
"""The store event kind holding one host's probed state (JSON) at the start of a run."""
FORCED = "forced"
"""The store event kind of what a run started with ``--force`` went past (or left unchecked)."""
COMPARED = ("governor", "turbo", "smt", "aslr", "swap", "isolated CPUs", "virtualization")
"""Host-state items ``replicate`` compares between the published run and the replication."""


def stored_machine(store: Any, plan_hash: str) -> tuple[dict[str, HostState], tuple[str, ...]]:
    """The host states a run recorded (the latest per host) and its forced/unchecked lines."""
    states: dict[str, HostState] = {}
    forced: list[str] = []
    for _at, host, kind, message in store.events(plan_hash):
        if kind == HOST_STATE and host is not None:
            from benchlang.backends.host_state import HostState

            states[host] = HostState.from_dict(json.loads(message))
        elif kind == FORCED and message not in forced:
            forced.append(message)
    return states, tuple(forced)


def limits_text(machine: model.Machine) -> str | None:
    """ "pinned to CPUs 2-3, memory limit 1 GiB, CPU-time limit 30 s"; None without a limit."""
    parts = []
    if machine.cpus:
        one = len(machine.cpus) == 1
        parts.append(f"pinned to CPU{'' if one else 's'} {cpu_ranges(machine.cpus)}")
    if machine.memory is not None:
        parts.append(f"memory limit {format_bytes(machine.memory)}")
    if machine.cpu_time is not None:
        parts.append(f"CPU-time limit {machine.cpu_time:g} s")
    if machine.cpu_quota is not None:
        parts.append(f"CPU bandwidth quota {machine.cpu_quota:g} CPUs (trials were throttled)")
    return ", ".join(parts) or None


def record_lines(
    experiment: model.Experiment,
    states: Mapping[str, HostState],
    forced: tuple[str, ...],
    facts: Mapping[str, Mapping[str, str]] | None = None,
) -> list[str]:
    """The record's lines: the block (limits, requirements), how each host enforced the
    limits (its ``limits_*`` facts), each host's measured state, and what was forced past."""
    machine = experiment.machine
    lines = []
    if machine is not None:
        required = ", ".join(f"{k} {v}" for k, v in machine.require)
        parts = [limits_text(machine), f"required {required}" if required else None]
        lines.append("machine: " + ("; ".join(p for p in parts if p) or "no limit, no requirement"))
    if machine is not None and machine.limits_trials:
        for host, f in sorted((facts or {}).items()):
            how = [f"{k[7:]}: {v}" for k, v in sorted(f.items()) if k.startswith("limits_")]
            if how:
                lines.append(f"limits on {host}: " + "; ".join(how))
    for host, state in sorted(states.items()):
        shown = dict(state.items())
        text = ", ".join(f"{k} {shown[k]}" for k in COMPARED)
        lines.append(f"host state of {host}: {text}")
    lines += list(forced)
    return lines


def record_json(
    experiment: model.Experiment, states: Mapping[str, HostState], forced: tuple[str, ...]
) -> dict[str, Any] | None:
    """The record's ``machine`` object; None when the spec has no machine block."""
    if experiment.machine is None and not states:
        return None

    def block(m: model.Machine | None) -> dict[str, Any] | None:
        if m is None:
            return None
        return {
            "cpus": list(m.cpus),
            "memory_bytes": m.memory,
            "cpu_time_s": m.cpu_time,
            "cpu_quota": m.cpu_quota,
            "require": dict(m.require),
        }

    return {
        "block": block(experiment.machine),
        "host_state": {h: s.to_dict() for h, s in sorted(states.items())},
        "forced": list(forced),
    }


def _swap(states: Mapping[str, HostState], facts: Mapping[str, Mapping[str, str]]) -> str:
    """What the memory limit did about swap, from the hosts' ``limits_memory`` facts (how
    the backend enforced it) and their measured swap; "" when neither says."""
    how = {str(f.get("limits_memory", "")) for f in facts.values()} - {""}
    if states and {s.swap_devices for s in states.values()} == {0}:
        return " (the host had no swap)"
    if how and all("swap capped" in h or "swap.max 0" in h for h in how):
        return " (swap capped at 0)"
    if any("swap not capped" in h for h in how):
        return " (swap not capped on every host: a trial may have swapped)"
    return ""


def methods_sentence(
    experiment: model.Experiment,
    states: Mapping[str, HostState],
    forced: tuple[str, ...],
    facts: Mapping[str, Mapping[str, str]] | None = None,
) -> str | None:
    """The limits of the block, how the hosts enforced them (their ``limits_*`` facts) and
    the measured state, as "Trials were pinned to CPUs 2-3 with a 1 GiB memory limit (swap
    capped at 0) and a 30 s CPU-time limit; turbo was off and the governor was performance."."""
    machine = experiment.machine
    if machine is None:
        return None
    limits = []
    if machine.memory is not None:
        limits.append(f"a {format_bytes(machine.memory)} memory limit" + _swap(states, facts or {}))
    if machine.cpu_time is not None:
        limits.append(f"a {machine.cpu_time:g} s CPU-time limit")
    if machine.cpu_quota is not None:
        limits.append(f"a bandwidth quota of {machine.cpu_quota:g} CPUs, which throttled them")
    if machine.cpus:
        one = len(machine.cpus) == 1
        head = f"Trials were pinned to CPU{'' if one else 's'} {cpu_ranges(machine.cpus)}"
        head += (" with " + " and ".join(limits)) if limits else ""
    elif limits:
        head = "Trials ran with " + " and ".join(limits)
    else:
        head = ""
    measured = []
    for knob, _wanted in machine.require:
        name = "the governor" if knob == "governor" else knob
        seen = {s.value_of(knob) for s in states.values()}
        if not states:
            measured.append(f"{name} was not measured")
        elif None in seen:
            measured.append(f"{name} was not available on the host")
        elif len(seen) == 1:
            measured.append(f"{name} was {seen.pop()}")
        else:
            measured.append(f"{name} differed between hosts ({', '.join(sorted(map(str, seen)))})")
    text = head + ("; " if head and measured else "") + ", ".join(measured)
    if forced:
        text += (" (" if text else "") + "; ".join(forced) + (")" if text else "")
    if not text:
        return None
    return text[0].upper() + text[1:] + "."


def state_differences(
    published: Mapping[str, HostState], here: Mapping[str, HostState]
) -> list[str]:
    """One line per host-state item whose values differ between the published run and the
    replication (over all hosts of each), named; a side without a measured state is said."""
    if bool(published) != bool(here):
        which = "the published run" if published else "this replication"
        return [f"host state: measured only in {which} (a spec without a machine block)"]

    def values(states: Mapping[str, HostState], key: str) -> set[str]:
        return {dict(s.items())[key] for s in states.values()}

    out = []
    for key in COMPARED:
        a, b = values(published, key), values(here, key)
        if a != b:
            out.append(f"{key}: {', '.join(sorted(a))} published, {', '.join(sorted(b))} here")
    return out
