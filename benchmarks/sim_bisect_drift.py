"""How often bisect names the right commit when the machine's level moves between sessions
(issue 48 item 4; docs/history.md#bisect).

Seeded simulation of the decision rules on lognormal values: a commit's level (1 before the
first bad commit k, ``step`` from k on) x a session factor (lognormal, sigma ``--session``,
drawn anew for every session) x a trial noise (lognormal, sigma 3%). A bisection is emulated
as git does it: the candidate nearest the middle of what is left, a skipped one set aside.

- across sessions (benchlang before issue 48): the endpoints each in a session of their own,
  every step in another; a step is bad when slower than the good endpoint with 95%
  confidence, good when faster than the bad one, the nearer when both, else skip (the
  interval of each ratio approximated by Welch's t on log values; ``diff`` used a cluster
  bootstrap of the percentile);
- one session per step: the commit with both endpoints interleaved within R rounds, the
  within-round contrast log mid - (log good + log bad) / 2 with its t interval
  (benchlang.stats.round_contrast, the function bisect uses), up to 3 sessions pooled, at
  5% per step (no correction), at 5% / steps (Bonferroni over the planned ceil(log2 n) steps,
  bisect before skips were counted), or spent over the steps run (app.history.bisect.step_alpha: 3/4
  of 5% over the planned steps, then 5%/4 · 2^-j for the j-th beyond them: what bisect does).

``--broken F`` makes a share F of the commits unbuildable (skipped, as a failed build is:
each costs a step and git tests another), so bisects take more steps than planned.

``--cli N`` also runs the real ``benchlang bisect`` N times on tests/test_bisect.py's
repository (12 commits, 1.4x from change 7, a 10% lognormal session factor drawn by the spec's
setup), each with the session counter started elsewhere so every run sees other factors.

Run: python benchmarks/sim_bisect_drift.py [--bisects 1000] [--cli 10] [--rounds 6]
[--only 1025:1.05]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchlang.stats._special import t_ppf
from benchlang.stats.round_contrast import round_contrast

NOISE = 0.03


def welch(a: np.ndarray, b: np.ndarray, confidence: float = 95.0) -> tuple[float, float]:
    """Interval of mean(log b) - mean(log a) by Welch's t."""
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / la.size, lb.var(ddof=1) / lb.size
    df = (va + vb) ** 2 / (va**2 / (la.size - 1) + vb**2 / (lb.size - 1))
    half = t_ppf(1 - (1 - confidence / 100) / 2, df) * math.sqrt(va + vb)
    d = lb.mean() - la.mean()
    return d - half, d + half


class Machine:
    def __init__(self, rng: np.random.Generator, session: float, step: float, k: int) -> None:
        self.rng, self.session, self.step, self.k = rng, session, step, k

    def level(self, commit: int) -> float:
        return self.step if commit >= self.k else 1.0

    def session_values(self, commits: list[int], rounds: int) -> np.ndarray:
        """rounds x builds: one session, the builds interleaved (one factor for all)."""
        factor = math.exp(self.rng.normal(0, self.session))
        levels = np.array([self.level(c) for c in commits])
        return levels * factor * np.exp(self.rng.normal(0, NOISE, (rounds, len(commits))))


def across_sessions(m: Machine, good: int, bad: int, rounds: int):
    g = m.session_values([good], rounds)[:, 0]
    b = m.session_values([bad], rounds)[:, 0]

    def judge(commit: int, k: int) -> str:
        x = m.session_values([commit], rounds)[:, 0]
        lo_g, _ = welch(g, x)
        _, hi_b = welch(b, x)
        slower, faster = lo_g > 0, hi_b < 0
        if slower and faster:
            return (
                "good"
                if abs(np.log(x).mean() - np.log(g).mean())
                < abs(np.log(x).mean() - np.log(b).mean())
                else "bad"
            )
        return "bad" if slower else "good" if faster else "skip"

    return judge


def one_session(m: Machine, good: int, bad: int, rounds: int, level, looks: int = 3):
    """``level``: the step's confidence, or a function of the step's ordinal k (1, 2, ...)."""

    def judge(commit: int, k: int) -> str:
        at = level(k) if callable(level) else level
        pooled = np.empty((0, 3))
        for _ in range(looks):
            pooled = np.vstack([pooled, m.session_values([good, commit, bad], rounds)])
            c = round_contrast(pooled, (-0.5, 1.0, -0.5), at)
            if c.lower > 0:
                return "bad"
            if c.upper < 0:
                return "good"
        return "skip"

    return judge


