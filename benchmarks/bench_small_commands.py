"""The small commands side by side with their floors (the goal: small commands answer at
once), interleaved, medians of ``--repeat`` (7) rounds after one warm-up round.

- ``benchlang check specs/quickstart.bench`` against ``python -c "import lark, numpy"`` (what
  any command that parses a spec must load); goal: within 2x.
- ``benchlang history add / check / changes`` on a history of 1,000 runs (one series, built as
  benchmarks/bench_history_incremental.py builds it, its change points stored) against a plain
  sqlite3 read of the same rows (every run's point, joined to its run, into a numpy array:
  ``python -c "import sqlite3, numpy; ..."``); goal: 0.2 s each. ``add`` adds one new store to
  a fresh copy of the history each round (the copy is made outside the timing), dated after
  every run of the history (``--date``), as CI adds the newest run. Twice: a store as
  ``benchlang run`` leaves it (its points kept: docs/history.md#kept-points; synthetic trials,
  then the closing analysis ``run`` ends with, ``app.history.kept.keep_points``), made by this
  script's benchlang and the same files for every tree timed; and a store without kept points
  (written before, or by ``import``: ``add`` compiles its spec), made by the timed tree.

Each round runs every case once, in turn, so load and drift hit all alike; wall seconds and
the CPU seconds of the child (user + system, from ``resource.getrusage``) are both printed,
the CPU being the steadier on a shared machine. As ``bench_store_scale.py`` does, the checkout
is first given what an installed benchlang has: its modules' bytecode (``compileall``).

    python benchmarks/bench_small_commands.py [--repeat 7] [--runs 1000] [--checkout DIR]

``--checkout DIR`` times the benchlang of another tree (e.g. ``git archive REV | tar -x -C
DIR``, with its ``specs/``) for a before/after table. The history is built by the timed tree's
own benchlang (its ``benchmarks/bench_small_commands.py``), so that it is in the layout that
tree writes: a history another benchlang wrote is read as not current and recomputed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
PY = sys.executable
NEWEST = "2026-02-01T00:00:00Z"
"""A date after every run of the history built (bench_history_incremental's are 2026-01-01)."""
FLOOR_READ = (
    "import sqlite3, numpy; rows = sqlite3.connect({path!r}).execute("
    "'SELECT r.run_key, r.commit_sha, r.date, p.metric, p.configuration, p.value, p.lower, "
    "p.upper FROM runs r JOIN points p USING (run_key) ORDER BY r.seq').fetchall(); "
    "values = numpy.array([r[5] for r in rows]); print(len(rows), values.mean())"
)


def prepare(tree: Path) -> None:
    """Bytecode for every benchlang module, as pip leaves an installed package."""
    subprocess.run(
        [PY, "-m", "compileall", "-q", str(tree / "benchlang")],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def make_history(work: Path, runs: int, stores: int) -> tuple[Path, list[Path]]:
    """A history of ``runs`` runs of one series and ``stores`` stores not yet added to it."""
    from bench_history_incremental import SPEC, build

    from benchlang.app.history.runs import _store_points
    from benchlang.testing.synthetic import synthetic_store

    spec = work / "app.bench"
    spec.write_text(SPEC)
    made = []
    for k in range(stores + 1):
        store = work / f"store-{k}.sqlite"
        noise = np.random.default_rng(k)
        synthetic_store(
            spec, store, lambda p, t, g=noise: {"time": 0.01 * float(np.exp(g.normal(0, 0.02)))}
        )
        made.append(store)
    _, points = _store_points(made[0])
    history = work / "history.sqlite"
    build(str(history), points[0], runs + 1, np.random.default_rng(53))  # n - 1 runs
    return history, made[1:]


def run_stores(work: Path, n: int) -> list[Path]:
    """``n`` stores of the history's experiment and series as ``benchlang run`` leaves them:
    synthetic trials (as ``make_history``'s), then the points kept by the analysis a run ends
    with (``keep_points``, which ``run`` calls)."""
    from bench_history_incremental import SPEC

    from benchlang.app.history.kept import keep_points
    from benchlang.report.analysis import analyze
    from benchlang.report.data import load_data
    from benchlang.run.store import Store
    from benchlang.testing.synthetic import synthetic_store

    spec = work / "app.bench"
    spec.write_text(SPEC)
    made = []
    for k in range(n):
        store = work / f"run-{k}.sqlite"
        noise = np.random.default_rng(1000 + k)
        synthetic_store(
            spec, store, lambda p, t, g=noise: {"time": 0.01 * float(np.exp(g.normal(0, 0.02)))}
        )
        with Store(store, write=True) as s:
            data = load_data(s)
            if not keep_points(s, data, analyze(data)):
                raise SystemExit(f"{store}: no points kept")
        made.append(store)
    return made


def history_of(tree: Path, work: Path, runs: int, stores: int) -> tuple[Path, list[Path]]:
    """``make_history`` run by ``tree``'s benchlang, in a child process."""
    code = (
        "import json, sys; from pathlib import Path; sys.path[:0] = ['', 'benchmarks']; "
        "from bench_small_commands import make_history; "
        f"h, s = make_history(Path({str(work)!r}), {runs}, {stores}); "
        "print(json.dumps([str(h), [str(x) for x in s]]))"
    )
    done = subprocess.run([PY, "-c", code], cwd=tree, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"building the history in {tree} failed: {done.stderr[-2000:]}")
    history, made = json.loads(done.stdout.splitlines()[-1])
    return Path(history), [Path(m) for m in made]


def timed(argv: list[str], tree: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Wall and child CPU seconds of one command, run in ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--runs", type=int, default=1000, help="runs in the history")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the benchlang tree timed")
    args = parser.parse_args()
    tree = args.checkout.resolve()
    prepare(tree)
    exe = [PY, "-m", "benchlang"]
    add = ["--no-commit", "--date", NEWEST, "--history"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        history, stores = history_of(tree, work, args.runs, args.repeat + 1)
        kept = run_stores(work, args.repeat + 1)
        fresh = work / "fresh.sqlite"
        floor_read = [PY, "-c", FLOOR_READ.format(path=str(history))]
        # name: (argv or a function of the round giving it, exit codes, floor name, goal)
        cases = {
            "floor: import lark, numpy": ([PY, "-c", "import lark, numpy"], (0,)),
            "benchlang check quickstart": ([*exe, "check", "specs/quickstart.bench"], (0,)),
            "floor: sqlite3 read of the points": (floor_read, (0,)),
            "benchlang history add": (
                lambda r: [*exe, "history", "add", str(kept[r]), *add, str(fresh)],
                (0,),
            ),
            "benchlang history add, no kept points": (
                lambda r: [*exe, "history", "add", str(stores[r]), *add, str(fresh)],
                (0,),
            ),
            "benchlang history check": (
                [*exe, "history", "check", "--history", str(history)],
                (0, 1),
            ),
            "benchlang history changes": (
                [*exe, "history", "changes", "--history", str(history)],
                (0,),
            ),
        }
        walls: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        for r in range(args.repeat + 1):
            for name, (argv, ok) in cases.items():
                if name.startswith("benchlang history add"):
                    shutil.copyfile(history, fresh)
                wall, cpu = timed(argv(r) if callable(argv) else argv, tree, ok)
                if r:  # round 0 warms the caches
                    walls[name].append(wall)
                    cpus[name].append(cpu)
    med_w = {n: statistics.median(v) for n, v in walls.items()}
    med_c = {n: statistics.median(v) for n, v in cpus.items()}
    print(f"small commands, medians of {args.repeat} interleaved rounds "
          f"({args.runs:,} runs in the history; benchlang of {tree}; "
          f"load {os.getloadavg()[0]:.1f} at the end)\n")  # fmt: skip
    print("| command | wall s | floor wall s | x floor | CPU s | floor CPU s | x floor | goal |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = [
        ("benchlang check quickstart", "floor: import lark, numpy", "<= 2x"),
        ("benchlang history add", "floor: sqlite3 read of the points", "<= 0.2 s"),
        ("benchlang history add, no kept points", "floor: sqlite3 read of the points", "-"),
        ("benchlang history check", "floor: sqlite3 read of the points", "<= 0.2 s"),
        ("benchlang history changes", "floor: sqlite3 read of the points", "<= 0.2 s"),
    ]
    for name, floor, goal in rows:
        print(f"| `{name}` vs {floor.removeprefix('floor: ')} | {med_w[name]:.3f} | "
              f"{med_w[floor]:.3f} | {med_w[name] / med_w[floor]:.2f} | {med_c[name]:.3f} | "
              f"{med_c[floor]:.3f} | {med_c[name] / med_c[floor]:.2f} | {goal} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
