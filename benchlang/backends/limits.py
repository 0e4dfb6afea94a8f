"""The machine block's per-trial limits as the backends apply them: a ``Command.limits``
turned into the trial's cgroups (cgroups.py), and what happened to the trial told as its
measures and its failure ("out of memory (limit 64 MiB)", "CPU time limit (30 s) exceeded").
Shared by the local backend and the agent's controller side (agent_protocol.py)."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import time
from collections.abc import Mapping
from typing import Any

from benchlang.backends.base import capabilities_of
from benchlang.backends.cgroups import LimitError, TrialLimits
from benchlang.errors import UserError
from benchlang.lang.machine_text import format_bytes
from benchlang.model import Machine

LIMIT_MEASURES = ("memory_peak", "throttled_periods", "throttled_time")
"""Built-in measures a trial with limits adds (docs/measures.md): its cgroup's memory peak
(KiB) and, under a CPU quota, how often and how long it was throttled."""
CPU_EXCEEDED = 2
"""The launcher's TIMED_OUT field when it killed the trial at its CPU-time limit."""


def limits_request(machine: Machine | None) -> dict[str, Any] | None:
    """The limits a trial's command runs under, as plain data (also the agent's request);
    None when the machine block sets none."""
    if machine is None or not machine.limits_trials:
        return None
    return {
        "cpus": list(machine.cpus),
        "memory": machine.memory,
        "cpu_time": machine.cpu_time,
        "cpu_quota": machine.cpu_quota,
    }


def trial_limits(request: Mapping[str, Any] | None) -> TrialLimits | str | None:
    """The trial's cgroups made (``TrialLimits``), the reason they cannot be, or None."""
    if not request:
        return None
    try:
        return TrialLimits(**request).create()
    except LimitError as err:
        return str(err)


def oom_text(memory: float | int | None) -> str:
    limit = f" (limit {format_bytes(int(memory))})" if memory else ""
    return f"out of memory{limit}"


def cpu_time_text(cpu_time: float) -> str:
    return f"CPU time limit ({cpu_time:g} s) exceeded"


def limit_failure(
    request: Mapping[str, Any], exit_status: int, cpu_killed: bool, oom_kills: int, used: Any
) -> str | None:
    """Why a trial with limits failed because of them: the OOM killer killed a process of it
    (the cgroup's ``oom_kill``), or its CPU time reached the limit (the watch's kill, or
    RLIMIT_CPU's SIGXCPU/SIGKILL); None otherwise."""
    if oom_kills:
        return oom_text(request.get("memory"))
    cpu_time = request.get("cpu_time")
    if cpu_time is None:
        return None
    backstop = exit_status in (-signal.SIGXCPU, -signal.SIGKILL) and (used or 0) >= cpu_time
    if cpu_killed or exit_status == -signal.SIGXCPU or backstop:
        return cpu_time_text(cpu_time)
    return None


def concluded(
    limits: TrialLimits, request: Mapping[str, Any], exit_status: int, cpu_killed: bool
) -> tuple[dict[str, float], dict[str, str], str | None]:
    """The trial's cgroups read and removed: (measures, unavailable, failure)."""
    measures, unavailable, oom_kills, used = limits.finish()
    failure = limit_failure(request, exit_status, cpu_killed, oom_kills, used)
    return measures, unavailable, failure


def _cpu_watch(limits: TrialLimits | None, left: float | None) -> tuple[float | None, bool]:
    """How long to wait next (the timeout left, or sooner to read the CPU time), and whether
    the CPU-time limit is already reached."""
    if limits is None or limits.cpu_time is None or limits.usage is None:
        return left, False
    if limits.exceeded():
        return 0.0, True
    check = limits.next_check()
    return (check if left is None else min(left, check)), False


def exits_within(pid: int, seconds: float | None, limits: TrialLimits | None) -> str:
    """Wait on a pidfd without reaping: "exited", "timeout" or "cpu" (the limit reached)."""
    deadline = None if seconds is None else time.monotonic() + seconds
    pidfd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            wait, over = _cpu_watch(limits, left)
            if over:
                return "cpu"
            if poller.poll(None if wait is None else wait * 1000.0):
                return "exited"
            if deadline is not None and time.monotonic() >= deadline:
                return "timeout"
    finally:
        os.close(pidfd)


async def wait_exit(pid: int, timeout: float | None, limits: TrialLimits | None) -> str:
    """``exits_within`` on the event loop (so it can be cancelled)."""
    loop = asyncio.get_running_loop()
    pidfd = os.pidfd_open(pid)
    done = loop.create_future()

    def ready() -> None:
        if not done.done():
            done.set_result(True)

    loop.add_reader(pidfd, ready)
    deadline = None if timeout is None else loop.time() + max(0.0, timeout)
    try:
        while True:
            left = None if deadline is None else max(0.0, deadline - loop.time())
            wait, over = _cpu_watch(limits, left)
            if over:
                return "cpu"
            try:
                await asyncio.wait_for(asyncio.shield(done), wait)
                return "exited"
            except TimeoutError:
                if deadline is not None and loop.time() >= deadline:
                    return "timeout"
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


def needed_capabilities(machine: Machine) -> set[str]:
    """The backend capabilities a machine block's limits need (docs/plugins.md): ``pin`` for
    ``cpus``, ``memory``, ``cpu_time`` for a CPU-time limit or a CPU quota."""
    needed = set()
    if machine.cpus:
        needed.add("pin")
    if machine.memory is not None:
        needed.add("memory")
    if machine.cpu_time is not None or machine.cpu_quota is not None:
        needed.add("cpu_time")
    return needed


def applicable_limits(machine: Machine | None, backend: Any) -> Machine | None:
    """The limits a trial's Command carries: None without any; a UserError (the run refuses)
    when the backend lacks a capability they need, never a trial run without its limit."""
    if machine is None or not machine.limits_trials:
        return None
    lacking = needed_capabilities(machine) - capabilities_of(backend)
    if lacking:
        raise UserError(
            f"hosts {getattr(backend, 'kind', '?')} cannot apply the machine block's limits: "
            f"it lacks the {', '.join(sorted(lacking))} capabilit"
            + ("ies" if len(lacking) > 1 else "y"),
            "remove those limits from the machine block, or run on a backend that states "
            "them (docs/machine.md)",
        )
    return machine


def size_allocation(backend: Any, experiment: Any) -> None:
    """Hand a backend that allocates its hosts each logical host's machine block before it
    acquires them (its optional ``size_allocation``, docs/plugins.md), so the allocation
    holds what the limits name (Slurm: ``--exclusive`` for named CPUs, ``--mem``)."""
    sizing = getattr(backend, "size_allocation", None)
    if sizing is not None and experiment.machine is not None:
        sizing({host: experiment.machine for host in backend.hosts()})
