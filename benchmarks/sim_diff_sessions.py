"""`benchlang diff` across sessions on a shared runner, through the real CLI (issue 48).

Each store is one session made by `benchlang run` of a spec whose command reports its own
value: an awk script prints a log-normal trial draw (sigma 2%) times the session's level, read
from a file written before each run (log-normal, sigma 5%), times a slowdown of one
configuration (the "after" side of a regression). Nothing of this machine's noise enters.

  python3 benchmarks/sim_diff_sessions.py [--pairs 200] [--sets 5] [--seed 48]

prints the table of docs/statistics.md ("Across sessions (diff)"):
- A/A, one session per side (`diff A B --margin 2%`): regressions called, and what the
  within-session interval alone would have called (the verdict before issue 48);
- A/A and +25% on one configuration, one session per side with `--history` of 10 sessions of
  the machine class (the run-to-run spread borrowed from it);
- A/A and +25% on one configuration, 3 and 5 sessions per side (`--base ... --new ...`);
- `--part d`: A/A, one session per side with `--history` of 10 sessions under a drifting
  level: the machine's log level moves by DRIFT (2%) a session along the history's span, with a
  session sigma of DRIFT_SESSION (2%) about that line; each pair's two sessions are at two
  distinct places of the span drawn at random, made in time order among the history's runs
  (the spread between them is that of their lag, not the next session's); `--histories`
  histories, the pairs spread over them.

Rates are printed with their Monte Carlo SE, sqrt(p (1 - p) / pairs).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

import numpy as np

VALUE_AWK = """\
BEGIN {
  getline line < session; split(line, f, " ")
  srand((ENVIRON["BENCHLANG_SEED"] % 999983) * 1009 + f[2])
  u = rand(); v = rand(); if (u < 1e-12) u = 1e-12
  z = sqrt(-2 * log(u)) * cos(6.283185307179586 * v)
  e = (tool == "slow") ? f[3] : 1
  printf "v=%.12g\\n", (tool == "fast" ? 0.010 : 0.020) * f[1] * e * exp(TRIAL_SIGMA * z)
}
"""

SPEC = """benchlang 1
experiment {experiment} {{
  seed 5
  workdir "."
  factor tool in [{tools}]
  benchmark {benchmark} {{
    run "awk -v tool={{tool}} -v session=session.txt -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }}
  metric v {{ unit "s" better lower }}
  kpi v {{ percentile 50 confidence 95% }}
  design {{ runs {runs} series 5 }}
}}
"""

SESSION_SIGMA = 0.05
TRIAL_SIGMA = 0.02
DRIFT, DRIFT_SESSION, HISTORY_RUNS = 0.02, 0.02, 10


def make_session(
    root: Path,
    name: str,
    level: float,
    salt: int,
    slow: float = 1.0,
    *,
    benchmark: str = "work",
    experiment: str = "pr",
    tools: tuple[str, ...] = ("fast", "slow"),
    runs: int = 5,
) -> Path:
    """One session: a store of `benchlang run` with the machine's level ``level`` and the
    configuration tool=slow multiplied by ``slow`` (any tool but fast is at slow's base level)."""
    where = root / name
    where.mkdir(parents=True, exist_ok=True)
    (where / "session.txt").write_text(f"{level!r} {salt} {slow!r}\n")
    (where / "value.awk").write_text(VALUE_AWK.replace("TRIAL_SIGMA", repr(TRIAL_SIGMA)))
    spec = where / "pr.bench"
    levels = ", ".join(f'"{t}"' for t in tools)
    spec.write_text(
        SPEC.format(benchmark=benchmark, experiment=experiment, tools=levels, runs=runs)
    )
    store = where / "s.sqlite"
    status, out, err = cli(["run", str(spec), "--store", str(store), "--quiet"])
    if status != 0:
        raise RuntimeError(out + err)
    return store


def cli(argv: list[str]) -> tuple[int, str, str]:
    """``benchlang ARGV`` in this process (the real command line, without a Python start per
    call): status, stdout, stderr."""
    from benchlang.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 2
    return int(status or 0), out.getvalue(), err.getvalue()


def make_sides(
    root: Path, rng: np.random.Generator, n: int, slow: float, tag: str
) -> tuple[list[Path], list[Path]]:
    """n sessions before and n after (tool=slow times ``slow`` after), levels drawn at random."""
    levels = np.exp(rng.normal(0.0, SESSION_SIGMA, 2 * n))
    salts = rng.integers(1, 1 << 20, 2 * n)
    jobs = [
        (f"{tag}-{side}{i}", float(levels[k]), int(salts[k]), slow if side == "b" else 1.0)
        for k, (side, i) in enumerate([("a", i) for i in range(n)] + [("b", i) for i in range(n)])
    ]
    stores = [make_session(root, *job) for job in jobs]
    return stores[:n], stores[n:]


def diff(
    base: list[Path], new: list[Path], margin: str = "2%", history: Path | None = None
) -> dict:
    argv = ["diff", "--json", "--margin", margin, *(["--history", str(history)] if history else [])]
    argv += [str(base[0]), str(new[0])] if len(base) == 1 else ["--base", *map(str, base),
                                                               "--new", *map(str, new)]  # fmt: skip
    status, out, err = cli(argv)
    if status not in (0, 1):
        raise RuntimeError(out + err)
    return json.loads(out)


def tally(doc: dict) -> tuple[bool, bool, bool]:
    """(a regression called, the within-session verdict alone would call one, tool=slow worse)."""
    rows = [r for m in doc["metrics"] for r in m["rows"]]
    called = any(r["gate"] and r["gate"]["verdict"] == "worse" for r in rows)
    within = any(r["within_verdict"] == "worse" for r in rows)
    slow = any(
        r["label"] == "work[tool=slow]" and r["gate"] and r["gate"]["verdict"] == "worse"
        for r in rows
    )
    return called, within, slow


def add_history(
    root: Path, history: Path, levels: np.ndarray, rng: np.random.Generator, tag: str, first=0
):
    for i, level in enumerate(levels, start=first):
        store = make_session(root, f"{tag}-{i}", float(level), int(rng.integers(1, 1 << 20)))
        status, out, err = cli(["history", "add", str(store), "--history", str(history),
                                "--commit", f"c{i}"])  # fmt: skip
        if status != 0:
            raise RuntimeError(out + err)


def _next_second() -> None:
    """Wait for the clock's next second: a store's date is to the second, and ``diff
    --history`` places the compared sessions among the history's runs by date."""
    time.sleep(1.0 - time.time() % 1.0 + 0.01)


def drifting(
    root: Path, rng: np.random.Generator, pairs: int, histories: int, slow: float = 1.0
) -> list[tuple]:
    """A/A pairs, one session a side, with ``--history`` of a drifting machine (``--part d``).

    The machine's log level at place t of the history (0..HISTORY_RUNS - 1) is DRIFT · t
    (centred) plus a session draw of sigma DRIFT_SESSION. A pair's two sessions are at two
    distinct places drawn at random, each made right after the history's run at its place (in
    time order, so their dates put them there), at that place's level."""
    res = []
    line = DRIFT * (np.arange(HISTORY_RUNS) - (HISTORY_RUNS - 1) / 2.0)
    for h in range(histories):
        history = root / f"drift-{h}.sqlite"
        count = pairs // histories + (h < pairs % histories)
        places = [rng.choice(HISTORY_RUNS, 2, replace=False) for _ in range(count)]
        stores: dict[tuple[int, int], Path] = {}
        for t in range(HISTORY_RUNS):
            level = float(np.exp(line[t] + rng.normal(0.0, DRIFT_SESSION)))
            _next_second()
            add_history(root, history, np.array([level]), rng, f"dh{h}", first=t)
            for i, at in enumerate(places):
                for side in (k for k in range(2) if at[k] == t):
                    _next_second()
                    level = float(np.exp(line[t] + rng.normal(0.0, DRIFT_SESSION)))
                    salt = int(rng.integers(1, 1 << 20))
                    stores[i, side] = make_session(
                        root, f"d{h}-{i}-{side}", level, salt, slow if side else 1.0
                    )
        for i in range(count):
            res.append(tally(diff([stores[i, 0]], [stores[i, 1]], history=history)))
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--histories", type=int, default=10, help="--part d: drifting histories")
    p.add_argument("--slow", type=float, default=1.0, help="--part d: tool=slow x this on B")
    p.add_argument("--sets", type=int, default=5)
    p.add_argument("--seed", type=int, default=48)
    p.add_argument("--part", choices=("1", "3", "5", "h", "d", "all"), default="all",
                   help="only the rows of 1, 3 or 5 sessions per side, or h: one session per "
                   "side with --history of 10 sessions, d: the same under a drifting level "
                   "(each part its own seed)")  # fmt: skip
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.part in ("1", "all"):
            rng = np.random.default_rng([args.seed, 1])
            res = [
                tally(diff(*make_sides(root, rng, 1, 1.0, f"aa1-{i}"))) for i in range(args.pairs)
            ]
            rows.append(("A/A", 1, args.pairs, res))
        if args.part in ("h", "all"):
            rng = np.random.default_rng([args.seed, 10])
            history = root / "h.sqlite"
            add_history(root, history, np.exp(rng.normal(0.0, SESSION_SIGMA, 10)), rng, "hist")
            for slow, what, total in (
                (1.0, "A/A", args.pairs),
                (1.25, "+25% tool=slow", args.sets),
            ):
                res = [
                    tally(diff(*make_sides(root, rng, 1, slow, f"h{slow}-{i}"), history=history))
                    for i in range(total)
                ]
                rows.append((f"{what}, --history of 10 sessions", 1, total, res))
        if args.part in ("d", "all"):
            rng = np.random.default_rng([args.seed, 20])
            res = drifting(root, rng, args.pairs, args.histories, args.slow)
            change = "A/A" if args.slow == 1.0 else f"{args.slow - 1:+.0%} tool=slow"
            what = f"{change}, --history of 10 sessions drifting {DRIFT:.0%} a session"
            rows.append((what, 1, args.pairs, res))
        for n in (3, 5):
            if args.part not in (str(n), "all"):
                continue
            rng = np.random.default_rng([args.seed, n])
            for slow, what in ((1.0, "A/A"), (1.25, "+25% tool=slow")):
                tag = f"s{n}-{slow}"
                res = [
                    tally(diff(*make_sides(root, rng, n, slow, f"{tag}-{i}")))
                    for i in range(args.sets)
                ]
                rows.append((what, n, args.sets, res))
    print(f"session sigma {SESSION_SIGMA:.0%}, trial sigma {TRIAL_SIGMA:.0%}, margin 2%, "
          f"seed {args.seed}")  # fmt: skip
    print("| change | sessions per side | diffs | regression called | tool=slow worse | "
          "within-session interval alone: worse |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for what, n, total, res in rows:
        called = sum(r[0] for r in res)
        slow = sum(r[2] for r in res)
        within = sum(r[1] for r in res) if n == 1 and "history" not in what else "-"
        se = (called / total * (1 - called / total) / total) ** 0.5
        print(f"| {what} | {n} | {total} | {called} ({called / total:.1%}, SE {se:.1%}) | "
              f"{slow} | {within} |")  # fmt: skip


if __name__ == "__main__":
    main()
