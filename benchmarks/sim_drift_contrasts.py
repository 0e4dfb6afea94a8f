"""Answers under drift from the within-round contrasts: false claims per run, A/A.

Issue 47 item 2. Each simulated run has the shape of a benchlang plan in random order
(``series`` series of ``rounds`` rounds, each round every configuration once in a fresh random
order, the trial's index in the plan its time). Values are lognormal (sigma 0.1) on identical
configurations (A/A: every claim is false), times

- none: nothing (the run-level check passes in about 95% of runs);
- drift 20%: (1 + 0.2 t / N), a machine that slows by 20% over the run, every configuration
  alike (assumptions (a)-(c) hold);
- own trend 20% (50%): the drift, and configuration 0 also slows by 20% (50%) over the run on
  its own (a violation of (c): the contrasts' check should refuse the answer; the rate at
  which it does is the check's power).

Each run goes through the functions the CLI calls: the run-level verdict
(``stats.run_independence.metric_tests`` + ``run_verdict``), the ranking with its intervals
(``stats.headline.rank``, clusters host x series x round as ``report.headline``), and, when the
run-level check failed, the within-round contrasts' check
(``stats.contrast_independence.contrast_independence``, as ``report.ranking_basis.drift_basis``
calls it). Intervals are given when the run-level check passed, or when it failed and the
contrasts' check passed (``report.ranking_basis.checked``); a false claim is an interval that
excludes 1. Before this change a failed run-level check gave no interval. Seeded; prints the
table docs/statistics.md shows; Monte Carlo standard error of a rate p over R runs:
sqrt(p(1 - p)/R).

    python benchmarks/sim_drift_contrasts.py [--runs 1000] [--replicates 2000]
"""

from __future__ import annotations

import argparse
import inspect
import math

import numpy as np

from benchlang.stats.contrast_independence import contrast_independence
from benchlang.stats.headline import rank
from benchlang.stats.run_independence import metric_tests, run_verdict

_OPTIONS = inspect.signature(rank).parameters
EACH_ALONE = {"family": "alone"} if "family" in _OPTIONS else {"joint": False}
"""Each comparison with the observed best on its own: the intervals before issue 47 item 1."""
SHAPES = [(5, 5, 5), (5, 1, 30), (3, 5, 5)]
SCENARIOS = ("none", "drift 20%", "own trend 20%", "own trend 50%")


def one_run(k: int, series: int, rounds: int, scenario: str, rng, seed: int, replicates: int):
    """(run-level failed, contrasts passed or None, intervals given, and for the ranking's
    intervals as the CLI gives them (joint) and for those each alone: comparisons, false
    claims)."""
    n_rounds = series * rounds
    config = np.argsort(rng.random((n_rounds, k)), axis=1).ravel()
    round_id = np.repeat(np.arange(n_rounds), k)
    series_of = round_id // rounds
    t = np.arange(config.size)
    n = config.size
    v = np.exp(0.1 * rng.standard_normal(n))
    if scenario != "none":
        v *= 1 + 0.2 * t / n
    if scenario.startswith("own trend"):
        own = float(scenario.split()[-1].rstrip("%")) / 100
        v *= np.where(config == 0, 1 + own * t / n, 1.0)
    verdict = run_verdict(metric_tests("t", v, config, series_of, t, seed=seed))
    contrasts = None
    if not verdict.passed:
        contrasts = contrast_independence("t", v, config, round_id, series_of, t, seed=seed).passed
    given = verdict.passed or bool(contrasts)
    if not given or scenario.startswith("own trend"):  # not A/A: no claim is false
        return not verdict.passed, contrasts, given, (0, 0), (0, 0)
    clusters = np.stack([np.zeros(n, np.int64), series_of, round_id % rounds], axis=1)
    out = []
    for alone in (False, True):
        ranking = rank(
            v,
            config,
            clusters,
            level_names=("host", "series", "round"),
            replicates=replicates,
            seed=seed,
            **(EACH_ALONE if alone else {}),
        )
        made = [c for c in ranking.comparisons if math.isfinite(c.lower)]
        out.append((len(made), sum(c.lower > 1.0 or c.upper < 1.0 for c in made)))
    return not verdict.passed, contrasts, given, out[0], out[1]


def rate(x: float, n: int) -> str:
    """A rate with its Monte Carlo standard error; none seen: the rule of three's 95% bound."""
    if x == 0:
        return f"0.0% (95% bound {300 / n:.1f}%)"
    return f"{100 * x:.1f}% ± {100 * math.sqrt(x * (1 - x) / n):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--only", help="one shape, e.g. 5x5x5", default=None)
    parser.add_argument("--no-header", action="store_true")
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="only these")
    args = parser.parse_args()
    shapes = [s for s in SHAPES if args.only in (None, "x".join(map(str, s)))]
    if not args.no_header:
        print(
            "| configurations x series x rounds | drift | run-level check failed | contrasts "
            "passed (of failed) | intervals given | joint: false claims per comparison | "
            "joint: runs with any false claim | each alone: per comparison | each alone: runs "
            "with any |"
        )
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k, series, rounds in shapes:
        for scenario in args.scenario or SCENARIOS:
            rng = np.random.default_rng([47, k, series, rounds, SCENARIOS.index(scenario)])
            rows = [
                one_run(k, series, rounds, scenario, rng, i, args.replicates)
                for i in range(args.runs)
            ]
            runs = args.runs
            failed = sum(r[0] for r in rows)
            passed = sum(bool(r[1]) for r in rows)
            given = sum(r[2] for r in rows)
            cells = []
            for which in (3, 4):
                comparisons = sum(r[which][0] for r in rows)
                false = sum(r[which][1] for r in rows)
                any_false = sum(r[which][1] > 0 for r in rows)
                if scenario.startswith("own trend") or not comparisons:
                    cells += ["-", "-"]
                else:
                    cells += [f"{100 * false / comparisons:.1f}%", rate(any_false / runs, runs)]
            contrasts = f"{passed} of {failed}" if failed else "-"
            print(
                f"| {k} x {series} x {rounds} | {scenario} | {100 * failed / runs:.1f}% | "
                f"{contrasts} | {100 * given / runs:.1f}% | " + " | ".join(cells) + " |",
                flush=True,
            )


if __name__ == "__main__":
    main()
