"""Runner overhead: 1000 trials of `true` through `benchlang run` vs `hyperfine -N --runs 1000 true`,
and vs the floor of benchlang's guarantees.

Each round runs, one after the other: `benchlang run` of this checkout (and of the checkout
given as the argument, to compare two trees under the same load), the floor, and hyperfine;
ROUNDS rounds (the machine may be shared; medians of the rounds are reported), twice: on the
machine as found (its load average is printed), then with both cores kept busy by two
`yes > /dev/null` processes this script starts and kills.

The floor (``floor_time``) is what the guarantees cost with nothing else: a plain loop that
hands each `true` to the same launcher (the command measured alone, docs/measures.md) and
commits the same trial through the store's ``record_trial``, one transaction per trial, before
the next starts (docs/store.md).
So floor/hyperfine is what the guarantees themselves add to hyperfine's mean, and
benchlang/floor what the runner adds to them. Per trial, benchlang's time is:
  - in-run: (last trial's end - first trial's start) / 1000, from the store,
  - wall_time: the stored wall_time (the launcher's fork to wait4, what hyperfine times),
    its mean against hyperfine's mean and its median against hyperfine's median.
Targets (issue 53 item 4): in-run at most 1.5x hyperfine's mean, wall_time at most 1.1x
(benchmarks/bench_wall_time.py checks wall_time on commands of known duration too).
On a shared machine another job's stall lands in some trials: the medians of the time from
one trial's start to the next (benchlang's from the store, the floor's) against hyperfine's
median are printed too, as they are robust to those.

Where an in-run trial goes, from the same runs' stored times: the command's wall_time, the
rest of its `execute` (the request to the session's launcher, its report and output files),
and the time between one trial's end and the next one's start (the store's commit of the
trial and of its one-trial round, the executor's bookkeeping); the stored wall_time's mean and
median; the gaps between trials over STALL (the store folding rows into blocks or
checkpointing its log inside a commit, or another job). Then layer by layer in this process
(at other moments, so only roughly comparable; medians of one trial's start to the next): the
launcher's pool alone, the local session's ``run_blocking`` (no event loop), its ``execute`` on
an event loop, that with ``Store.record_trial`` of each trial and its round's row (the commit's
median in that cycle beside its mean alone in a tight loop), against the whole run's median.

    python benchmarks/bench_runner.py [OTHER_CHECKOUT]
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRIALS = 1000
ROUNDS = 5
TARGET = 1.5
WALL_TARGET = 1.1
STALL = 0.005
"""A gap between two trials longer than this (s) is a stall: the store folding rows into its
blocks or checkpointing its log inside a trial's commit, or another job."""
SPEC = f"""benchlang 1
experiment overhead {{
  benchmark t {{ run "true" }}
  design {{ runs {TRIALS} order fixed }}
}}
"""
MS = 1e3
REPO = Path(__file__).resolve().parents[1]
PYTHONPATH = os.environ.get("PYTHONPATH", "")
sys.path.insert(0, str(REPO))  # this checkout's benchlang, whatever is installed


def benchlang_round(workdir: Path, repo: Path = REPO) -> dict[str, float]:
    """One `benchlang run` of the spec by the checkout ``repo``: per-trial times."""
    store = workdir / "overhead.sqlite"
    for leftover in workdir.glob("overhead.sqlite*"):
        leftover.unlink()
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchlang",
            "run",
            "overhead.bench",
            "--store",
            str(store),
            "--quiet",
        ],
        cwd=workdir,
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), PYTHONPATH]))},
    )
    process = time.perf_counter() - t0
    db = sqlite3.connect(store)
    times = db.execute("SELECT started, ended FROM trials ORDER BY trial").fetchall()
    walls = [v for (v,) in db.execute("SELECT value FROM measures WHERE name = 'wall_time'")]
    db.close()
    assert len(times) == TRIALS, len(times)
    started, ended = zip(*times, strict=True)
    between = [b - a for a, b in zip(ended[:-1], started[1:], strict=True)]
    cycles = [b - a for a, b in itertools.pairwise(started)]
    stalls = [gap for gap in between if gap > STALL]
    return {
        "cycle": statistics.median(cycles),
        "process": process / TRIALS,
        "in_run": (ended[-1] - started[0]) / TRIALS,
        "spawn": statistics.fmean(walls),
        "spawn_median": statistics.median(walls),
        "execute": statistics.fmean(b - a for a, b in times),
        "between": statistics.fmean(between),
        "between_median": statistics.median(between),
        "stalls": len(stalls),
        "stall_share": sum(stalls) / TRIALS,
    }


