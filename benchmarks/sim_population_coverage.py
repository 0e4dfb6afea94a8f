"""Coverage of the population KPI and of the paired contrast over inputs by simulation
(docs/statistics.md, "KPIs over a population of inputs"; TriScale, Jacob et al. JSys 2021,
§5.3).

A population of inputs whose KPIs are lognormal(0, 0.5) (continuous) and the same rounded to
0.1 (ties); each data set samples N inputs and takes ``stats.population.population_kpi``
(upper bound of p50 and p75) and ``paired_over_inputs`` (two levels on the same inputs: the
second's KPI = the first's + 0.1 + input-level noise N(0, 0.2), so the population median
difference is 0.1). Coverage: share of data sets whose bound lies on the right side of the
population's true percentile (an interval: contains the true median difference); a refused
answer (too few inputs) is counted apart.

    python benchmarks/sim_population_coverage.py [--datasets 4000] [--seed 54]
"""

from __future__ import annotations

import argparse

import numpy as np

from benchlang.stats.population import paired_over_inputs, population_kpi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=54)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    big = rng.lognormal(0.0, 0.5, 2_000_000)
    print("| KPIs | N | statistic | asked | coverage | refused |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    for rounded in (False, True):
        pop = np.round(big, 1) if rounded else big
        kind = "lognormal, rounded to 0.1" if rounded else "lognormal"
        for n in (5, 8, 12, 20):
            for p, c in ((50, 95), (50, 75), (75, 95)):
                truth = np.percentile(pop, p)
                hits = refused = 0
                for _ in range(args.datasets):
                    k = population_kpi(rng.choice(pop, n), p, c, "upper")
                    refused += not k.enough
                    hits += k.enough and k.value >= truth
                done = args.datasets - refused
                cover = f"{100 * hits / done:.1f}%" if done else "—"
                print(
                    f"| {kind} | {n} | upper bound of p{p} | {c}% | {cover} | "
                    f"{100 * refused / args.datasets:.0f}% |"
                )
            hits = refused = 0
            for _ in range(args.datasets):
                a = rng.choice(pop, n)
                b = a + 0.1 + rng.normal(0.0, 0.2, n)
                r = paired_over_inputs(b, a, 95)
                refused += r.refusal is not None
                hits += r.refusal is None and r.lower <= 0.1 <= r.upper
            done = args.datasets - refused
            cover = f"{100 * hits / done:.1f}%" if done else "—"
            print(
                f"| {kind} | {n} | paired median difference | 95% | {cover} | "
                f"{100 * refused / args.datasets:.0f}% |"
            )


if __name__ == "__main__":
    main()
