"""Runner overhead: 1000 trials of `true` through `benchlang run` vs `hyperfine -N --runs 1000 true`.

Both run side by side, alternating, ROUNDS times (the machine may be shared; the median of
the rounds is reported). Per trial, benchlang's time is shown three ways:
  - process: the whole `benchlang run` wall time / 1000 (includes interpreter start-up),
  - in-run: (last trial's end - first trial's start) / 1000, from the store,
  - spawn: the mean stored wall_time (the launcher's fork to wait4, what hyperfine also times),
each divided by hyperfine's mean. Targets ("A runner that never lies"): in-run at most 1.3x
hyperfine's mean, the stored wall_time at most 1.2x.
The in-run time is split into spawn, store commit (timed on its own: 1000 record_trial
calls into a fresh store) and the rest (handing the trial to the session's launcher and
reading its report, the trial's files, the event loop, executor bookkeeping, progress).
The floor is spawn + commit: a trial must be measured and committed before the next starts.

    python benchmarks/bench_runner.py
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRIALS = 1000
ROUNDS = 3
TARGET = 1.3
WALL_TARGET = 1.2
SPEC = f"""benchlang 1
experiment overhead {{
  benchmark t {{ run "true" }}
  design {{ runs {TRIALS} order fixed }}
}}
"""


def benchlang_round(workdir: Path) -> dict[str, float]:
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
    )
    process = time.perf_counter() - t0
    db = sqlite3.connect(store)
    first, last, n = db.execute("SELECT min(started), max(ended), count(*) FROM trials").fetchone()
    (spawn,) = db.execute("SELECT avg(value) FROM measures WHERE name = 'wall_time'").fetchone()
    db.close()
    assert n == TRIALS, n
    return {"process": process / TRIALS, "in_run": (last - first) / TRIALS, "spawn": spawn}


def hyperfine_round(workdir: Path) -> float:
    export = workdir / "hyperfine.json"
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(TRIALS), "--export-json", str(export), "true"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return json.loads(export.read_text())["results"][0]["mean"]


def commit_time(workdir: Path) -> float:
    """Mean time of one Store.record_trial, as the executor calls it for a `true` trial."""
    from benchlang.run.store import Store, TrialRecord

    rusage = {
        "wall_time": 5e-4,
        "user_time": 0.0,
        "sys_time": 4e-4,
        "cpu_time": 4e-4,
        "max_rss": 1e5,
        "minor_faults": 60.0,
        "major_faults": 0.0,
    }
    with Store(workdir / "commit.sqlite", create=True) as store:
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
            )
        return (time.perf_counter() - t0) / TRIALS


def main() -> None:
    if shutil.which("hyperfine") is None:
        sys.exit("hyperfine is not installed (Debian package hyperfine)")
    ms = 1e3
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        workdir = Path(tmp)
        (workdir / "overhead.bench").write_text(SPEC)
        rows = []
        print(f"{TRIALS} trials of `true`, {ROUNDS} alternating rounds (ms per trial)")
        print(
            f"{'round':>5}  {'hyperfine':>9}  {'process':>8}  {'in-run':>8}  {'spawn':>8}  {'in-run/hf':>9}"
        )
        for r in range(ROUNDS):
            ours = benchlang_round(workdir)
            hf = hyperfine_round(workdir)
            rows.append({**ours, "hyperfine": hf})
            print(
                f"{r + 1:>5}  {hf * ms:9.3f}  {ours['process'] * ms:8.3f}  {ours['in_run'] * ms:8.3f}  {ours['spawn'] * ms:8.3f}  {ours['in_run'] / hf:9.2f}"
            )
        commit = commit_time(workdir)
    med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
    ratio = statistics.median(row["in_run"] / row["hyperfine"] for row in rows)
    print()
    print(f"hyperfine -N mean:                 {med['hyperfine'] * ms:.3f} ms  (baseline)")
    print(
        f"benchlang, whole process / {TRIALS}: {med['process'] * ms:.3f} ms  ratio {statistics.median(r['process'] / r['hyperfine'] for r in rows):.2f}x  (includes start-up, amortised)"
    )
    print(
        f"benchlang, in-run per trial:       {med['in_run'] * ms:.3f} ms  ratio {ratio:.2f}x  (target <= {TARGET:g}x: {'ok' if ratio <= TARGET else 'MISSED'})"
    )
    wall_ratio = statistics.median(r["spawn"] / r["hyperfine"] for r in rows)
    print(
        f"benchlang, mean stored wall_time:  {med['spawn'] * ms:.3f} ms  ratio {wall_ratio:.2f}x  (target <= {WALL_TARGET:g}x: {'ok' if wall_ratio <= WALL_TARGET else 'MISSED'})"
    )
    rest = med["in_run"] - med["spawn"] - commit
    print(
        f"where an in-run trial goes: spawn {med['spawn'] * ms:.3f} ms, store commit {commit * ms:.3f} ms, rest {rest * ms:.3f} ms"
    )
    floor = (med["spawn"] + commit) / med["hyperfine"]
    print(
        f"floor (spawn + commit, nothing else): {(med['spawn'] + commit) * ms:.3f} ms  ratio {floor:.2f}x"
    )


if __name__ == "__main__":
    main()
