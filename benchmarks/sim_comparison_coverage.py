"""Coverage of the comparison built-ins' intervals by simulation (docs/statistics-methods.md).

For each method and distribution, ``--datasets`` seeded data sets (default 2000) with a known
true effect go through the method's implementation (the registry's, as a spec would call it);
the script prints the share of intervals that contain the truth (coverage, to be >= nominal),
and for the equivalence test the rate of "equivalent" verdicts when the true ratio lies exactly
on the margin (its Type I error, to be <= alpha) and inside it (its power).

    python benchmarks/sim_comparison_coverage.py [--datasets 2000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchlang.stats.contract import ComparisonSample
from benchlang.stats.registry import statistics_methods

SHIFT_DISTS = {
    "normal": lambda rng, n: rng.normal(size=n),
    "lognormal(1)": lambda rng, n: rng.lognormal(0.0, 1.0, size=n),
    "exponential": lambda rng, n: rng.exponential(size=n),
    "t(3)": lambda rng, n: rng.standard_t(3, size=n),
}
POSITIVE_DISTS = {
    "lognormal(0.5)": lambda rng, n: rng.lognormal(0.0, 0.5, size=n),
    "gamma(2)": lambda rng, n: rng.gamma(2.0, size=n) / 1.678,  # median of gamma(2) is 1.678
    "1+exponential": lambda rng, n: (1.0 + rng.exponential(size=n)) / (1.0 + math.log(2)),
}


def two_levels(a: np.ndarray, b: np.ndarray, clusters: int, seed: int) -> ComparisonSample:
    """Level 0 = a, level 1 = b; each level's trials in ``clusters`` series (one host), each
    trial its own round."""
    y = np.concatenate([a, b])
    level = np.repeat([0, 1], [a.size, b.size])
    series = np.concatenate([np.arange(a.size) % clusters, clusters + np.arange(b.size) % clusters])
    zeros = np.zeros(y.size, dtype=np.int64)
    return ComparisonSample(
        y=y,
        level=level,
        names=("a", "b"),
        reference=0,
        request=zeros,
        host=zeros,
        series=series,
        round=np.arange(y.size),
        batch=zeros,
        seed=seed,
    )


def mann_whitney(datasets: int) -> None:
    method = statistics_methods()["mann_whitney"]
    run = method.load()
    print("mann_whitney: Hodges-Lehmann shift, 95% interval, true shift 0.5")
    for (m, n), mode in (((8, 10), "exact"), ((30, 40), "exact"), ((30, 40), "asymptotic")):
        for k, (name, draw) in enumerate(SHIFT_DISTS.items()):
            rng = np.random.default_rng([1, k])
            hit = 0
            widths = []
            for i in range(datasets):
                x, y = draw(rng, m), draw(rng, n) + 0.5
                o = run(two_levels(x, y, 1, i), {"confidence": 95.0, "exact": mode})
                hit += o.ci_low <= 0.5 <= o.ci_high
                widths.append(o.ci_high - o.ci_low)
            print(
                f"  m={m:<3} n={n:<3} {mode:<10} {name:<13} coverage {100 * hit / datasets:5.1f}%"
                f"  (nominal 95%, achieved {o.achieved_confidence:.4g}%)"
            )


def median_ratio(datasets: int) -> None:
    run = statistics_methods()["median_ratio"].load()
    print("median_ratio: 95% clustered interval, 8 series x 5 trials per level, true ratio 1.3")
    for k, (name, draw) in enumerate(POSITIVE_DISTS.items()):
        rng = np.random.default_rng([2, k])
        hit = 0
        for i in range(datasets):
            a = draw(rng, 40) * np.repeat(np.exp(rng.normal(0, 0.05, 8)), 5)
            b = 1.3 * draw(rng, 40) * np.repeat(np.exp(rng.normal(0, 0.05, 8)), 5)
            o = run(two_levels(a, b, 8, i), {"confidence": 95.0, "replicates": 1000})
            hit += o.ci_low <= 1.3 <= o.ci_high
        print(f"  {name:<15} coverage {100 * hit / datasets:5.1f}% (nominal 95%)")


def equivalence(datasets: int) -> None:
    run = statistics_methods()["equivalence"].load()
    print("equivalence: TOST, margin 2%, alpha 0.05, 40 trials per level in 8 series")
    for truth, label in (
        (1.02, "on the upper margin"),
        (1 / 1.02, "on the lower margin"),
        (1.0, "no change"),
    ):
        for k, (name, draw) in enumerate(POSITIVE_DISTS.items()):
            rng = np.random.default_rng([3, k])
            equivalent = 0
            for i in range(datasets):
                a = draw(rng, 40) * 0.02 + 1.0  # a tight metric: 2% spread around 1
                b = truth * (draw(rng, 40) * 0.02 + 1.0)
                scale = 1.0 + 0.02 * np.median(draw(np.random.default_rng(0), 200_000))
                a, b = a / scale, b / scale
                o = run(
                    two_levels(a, b, 8, i),
                    {"margin": 2.0, "alpha": 0.05, "replicates": 1000},
                )
                equivalent += o.verdict == "equivalent"
            rate = 100 * equivalent / datasets
            what = "Type I error" if truth != 1.0 else "power"
            print(f"  ratio {truth:.4f} ({label:<19}) {name:<15} {what} {rate:5.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--only", choices=("mann_whitney", "median_ratio", "equivalence"))
    args = parser.parse_args()
    for name, fn in (
        ("mann_whitney", mann_whitney),
        ("median_ratio", median_ratio),
        ("equivalence", equivalence),
    ):
        if args.only in (None, name):
            start = time.perf_counter()
            fn(args.datasets)
            print(f"  ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
