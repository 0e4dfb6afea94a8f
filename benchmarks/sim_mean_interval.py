"""Coverage of the per-configuration mean's interval (docs/statistics.md, "Per-configuration
summaries"): the cluster-robust t(G - 1) interval over cluster means that ``results`` prints
(benchlang/stats/summaries.py; Cameron & Miller 2015 §4, Donald & Lang 2007) beside the naive
t(N - 1) interval that treats every trial as independent.

Each cell draws ``--datasets`` seeded data sets of G clusters (hosts, series or rounds) with m
trials each: value = 10 + cluster effect + residual, the two normal (or, ``skewed``, centred
exponential) with variances ICC and 1 - ICC, so ICC is the share of the variance between
clusters. The true mean is 10. Monte Carlo SE of a 95% coverage over 2,000 data sets: 0.5%.

    python benchmarks/sim_mean_interval.py [--datasets 2000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchlang.stats._special import t_ppf
from benchlang.stats.summaries import summarize

CLUSTERS = (3, 5, 10, 20)
TRIALS = (5, 20)
ICCS = (0.0, 0.1, 0.3)


def draw(rng: np.random.Generator, E: int, G: int, m: int, icc: float, skewed: bool):
    """(E, G, m) values: a cluster effect shared by m trials, and a residual."""

    def noise(size: tuple) -> np.ndarray:
        return rng.exponential(1.0, size) - 1.0 if skewed else rng.normal(0.0, 1.0, size)

    return 10.0 + math.sqrt(icc) * noise((E, G, 1)) + math.sqrt(1.0 - icc) * noise((E, G, m))


def cell(G: int, m: int, icc: float, skewed: bool, datasets: int, seed: int) -> tuple:
    """Coverage (%) of the cluster interval and of the naive iid t interval, and the ratio of
    their mean widths. The vectorised cluster interval is checked against ``summarize`` (what
    ``results`` prints) on the first data sets."""
    y = draw(np.random.default_rng(seed), datasets, G, m, icc, skewed)
    n = G * m
    mean = y.mean(axis=(1, 2))
    # CR1 with equal sizes: Student's t on the G cluster means (stats/summaries.py)
    se_c = y.mean(axis=2).std(axis=1, ddof=1) / math.sqrt(G)
    half_c = t_ppf(0.975, G - 1) * se_c
    half_n = t_ppf(0.975, n - 1) * y.reshape(datasets, n).std(axis=1, ddof=1) / math.sqrt(n)
    clusters = np.repeat(np.arange(G), m)[:, None]
    for e in range(5):
        s = summarize(y[e].ravel(), clusters, ("cluster",))
        assert math.isclose(s.upper - s.lower, 2 * half_c[e], rel_tol=1e-9), "summarize differs"
    err = np.abs(mean - 10.0)
    return (
        100 * float(np.mean(err <= half_c)),
        100 * float(np.mean(err <= half_n)),
        float(half_c.mean() / half_n.mean()),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=2000)
    args = ap.parse_args()
    start = time.perf_counter()
    se = 100 * math.sqrt(0.95 * 0.05 / args.datasets)
    print(
        f"coverage of nominal 95% intervals of the mean, {args.datasets} data sets a cell "
        f"(Monte Carlo SE {se:.1f}%)"
    )
    print("| effects | G | m | ICC | cluster t(G-1) | naive t(N-1) | width cluster/naive |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    seed = 0
    for skewed in (False, True):
        for G in CLUSTERS:
            for m in TRIALS:
                for icc in ICCS:
                    seed += 1
                    c, naive, ratio = cell(G, m, icc, skewed, args.datasets, seed)
                    kind = "skewed" if skewed else "normal"
                    print(
                        f"| {kind} | {G} | {m} | {icc:.1f} | {c:.1f}% | {naive:.1f}% "
                        f"| {ratio:.2f} |"
                    )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
