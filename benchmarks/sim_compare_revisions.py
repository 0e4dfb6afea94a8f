"""``benchlang compare SPEC --base REF`` on a simulated shared runner, through the CLI.

A local git repository whose suite of benchmarks (``--benchmarks``, 4 by default; the issue's
suite is 10) reports its own time: the commit's level
(1.0; at the head commit of the "regression" repository benchmark ``b1`` is 5% slower) times a
machine level that moves between compares (lognormal, sigma 10%) and drifts within one
(+-8%, a sine over the trials, its phase drawn per compare) times a 2% lognormal trial noise.
Each replicate draws a new spec seed (the rounds' random order) and a new machine.
Counted: compares with any ``worse`` (A/A: base against base in two worktrees; and base
against a docs-only commit), and compares naming ``b1`` worse (regression); margin 2%.

The contrast's spread is read back from each row's interval (half width x sqrt(rounds) / t),
the sd of the within-round log ratio that the design leaves.

    python3 benchmarks/sim_compare_revisions.py [--replicates N] [--rounds R|auto]
        [--benchmarks M] [--kind aa_same|aa_docs|reg|all] [--max-time D]
    python3 benchmarks/sim_compare_revisions.py --coverage [--datasets N]

``--coverage``: Stein's two-stage interval (stats.two_stage) on simulated within-round
contrasts, no CLI: per setting ``--datasets`` datasets (pilot n0, the total sized from the
pilot's sd for a 2% margin, capped or not), the share of intervals that cover the true log
ratio, beside the paired t interval on all n rounds with n - 1 df (not exact: n depends on s0).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

SPEC = """benchlang 1
experiment suite {{
  seed {seed}
  workdir "."
{benchmarks}
  metric time {{ measure mean unit "s" better lower }}
{design}
}}
"""
BENCHMARK = """  benchmark b{i} {{
    run "sh b{i}.sh"
    measure time from stdout regex "time ([0-9.]+)"
  }}"""
TIMED = """# {note}
d=$(cd "$(git rev-parse --git-common-dir)" && pwd)
n=$(cat "$d/trials" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$d/trials"
awk -v level={level} -v n="$n" -v m="$(cat "$d/machine")" -v seed="${{BENCHLANG_SEED:-1}}" \\
  'BEGIN {{ split(m, k, " "); srand(seed % 2147483647); u = 1 - rand(); v = rand();
  f = level * k[1] * (1 + 0.08 * sin(n / 12 + k[2]));
  printf "time %.6f\\n", f * exp(0.02 * sqrt(-2 * log(u)) * cos(6.283185307 * v)) }}'
"""
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    env = os.environ | GIT_ENV
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env)
    return done.stdout.strip()


def make_repo(root: Path, slow: float, suite: int = 4) -> None:
    """Three commits: c0, c1 (a docs-only change), c2 (b1 x ``slow``)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "s@example.org")
    git(root, "config", "user.name", "sim")
    (root / ".git" / "info" / "exclude").write_text("sim.bench\n")
    for c in range(3):
        for i in range(suite):
            level = slow if (c == 2 and i == 1) else 1.0
            (root / f"b{i}.sh").write_text(TIMED.format(note=f"b{i}", level=level))
        (root / "README").write_text(f"docs {c}\n")
        git(root, "add", ".")
        git(root, "commit", "-q", "-m", f"c{c}")


def compare(
    root: Path, base: str, head: str, seed: int, rounds: str, rng, suite: int = 4, extra=()
) -> dict:
    benchmarks = "\n".join(BENCHMARK.format(i=i) for i in range(suite))
    design = "" if rounds == "auto" else f"  design {{ runs {rounds} }}"
    (root / "sim.bench").write_text(SPEC.format(seed=seed, benchmarks=benchmarks, design=design))
    level = math.exp(rng.gauss(0.0, 0.10))
    (root / ".git" / "machine").write_text(f"{level:.6f} {rng.uniform(0, 2 * math.pi):.6f}\n")
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "compare", "sim.bench", "--base", base,
         "--head", head, "--margin", "2%", "--json", *extra],
        cwd=root, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise SystemExit(f"exit {done.returncode}: {done.stderr}")
    clean = (
        git(root, "status", "--porcelain") == ""
        and len(git(root, "worktree", "list").splitlines()) == 1
    )
    return json.loads(done.stdout) | {"clean": clean}


def spread(out: dict) -> list[float]:
    """Each row's sd of the within-round log ratio, from its interval."""
    from scipy import stats

    method, found = out["method"], []
    for row in out["rows"]:
        _, lo, up = row["ratio"]
        df = method.get("df") or row["rounds"] - 1
        if lo and up and lo > 0 and df >= 1:
            t = stats.t.ppf(1 - (1 - method["row_confidence"] / 100) / 2, df)
            found.append((math.log(up) - math.log(lo)) / 2 * math.sqrt(row["rounds"]) / t)
    return found


