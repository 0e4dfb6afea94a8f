"""Reading and filling a big store: `results` (the summary table) and `analyze` on 1,000,000
trials, side by side with the same query done with plain sqlite3 + numpy (the floor: per
configuration the median of the metric), on the rows and on the store's columnar blocks.
Targets: `results` within 3 s and 400 MB (issue 13); `analyze` within 3x the floor and 400 MB,
idle and with both cores busy (issue 28: ``--loaded`` starts two busy loops for the run). Also
the per-trial JSON document (``results --json``, the same as ``--format json`` since issue 35: a
460 MB document with the headline), for the record.

The store is made quickly and for real: the plan of a spec (10 configurations x 1,000 runs x
100 series) compiled by benchlang, the trials written as an import writes them
(``Store.record_trial_columns``: status, a time and a user_time measure per trial, seeded
log-normal values, with their blocks).

    python benchmarks/bench_store_scale.py [--trials 1000000] [--keep DIR] [--repeat 3]
        [--import-only | --no-import] [--loaded]

Filling: `benchlang import` of a 1,000,000-row per-trial CSV (OrderSage's columns) and of a
hyperfine JSON of the same size, side by side with their floor: numpy reading the file
(``np.loadtxt`` / ``json.load``) plus plain ``sqlite3.executemany`` writing the same trial
rows (every column the store's ``trials`` row has) and measure rows into tables without
indexes. Target (issue 28): within 3x the floor and 400 MB.

Each command runs ``--repeat`` times (the median is printed, with the range), after a
``prepare`` step that gives the checkout what an installed benchlang has (bytecode, the
bootstrap's compiled kernels).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SPEC = """benchlang 1
experiment scale {{
  seed 1
  factor k in 1..10
  benchmark b {{
    run "echo {{k}}"
    measure time = wall_time
  }}
  metric time {{ measure mean unit "s" better lower }}
  kpi time {{ percentile 50 confidence 95% }}
  variability time {{ percentile 25 confidence 75% }}
  design {{ runs {runs} series {series} }}
}}
"""


EXPECT = {"benchlang results": "median", "benchlang analyze": "p50 upper"}


def make_store(root: Path, trials: int) -> Path:
    from benchlang.app.plan import build_plan
    from benchlang.run.bulk_trials import TrialColumns
    from benchlang.run.store import Store

    series = 100
    runs = max(1, trials // (10 * series))
    spec = root / "scale.bench"
    spec.write_text(SPEC.format(runs=runs, series=series))
    plan = build_plan(spec).plan
    store = root / "scale.sqlite"
    with Store(store, create=True) as s:
        s.add_plan(plan.hash, "scale", plan.spec_hash, plan.seed, plan.json_text(),
                   str(spec), spec.read_text())  # fmt: skip
    n = plan.n_trials
    rng = np.random.default_rng(1)
    config = plan.trial_configuration
    wall = np.exp(rng.normal(np.log(0.01 * (1 + config)), 0.05))
    user = wall * 0.8
    labels = [c.label for c in plan.configurations]
    levels = [json.dumps(dict(c.levels), sort_keys=True) for c in plan.configurations]
    series_of = plan.trial_series
    columns = TrialColumns(
        trial=np.arange(n), series=np.asarray(series_of[:n], dtype=np.int64),
        round=np.asarray(plan.trial_round[:n], dtype=np.int64),
        position=np.asarray(plan.trial_position[:n], dtype=np.int64),
        configuration=np.asarray(config, dtype=np.int64), order_kind=np.full(n, "random", object),
        status=np.full(n, "ok", object), reason=np.full(n, None, object),
        exit_status=np.zeros(n, dtype=np.int64), measures={"time": wall, "user_time": user},
        host="local", benchmark="b", labels=tuple(labels), levels=tuple(levels),
        started=time.time(), ended=time.time(),
    )  # fmt: skip
    with Store(store, write=True) as s:
        s.record_trial_columns(plan.hash, columns)
    return store


def floor(store: Path) -> tuple[float, int]:
    """Plain sqlite3 + numpy: each configuration's median time (seconds, peak KiB)."""
    code = f"""
import sqlite3, numpy as np, resource
db = sqlite3.connect({str(store)!r})
c = np.fromiter((r[0] for r in db.execute("SELECT configuration FROM trials ORDER BY trial")), np.int64)
v = np.fromiter((r[0] for r in db.execute("SELECT value FROM measures WHERE name='time' ORDER BY trial")), float)
print([float(np.median(v[c == k])) for k in range(int(c.max()) + 1)][:1])
"""
    return timed([sys.executable, "-c", code])


