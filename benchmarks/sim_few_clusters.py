"""Coverage of intervals from few clusters (docs/ab-designs.md, "Few clusters"): the
cluster-level t interval (Donald & Lang 2007; benchlang/stats/ab/fewclusters.py) against the
clustered reweighting bootstrap with T(G - 1) (benchlang/stats/ab/levels.py), at G = 3 ... 20.

Each cell draws ``--datasets`` seeded A/A data sets (true ratio 1) of two levels:

- paired: G clusters (hosts) each holding both levels, n trials per (cluster, level); log value
  = cluster effect (sd 0.3, shared) + cluster x level effect + residual (sd 0.1);
- unpaired: G clusters per level, each holding one level; log value = cluster effect + residual.

The cluster x level (paired) or cluster (unpaired) effect is normal (sd 0.05), or skewed (a
centred exponential, sd 0.05), with n = 10 trials per cell, or unequal sizes (n from 3 to 20).
The coverage of a nominal 95% interval must be >= 95% minus its Monte Carlo error; the fewest G
at which the cluster-level t held it in every condition is ``MIN_CLUSTERS_T``.

    python benchmarks/sim_few_clusters.py [--datasets 1000] [--replicates 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlang.stats.ab.fewclusters import cluster_t_pairs
from benchlang.stats.ab.levels import compare_levels_many

SIZES = (3, 4, 5, 6, 8, 10, 20)
CONDITIONS = ("normal", "skewed", "unequal n")


def design(kind: str, G: int, condition: str, rng: np.random.Generator):
    """(level, cluster, cell id) of every trial, and the cells' (level, cluster)."""
    clusters = G if kind == "paired" else 2 * G
    cells = (
        [(v, c) for c in range(G) for v in (0, 1)]
        if kind == "paired"
        else [(c % 2, c) for c in range(clusters)]
    )
    n = rng.integers(3, 21, len(cells)) if condition == "unequal n" else np.full(len(cells), 10)
    level = np.repeat([v for v, _ in cells], n)
    cluster = np.repeat([c for _, c in cells], n)
    cell = np.repeat(np.arange(len(cells)), n)
    return level, cluster, cell, clusters


def draw(kind, condition, level, cluster, cell, clusters, E, rng):
    """E data sets (rows), positive values whose true level ratio is 1."""
    if condition == "skewed":
        effect = (rng.standard_exponential((E, cell.max() + 1)) - 1.0) * 0.05
    else:
        effect = rng.standard_normal((E, cell.max() + 1)) * 0.05
    shared = rng.standard_normal((E, clusters)) * 0.3 if kind == "paired" else 0.0
    log_y = effect[:, cell] + rng.standard_normal((E, level.size)) * 0.1
    if kind == "paired":
        log_y += shared[:, cluster]
    return np.exp(log_y)


def coverage(out: dict[str, np.ndarray]) -> float:
    lo, hi = out["ci_low"][:, 0], out["ci_high"][:, 0]
    return float(np.mean((lo <= 1.0) & (hi >= 1.0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=200)
    args = parser.parse_args()
    E = args.datasets
    se = (0.95 * 0.05 / E) ** 0.5
    print(
        f"coverage of nominal 95% intervals, A/A, {E} data sets per cell "
        f"(Monte Carlo SE {se:.3f}); bootstrap: {args.replicates} Poisson replicates, T(G-1)"
    )
    print(f"{'structure':9} {'condition':10} {'G':>3} {'cluster t':>10} {'bootstrap':>10} {'s':>4}")
    for a, kind in enumerate(("paired", "unpaired")):
        for b, condition in enumerate(CONDITIONS):
            for G in SIZES:
                t0 = time.perf_counter()
                rng = np.random.default_rng(10_000 * a + 100 * b + G)
                level, cluster, cell, clusters = design(kind, G, condition, rng)
                Y = draw(kind, condition, level, cluster, cell, clusters, E, rng)
                t_out = cluster_t_pairs(Y, level, cluster, [(1, 0)], "ratio", 95.0)
                b_out = compare_levels_many(
                    Y, level, cluster, replicates=args.replicates, rng=rng, scale="ratio"
                )
                print(
                    f"{kind:9} {condition:10} {G:>3} {coverage(t_out):>10.3f} "
                    f"{coverage(b_out):>10.3f} {time.perf_counter() - t0:>4.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
