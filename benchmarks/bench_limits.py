"""What the machine block's limits cost per trial: `true` run through a local session's
launcher (``run_blocking``, no event loop, no store) without limits, pinned, under a memory
limit, and under all three limits, TRIALS trials each, the configurations alternated in ROUNDS
rounds (the machine may be shared: the median of the rounds is reported): the time from one
trial to the next, and the stored ``wall_time`` (what is measured: the launcher starts its
clock once the child has its limits). Also the same without the C launcher (the
process-group fallback, whose ``wall_time`` includes the ``/bin/sh`` prologue), fewer trials.

A trial with limits makes and removes its cgroups (one per hierarchy a limit needs) and its
command joins them before exec; a trial without limits does none of it (docs/machine.md).

    python benchmarks/bench_limits.py
"""

from __future__ import annotations

import os
import statistics
import time

from benchlang.backends.base import Command
from benchlang.backends.local import LocalSession
from benchlang.model import Machine

TRIALS = 200
ROUNDS = 5
CONFIGS = {
    "no limits": None,
    "cpus [0]": Machine(cpus=(0,)),
    "memory 64MiB": Machine(memory=64 << 20),
    "cpus, memory, time 10s": Machine(cpus=(0,), memory=64 << 20, cpu_time=10.0),
}


def per_trial(session: LocalSession, limits: Machine | None, trials: int) -> tuple[float, float]:
    """Seconds per trial from one request to the next, and the median stored wall_time."""
    command = Command("true", limits=limits)
    walls = []
    t0 = time.perf_counter()
    for _ in range(trials):
        done = session.run_blocking(command)
        assert done.ok, done
        walls.append(done.wall_time)
    return (time.perf_counter() - t0) / trials, statistics.median(walls)


def table(native: str, trials: int) -> None:
    os.environ["BENCHLANG_NATIVE"] = native
    session = LocalSession()
    try:
        per_trial(session, None, 20)  # the launcher started, the layout read
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in CONFIGS}
        for _ in range(ROUNDS):
            for name, limits in CONFIGS.items():
                times[name].append(per_trial(session, limits, trials))
    finally:
        asyncio_free_close(session)
    path = "C launcher" if native == "1" else "process-group fallback"
    base = statistics.median(t for t, _ in times["no limits"])
    print(f"\n{path}: {trials} trials of `true` x {ROUNDS} rounds, median of the rounds")
    print(f"{'limits':<24} {'ms/trial':>9} {'vs none':>8} {'wall_time ms':>13}")
    for name, values in times.items():
        median = statistics.median(t for t, _ in values)
        wall = statistics.median(w for _, w in values)
        print(f"{name:<24} {median * 1e3:>9.3f} {median / base:>7.2f}x {wall * 1e3:>13.3f}")


def asyncio_free_close(session: LocalSession) -> None:
    import asyncio

    asyncio.run(session.close())


if __name__ == "__main__":
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    table("1", TRIALS)
    table("0", TRIALS // 4)
