"""The cost of the kept points' stamp (app/history/kept.py, docs/history.md#kept-points), which
``benchlang run`` computes at its end and ``history add`` again, beside the path it saves: the
compiling one (the stored spec compiled, the trial table read, the KPI analysis), which ``add``
takes when the stamp differs.

Stores: the quickstart's (``specs/quickstart.bench`` run for real, 75 trials, its built-in
measures) and stores of 20,000 / 100,000 / 1,000,000 trials made as bench_store_scale.py makes
them (10 configurations, a time and a user_time measure per trial, folded into blocks).

    python benchmarks/bench_kept_stamp.py [--sizes 20000,100000,1000000] [--keep DIR]
        [--repeat 3] [--no-compile-above N]

Prints per store: trials, measure rows, the stamp's wall and CPU seconds (median of
``--repeat``, a fresh read-only connection each), and the compiling path's (median of
``--repeat``; skipped above ``--no-compile-above`` trials).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _timed(fn, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def _stamp(store: Path) -> None:
    from benchlang.app.history.kept import stamp

    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, isolation_level=None)
    try:
        stamp(db, db.execute("SELECT plan_hash FROM plans").fetchone()[0])
    finally:
        db.close()


def _compiled(store: Path) -> None:
    import benchlang.app.history.runs as runs

    kept = runs.kept_points
    runs.kept_points = lambda path: None
    try:
        runs._store_points(store)
    finally:
        runs.kept_points = kept


def _quickstart(root: Path) -> Path:
    store = root / "quickstart.sqlite"
    if not store.exists():
        argv = [sys.executable, "-m", "benchlang", "run", str(ROOT / "specs/quickstart.bench"),
                "--store", str(store), "-q"]  # fmt: skip
        subprocess.run(argv, cwd=root, check=True, capture_output=True)
    return store


def main() -> int:
    from bench_store_scale import make_store

    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="20000,100000,1000000")
    parser.add_argument("--keep", help="directory to keep the stores in (reused)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-compile-above", type=int, default=10**9)
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="benchlang-stamp-"))
    root.mkdir(parents=True, exist_ok=True)
    stores = [_quickstart(root)]
    for size in map(int, args.sizes.split(",")):
        folder = root / f"scale{size}"
        folder.mkdir(exist_ok=True)
        if not (folder / "scale.sqlite").exists():
            make_store(folder, size)
        stores.append(folder / "scale.sqlite")
    print(
        "| store | trials | measure rows | stamp wall s | stamp CPU s | compile wall s | compile CPU s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for store in stores:
        with sqlite3.connect(store) as db:
            trials = db.execute("SELECT count(*) FROM trial_rows").fetchone()[0]
            measures = db.execute("SELECT count(*) FROM measure_rows").fetchone()[0]
        stamp = _timed(lambda s=store: _stamp(s), args.repeat)
        if trials <= args.no_compile_above:
            compiled = _timed(lambda s=store: _compiled(s), args.repeat)
            cells = f"{compiled[0]:.3f} | {compiled[1]:.3f}"
        else:
            cells = "- | -"
        print(f"| {store.parent.name}/{store.name} | {trials:,} | {measures:,} | "
              f"{stamp[0]:.3f} | {stamp[1]:.3f} | {cells} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