def hyperfine_round(workdir: Path) -> dict[str, float]:
    """hyperfine's mean and median of `true` (s)."""
    export = workdir / "hyperfine.json"
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(TRIALS), "--export-json", str(export), "true"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    result = json.loads(export.read_text())["results"][0]
    return {"hyperfine": result["mean"], "hf_median": result["median"]}


def commit_time(workdir: Path) -> float:
    """Mean time of one Store.record_trial with its round's row in the same transaction, as
    the executor writes a `true` trial of a one-configuration plan (WAL checkpoints
    included)."""
    from benchlang.run.store import Store, TrialRecord
    from benchlang.run.store.writing import round_values

    rusage = {
        "wall_time": 5e-4,
        "user_time": 0.0,
        "sys_time": 4e-4,
        "cpu_time": 4e-4,
        "max_rss": 1e5,
        "minor_faults": 60.0,
        "major_faults": 0.0,
    }
    path = workdir / "commit.sqlite"
    for leftover in workdir.glob("commit.sqlite*"):
        leftover.unlink()
    with Store(path, create=True) as store:
        store.add_plan("sha256:x", "overhead", "sha256:s", 0, "{}")
        t0 = time.perf_counter()
        for t in range(TRIALS):
            store.record_trial(
                "sha256:x",
                TrialRecord(
                    trial=t,
                    series=0,
                    round=t,
                    position=0,
                    host="local",
                    configuration=0,
                    label="t",
                    benchmark="t",
                    levels={},
                    order_kind="fixed",
                    status="ok",
                    reason=None,
                    exit_status=0,
                    timed_out=False,
                    started=0.0,
                    ended=0.0,
                    attempts=1,
                    stdout_tail=b"",
                    stderr_tail=b"",
                    measures=rusage,
                    series_values={},
                ),
                None,
                round_values("sha256:x", t, "local", "fixed", [0], 0.0, 0.0, "none"),
            )
        return (time.perf_counter() - t0) / TRIALS


def floor_time(workdir: Path) -> dict[str, float]:
    """The floor of the guarantees, per trial: a plain loop that hands `true` to the same
    launcher (the session's cgroup, scratch directory and environment, as a local session
    starts it), blocks on its report, and commits the trial with its seven measures and its
    one-trial round through ``Store.record_trial`` (one ``BEGIN IMMEDIATE`` ... ``COMMIT`` on
    a store opened as benchlang opens it: WAL, synchronous=NORMAL, its checkpoint interval)
    before the next trial starts. The store's own statements, whatever its schema (the rows
    changed twice in a week), with its folding of rows into blocks. No executor, session,
    event loop or progress."""
    from benchlang.backends.launcher import TrialCgroup, launcher, scratch_dir
    from benchlang.backends.resident import (
        LauncherPool,
        encode_request,
        environment_block,
        parse_report,
        report_measures,
    )
    from benchlang.run.store import Store, TrialRecord
    from benchlang.run.store.writing import round_values

    path = workdir / "floor.sqlite"
    for leftover in workdir.glob("floor.sqlite*"):
        leftover.unlink()
    cgroup = TrialCgroup.create()
    scratch = scratch_dir()
    pool = LauncherPool(
        launcher().path, scratch, cgroup if isinstance(cgroup, TrialCgroup) else None
    )
    base = environment_block(dict(os.environ))
    try:
        with Store(path, create=True) as store:
            store.add_plan("sha256:x", "overhead", "sha256:s", 0, "{}")
            t0 = time.perf_counter()
            starts = []
            for t in range(TRIALS):
                starts.append(time.perf_counter())
                extra = {"BENCHLANG_TRIAL": str(t), "BENCHLANG_SEED": "1"}
                started = time.time()
                resident = pool.hand_over(
                    encode_request(["true"], base + environment_block(extra), None, None, "0")
                )
                fields = parse_report(resident.wait_report(None))
                pool.idle(resident)
                ended = time.time()
                store.record_trial(
                    "sha256:x",
                    TrialRecord(
                        *(t, 0, t, 0, "local", 0, "t", "t", {}, "fixed", "ok", None),
                        *(int(fields[0]), False, started, ended, 1, b"", b""),
                        *(report_measures(fields), {}),
                    ),
                    None,
                    round_values("sha256:x", t, "local", "fixed", [0], started, ended, "none"),
                )
            return {
                "floor": (time.perf_counter() - t0) / TRIALS,
                "floor_cycle": median_cycle(starts),
            }
    finally:
        pool.close()
        if isinstance(cgroup, TrialCgroup):
            cgroup.close()
        shutil.rmtree(scratch, ignore_errors=True)