def coverage(datasets: int) -> None:
    """The two-stage interval's coverage by simulation: normal and heavy-tailed (t, 4 df)
    contrasts; a second stage noisier than the pilot (x1.5, x2: a shared runner that moved);
    a count that rarely changes (100, or 160 in 3% of trials: a pilot with no spread) in a suite
    whose time row (sd 3%) sizes the rounds. Columns:
    the interval benchlang uses (the wider of Stein's and the paired t on all n), Stein's
    alone, the paired t on all n alone."""
    import numpy as np

    from benchlang.stats._special import t_ppf
    from benchlang.stats.round_contrast import round_contrast
    from benchlang.stats.two_stage import stein_interval, stein_rounds

    rng = np.random.default_rng(20261128)
    mu = math.log(1.03)
    print(f"{'contrast':16} {'sd':>5} {'pilot':>5} {'cap':>4} {'level':>6} {'rounds (mean)':>14} "
          f"{'used covers':>12} {'Stein alone':>12} {'t on all n':>11}")  # fmt: skip

    def draw(k, law, sd, stage):
        if law == "count":
            base = 100.0 + 60.0 * (rng.random(k) < 0.03)
            head = 100.0 + 60.0 * (rng.random(k) < 0.03)
            return np.log(head / base)
        scale = sd * (1.0 if stage == 1 else float(law.split("x")[1]) if "x" in law else 1.0)
        if law.startswith("t4"):
            return mu + scale * rng.standard_t(4, k) / math.sqrt(2.0)
        return rng.normal(mu, scale, k)

    settings = [(law, sd) for law in ("normal", "t4") for sd in (0.01, 0.03)]
    settings += [("normal, stage 2 x1.5", 0.03), ("normal, stage 2 x2", 0.03), ("count", 0.03)]
    for law, sd in settings:
        truth = 0.0 if law == "count" else mu
        for pilot in (5, 10):
            for cap, level in ((None, 95.0), (None, 99.5), (20, 99.5)):
                alpha = (100.0 - level) / 200.0
                used = stein = naive = total = 0
                for _ in range(datasets):
                    first = draw(pilot, law, sd, 1)
                    rows = [first.std(ddof=1)] + ([sd] if law == "count" else [])
                    size = stein_rounds(np.array(rows), pilot, math.log(1.02), alpha, 0.8, cap)
                    x = np.concatenate([first, draw(size.rounds - pilot, law, sd, 2)])
                    c = stein_interval(x, pilot, level)
                    used += c.lower <= truth <= c.upper
                    half = t_ppf(1 - alpha, pilot - 1) * first.std(ddof=1) / math.sqrt(x.size)
                    stein += abs(x.mean() - truth) <= half
                    p = round_contrast(np.exp(np.c_[np.zeros(x.size), x]), (-1, 1), level)
                    naive += p.lower <= truth <= p.upper
                    total += size.rounds
                print(f"{law:16} {100 * sd:>4.0f}% {pilot:>5} {cap or '-':>4} {level:>5}% "
                      f"{total / datasets:>14.1f} {used / datasets:>12.3f} "
                      f"{stein / datasets:>12.3f} {naive / datasets:>11.3f}")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicates", type=int, default=10)
    p.add_argument("--rounds", default="20", help="rounds, or auto (the two-stage sizing)")
    p.add_argument("--benchmarks", type=int, default=4, help="the suite's size (default: 4)")
    p.add_argument("--kind", default="all", choices=("aa_same", "aa_docs", "reg", "all"))
    p.add_argument("--max-time", help="passed to compare (with --rounds auto)")
    p.add_argument("--first", type=int, default=0, help="the first replicate's number")
    p.add_argument("--coverage", action="store_true", help="Stein's interval's coverage only")
    p.add_argument("--datasets", type=int, default=4000, help="--coverage: per setting")
    args = p.parse_args()
    if args.coverage:
        coverage(args.datasets)
        return
    extra = ["--max-time", args.max_time] if args.max_time else []
    kinds = [
        k
        for k in (
            ("aa_same", "HEAD~1", "HEAD~1"),
            ("aa_docs", "HEAD~2", "HEAD~1"),
            ("reg", "HEAD~1", "HEAD"),
        )
        if args.kind in ("all", k[0])
    ]
    kind_number = ("aa_same", "aa_docs", "reg", "all").index(args.kind)
    rng = random.Random(20261128 + 7919 * kind_number + 104729 * args.first)
    tally = {k[0]: [0, 0] for k in kinds}
    rounds = {k[0]: [] for k in kinds}
    sds = {k[0]: [] for k in kinds}
    dirty = 0
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "repo"
        make_repo(root, 1.05, args.benchmarks)
        for r in range(args.first, args.first + args.replicates):
            for kind, base, head in kinds:
                out = compare(root, base, head, 1000 + r, args.rounds, rng, args.benchmarks, extra)
                worse = {row["configuration"] for row in out["rows"] if row["verdict"] == "worse"}
                hit = ("b1" in worse) if kind == "reg" else bool(worse)
                tally[kind][0] += hit
                tally[kind][1] += 1
                rounds[kind].append(max(row["rounds"] for row in out["rows"]))
                sds[kind] += spread(out)
                dirty += not out["clean"]
    n = args.benchmarks
    print(f"rounds {args.rounds}, suite of {n}, margin 2%, Bonferroni over {n} rows")
    print(f"{'compare':34} {'count':>9} {'rounds (mean)':>14} {'contrast sd (median)':>21}")
    names = {
        "aa_same": "A/A base vs base: any worse",
        "aa_docs": "A/A docs-only commit: any worse",
        "reg": "b1 +5%: b1 named worse",
    }
    for kind, _, _ in kinds:
        hit, total = tally[kind]
        mean_rounds = sum(rounds[kind]) / len(rounds[kind])
        sd = sorted(sds[kind])[len(sds[kind]) // 2] if sds[kind] else math.nan
        print(f"{names[kind]:34} {hit:>3} / {total:<3} {mean_rounds:>14.1f} {100 * sd:>20.2f}%")
    print(f"repository not clean after a compare: {dirty}")


if __name__ == "__main__":
    main()
