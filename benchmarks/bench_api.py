"""The Python API on a big store: ``benchlang.open_store(path).trials()`` (a DataFrame of every
trial: levels, measures, host, series, round, position, phase, timestamps, status) against the
floor of plain ``sqlite3`` + ``pandas.read_sql`` of the same store's ``trials`` table (its rows
as stored, no measures, levels as JSON text). Target (issue 39): within 3x the floor.

The store is bench_store_scale.py's: the real plan of a spec (10 configurations x runs x 100
series), trials inserted in the store's schema with seeded log-normal times, folded into the
store's blocks as a run does. Medians of ``--repeat`` runs, in one process (pandas imported
first, so neither side pays for it).

    python benchmarks/bench_api.py [--trials 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store_scale import make_store


def floor(store: Path) -> tuple[float, tuple[int, int]]:
    import pandas as pd

    start = time.perf_counter()
    with sqlite3.connect(store) as db:
        frame = pd.read_sql("SELECT * FROM trials", db)
    return time.perf_counter() - start, frame.shape


def api(store: Path) -> tuple[float, tuple[int, int]]:
    import benchlang

    start = time.perf_counter()
    frame = benchlang.open_store(store).trials()
    return time.perf_counter() - start, frame.shape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import pandas  # noqa: F401  (both sides start with pandas loaded)

    with tempfile.TemporaryDirectory() as root:
        made = time.perf_counter()
        store = make_store(Path(root), args.trials)
        print(f"store of {args.trials:,} trials made in {time.perf_counter() - made:.0f} s")
        rows = {}
        for name, read in (("sqlite3 + pandas.read_sql", floor), ("open_store().trials()", api)):
            runs = [read(store) for _ in range(args.repeat)]
            rows[name] = (statistics.median(t for t, _ in runs), runs[0][1])
    base = rows["sqlite3 + pandas.read_sql"][0]
    print(f"{'reader':<28}{'seconds':>9}{'x floor':>9}  shape")
    for name, (seconds, shape) in rows.items():
        print(f"{name:<28}{seconds:>9.2f}{seconds / base:>9.2f}  {shape[0]:,} x {shape[1]}")


if __name__ == "__main__":
    main()