def bisection(n: int, judge, broken: frozenset[int] = frozenset()) -> int | None:
    lo, hi, skipped, k = 0, n - 1, set(), 0
    while hi - lo > 1:
        left = [c for c in range(lo + 1, hi) if c not in skipped]
        if not left:
            return None
        middle = (lo + hi) / 2
        c = min(left, key=lambda c: abs(c - middle))
        k += 1
        verdict = "skip" if c in broken else judge(c, k)
        if verdict == "good":
            lo = c
        elif verdict == "bad":
            hi = c
        else:
            skipped.add(c)
    return hi


def simulate(
    n: int,
    step: float,
    session: float,
    design: str,
    bisects: int,
    seed: int,
    rounds: int = 6,
    broken: float = 0.0,
):
    from benchlang.app.history.bisect import step_alpha

    rng = np.random.default_rng(seed)
    steps = max(1, math.ceil(math.log2(n - 1)))
    right = wrong = none = 0
    for _ in range(bisects):
        k = int(rng.integers(1, n))
        m = Machine(rng, session, step, k)
        cut = frozenset(np.flatnonzero(rng.random(n) < broken).tolist()) - {0, n - 1}
        if design == "across sessions":
            judge = across_sessions(m, 0, n - 1, rounds)
        elif design == "one session, 5% per step":
            judge = one_session(m, 0, n - 1, rounds, 100 - 5 / 3)
        elif design == "one session, Bonferroni over log2 n":
            judge = one_session(m, 0, n - 1, rounds, 100 - 5 / steps / 3)
        else:
            judge = one_session(
                m, 0, n - 1, rounds, lambda j: 100 - 100 * step_alpha(0.05, j, steps) / 3
            )
        found = bisection(n, judge, cut)
        right += found == k
        none += found is None
        wrong += found is not None and found != k
    return right, wrong, none


SCENARIOS = ((12, 1.4, (0.0, 0.05, 0.10)), (1025, 1.1, (0.10,)), (1025, 1.05, (0.10,)))


def table(bisects: int, rounds: int, only: str | None, broken: float) -> None:
    print(f"unbuildable commits: {broken:.0%}")
    print("| commits | step | session sigma | rounds | design | right | wrong | not named |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    designs = (
        "across sessions",
        "one session, 5% per step",
        "one session, Bonferroni over log2 n",
        "one session, spent over the steps run",
    )
    chosen = [s for s in SCENARIOS if only is None or f"{s[0]}:{s[1]:g}" == only]
    for n, step, sessions in chosen:
        for session in sessions:
            for i, design in enumerate(designs):
                seed = 48 + (i if broken == 0.0 else 0)  # with skips: the same commits broken
                right, wrong, none = simulate(
                    n, step, session, design, bisects, seed, rounds, broken
                )
                print(
                    f"| {n} | {step:g}x | {session:.0%} | {rounds} | {design} | "
                    f"{right / bisects:.1%} | {wrong / bisects:.1%} | {none / bisects:.1%} |"
                )


def through_cli(runs: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_bisect import SLOW_AT, drift_repo

    right = 0
    for r in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "project"
            shas = drift_repo(root)
            (root / ".git" / "drift-sessions").write_text(f"{1000 * (r + 1)}\n")
            done = subprocess.run(
                [sys.executable, "-m", "benchlang", "bisect", "bench.bench", "--good", shas[0],
                 "--bad", "main", "--json"],
                cwd=root, capture_output=True, text=True,
            )  # fmt: skip
            result = json.loads(done.stdout) if done.stdout else {}
            factors = [float(x) for x in (root / ".git" / "drift-factors").read_text().split()]
            named = result.get("first_bad") == shas[SLOW_AT]
            right += named
            print(
                f"run {r + 1}: {result.get('runs')} sessions, factors "
                f"{min(factors):.3f}..{max(factors):.3f}, "
                f"{'right' if named else 'WRONG: ' + str(result.get('first_bad'))}"
            )
    print(f"through the CLI: the right commit in {right} of {runs} bisects")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bisects", type=int, default=1000)
    parser.add_argument("--cli", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=6, help="rounds of a step's session")
    parser.add_argument("--only", metavar="COMMITS:STEP", help="one scenario, e.g. 1025:1.05")
    parser.add_argument("--broken", type=float, default=0.0, help="share of unbuildable commits")
    args = parser.parse_args()
    table(args.bisects, args.rounds, args.only, args.broken)
    if args.cli:
        through_cli(args.cli)


if __name__ == "__main__":
    main()
