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

``--smoothed``: the smoothed bootstrap (Hall, DiCiccio & Romano, Ann. Stat. 17(2), 1989; De
Angelis & Young, Int. Stat. Rev. 60(1), 1992), n values resampled explicitly plus kernel
noise, on the three distributions and lognormal(log 5, 0.3) rounded to 1 (times rounded to
1 ms); its last table is ``_kpi_bootstrap_table.SMOOTHED_MIN_N`` (run with --datasets 1000
--replicates 1000, 275 s).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.special import bdtr, ndtri

from benchlang.stats._kpi_bootstrap_table import CONFIDENCES, SIZES
from benchlang.stats.kpi_bootstrap import (
    bootstrap_bounds,
    jackknife_percentiles,
    sample_rank,
    smoothed_replicates,
)

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
    cdf = 1.0 - bdtr(k - 1, n, np.arange(1, n + 1) / n)
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


SMOOTHED_SIZES = (10, 20, 30, 59, 100, 200, 300)
SMOOTHED_DISTS = {
    **DISTS,
    "lognormal(log 5, 0.3) rounded to 1": (
        lambda rng, shape: np.round(rng.lognormal(math.log(5.0), 0.3, shape)),
        lambda q: float(np.round(5.0 * math.exp(0.3 * ndtri(q)))),
    ),
}
"""The smoothed cells also face times rounded to 1 ms (about 5 ms: five or so distinct
values); the p-quantile of the rounded values is the rounded p-quantile (rounding is
monotone)."""
SMOOTHED_PERCENTILES = ((50.0, "upper"), (90.0, "upper"), (95.0, "upper"), (50.0, "lower"))


def simulate_smoothed(datasets: int, b: int, seed: int) -> dict[tuple, float]:
    """(dist, p, side, confidence, n) -> coverage of the smoothed bootstrap's percentile bound
    (``kpi_bootstrap.smoothed_replicates``: n values resampled explicitly, each plus h times
    a standard normal draw), data sets in blocks of bounded memory."""
    out = {}
    for d, (dist, (draw, quantile)) in enumerate(SMOOTHED_DISTS.items()):
        for n in SMOOTHED_SIZES:
            rng = np.random.default_rng([seed, d, n, 1])
            ordered = np.sort(draw(rng, (datasets, n)), axis=1)
            block = max(1, 2_000_000 // (b * n))
            hits = {}
            for start in range(0, datasets, block):
                rows = ordered[start : start + block]
                idx = rng.integers(0, n, (rows.shape[0], b, n))
                noise = rng.standard_normal((rows.shape[0], b, n))
                for p, side in SMOOTHED_PERCENTILES:
                    k = sample_rank(n, p / 100)
                    reps = smoothed_replicates(rows, idx, noise, k)
                    truth = quantile(p / 100)
                    for c in CONFIDENCES:
                        got = bootstrap_bounds(rows[:, k - 1], reps, rows, c, side, "percentile")
                        v = got["value"]
                        hit = (v >= truth) if side == "upper" else (v <= truth)
                        hits.setdefault((p, side, c), []).append(hit)
            for (p, side, c), h in hits.items():
                out[(dist, p, side, c, n)] = float(np.concatenate(h).mean())
    return out


def smoothed_main(args: argparse.Namespace) -> None:
    """The smoothed bootstrap's coverage tables and its SMOOTHED_MIN_N (same criterion)."""
    start = time.perf_counter()
    cov = simulate_smoothed(args.datasets, args.replicates, args.seed)
    print(
        f"# coverage (%) of the smoothed bootstrap's one-sided bounds, {args.datasets} data sets "
        f"per cell, {args.replicates} replicates, seed {args.seed}; * = more than 1.96 SE below"
    )
    table = {}
    for c in CONFIDENCES:
        se = math.sqrt(c / 100 * (1 - c / 100) / args.datasets)
        print(f"\n## smoothed, nominal {c:g}% (Monte Carlo SE {100 * se:.2f} points)\n")
        print("| data | bound | " + " | ".join(f"n={n}" for n in SMOOTHED_SIZES) + " |")
        print("| --- | --- |" + " ---: |" * len(SMOOTHED_SIZES))
        for dist in SMOOTHED_DISTS:
            for p, side in SMOOTHED_PERCENTILES:
                cells = []
                for n in SMOOTHED_SIZES:
                    share = cov[(dist, p, side, c, n)]
                    cells.append(
                        f"{100 * share:.1f}" + ("*" if share < c / 100 - 1.96 * se else "")
                    )
                print(f"| {dist} | {side} p{p:g} | " + " | ".join(cells) + " |")
        for p, side in SMOOTHED_PERCENTILES:
            ok = [
                all(cov[(d, p, side, c, n)] >= c / 100 - 1.96 * se for d in SMOOTHED_DISTS)
                for n in SMOOTHED_SIZES
            ]
            first = next((n for i, n in enumerate(SMOOTHED_SIZES) if all(ok[i:])), None)
            table[("smoothed", side, p, c)] = first
    print("\n## smallest n (benchlang/stats/_kpi_bootstrap_table.py SMOOTHED_MIN_N)\n")
    print("SMOOTHED_MIN_N = {")
    for key, n in sorted(table.items()):
        print(f"    {key!r}: {n!r},")
    print("}")
    print(f"\n({time.perf_counter() - start:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20260)
    parser.add_argument("--smoothed", action="store_true", help="the smoothed bootstrap's cells")
    args = parser.parse_args()
    if args.smoothed:
        smoothed_main(args)
        return
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
        if n is not None:  # a cell absent: no simulated n reached the level
            print(f"    {key!r}: {n!r},")
    print("}")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