def session_times(workdir: Path) -> dict[str, float]:
    """Medians of one trial's start to the next (robust to other jobs' stalls), each layer
    added in turn, with a trial's environment: the session's launcher driven through its pool
    alone (the request and the report), the local session's ``run_blocking`` (no event loop),
    its ``execute`` on an event loop, and that with ``Store.record_trial`` of each trial and its
    round's row (as the executor writes a trial of a one-configuration plan), whose own median
    in that cycle is ``commit_cycle``."""
    from benchlang.backends.base import Command
    from benchlang.backends.launcher import TrialCgroup, launcher, scratch_dir
    from benchlang.backends.local import LocalSession
    from benchlang.backends.resident import LauncherPool, encode_request, environment_block
    from benchlang.run.store import Store, TrialRecord
    from benchlang.run.store.writing import round_values

    env = {"BENCHLANG_TRIAL": "0", "BENCHLANG_SEED": "1"}
    command = Command("true", env)
    cgroup = TrialCgroup.create()
    scratch = scratch_dir()
    pool = LauncherPool(
        launcher().path, scratch, cgroup if isinstance(cgroup, TrialCgroup) else None
    )
    request = encode_request(["true"], environment_block({**os.environ, **env}), None, None, "0")
    starts = []
    try:
        for _ in range(TRIALS):
            starts.append(time.perf_counter())
            resident = pool.hand_over(request)
            resident.wait_report(None)
            pool.idle(resident)
    finally:
        pool.close()
        if isinstance(cgroup, TrialCgroup):
            cgroup.close()
        shutil.rmtree(scratch, ignore_errors=True)
    cycles = {"pool_cycle": median_cycle(starts)}

    async def measure() -> None:
        session = LocalSession()
        try:
            session.run_blocking(command)  # the launcher is started on the first trial
            starts = []
            for _ in range(TRIALS):
                starts.append(time.perf_counter())
                session.run_blocking(command)
            cycles["launcher"] = median_cycle(starts)
            starts = []
            for _ in range(TRIALS):
                starts.append(time.perf_counter())
                await session.execute(command)
            cycles["asyncio"] = median_cycle(starts)
            path = workdir / "layers.sqlite"
            for leftover in workdir.glob("layers.sqlite*"):
                leftover.unlink()
            starts, commits = [], []
            with Store(path, create=True) as store:
                store.add_plan("sha256:x", "overhead", "sha256:s", 0, "{}")
                for t in range(TRIALS):
                    starts.append(time.perf_counter())
                    done = await session.execute(command)
                    c0 = time.perf_counter()
                    store.record_trial(
                        "sha256:x",
                        TrialRecord(
                            *(t, 0, t, 0, "local", 0, "t", "t", {}, "fixed", "ok", None, 0),
                            *(False, done.started, done.ended, 1, b"", b"", done.rusage, {}),
                        ),
                        None,
                        round_values("sha256:x", t, "local", "fixed", [0], 0.0, 0.0, "none"),
                    )
                    commits.append(time.perf_counter() - c0)
            cycles["with_store"] = median_cycle(starts)
            cycles["commit_cycle"] = statistics.median(commits)
        finally:
            await session.close()

    asyncio.run(measure())
    return cycles


