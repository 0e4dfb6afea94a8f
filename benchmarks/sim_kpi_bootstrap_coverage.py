"""Coverage of the KPI bootstrap bounds (percentile and BCa) by simulation (docs/statistics.md,
"KPI by bootstrap"); its last table is ``benchlang/stats/_kpi_bootstrap_table.MIN_N``.

For each distribution, n and percentile, ``--datasets`` seeded data sets (default 1,000) get a
one-sided bootstrap bound with ``--replicates`` replicates (default 2,000) through the
method's own functions (``benchlang.stats.kpi_bootstrap``: jackknife, bias correction,
acceleration, adjusted level). The replicates of the sample percentile x_(k) are drawn
exactly, without resampling n values each: the k-th smallest of n indices drawn with
replacement is <= j with probability P(Bin(n, (j+1)/n) >= k), so one uniform per replicate
gives it by inversion (tests/test_kpi_bootstrap.py checks this against explicit resampling).
Upper bounds for p >= 50, lower bounds for p <= 50; coverage = share of bounds on the right
side of the true percentile (an undefined BCa bound counts as a miss).

    python benchmarks/sim_kpi_bootstrap_coverage.py [--datasets 1000] [--replicates 2000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.special import ndtri

from benchlang.stats._kpi_bootstrap_table import CONFIDENCES, SIZES
from benchlang.stats._orderstat import binom_cdf
from benchlang.stats.kpi_bootstrap import bootstrap_bounds, jackknife_percentiles, sample_rank

DISTS = {
    "lognormal": (lambda rng, shape: rng.lognormal(0.0, 1.0, shape), lambda q: math.exp(ndtri(q))),
    "normal": (lambda rng, shape: rng.normal(0.0, 1.0, shape), lambda q: float(ndtri(q))),
    "exponential": (lambda rng, shape: rng.exponential(1.0, shape), lambda q: -math.log1p(-q)),
}
PERCENTILES = ((50.0, "upper"), (90.0, "upper"), (95.0, "upper"), (99.0, "upper"))
PERCENTILES += ((50.0, "lower"), (10.0, "lower"), (5.0, "lower"), (1.0, "lower"))
INTERVALS = ("percentile", "bca")


def replicates_of_rank(rng, ordered: np.ndarray, k: int, b: int) -> np.ndarray:
    """``b`` bootstrap replicates of x_(k) for each row of ``ordered`` (m x n, sorted)."""
    m, n = ordered.shape
    cdf = 1.0 - binom_cdf(k - 1, n, np.arange(1, n + 1) / n)
    j = np.minimum(np.searchsorted(cdf, rng.random((m, b)), side="left"), n - 1)
    return np.take_along_axis(ordered, j, axis=1)


def simulate(datasets: int, b: int, seed: int) -> dict[tuple, tuple[float, float]]:
    """(interval, dist, p, side, confidence, n) -> (coverage, share undefined)."""
    out = {}
    for d, (dist, (draw, quantile)) in enumerate(DISTS.items()):
        for n in SIZES:
            rng = np.random.default_rng([seed, d, n])
            ordered = np.sort(draw(rng, (datasets, n)), axis=1)
            for p, side in PERCENTILES:
                k = sample_rank(n, p / 100)
                reps = replicates_of_rank(rng, ordered, k, b)
                estimate = ordered[:, k - 1]
                jack = jackknife_percentiles(ordered, p / 100)
                truth = quantile(p / 100)
                for c in CONFIDENCES:
                    for interval in INTERVALS:
                        got = bootstrap_bounds(estimate, reps, jack, c, side, interval)
                        v = got["value"]
                        hit = (v >= truth) if side == "upper" else (v <= truth)
                        hit &= np.isfinite(v)
                        key = (interval, dist, p, side, c, n)
                        out[key] = (float(hit.mean()), float(got["degenerate"].mean()))
    return out


def thresholds(cov: dict, datasets: int) -> dict[tuple[str, str, float, float], int | None]:
    """Smallest n from which on every distribution covers within 1.96 SE of nominal."""
    out = {}
    for interval in INTERVALS:
        for p, side in PERCENTILES:
            for c in CONFIDENCES:
                se = math.sqrt(c / 100 * (1 - c / 100) / datasets)
                ok = [
                    all(
                        cov[(interval, dist, p, side, c, n)][0] >= c / 100 - 1.96 * se
                        for dist in DISTS
                    )
                    for n in SIZES
                ]
                first = None
                for i in range(len(SIZES)):
                    if all(ok[i:]):
                        first = SIZES[i]
                        break
                out[(interval, side, p, c)] = first
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20260)
    args = parser.parse_args()
    start = time.perf_counter()
    cov = simulate(args.datasets, args.replicates, args.seed)
    print(
        f"# coverage (%) of one-sided KPI bootstrap bounds, {args.datasets} data sets per cell, "
        f"{args.replicates} replicates, seed {args.seed}; * = more than 1.96 SE below nominal"
    )
    for c in CONFIDENCES:
        se = math.sqrt(c / 100 * (1 - c / 100) / args.datasets)
        for interval in INTERVALS:
            print(f"\n## {interval}, nominal {c:g}%\n")
            print("| data | bound | " + " | ".join(f"n={n}" for n in SIZES) + " |")
            print("| --- | --- |" + " ---: |" * len(SIZES))
            for dist in DISTS:
                for p, side in PERCENTILES:
                    cells = []
                    for n in SIZES:
                        share = cov[(interval, dist, p, side, c, n)][0]
                        star = "*" if share < c / 100 - 1.96 * se else ""
                        cells.append(f"{100 * share:.1f}{star}")
                    print(f"| {dist} | {side} p{p:g} | " + " | ".join(cells) + " |")
    worst = max(v[1] for v in cov.values())
    print(f"\nlargest share of undefined BCa bounds in a cell: {100 * worst:.1f}%")
    table = thresholds(cov, args.datasets)
    print("\n## smallest n (benchlang/stats/_kpi_bootstrap_table.py MIN_N)\n")
    print("MIN_N = {")
    for key, n in table.items():
        print(f"    {key!r}: {n!r},")
    print("}")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
