"""Adding one run to a history of 10,000 points, then asking for its change points (the goal:
incremental add + changes <= 50 ms at 10,000 points), on SQLite and PostgreSQL.

A history of one series (a spec with one configuration) is made with 9,999 points in bulk:
lognormal values (2% noise) with five steps of 1-5% and intervals of about +-3%; the stored
change points are made by a first add. Then each measured round adds one run and answers
``history changes``:

- stored (what benchlang does): ``add`` appends the point to the stored copy of the series and
  runs the full detection on it, in the add's transaction; ``changes`` reads the stored answer
  (benchlang/history/stored.py);
- recompute (the baseline, what ``history`` did before): ``add`` writes the point only;
  ``changes`` reads every point back and runs the detection.

Both give the same change points (asserted here; tests/test_history_incremental.py checks it
after every add). Times are the median of ``--rounds`` rounds, wall and CPU, in process (the
app layer, as the CLI calls it) and as two ``benchlang`` processes (Python start-up and
imports included, shown apart as ``benchlang --version``).

    python benchmarks/bench_history_incremental.py [--points 10000] [--rounds 15] [--skip-postgres]
        [--skip-cli]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchlang.app.history.runs import _store_points, history_changes, open_history
from benchlang.history.points import Point, Run
from benchlang.history.series import add_run, read_series
from benchlang.history.stored import store_changes
from benchlang.history.verdicts import changes
from benchlang.testing.synthetic import synthetic_store

SPEC = """benchlang 1
experiment app {
  seed 1
  benchmark b {
    run "true"
    measure time = wall_time
  }
  metric time { measure mean unit "s" better lower }
  kpi time { percentile 50 confidence 95% }
  design { runs 10 series 1 }
}
"""


def _date(i: int) -> str:
    return f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00"


def build(target: str, template, n: int, rng: np.random.Generator) -> None:
    """``n - 1`` runs of the template's point in bulk, then one add that stores the answer."""
    level = np.zeros(n)
    for at in np.sort(rng.choice(np.arange(100, n - 100), 5, replace=False)):
        level[at:] += rng.choice([-1.0, 1.0]) * rng.uniform(0.01, 0.05)
    values = 0.01 * np.exp(level + rng.normal(0.0, 0.02, n))
    half = 0.03 * np.exp(rng.normal(0.0, 0.3, n))
    p = template
    runs, points = [], []
    for i in range(n - 2):
        key = f"bulk-{i:06d}"
        runs.append((key, i + 1, "app", None, f"{i:040x}", "main", _date(i), "bulk", "{}", "{}"))
        points.append((key, p.metric, p.configuration, p.host_class, p.unit, p.better,
                       p.percentile, float(values[i]), float(values[i] * (1 - half[i])),
                       float(values[i] * (1 + half[i])), p.interval_kind, "[]", None, 10,
                       "passed", "[]"))  # fmt: skip
    with open_history(target, create=True) as h:
        with h.write():
            h.execute("INSERT INTO meta (key, value) VALUES ('experiment', 'app')")
            h.executemany(
                "INSERT INTO runs (run_key, seq, experiment, plan_hash, commit_sha, branch, "
                "date, source, facts, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                runs,
            )
            h.executemany(
                "INSERT INTO points (run_key, metric, configuration, host_class, unit, better, "
                "percentile, value, lower, upper, interval_kind, series_kpis, variability, "
                "trials, independence, reasons) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                points,
            )
        run = Run("seed-run", "app", None, "f" * 40, "main", _date(n - 2), "bulk", {}, {})
        add_run(h, run, [p], then=store_changes)


def _timed(f: Callable[[], object]) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return 1e3 * (time.perf_counter() - w), 1e3 * (time.process_time() - c), out