def median_cycle(starts: list[float]) -> float:
    """The median time from one trial's start to the next."""
    return statistics.median(b - a for a, b in itertools.pairwise(starts))


@contextlib.contextmanager
def cores_busy(n: int = 2):
    """``n`` processes of `yes > /dev/null` for the duration, killed (by their pid) after."""
    busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(n)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for process in busy:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait()


def measure(workdir: Path, label: str, other: Path | None) -> dict[str, float]:
    """ROUNDS alternating rounds of benchlang (and the ``other`` checkout's), the floor and
    hyperfine, then the layers; medians."""
    print(f"\n{label}: load average {os.getloadavg()[0]:.2f} at the start (2 cores)")
    print(
        f"{'round':>5}  {'hyperfine':>9}  {'floor':>6}  {'in-run':>6}"
        + (f"  {'other':>6}" if other else "")
        + f"  {'wall_time':>9}  {'floor/hf':>8}  {'in-run/floor':>12}  {'in-run/hf':>9}"
        + f"  {'wall/hf':>7}"
    )
    rows = []
    for r in range(ROUNDS):
        ours = benchlang_round(workdir)
        their_round = benchlang_round(workdir, other) if other else None
        theirs = their_round["in_run"] if their_round else None
        floors = floor_time(workdir)
        hfs = hyperfine_round(workdir)
        layers = session_times(workdir)
        row = {**ours, **layers, **hfs, **floors, "commit": commit_time(workdir)}
        hf, floor = hfs["hyperfine"], floors["floor"]
        if their_round is not None:
            row["other"] = their_round["in_run"]
            row["other_cycle"] = their_round["cycle"]
        rows.append(row)
        print(
            f"{r + 1:>5}  {hf * MS:9.3f}  {floor * MS:6.3f}  {ours['in_run'] * MS:6.3f}"
            + (f"  {theirs * MS:6.3f}" if other else "")
            + f"  {ours['spawn'] * MS:9.3f}  {floor / hf:8.2f}  {ours['in_run'] / floor:12.2f}"
            + f"  {ours['in_run'] / hf:9.2f}  {ours['spawn'] / hf:7.2f}"
        )
    med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
    for name, num, den in RATIOS:
        if num in med:
            med[name] = statistics.median(row[num] / row[den] for row in rows)
    med["load_end"] = os.getloadavg()[0]
    return med


RATIOS = (
    ("in_run_ratio", "in_run", "hyperfine"),
    ("wall_ratio", "spawn", "hyperfine"),
    ("wall_median_ratio", "spawn_median", "hf_median"),
    ("floor_ratio", "floor", "hyperfine"),
    ("over_floor", "in_run", "floor"),
    ("other_over_floor", "other", "floor"),
    ("other_ratio", "other", "hyperfine"),
    ("cycle_floor_ratio", "floor_cycle", "hf_median"),
    ("cycle_over_floor", "cycle", "floor_cycle"),
    ("cycle_ratio", "cycle", "hf_median"),
    ("other_cycle_ratio", "other_cycle", "hf_median"),
)


def verdict(ratio: float, target: float) -> str:
    return f"target <= {target:g}x: {'met' if ratio <= target else 'MISSED'}"


