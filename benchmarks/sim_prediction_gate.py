"""The CI gate's prediction tests alone (stats.prediction; docs/statistics.md "The CI gate"):
how often a newest run with no change is called worse, by segment length, by the shape of the
run-to-run spread, for the t prediction interval and the distribution-free rank bound, and for
one check of k series under Holm.

Each dataset: a segment of n log levels and one new level drawn from the same distribution
(no change; the margin 0, so the new level sits on the null's edge), of three shapes, each with
unit spread: normal; Student's t with 3 df (heavy tails: a runner now and then far off);
a centred exponential (skewed: slow sessions longer than fast ones). "t" is ``predict`` without
the rank bound; "rank" with it (used from n >= 19 at 5%). The family: k = 4 series whose levels
share a session factor (correlation ``rho`` between the series of one run), the series'
p-values adjusted by Holm (stats.family.holm) as history.gate does; a check "fails" when any
adjusted p-value is at most 5%. Vardeman's point (Am. Stat. 46(3), 1992): the 5% is over
segments; for normal levels the chance that a new run is called worse given one segment is
1 - Phi(x_bar + q s sqrt(1 + 1/n)) (unit spread, q the t quantile): its 10th, 50th and 90th
percentiles over segments are printed.

Baseline: the nominal 5%. Monte Carlo SE of a rate near 5% over R datasets: sqrt(.05 .95 / R).

    nice -n 10 python3 benchmarks/sim_prediction_gate.py [--datasets 4000] [--families 2000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from benchlang.stats.family import holm
from benchlang.stats.prediction import distribution_free_minimum, predict

ALPHA = 0.05


def draw(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> np.ndarray:
    """Levels of unit spread and mean 0."""
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "t3":
        return rng.standard_t(3, size) / math.sqrt(3.0)
    return rng.exponential(1.0, size) - 1.0


def single(rng: np.random.Generator, n: int, shape: str, datasets: int, rank: bool) -> float:
    """Share of datasets whose new level is called worse at 5%."""
    x = draw(rng, shape, (datasets, n + 1))
    hits = 0
    for row in x:
        p = predict(row[:n], row[n:], 0.0, rank_alpha=ALPHA if rank else None)
        hits += p.p_worse <= ALPHA
    return hits / datasets


def family(rng: np.random.Generator, n: int, shape: str, rho: float, k: int, runs: int) -> float:
    """Share of checks of k series (levels correlated ``rho`` within a run) with any series
    called worse after Holm."""
    fails = 0
    rank_alpha = ALPHA / k
    for _ in range(runs):
        shared = draw(rng, shape, (n + 1, 1))
        own = draw(rng, shape, (n + 1, k))
        x = math.sqrt(rho) * shared + math.sqrt(1.0 - rho) * own
        p = [predict(x[:n, j], x[n:, j], 0.0, rank_alpha=rank_alpha).p_worse for j in range(k)]
        fails += bool(np.any(holm(np.array(p)) <= ALPHA))
    return fails / runs


def conditional(rng: np.random.Generator, n: int, datasets: int) -> tuple[float, float, float]:
    """Percentiles 10, 50, 90 over normal segments of the chance a new run is called worse."""
    from scipy.special import ndtr, stdtrit

    x = rng.standard_normal((datasets, n))
    q = stdtrit(n - 1, 1.0 - ALPHA)
    edge = x.mean(axis=1) + q * x.std(axis=1, ddof=1) * math.sqrt(1.0 + 1.0 / n)
    chance = 1.0 - ndtr(edge)
    lo, mid, hi = np.percentile(chance, [10, 50, 90])
    return float(lo), float(mid), float(hi)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=4000)
    parser.add_argument("--families", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=48)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    shapes = ("normal", "t3", "skewed")
    se = math.sqrt(ALPHA * (1 - ALPHA) / args.datasets)
    print(f"one series, new run called worse at 5% ({args.datasets} datasets a cell, SE {se:.3f})")
    print("| n | method | " + " | ".join(shapes) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in shapes) + " |")
    least = distribution_free_minimum(ALPHA)
    for n in (5, 10, 19, 40, 80):
        methods = ("t", "rank") if n >= least else ("t",)
        for method in methods:
            rates = [single(rng, n, s, args.datasets, method == "rank") for s in shapes]
            print(f"| {n} | {method} | " + " | ".join(f"{r:.3f}" for r in rates) + " |")
    se = math.sqrt(ALPHA * (1 - ALPHA) / args.families)
    print(f"\ncheck of 4 series under Holm, any called worse ({args.families} checks, SE {se:.3f})")
    print("| n | correlation between series | normal | t3 |")
    print("| --- | --- | --- | --- |")
    for n in (10, 80):
        for rho in (0.0, 0.9):
            rates = [family(rng, n, s, rho, 4, args.families) for s in ("normal", "t3")]
            print(f"| {n} | {rho} | " + " | ".join(f"{r:.3f}" for r in rates) + " |")
    print("\nnormal levels: chance a new run is called worse given the segment (percentiles)")
    print("| n | 10th | median | 90th |")
    print("| --- | --- | --- | --- |")
    for n in (5, 10, 20, 80):
        lo, mid, hi = conditional(rng, n, 20000)
        print(f"| {n} | {lo:.3f} | {mid:.3f} | {hi:.3f} |")


if __name__ == "__main__":
    main()
