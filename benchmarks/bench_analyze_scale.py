"""`benchlang analyze` of stores of 10,000 / 100,000 / 1,000,000 trials against its floor
(issue 53, items 2 and 5): plain sqlite3 + numpy reading the same rows (each trial's
configuration and value) and computing each configuration's median and percentiles.

The stores are made as a user makes them: `benchlang import` of a generated per-trial CSV
(10 configurations in rounds of 10, random order, seeded log-normal values; OrderSage's
columns; ``mixed``: every other round in the fixed order, OrderSage's design, for which
analyze adds the order report). Two floors: the plain one, and the fair one, the same script
with numpy loaded as benchlang loads it (``FAIR_FLOOR``: the plain floor's OpenBLAS threads
spin 2^28 cycles when idle, benchlang's sleep). The floors and `analyze` (and, with
``--before DIR``, `analyze` of another checkout, the code before, of the store its own
`import` writes: the same trials in its store schema) run interleaved, in turns whose order
rotates, ``--repeat`` turns (5-9 for the docs); printed: medians of CPU seconds (user +
system, the children's rusage) and of wall seconds, the peak RSS, and the medians of the
per-turn ratios of CPU and of wall time to each floor. Goal: <= 3x the floor's CPU, <= 400 MB
(the verdict: against the fair floor).

    python benchmarks/bench_analyze_scale.py [--sizes 10000,100000,1000000] [--repeat 5]
        [--orders random,mixed] [--keep DIR] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FLOOR = """
import sqlite3, sys, numpy as np
db = sqlite3.connect(sys.argv[1])
c = np.fromiter((r[0] for r in db.execute(
    "SELECT configuration FROM trials WHERE status = 'ok' ORDER BY trial")), np.int64)
v = np.fromiter((r[0] for r in db.execute(
    "SELECT m.value FROM measures m JOIN trials t USING (plan_hash, trial) "
    "WHERE t.status = 'ok' AND m.name = 'value' ORDER BY m.trial")), float)