def main() -> None:
    if shutil.which("hyperfine") is None:
        sys.exit("hyperfine is not installed (Debian package hyperfine)")
    trees = [arg for arg in sys.argv[1:] if not arg.startswith("-")]  # chaos_runner's --quick
    other = Path(trees[0]).resolve() if trees else None
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        workdir = Path(tmp)
        (workdir / "overhead.bench").write_text(SPEC)
        print(f"{TRIALS} trials of `true`, {ROUNDS} alternating rounds (ms per trial)")
        if other:
            print(f"other: `benchlang run` of the checkout {other}, in the same rounds")
        results = {"as found": measure(workdir, "as found", other)}
        with cores_busy():
            results["both cores busy"] = measure(workdir, "both cores busy (2 x yes)", other)
    print(f"\nmedians of {ROUNDS} rounds, ms per trial (ratios: medians of the rounds' ratios)")
    print(
        f"{'machine':<16} {'load':>5} {'hyperfine':>9} {'floor':>6} {'in-run':>6}"
        + (f" {'other':>6}" if other else "")
        + f" {'floor/hf':>8} {'in-run/floor':>12} {'in-run/hf':>9}"
        + (f" {'other/floor':>11} {'other/hf':>8}" if other else "")
        + f" {'wall_time':>9} {'wall/hf':>7}"
    )
    for label, med in results.items():
        print(
            f"{label:<16} {med['load_end']:5.2f} {med['hyperfine'] * MS:9.3f}"
            f" {med['floor'] * MS:6.3f} {med['in_run'] * MS:6.3f}"
            + (f" {med['other'] * MS:6.3f}" if other else "")
            + f" {med['floor_ratio']:7.2f}x {med['over_floor']:11.2f}x {med['in_run_ratio']:8.2f}x"
            + (f" {med['other_over_floor']:10.2f}x {med['other_ratio']:7.2f}x" if other else "")
            + f" {med['spawn'] * MS:9.3f} {med['wall_ratio']:6.2f}x"
        )
    for label, med in results.items():
        print(f"\n{label}:")
        print(
            f"  in-run per trial / hyperfine: {med['in_run_ratio']:.2f}x"
            f" ({verdict(med['in_run_ratio'], TARGET)}); the floor of the guarantees / hyperfine:"
            f" {med['floor_ratio']:.2f}x; benchlang / the floor: {med['over_floor']:.2f}x"
        )
        print(
            "  medians, robust to another job's stalls: one trial to the next, benchlang"
            f" {med['cycle'] * MS:.3f} ms, the floor {med['floor_cycle'] * MS:.3f},"
            f" hyperfine's median {med['hf_median'] * MS:.3f}: floor/hyperfine"
            f" {med['cycle_floor_ratio']:.2f}x, benchlang/floor {med['cycle_over_floor']:.2f}x,"
            f" benchlang/hyperfine {med['cycle_ratio']:.2f}x"
            + (
                f"; other {med['other_cycle'] * MS:.3f} ms, other/hyperfine"
                f" {med['other_cycle_ratio']:.2f}x"
                if "other_cycle" in med
                else ""
            )
        )
        print(
            f"  stored wall_time / hyperfine: mean {med['wall_ratio']:.2f}x"
            f" ({verdict(med['wall_ratio'], WALL_TARGET)}), median {med['wall_median_ratio']:.2f}x"
            f" ({med['spawn_median'] * MS:.3f} vs {med['hf_median'] * MS:.3f} ms)"
        )
        print(
            f"  between trials: median {med['between_median'] * MS:.3f} ms; gaps over"
            f" {STALL * MS:g} ms (the store's folds and checkpoints, other jobs):"
            f" {med['stalls']:.0f} a run, {med['stall_share'] * MS:.3f} ms a trial on average"
        )
        print(
            "  where an in-run trial goes (the same runs, from the store's times):"
            f" the command's wall_time {med['spawn'] * MS:.3f} ms"
            f" + the launcher's request, report and files and the event loop"
            f" {(med['execute'] - med['spawn']) * MS:.3f}"
            f" + between trials (commit, executor, progress) {med['between'] * MS:.3f}"
        )
        print(
            "  layer by layer (other moments, this process; medians of one trial's start to the"
            f" next): the launcher's pool alone {med['pool_cycle'] * MS:.3f} ms"
            f" ({med['pool_cycle'] / med['hf_median']:.2f}x hyperfine's median), the session"
            f" without an event loop {med['launcher'] * MS:.3f}, through asyncio"
            f" {med['asyncio'] * MS:.3f}, with the store's record_trial"
            f" {med['with_store'] * MS:.3f} (the commit's median in that cycle"
            f" {med['commit_cycle'] * MS:.3f}, its mean alone in a loop"
            f" {med['commit'] * MS:.3f}); the whole run {med['cycle'] * MS:.3f}"
        )


if __name__ == "__main__":
    main()
