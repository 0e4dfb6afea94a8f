"""The store's size and `benchlang import`'s time and memory at 10k, 100k and 1M rows, beside
the floor: the same per-trial CSV read with Python's ``csv`` and written with plain
``sqlite3.executemany`` into one table of its five columns, without an index (issue 53:
store bytes within 3x that table). The CSV is bench_store_scale.py's (OrderSage's columns:
test, order, run_seq, position, value; 10 configurations in rounds of 10, seeded log-normal
values).

    python benchmarks/bench_store_size.py [--rows 10000 100000 1000000] [--repeat 3]
        [--run-trials 3000] [--pythonpath DIR] [--keep DIR] [--dbstat]

First a run's store: ``--run-trials`` trials written one transaction each as ``benchlang run``
writes them, the seven built-in measures a trial (bytes a trial, a commit's time).
``--pythonpath`` runs `benchlang import` (and the run case) from another checkout (e.g. one of the commit before
schema 6, ``git archive``d into DIR) for the before/after table. Each case runs ``--repeat``
times (the median wall and CPU times are printed; CPU is user + system time, in
microseconds, from ``os.wait4``), then once more under GNU time for its peak RSS; the floor
and benchlang alternate run by run. ``--dbstat`` then imports each size once more and
prints where the store's bytes go: bytes a trial per table and index, SQLite's ``dbstat``
(free space within pages counted with its table).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_store_scale import make_import_files, prepare, timed

FLOOR = """
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[2])
db.execute('CREATE TABLE trials (test TEXT, "order" TEXT, run_seq INTEGER, position INTEGER, value REAL)')
with open(sys.argv[1], newline="") as f, db:
    rows = csv.reader(f)
    next(rows)
    db.executemany("INSERT INTO trials VALUES (?,?,?,?,?)", rows)