order = np.argsort(c, kind="stable")
groups = np.split(v[order], np.flatnonzero(np.diff(c[order])) + 1)
print([np.percentile(g, [5, 25, 50, 75, 95]).tolist() for g in groups][:1])
"""

FAIR_FLOOR = (
    "import os\n"
    "ours = 'OPENBLAS_THREAD_TIMEOUT' not in os.environ\n"
    "os.environ.setdefault('OPENBLAS_THREAD_TIMEOUT', '4')\n"
    "import numpy\n"
    "if ours: del os.environ['OPENBLAS_THREAD_TIMEOUT']\n" + FLOOR
)
"""The floor with numpy loaded as benchlang loads it (``app/blas_threads.py``: OpenBLAS's idle
threads sleep at once instead of spinning 2^28 cycles, set only while numpy is imported): the
plain floor's CPU time includes its threads' spinning, which `analyze` no longer pays."""


def make_csv(path: Path, rows: int, orders: str) -> None:
    """A per-trial CSV: 10 configurations in rounds of 10 in random order (``orders``
    "random"), or every other round in the fixed order (``mixed``: OrderSage's design, so
    analyze adds the order report), seeded values."""
    rng = np.random.default_rng(53)
    rounds = np.argsort(rng.random((rows // 10 + 1, 10)), axis=1)
    fixed = np.arange(rounds.shape[0]) % 2 == 0 if orders == "mixed" else np.zeros(0, bool)
    rounds[np.flatnonzero(fixed)] = np.arange(10)
    config = rounds.ravel()[:rows]
    kind = np.where(np.repeat(fixed, 10)[:rows], "fixed", "random") if fixed.size else None
    values = rng.lognormal(-3, 0.1, rows)
    with path.open("w") as f:
        f.write("test,order,run_seq,position,value\n")
        f.writelines(
            f"t{c},{'random' if kind is None else kind[i]},{i // 10},{i % 10},{v:.6g}\n"
            for i, (c, v) in enumerate(zip(config.tolist(), values.tolist(), strict=True))
        )


def make_store(
    root: Path, rows: int, orders: str, env: dict[str, str] | None = None, tag: str = ""
) -> Path:
    """The store `benchlang import` writes from the CSV of ``rows`` trials (reused if kept),
    by the checkout of ``env``'s PYTHONPATH (``tag`` names its file: a checkout of another
    store schema writes and reads its own store of the same trials)."""
    store = root / f"import-{orders}-{rows}{tag}.sqlite"
    if not store.exists():
        csv = root / f"trials-{orders}-{rows}.csv"
        make_csv(csv, rows, orders)
        cmd = [sys.executable, "-m", "benchlang", "import", str(csv), "--store", str(store)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env, cwd="/")
        csv.unlink()
    return store


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, peak RSS in KiB) of a command, by ``os.wait4``; run from
    the root directory, so that ``-m benchlang`` finds the checkout of ``PYTHONPATH``, not
    one in the working directory."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss


def prepare(checkout: str, env: dict[str, str]) -> None:
    """What an installed benchlang has before its first command: its modules' bytecode (pip
    compiles it on install; with PYTHONDONTWRITEBYTECODE=1 a checkout compiles every module at
    every start) and the bootstrap's compiled kernels (built once per machine and version)."""
    compile_all = [sys.executable, "-m", "compileall", "-q", str(Path(checkout) / "benchlang")]
    subprocess.run(compile_all, check=True, stdout=subprocess.DEVNULL)
    kernels = "from benchlang.stats._kernels import native; native()"
    subprocess.run([sys.executable, "-c", kernels], check=True, env=env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=5, help="turns (medians over them)")
    parser.add_argument("--keep", help="directory to keep the stores in (made if missing)")
    parser.add_argument("--before", help="another checkout: its `analyze` runs in the turns too")
    parser.add_argument(
        "--orders", default="random,mixed", help="the stores' round orders: random, mixed"
    )
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="benchlang-analyze-"))
    root.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parent.parent)
    after_env = {**env, "PYTHONPATH": here}
    before_env = {**env, "PYTHONPATH": str(Path(args.before).resolve())} if args.before else None
    prepare(here, after_env)
    if args.before:
        prepare(args.before, before_env or env)
    print(
        f"{'rows':>9} {'orders':7} {'case':24} {'CPU s':>6} {'wall s':>6} {'MiB':>5} "
        f"{'x floor CPU':>11} {'wall':>5} {'x fair CPU':>10} {'wall':>5}"
    )
    sizes = [int(x) for x in args.sizes.split(",")]
    for rows, orders in ((r, o) for r in sizes for o in args.orders.split(",")):
        store = make_store(root, rows, orders, after_env)
        analyze = [sys.executable, "-m", "benchlang", "analyze", "--store", str(store)]
        cases = {
            "floor: sqlite3 + numpy": ([sys.executable, "-c", FLOOR, str(store)], env),
            "fair floor (numpy idle)": ([sys.executable, "-c", FAIR_FLOOR, str(store)], env),
        }
        if before_env:
            own = make_store(root, rows, orders, before_env, "-before")
            cases["analyze (before)"] = ([*analyze[:-1], str(own)], before_env)
        cases["analyze"] = (analyze, after_env)
        for argv, case_env in cases.values():  # a warm-up turn: bytecode, page cache
            run(argv, case_env)
        runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in cases}
        names = list(cases)
        for turn in range(args.repeat):
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                runs[name].append(run(*cases[name]))
        floors = [np.array([r[:2] for r in runs[name]]) for name in names[:2]]
        for name in names:
            got = np.array([r[:2] for r in runs[name]])
            peak = max(r[2] for r in runs[name]) / 1024
            ratios = [np.median(got / floor, axis=0) for floor in floors]
            verdict = ""
            if name.startswith("analyze"):
                ok = ratios[1][0] <= 3 and peak <= 400
                verdict = "  ok" if ok else "  misses 3x / 400 MB"
            print(f"{rows:9d} {orders:7} {name:24} {np.median(got[:, 0]):6.3f} "
                  f"{np.median(got[:, 1]):6.3f} {peak:5.0f} {ratios[0][0]:11.2f} {ratios[0][1]:5.2f} "
                  f"{ratios[1][0]:10.2f} {ratios[1][1]:5.2f}{verdict}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
