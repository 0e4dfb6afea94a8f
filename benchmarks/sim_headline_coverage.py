"""Coverage of the headline's ratio intervals (stats/headline.py) by simulation: for each
design, 1,000 seeded datasets with series, round, series x configuration and noise effects
(log-normal values, configuration 1 exp(0.2) slower), the share of 95% intervals that hold
the true ratio, for the bootstrap that resamples every stage and the one that resamples the
top level only (docs/statistics.md, "Headline").

    python benchmarks/sim_headline_coverage.py [--datasets 1000] [--replicates 400]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchlang.stats.headline import rank

DESIGNS = {
    # name: (series, rounds, (sd series, sd round, sd series x config, sd noise), percentile)
    "5x5 series+round+interaction": (5, 5, (0.10, 0.05, 0.05, 0.05), 50.0),
    "5x5 round+noise only": (5, 5, (0.0, 0.05, 0.0, 0.05), 50.0),
    "5x20 interaction-heavy": (5, 20, (0.05, 0.02, 0.10, 0.05), 50.0),
    "10x10 series+round+interaction": (10, 10, (0.10, 0.05, 0.05, 0.05), 50.0),
    "20x5 noise only": (20, 5, (0.0, 0.0, 0.0, 0.10), 50.0),
    "8x25 p90": (8, 25, (0.05, 0.05, 0.05, 0.05), 90.0),
    "1x25 rounds are the top level": (1, 25, (0.0, 0.05, 0.0, 0.05), 50.0),
    "5x5 noise only": (5, 5, (0.0, 0.0, 0.0, 0.05), 50.0),
    "30x10 noise only": (30, 10, (0.0, 0.0, 0.0, 0.05), 50.0),
    "30x10 p90 series+round+interaction": (30, 10, (0.05, 0.05, 0.05, 0.05), 90.0),
    "30x10 p95 noise only": (30, 10, (0.0, 0.0, 0.0, 0.05), 95.0),
    "50x20 p90 interaction-heavy": (50, 20, (0.05, 0.02, 0.10, 0.05), 90.0),
    "100x10 series+round+interaction": (100, 10, (0.10, 0.05, 0.05, 0.05), 50.0),
    "100x10 p99 noise only": (100, 10, (0.0, 0.0, 0.0, 0.05), 99.0),
    "20x10 p90 series+round+interaction": (20, 10, (0.05, 0.05, 0.05, 0.05), 90.0),
}


def design(series: int, rounds: int, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Every configuration once per round, rounds in series: (configuration, clusters)."""
    s, r, c = np.meshgrid(np.arange(series), np.arange(rounds), np.arange(k), indexing="ij")
    return c.ravel(), np.stack([s.ravel(), s.ravel() * rounds + r.ravel()], axis=1)


def simulate(rng, series, rounds, effects, log_ratio) -> np.ndarray:
    sd_series, sd_round, sd_inter, sd_noise = effects
    a = rng.normal(0, sd_series, (series, 1, 1))
    b = rng.normal(0, sd_round, (series, rounds, 1))
    g = rng.normal(0, sd_inter, (series, 1, 2))
    e = rng.normal(0, sd_noise, (series, rounds, 2))
    return np.exp(np.array([0.0, log_ratio]) + a + b + g + e).ravel()


def coverage(name: str, stages: str, datasets: int, replicates: int) -> tuple[float, float]:
    """(share of intervals holding the truth, median log width) over seeded datasets."""
    series, rounds, effects, percentile = DESIGNS[name]
    rng = np.random.default_rng(20240601)
    config, clusters = design(series, rounds)
    truth = 0.2
    hits, widths = 0, []
    for d in range(datasets):
        values = simulate(rng, series, rounds, effects, truth)
        # the true ratio of the two configurations' percentiles is exp(truth): every effect
        # but the configuration's is shared or symmetric
        r = rank(values, config, clusters, percentile=percentile, replicates=replicates,
                 seed=d, stages=stages)  # fmt: skip
        c = r.comparisons[0]
        true = math.exp(truth) if c.worse == 1 else math.exp(-truth)
        hits += c.lower <= true <= c.upper
        widths.append(math.log(c.upper / c.lower))
    return hits / datasets, float(np.median(widths))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--stages", choices=("all", "top", "both"), default="both")
    parser.add_argument("--only", help="designs whose name contains this text")
    args = parser.parse_args()
    stages = ("all", "top") if args.stages == "both" else (args.stages,)
    print(f"{'design':34} {'stages':>6} {'coverage':>9} {'log width':>10} {'seconds':>8}")
    for name in (n for n in DESIGNS if args.only is None or args.only in n):
        for st in stages:
            t0 = time.perf_counter()
            cov, width = coverage(name, st, args.datasets, args.replicates)
            print(f"{name:34} {st:>6} {cov:9.3f} {width:10.4f} {time.perf_counter() - t0:8.1f}",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
