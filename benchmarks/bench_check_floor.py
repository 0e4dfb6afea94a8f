"""``benchlang check specs/quickstart.bench`` side by side with its floor, ``python -c "import
lark, numpy"`` (what any command that parses a spec loads), and optionally with the ``check``
of other trees: every case once per round, in turn, so load and drift hit all alike; medians
of ``--repeat`` rounds after one warm-up round, wall and the child's CPU seconds (user +
system, ``os.wait4``), the CPU being the steadier on a shared machine.

    python benchmarks/bench_check_floor.py [--repeat 30] [--spec specs/quickstart.bench]
        [--tree NAME=DIR ...]

``--tree before=/tmp/before`` times the benchlang of another tree (``git archive REV | tar -x
-C DIR``) run with ``PYTHONPATH=DIR`` from that directory. Every tree is first given its
modules' bytecode (``compileall``), as an installed package has. This is the ``check`` row of
``bench_small_commands.py`` alone, with more rounds and several trees interleaved.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
LIKE_CHECK = (
    "import gc, os; os.environ['OPENBLAS_THREAD_TIMEOUT'] = '4'; gc.disable(); import numpy; "
    "gc.freeze(); gc.enable(); import lark; os._exit(0)"
)
"""The floor's imports loaded as ``check`` loads them (app/blas_threads.py: OpenBLAS's idle
threads sleeping, numpy's objects frozen out of the collector) and left as it leaves
(``cli.leave``: no interpreter teardown): what ``check`` adds beyond the floor, alone."""


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process; it must exit 0."""
    t0 = time.perf_counter()
    child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read() if child.stderr else b""
    if child.stderr:
        child.stderr.close()
    if child.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}: {err[-2000:]!r}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--spec", default="specs/quickstart.bench")
    parser.add_argument(
        "--tree", action="append", default=[], metavar="NAME=DIR", help="another tree's check"
    )
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    for item in args.tree:
        name, _, path = item.partition("=")
        trees[name] = Path(path).resolve()
    for tree in trees.values():
        subprocess.run([PY, "-m", "compileall", "-q", str(tree / "benchlang")], check=True)
    cases: dict[str, tuple[list[str], Path, dict[str, str]]] = {
        "floor: import lark, numpy": ([PY, "-c", "import lark, numpy"], ROOT, dict(os.environ)),
        "floor as check starts and leaves": ([PY, "-c", LIKE_CHECK], ROOT, dict(os.environ)),
    }
    for name, tree in trees.items():
        env = dict(os.environ)
        if tree != ROOT:
            env["PYTHONPATH"] = str(tree)
        cases[f"check ({name})"] = ([PY, "-m", "benchlang", "check", args.spec], tree, env)
    walls: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    load = os.getloadavg()[0]
    for r in range(args.repeat + 1):
        for name, (argv, cwd, env) in cases.items():
            wall, cpu = timed(argv, cwd, env)
            if r:  # round 0 warms the caches
                walls[name].append(wall)
                cpus[name].append(cpu)
    floor = "floor: import lark, numpy"
    fw, fc = statistics.median(walls[floor]), statistics.median(cpus[floor])
    print(
        f"{args.spec}: medians of {args.repeat} interleaved rounds; load "
        f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n"
    )
    like = "floor as check starts and leaves"
    lw, lc = statistics.median(walls[like]), statistics.median(cpus[like])
    print("| command | wall s | x floor | x floor as check | CPU s | x floor | x floor as check |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in cases:
        w, c = statistics.median(walls[name]), statistics.median(cpus[name])
        print(
            f"| {name} | {w:.3f} | {w / fw:.2f} | {w / lw:.2f} | {c:.3f} | {c / fc:.2f} | "
            f"{c / lc:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