def in_process(target: str, template, first: int, rounds: int, stored: bool) -> dict:
    """Median ms of add + changes, ``rounds`` runs each one point newer."""
    from benchlang.history.stored import stored_changes

    rows: dict[str, list[float]] = {"add": [], "changes": [], "total wall": [], "total cpu": []}
    answers = []
    for r in range(rounds):
        i = first + r
        run = Run(f"timed-{stored}-{i}", "app", None, f"{i:040x}", "main", _date(i), "t", {}, {})
        point = template

        def add(run: Run = run, point: Point = point) -> None:
            with open_history(target) as h:
                add_run(h, run, [point], then=store_changes if stored else None)

        def answer():
            if stored:
                return history_changes(target)
            with open_history(target) as h:
                return [changes(s) for s in read_series(h)]

        wa, ca, _ = _timed(add)
        wc, cc, found = _timed(answer)
        rows["add"].append(wa)
        rows["changes"].append(wc)
        rows["total wall"].append(wa + wc)
        rows["total cpu"].append(ca + cc)
        answers.append(found)
    out = {k: statistics.median(v) for k, v in rows.items()}
    out["answer"] = answers[-1]
    if stored:
        with open_history(target) as h:
            assert stored_changes(h, 0.05, 95.0) is not None
            again = sorted((changes(s) for s in read_series(h)), key=lambda c: c.series.name)
        out["same"] = [f.to_dict() for f in answers[-1]] == [f.to_dict() for f in again]
    return out


def cli(target: str, stores: list[Path], first: int) -> dict:
    """Median wall ms of ``benchlang history add`` and ``benchlang history changes``."""
    exe = [sys.executable, "-m", "benchlang"]
    adds, reads, starts = [], [], []
    for k, store in enumerate(stores):
        date = _date(first + k).replace("+00:00", "Z")
        argv = [*exe, "history", "add", str(store), "--history", target, "--date", date,
                "--commit", f"{first + k:040x}"]  # fmt: skip
        w, _, _ = _timed(lambda a=argv: subprocess.run(a, check=True, capture_output=True))
        adds.append(w)
        argv = [*exe, "history", "changes", "--history", target]
        w, _, _ = _timed(lambda a=argv: subprocess.run(a, check=True, capture_output=True))
        reads.append(w)
        w, _, _ = _timed(lambda: subprocess.run([*exe, "--version"], capture_output=True))
        starts.append(w)
    return {"add": statistics.median(adds), "changes": statistics.median(reads),
            "start": statistics.median(starts)}  # fmt: skip


def engine(name: str, target: str, work: Path, args, rng) -> None:
    spec = work / "app.bench"
    spec.write_text(SPEC)
    stores = []
    for k in range(args.rounds + 1):
        store = work / f"{name}-{k}.sqlite"
        noise = np.random.default_rng(k)
        synthetic_store(
            spec, store, lambda p, t, g=noise: {"time": 0.01 * float(np.exp(g.normal(0, 0.02)))}
        )
        stores.append(store)
    _, points = _store_points(stores[0])
    template = points[0]
    build(target, template, args.points - 1, rng)
    n = args.points
    stored = in_process(target, template, n, args.rounds, stored=True)
    processes = None if args.skip_cli else cli(target, stores[1:], n + args.rounds)
    base = in_process(target, template, n + 2 * args.rounds, args.rounds, stored=False)
    shown = "-" if processes is None else f"{processes['add']:.0f} + {processes['changes']:.0f}"
    print(f"| {name}, stored (benchlang) | {stored['add']:.1f} | {stored['changes']:.1f} | "
          f"**{stored['total wall']:.1f}** | {stored['total cpu']:.1f} | {shown} |")  # fmt: skip
    print(f"| {name}, recompute (baseline) | {base['add']:.1f} | {base['changes']:.1f} | "
          f"{base['total wall']:.1f} | {base['total cpu']:.1f} | - |", flush=True)  # fmt: skip
    start = (
        "" if processes is None else f"; `benchlang --version` alone {processes['start']:.0f} ms"
    )
    print(
        f"  ({name}: {len(stored['answer'][0].changes)} change points found; stored answer "
        f"== recomputation: {stored['same']}{start})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-cli", action="store_true", help="in process only")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"one series of {args.points} points; median of {args.rounds} rounds; milliseconds; "
          f"load average {os.getloadavg()[0]:.1f} at the start")  # fmt: skip
    print("| history | add | changes | add + changes, wall | CPU | CLI: add + changes (wall) |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        engine("SQLite", str(work / "history.sqlite"), work, args, rng)
        if not args.skip_postgres:
            from benchlang.testing.postgres import fresh_database, postgres_missing, postgres_server

            why = postgres_missing()
            if why:
                print(f"PostgreSQL skipped: {why}")
            else:
                with postgres_server() as url:
                    engine("PostgreSQL", fresh_database(url, "bench"), work, args, rng)
    print(f"load average {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