db.close()
"""


def _clean(root: Path) -> None:
    for leftover in root.glob("out.sqlite*"):
        leftover.unlink()


def _case(argv: list[str], target: Path, env: dict[str, str]) -> tuple[float, int, float]:
    """(wall seconds, store bytes, CPU seconds) of one command writing ``target`` (CPU: user +
    system, the machine's other load counted less than in wall time), from the child's
    resource usage (``os.wait4``) in microseconds: GNU time's ``%U %S`` print hundredths, cut,
    and made the 10k floor's 0.049 s 0.04."""
    _clean(target.parent)
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        child = subprocess.Popen(
            [*argv, str(target)], env=env, stdout=subprocess.DEVNULL, stderr=errors
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed:\n{errors.read()[-2000:].decode()}")
    size = sum(p.stat().st_size for p in target.parent.glob(target.name + "*"))
    _clean(target.parent)
    return seconds, size, usage.ru_utime + usage.ru_stime


def _peak(argv: list[str], target: Path, env: dict[str, str]) -> int:
    """Peak RSS (KiB) of one more run, under GNU time: a child this script starts directly
    reports the script's own peak (Linux keeps the larger of the two across ``exec``)."""
    _clean(target.parent)
    _, kib = timed([*argv, str(target)], env=env)
    _clean(target.parent)
    return kib


RUN = """
import pathlib, statistics, sys, tempfile, time
from benchlang.run.store import Store, TrialRecord
BUILT_INS = ("wall_time", "user_time", "sys_time", "cpu_time", "max_rss", "minor_faults",
             "major_faults")
n = int(sys.argv[1])
path = pathlib.Path(tempfile.mkdtemp()) / "run.sqlite"
plan = "sha256:" + "0" * 64
took = []
with Store(path, create=True) as store:
    store.add_plan(plan, "e", "sha256:s", 1, "{}")
    for t in range(n):
        record = TrialRecord(
            trial=t, series=0, round=t // 2, position=t % 2, host="local", configuration=t % 2,
            label=f"b[k={t % 2}]", benchmark="b", levels={"k": t % 2}, order_kind="random",
            status="ok", reason=None, exit_status=0, timed_out=False, started=time.time(),
            ended=time.time(), attempts=1, stdout_tail=b"", stderr_tail=b"",
            measures={name: 0.001 * t + i for i, name in enumerate(BUILT_INS)}, series_values={})
        start = time.perf_counter()
        store.record_trial(plan, record)
        took.append(time.perf_counter() - start)
print(f"{path.stat().st_size / n:.0f} {statistics.median(took) * 1e3:.3f} {statistics.mean(took) * 1e3:.3f}")
"""
"""A run's trials written one transaction each (``Store.record_trial``), the seven built-in
measures a trial: bytes a trial and the commit's median and mean milliseconds."""


def run_trials(n: int, env: dict[str, str]) -> None:
    """A run's store: bytes a trial and the time of a trial's commit."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(n)], env=env, capture_output=True, text=True, check=True
    )
    size, median, mean = done.stdout.split()
    print(
        f"run of {n} trials, 7 measures each (record_trial): {size} bytes a trial, "
        f"commit median {median} ms, mean {mean} ms"
    )


def dbstat(argv: list[str], target: Path, env: dict[str, str], rows: int) -> None:
    """Bytes a trial of each table and index of the store ``argv`` writes (``dbstat``)."""
    import sqlite3

    _clean(target.parent)
    subprocess.run([*argv, str(target)], env=env, check=True, stdout=subprocess.DEVNULL)
    db = sqlite3.connect(target)
    parts = db.execute(
        "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
    ).fetchall()
    db.close()
    _clean(target.parent)
    shown = [f"{name} {size / rows:.1f}" for name, size in parts if size / rows >= 1]
    rest = sum(size for _, size in parts if size / rows < 1) / rows
    print(
        f"{rows:>9} bytes a trial: {', '.join(shown)}, the other {len(parts) - len(shown)} {rest:.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pythonpath", help="run benchlang from this checkout")
    parser.add_argument("--keep", help="directory for the CSV files (made if missing)")
    parser.add_argument(
        "--run-trials", type=int, default=3000, help="trials of the run case (0: none)"
    )
    parser.add_argument("--dbstat", action="store_true", help="where the store's bytes go")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
        env["PYTHONSAFEPATH"] = "1"  # run from a checkout, `-m benchlang` would take its own
    if args.run_trials:
        run_trials(args.run_trials, env)
    prepare()
    print(
        f"{'rows':>9} {'case':28} {'median s':>8} {'CPU s':>7} {'peak MiB':>9} {'store MB':>9} "
        f"{'x time':>7} {'x CPU':>6} {'x bytes':>8}"
    )
    for rows in args.rows:
        root = Path(args.keep or tempfile.mkdtemp(prefix="benchlang-size-")) / str(rows)
        root.mkdir(parents=True, exist_ok=True)
        csv_path, _ = make_import_files(root, rows)
        target = root / "out.sqlite"
        cases = {
            "floor: csv + executemany": [sys.executable, "-c", FLOOR, str(csv_path)],
            "benchlang import": [
                sys.executable, "-m", "benchlang", "import", str(csv_path), "--store",
            ],
        }  # fmt: skip
        runs: dict[str, list[tuple[float, int, float]]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, argv in cases.items():
                runs[name].append(_case(argv, target, env))
        peaks = {name: _peak(argv, target, env) for name, argv in cases.items()}
        base_s = base_b = base_c = None
        for name, done in runs.items():
            seconds = float(np.median([r[0] for r in done]))
            cpu = float(np.median([r[2] for r in done]))
            kib = peaks[name]
            size = max(r[1] for r in done)
            base_s, base_b, base_c = base_s or seconds, base_b or size, base_c or cpu
            print(
                f"{rows:>9} {name:28} {seconds:8.3f} {cpu:7.3f} {kib / 1024:9.0f} "
                f"{size / 1e6:9.1f} {seconds / base_s:7.2f} {cpu / base_c:6.2f} "
                f"{size / base_b:8.2f}"
            )
        if args.dbstat:
            dbstat(cases["benchlang import"], target, env, rows)
        if not args.keep:
            shutil.rmtree(root.parent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