def block_floor(store: Path) -> tuple[float, int]:
    """Plain sqlite3 + numpy on the store's columnar blocks (schema 7: the count, a byte of
    width per column, each column in its narrowest type, a run as its first number or one
    repeated number once): the
    same medians, the floor of any reader of that layout (seconds, peak KiB)."""
    code = f"""
import sqlite3, numpy as np
def column(b, i):
    n = int(np.frombuffer(b, "<i8", count=1)[0]); w = list(b[8:13])
    at = 13 + sum(x * n if x not in (0, 128) else 8 for x in w[:i])
    if w[i] in (0, 128):
        first = int(np.frombuffer(b, "<i8", count=1, offset=at)[0])
        return np.full(n, first) if w[i] else np.arange(n) + first
    return np.frombuffer(b, f"<i{{w[i]}}", count=n, offset=at)
db = sqlite3.connect({str(store)!r})
c = np.concatenate([column(b, 4) for (b,) in
    db.execute("SELECT numbers FROM trial_blocks ORDER BY block")])
v = np.concatenate([np.frombuffer(b, "<f8") for (b,) in
    db.execute("SELECT \\"values\\" FROM measure_blocks WHERE name='time' ORDER BY first_row")])
print([float(np.median(v[c == k])) for k in range(int(c.max()) + 1)][:1])
"""
    return timed([sys.executable, "-c", code])


def timed(
    argv: list[str], expect: str | None = None, env: dict[str, str] | None = None
) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB, GNU time) of a command; with ``expect``, a text its
    output must contain (a command that analysed nothing is no measurement)."""
    gnu = shutil.which("time") or "/usr/bin/time"
    start = time.perf_counter()
    done = subprocess.run(
        [gnu, "-f", "%M", *argv],
        capture_output=True,
        text=True,
        env={**(os.environ if env is None else env), "COLUMNS": "120"},
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    if expect is not None and expect not in done.stdout:
        raise SystemExit(f"{' '.join(argv)} printed no {expect!r}:\n{done.stdout[-2000:]}")
    return elapsed, int(re.findall(r"^(\d+)$", done.stderr, re.M)[-1])


def store_in(keep: str | None, trials: int, prefix: str) -> tuple[Path, Path]:
    """The benchmark's store of ``trials`` trials in ``keep`` (made there if missing, reused
    otherwise) or in a new temporary directory: (directory, store)."""
    root = Path(keep or tempfile.mkdtemp(prefix=prefix))
    root.mkdir(parents=True, exist_ok=True)
    store = root / "scale.sqlite"
    if not store.exists():
        t0 = time.perf_counter()
        make_store(root, trials)
        print(f"made {store} in {time.perf_counter() - t0:.1f} s")
    return root, store


FLOOR_WRITE = """
import itertools, sqlite3, numpy as np
def write(db_path, label, order, rounds, positions, values):
    n = label.size
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE trials (plan_hash, trial, series, round, position, host, "
               "configuration, label, benchmark, levels, order_kind, status, reason, exit_status, "
               "timed_out, started, ended, attempts, stdout_tail, stderr_tail, phase)")
    db.execute("CREATE TABLE measures (plan_hash, trial, name, value)")
    names, config = np.unique(label, return_inverse=True)
    levels = ['{"configuration": "%s"}' % x for x in names.tolist()]
    r = itertools.repeat
    with db:
        db.executemany("INSERT INTO trials VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", zip(
            r("sha256:" + "0" * 64), range(n), r(0), rounds.tolist(), positions.tolist(),
            r("imported"), config.tolist(), label.tolist(), r("imported"),
            [levels[c] for c in config.tolist()], order.tolist(), r("ok"), r(None), r(0), r(0),
            r(1.0), r(1.0), r(1), r(b""), r(b""), r("measured")))
        db.executemany("INSERT INTO measures VALUES (?,?,?,?)",
                       zip(r("sha256:" + "0" * 64), range(n), r("time"), values.tolist()))
