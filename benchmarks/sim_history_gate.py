"""The CI gate on a shared runner (docs/history.md "The gate for CI"; issue 48, item 3).

A suite of 4 benchmarks is run once per CI job; each job is a session whose machine level moves
by a lognormal factor (sigma 5%, shared by the suite's benchmarks), its trials by 2% around it.
Each run's points are built as ``history add`` builds them (the median of its trials with the
distribution-free 95% interval of that median, benchlang.history.points) and written through
the same functions ``history add`` calls (history.series.add_run with the stored change
points); the gate is ``benchlang history check --margin 2% --json`` through the CLI, in process.

- **No change**: WARM runs, then 30 CI jobs, each adding a run and checking: how many of the 30
  checks fail (exit 1) and how many regressions they raise (a benchmark that starts failing: a
  newest run called worse or a regression change point open, where the check before did not
  fail on it), per suite.
- **+25% on one benchmark**: WARM runs, then a run where benchmark b0 is 25% slower: found when
  that check fails naming b0; then 9 more runs at the new level: how many of those checks
  still fail (a regression stays open).

- **Closing** (``--closing LEVEL``, the rule "a regression stays open"): one series, WARM runs
  at level 1 (a session sigma of ``--spread``, 1% by default, no trial noise: the point is the
  session's level), 6 runs at +25%, then ``--after`` runs at LEVEL; after every run the
  change points are found and the regressions judged by the functions ``history check`` calls
  (history.verdicts.changes, history.gate.regressions). LEVEL 1.02, the margin's edge (the level
  is not back within the margin): the share of histories in which any check called the
  regression closed (a false close; the rule's error, at most 5% asked). LEVEL 1.00 (fixed): the
  share closed by the last check and the runs after the fix at the first check that closed it.

Runs against whatever ``benchlang`` is importable: to get the "before" column, run it with
PYTHONPATH set to an export of the code before (``git archive``).

    nice -n 10 python3 benchmarks/sim_history_gate.py [--suites 10] [--warm 20] [--seed 48]
    nice -n 10 python3 benchmarks/sim_history_gate.py --closing 1.02 --histories 1000
    nice -n 10 python3 benchmarks/sim_history_gate.py --suites 20 --benchmarks 10 \
        --session 0.10 --step 1.05   # compare --base's shared runner, judged across sessions
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchlang.app.history.runs import open_history
from benchlang.cli import main
from benchlang.history.points import Point, Run, _percentile_interval, run_key
from benchlang.history.series import add_run
from benchlang.history.stored import store_changes

BENCHMARKS, TRIALS, SESSION, TRIAL = 4, 15, 0.05, 0.02


def add(target: str, i: int, rng: np.random.Generator, factors: dict[int, float]) -> None:
    """One CI job: a session level for the suite, each benchmark's trials around it."""
    level = math.exp(rng.normal(0.0, SESSION))
    points = []
    for b in range(BENCHMARKS):
        trials = 0.01 * (1 + b) * level * factors.get(b, 1.0)
        trials = trials * np.exp(rng.normal(0.0, TRIAL, TRIALS))
        lo, hi = _percentile_interval(trials, 50.0, 95.0)
        value = float(np.median(trials))
        fields = ("s", "lower", 50.0, value, lo, hi, "p50 95%", (), math.nan, TRIALS, "passed")
        points.append(Point("time", f"b{b}", "ci", *fields))
    date = f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00"
    commit = f"{i:040x}"
    run = Run(run_key(None, points, f"job {i}"), "suite", None, commit, "main", date, "sim", {}, {})
    with open_history(target, create=True) as h:
        add_run(h, run, points, then=store_changes)


def check(target: str) -> tuple[int, set[str]]:
    """The gate's exit status and the benchmarks it fails on (a worse newest run, an open
    regression)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["history", "check", "--history", target, "--margin", "2%", "--json"])
    raised = set()
    for s in json.loads(out.getvalue())["series"]:
        still = any(r["state"] == "open" for r in s.get("regressions", []))
        if s["verdict"] == "worse" or still:
            raised.add(s["configuration"])
    return code, raised


def no_change(suite: int, warm: int, seed: int) -> tuple[int, int]:
    rng = np.random.default_rng([seed, 0, suite])
    with tempfile.TemporaryDirectory() as tmp:
        target = str(Path(tmp) / "h.sqlite")
        for i in range(warm):
            add(target, i, rng, {})
        failed, raised, before = 0, 0, set()
        for i in range(warm, warm + 30):
            add(target, i, rng, {})
            code, now = check(target)
            failed += code == 1
            raised += len(now - before)  # a benchmark that starts failing: one regression
            before = now
    return failed, raised


def regression(suite: int, warm: int, seed: int, step: float = 1.25) -> tuple[bool, int, int]:
    rng = np.random.default_rng([seed, 1, suite])
    with tempfile.TemporaryDirectory() as tmp:
        target = str(Path(tmp) / "h.sqlite")
        for i in range(warm):
            add(target, i, rng, {})
        add(target, warm, rng, {0: step})
        code, raised = check(target)
        found = code == 1 and "b0" in raised
        others = len(raised - {"b0"})
        still = 0
        for i in range(warm + 1, warm + 10):
            add(target, i, rng, {0: step})
            still += check(target)[0] == 1
    return found, still, others


REGRESSED = 6
"""Runs at +25% before the level moves to the closing scenario's LEVEL."""


