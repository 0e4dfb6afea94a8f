"""Coverage of the two-sided KPI, ``kpi M { ... bound both }``, by simulation (docs/statistics.md,
"Two-sided KPIs"; issue 37, item 1).

The interval [X_(l), X_(u)] is distribution-free: for i.i.d. values of a continuous distribution
its coverage is exactly P(l <= Bin(n, p) <= u - 1) (Thompson 1936; Hahn & Meeker, Statistical
Intervals, §5.2), at least the nominal C from the two-sided minimum n on. This checks the
implementation against that claim: for each distribution, percentile, confidence and n (from
the two-sided minimum up to 200), ``--datasets`` seeded data sets (default 2,000) go through
``benchlang.stats.kpi.kpis`` (the method the analysis runs, all series of one length at
once); coverage = share of intervals holding the true percentile, with each side's miss rate
(equal-tailed: each at most (1 - C)/2). The Monte Carlo standard error of a coverage c over R
data sets is sqrt(c (1 - c) / R): 0.49 points at 95% and R = 2,000.

A discrete distribution (Poisson, mean 3: many ties) shows the claim's limit: with ties the
coverage is at least the exact one (an interval with tied ends still holds the percentile)
but no longer equal to it.

    python benchmarks/sim_kpi_two_sided.py [--datasets 2000] [--seed 37]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from benchlang.stats._orderstat import min_samples
from benchlang.stats.kpi import kpis

DISTS = {
    "normal": (lambda rng, shape: rng.normal(0.0, 1.0, shape), stats.norm(0.0, 1.0).ppf),
    "lognormal": (lambda rng, shape: rng.lognormal(0.0, 1.0, shape), stats.lognorm(1.0).ppf),
    "exponential": (lambda rng, shape: rng.exponential(1.0, shape), stats.expon().ppf),
    "poisson(3)": (lambda rng, shape: rng.poisson(3.0, shape).astype(float), stats.poisson(3).ppf),
}
CELLS = ((50.0, 95.0), (50.0, 99.0), (90.0, 95.0), (95.0, 95.0), (95.0, 90.0), (5.0, 95.0))
SIZES = (6, 10, 20, 30, 50, 72, 100, 150, 200)


def cell(draw, quantile, p: float, c: float, n: int, datasets: int, rng) -> tuple:
    """(exact coverage %, simulated coverage %, share below l, share above u) of one cell."""
    values = draw(rng, (datasets, n))
    found = kpis(list(values), p, c, "both")
    lower = np.array([k.lower for k in found])
    upper = np.array([k.upper for k in found])
    truth = float(quantile(p / 100))
    low_miss = float(np.mean(lower > truth))
    high_miss = float(np.mean(upper < truth))
    return found[0].achieved_confidence, 100 * (1 - low_miss - high_miss), low_miss, high_miss


def exact_side(p: float, c: float, n: int) -> float:
    """The larger exact one-side miss probability (%): P(Bin <= l - 1) or P(Bin >= u)."""
    (k,) = kpis([np.arange(float(n))], p, c, "both")
    low, high = k.ranks
    below = stats.binom.cdf(low - 1, n, p / 100)
    above = stats.binom.sf(high - 1, n, p / 100)
    return 100 * max(below, above)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    started = time.perf_counter()
    R = args.datasets
    print(f"Two-sided KPI coverage (%), {R} data sets per cell (seed {args.seed})")
    names = list(DISTS)
    print(
        "| percentile | confidence | n | exact | "
        + " | ".join(names)
        + " | one side's misses: exact, most simulated (continuous) |"
    )
    print("| ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in names) + " | ---: |")
    worst, short = 0.0, 0
    for p, c in CELLS:
        first = min_samples(p / 100, c / 100, "both")
        for n in sorted({first, *(s for s in SIZES if s >= first)}):
            cells, side = [], 0.0
            for d, (name, (draw, quantile)) in enumerate(DISTS.items()):
                rng = np.random.default_rng([args.seed, d, int(p * 10), int(c * 10), n])
                exact, simulated, low, high = cell(draw, quantile, p, c, n, R, rng)
                cells.append(f"{simulated:.2f}")
                if name != "poisson(3)":
                    se = 100 * math.sqrt(exact / 100 * (1 - exact / 100) / R)
                    worst = max(worst, abs(simulated - exact) / se)
                    short += simulated < c - 2 * se
                    side = max(side, 100 * low, 100 * high)
            print(
                f"| {p:g} | {c:g}% | {n} | {exact:.2f} | "
                + " | ".join(cells)
                + f" | {exact_side(p, c, n):.2f}, {side:.2f} (limit {(100 - c) / 2:g}) |"
            )
    print(
        f"\nMonte Carlo s.e. of a coverage c: sqrt(c (1 - c) / {R}), "
        f"{100 * math.sqrt(0.95 * 0.05 / R):.2f} points at 95%. Largest |simulated - exact| "
        f"over the continuous cells: {worst:.2f} s.e.; continuous cells more than 2 s.e. below "
        f"the nominal: {short}; "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
