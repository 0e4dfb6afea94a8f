"""The executor's own CPU time per trial, apart from the launcher and the store.

`benchlang run` of a plan of `true` trials, in this process, with the local session's
``execute`` answering at once (the Execution a trial of `true` gets, no process started), once
with the store's ``record_trial`` doing nothing and once with the real store: the CPU time of
this process per trial, as (CPU of N2 trials - CPU of N1) / (N2 - N1) so that start-up and the
analysis after the run cancel out; medians of REPS pairs. The first is what the executor itself
costs a trial (rounds, the trial's command and record, hooks and halting checks, progress);
the second adds the store's commit of every trial (docs/measures.md#cost).

    python benchmarks/bench_executor_cpu.py
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's benchlang, whatever is installed

N1, N2 = 500, 4500
REPS = 5
RUSAGE = {
    "wall_time": 5e-4,
    "user_time": 0.0,
    "sys_time": 4e-4,
    "cpu_time": 4e-4,
    "max_rss": 1e3,
    "minor_faults": 60.0,
    "major_faults": 0.0,
}


def cpu_of_run(workdir: Path, trials: int) -> float:
    """CPU seconds of this process for one `benchlang run` of ``trials`` trials of `true`."""
    from benchlang.cli import main

    spec = workdir / f"cpu{trials}.bench"
    spec.write_text(
        'benchlang 1\nexperiment overhead {\n  benchmark t { run "true" }\n'
        f"  design {{ runs {trials} order fixed }}\n}}\n"
    )
    for leftover in workdir.glob(f"cpu{trials}.sqlite*"):
        leftover.unlink()
    before = resource.getrusage(resource.RUSAGE_SELF)
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with quiet[0], quiet[1], contextlib.suppress(SystemExit):
        main(["run", str(spec), "--store", str(workdir / f"cpu{trials}.sqlite"), "--quiet"])
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def per_trial(workdir: Path) -> float:
    runs = [(cpu_of_run(workdir, N2) - cpu_of_run(workdir, N1)) / (N2 - N1) for _ in range(REPS)]
    return statistics.median(runs)


def main() -> None:
    from benchlang.backends import local
    from benchlang.backends.base import Command, Execution
    from benchlang.run.store.writing import StoreWriting

    async def at_once(self: local.LocalSession, command: Command) -> Execution:
        now = time.time()
        return Execution(0, False, now, now, RUSAGE["wall_time"], b"", b"", dict(RUSAGE))

    local.LocalSession.execute = at_once  # type: ignore[method-assign]
    record_trial = StoreWriting.record_trial
    with tempfile.TemporaryDirectory(prefix="bench-executor-") as tmp:
        workdir = Path(tmp)
        cpu_of_run(workdir, 100)  # imports
        StoreWriting.record_trial = lambda *_args, **_kw: None  # type: ignore[method-assign]
        alone = per_trial(workdir)
        StoreWriting.record_trial = record_trial  # type: ignore[method-assign]
        stored = per_trial(workdir)
    print(f"load average {os.getloadavg()[0]:.2f}; CPU µs a trial, medians of {REPS} pairs")
    print(f"  the executor alone (execute at once, record_trial doing nothing): {alone * 1e6:.1f}")
    print(f"  with the store's record_trial: {stored * 1e6:.1f}")
    print(f"  so the store's commit of a trial: {(stored - alone) * 1e6:.1f}")


if __name__ == "__main__":
    main()