def _series(values: np.ndarray):
    from benchlang.history.series import Series

    n = values.size
    commits = tuple(f"{i:040x}" for i in range(n))
    dates = tuple(
        f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00" for i in range(n)
    )
    return Series("time", "b0", "ci", "s", "lower", 50.0, commits, dates,
                  tuple(map(str, range(n))), values, values * 0.995, values * 1.005,
                  (TRIALS,) * n, ("passed",) * n)  # fmt: skip


def closing(history: int, level: float, warm: int, after: int, spread: float, seed: int):
    """One history of the closing scenario: (ever closed at a check, runs after the fix at
    the first check that closed it or None, closed at the last check)."""
    from benchlang.history.gate import regressions
    from benchlang.history.verdicts import changes

    rng = np.random.default_rng([seed, 2, history])
    steps = np.r_[np.ones(warm), np.full(REGRESSED, 1.25), np.full(after, level)]
    values = steps * np.exp(rng.normal(0.0, spread, steps.size))
    first, last, k = None, False, warm
    while k < values.size:
        k = k + 1 if first is None else values.size  # once closed, only the last check is read
        found = changes(_series(values[:k]))
        regs = [r for r in regressions(found, [], 0.02, 0.05) if abs(r.change.index - warm) <= 2]
        last = any(r.state == "closed" for r in regs)
        if last and first is None:
            first = k - warm - REGRESSED
    return first is not None, first, last


def main_closing(a: argparse.Namespace) -> None:
    rows = [closing(h, a.closing, a.warm, a.after, a.spread, a.seed) for h in range(a.histories)]
    ever = sum(r[0] for r in rows)
    at_end = sum(r[2] for r in rows)
    runs = [r[1] for r in rows if r[1] is not None]
    se = math.sqrt(max(ever, 1) * (a.histories - ever) / a.histories) / a.histories
    print(f"closing: level {a.closing} after {REGRESSED} runs at +25%, {a.after} runs there, "
          f"{a.warm} before, session spread {a.spread:.1%}, margin 2%, {a.histories} histories")  # fmt: skip
    print(f"  closed at some check: {ever} ({ever / a.histories:.1%}, MC SE {se:.1%})")
    print(f"  closed at the last check: {at_end} ({at_end / a.histories:.1%})")
    if runs:
        q = np.percentile(runs, [10, 50, 90])
        print(f"  runs after the level moved, at the first close: median {q[1]:.0f} "
              f"(10%: {q[0]:.0f}, 90%: {q[2]:.0f}; <= 0: closed before it moved)")  # fmt: skip


def main_sim() -> None:
    global BENCHMARKS, SESSION
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suites", type=int, default=10)
    p.add_argument("--warm", type=int, default=20)
    p.add_argument("--seed", type=int, default=48)
    p.add_argument("--closing", type=float, help="the closing scenario at this level")
    p.add_argument("--histories", type=int, default=1000)
    p.add_argument("--after", type=int, default=20)
    p.add_argument("--spread", type=float, default=0.01)
    p.add_argument("--benchmarks", type=int, default=4, help="the suite's size")
    p.add_argument("--session", type=float, default=0.05, help="session sigma (log)")
    p.add_argument("--step", type=float, default=1.25, help="b0's regression factor")
    a = p.parse_args()
    BENCHMARKS, SESSION = a.benchmarks, a.session
    import benchlang

    print(f"benchlang from {Path(benchlang.__file__).parent}; seed {a.seed}; {a.warm} runs before")
    if a.closing is not None:
        main_closing(a)
        return
    rows = [no_change(s, a.warm, a.seed) for s in range(a.suites)]
    failed = [f for f, _ in rows]
    raised = [r for _, r in rows]
    print("no change, 30 checks per suite:")
    print(f"  checks failed per suite: {failed} (mean {np.mean(failed):.1f})")
    print(f"  regressions raised per suite: {raised} (mean {np.mean(raised):.1f})")
    print(f"  suites with <= 3 failed checks: {sum(f <= 3 for f in failed)} of {a.suites}")
    print(f"  suites raising <= 3 benchmarks: {sum(r <= 3 for r in raised)} of {a.suites}")
    found = [regression(s, a.warm, a.seed, a.step) for s in range(a.suites)]
    print(f"{a.step - 1:+.0%} on b0 ({a.benchmarks} benchmarks, session sigma {a.session:.0%}):")
    print(f"  found at the regressing run: {sum(f for f, _, _ in found)} of {a.suites}")
    print(f"  of the 9 checks after it, failing: {[s for _, s, _ in found]}")
    print(f"  other benchmarks raised with it: {sum(o for _, _, o in found)}")
    sys.stdout.flush()


if __name__ == "__main__":
    main_sim()