"""

FLOOR_CSV = (
    FLOOR_WRITE
    + """
import sys
cells = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, dtype=str)
write(sys.argv[2], cells[:, 0], cells[:, 1], cells[:, 2].astype(np.int64),
      cells[:, 3].astype(np.int64), cells[:, 4].astype(float))
"""
)

FLOOR_HYPERFINE = (
    FLOOR_WRITE
    + """
import json, sys
results = json.load(open(sys.argv[1]))["results"]
times = [np.asarray(r["times"], float) for r in results]
write(sys.argv[2], np.concatenate([np.full(t.size, r["command"], object) for t, r in zip(times, results)]),
      np.full(sum(t.size for t in times), "fixed", object),
      np.concatenate([np.full(t.size, i) for i, t in enumerate(times)]),
      np.concatenate([np.arange(t.size) for t in times]), np.concatenate(times))
"""
)


def make_import_files(root: Path, rows: int) -> tuple[Path, Path]:
    """A per-trial CSV (10 configurations, rounds of 10 in random order) and a hyperfine
    JSON of two commands, ``rows`` trials each file, seeded log-normal values."""
    rng = np.random.default_rng(28)
    csv_path, json_path = root / "trials.csv", root / "hyperfine.json"
    if not csv_path.exists():
        config = np.argsort(rng.random((rows // 10 + 1, 10)), axis=1).ravel()[:rows]
        values = rng.lognormal(-3, 0.1, rows)
        with csv_path.open("w") as f:
            f.write("test,order,run_seq,position,value\n")
            f.writelines(
                f"t{c},random,{i // 10},{i % 10},{v:.6g}\n"
                for i, (c, v) in enumerate(zip(config.tolist(), values.tolist(), strict=True))
            )
    if not json_path.exists():
        half = rows // 2
        results = [
            {
                "command": f"sleep 0.0{k + 1}",
                "times": rng.lognormal(-3 + k, 0.1, half).tolist(),
                "exit_codes": [0] * half,
            }
            for k in range(2)
        ]
        json_path.write_text(json.dumps({"results": results}))
    return csv_path, json_path


def import_cases(root: Path, rows: int, repeat: int) -> None:
    """``benchlang import`` of each file into a fresh store, beside its floor."""
    files = make_import_files(root, rows)
    print(f"\n{'import of ' + str(rows) + ' rows':34} {'median s':>8} {'range s':>11} "
          f"{'peak MiB':>9} {'x floor':>8}")  # fmt: skip
    for path, floor_code in zip(files, (FLOOR_CSV, FLOOR_HYPERFINE), strict=True):
        lines = {}
        for name, argv in (
            (f"floor: numpy + executemany ({path.suffix[1:]})", [sys.executable, "-c", floor_code, str(path)]),
            (f"benchlang import ({path.suffix[1:]})", [sys.executable, "-m", "benchlang", "import", str(path), "--store"]),
        ):  # fmt: skip
            runs = []
            for _ in range(repeat):
                target = root / "import.sqlite"
                for leftover in root.glob("import.sqlite*"):
                    leftover.unlink()
                runs.append(timed([*argv, str(target)]))
            lines[name] = runs
        base = None
        for name, runs in lines.items():
            seconds = float(np.median([r[0] for r in runs]))
            kib = max(r[1] for r in runs)
            spread = f"{min(r[0] for r in runs):.2f}-{max(r[0] for r in runs):.2f}"
            base = base or seconds
            verdict = ""
            if name.startswith("benchlang"):
                ok = seconds <= 3 * base and kib <= 400 * 1024
                verdict = "  ok" if ok else "  misses 3x floor / 400 MB"
            print(f"{name:34} {seconds:8.2f} {spread:>11} {kib / 1024:9.0f} "
                  f"{seconds / base:8.2f}{verdict}")  # fmt: skip
    for leftover in root.glob("import.sqlite*"):
        leftover.unlink()


def prepare() -> None:
    """What an installed benchlang has before its first timed command: its modules' bytecode
    (pip compiles it on install; an editable checkout run with PYTHONDONTWRITEBYTECODE=1 would
    compile every module at every start) and the bootstrap's C kernels (built once per machine
    and source version, on first use: a warm-up run)."""
    import benchlang

    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(benchlang.__file__)],
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    subprocess.run([sys.executable, "-c", "from benchlang.stats._kernels import native; native()"],
                   check=True)  # fmt: skip


GOALS = {
    "benchlang results": (None, 3.0),
    "benchlang analyze": (3.0, None),
}
"""Per command: (at most this many times the floor, at most this many seconds); 400 MB each."""


@contextlib.contextmanager
def busy_cores(n: int):
    """``n`` busy loops (``yes > /dev/null``) for the commands run inside."""
    loops = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(n)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def read_cases(cases: dict, store: Path, repeat: int, condition: str) -> None:
    """Each case ``repeat`` times (medians), beside the floor measured in the same condition."""
    print(f"\n{'command (' + condition + ')':34} {'median s':>8} {'range s':>11} {'peak MiB':>9} "
          f"{'x floor':>8}")  # fmt: skip
    base = None
    for name, argv in cases.items():
        runs = []
        for _ in range(1 if name.startswith("results --format") else repeat):
            if argv is None or argv == "blocks":
                runs.append(floor(store) if argv is None else block_floor(store))
            else:
                runs.append(timed(argv, EXPECT.get(name)))
        seconds = float(np.median([r[0] for r in runs]))
        kib = max(r[1] for r in runs)
        spread = f"{min(r[0] for r in runs):.2f}-{max(r[0] for r in runs):.2f}"
        base = base or seconds
        verdict = ""
        if name in GOALS:
            ratio, limit = GOALS[name]
            ok = kib <= 400 * 1024 and (ratio is None or seconds <= ratio * base)
            ok = ok and (limit is None or seconds <= limit)
            goal = f"{ratio:g}x floor" if ratio else f"{limit:g} s"
            verdict = "  ok" if ok else f"  misses {goal} / 400 MB"
        print(f"{name:34} {seconds:8.2f} {spread:>11} {kib / 1024:9.0f} "
              f"{seconds / base:8.2f}{verdict}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--keep", help="directory to keep the store in (made if missing)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (median)")
    parser.add_argument("--import-only", action="store_true", help="only the import cases")
    parser.add_argument("--no-import", action="store_true", help="skip the import cases")
    parser.add_argument(
        "--loaded", action="store_true", help="read cases also with both cores busy"
    )
    args = parser.parse_args()
    if args.import_only:
        root = Path(args.keep or tempfile.mkdtemp(prefix="benchlang-import-"))
        root.mkdir(parents=True, exist_ok=True)
        prepare()
        import_cases(root, args.trials, args.repeat)
        if not args.keep:
            shutil.rmtree(root)
        return 0
    root, store = store_in(args.keep, args.trials, "benchlang-scale-")
    prepare()
    cases = {
        "floor: sqlite3 + numpy medians": None,
        "floor on the blocks (schema 6)": "blocks",
        "benchlang results": [sys.executable, "-m", "benchlang", "results", str(store)],
        "benchlang analyze": [sys.executable, "-m", "benchlang", "analyze", "--store", str(store)],
        "results --format json (per trial)": ["sh", "-c", f"exec {shlex.quote(sys.executable)} -m benchlang results {shlex.quote(str(store))} --format json > {shlex.quote(str(root / 'trials.json'))}"],
    }  # fmt: skip
    for loaded in (False, True) if args.loaded else (False,):
        with busy_cores(2 if loaded else 0):
            read_cases(cases, store, args.repeat, "both cores busy" if loaded else "idle")
    (root / "trials.json").unlink(missing_ok=True)
    if not args.no_import:
        import_cases(root, args.trials, args.repeat)
    if not args.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
