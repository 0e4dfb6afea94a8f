"""Calibration of the numbers behind Perflab's figures (docs/ab-designs.md, docs/figures.md).

1. ``advise --sweep`` / ``se-curves``: the analytic SE of each layout (Bakshy & Frachtenberg
   §4.2.1) against the SD of the estimate over 1,000 simulated experiments per cell (Eq. 3-4,
   the paper's Table 3 components).
2. ``aa-check`` / ``aa-empirical``: how often an honest test's empirical rate lands inside the
   binomial band (the band's own coverage, at least 95% by construction), how often a test
   whose real rate is 10% or 15% lands above it (the check's power), and the coverage of the
   Clopper-Pearson interval of ``simulate-aa``'s rates, over 100,000 simulated checks.

    python benchmarks/bench_perflab_checks.py
"""

from __future__ import annotations

import numpy as np

from benchlang.stats.ab.designs import VarianceComponents
from benchlang.stats.ab.sweep import se_sweep
from benchlang.stats.binomial_rate import binomial_band, clopper_pearson

TABLE3 = VarianceComponents.from_sd(
    request=1.05, host=0.12, request_batch=0.10, host_batch=0.075, residual=0.10
)


def sweep_table() -> None:
    sweep = se_sweep(TABLE3, (4, 16), (32, 64, 256), 1, experiments=1000, simulate_every=1, seed=7)
    print("SE of the difference: analytic (§4.2.1) vs SD of 1,000 simulated estimates (Table 3)")
    print(f"{'layout':<17} {'H':>3} {'R':>4} {'analytic':>9} {'simulated':>9} {'ratio':>6}")
    for p in sweep.points:
        ratio = p.simulated_sd / p.analytic_se
        print(
            f"{p.layout:<17} {p.hosts:>3} {p.requests:>4} {p.analytic_se:>9.4f} "
            f"{p.simulated_sd:>9.4f} {ratio:>6.3f}"
        )
    ratios = np.array([p.simulated_sd / p.analytic_se for p in sweep.points])
    print(
        f"ratio over {ratios.size} cells: mean {ratios.mean():.3f}, min {ratios.min():.3f}, "
        f"max {ratios.max():.3f} (the SD of an SD over 1,000 draws is about 2.2%)\n"
    )


def band_table(checks: int = 100_000, alpha: float = 0.05) -> None:
    rng = np.random.default_rng(36)
    print(f"binomial band of aa-check at alpha = {alpha}: {checks:,} simulated checks per cell")
    print(f"{'runs':>5} {'band':>13} {'inside | 5%':>12} {'above | 10%':>12} {'above | 15%':>12}")
    for runs in (10, 20, 50, 100, 200):
        low, high = binomial_band(runs, alpha)
        cells = []
        for rate in (alpha, 0.10, 0.15):
            observed = rng.binomial(runs, rate, checks) / runs
            inside = (observed >= low) & (observed <= high)
            cells.append(inside.mean() if rate == alpha else (observed > high).mean())
        print(
            f"{runs:>5} {low:>6.3f}-{high:<6.3f} {cells[0]:>12.3f} {cells[1]:>12.3f} "
            f"{cells[2]:>12.3f}"
        )
    print()
    print("Clopper-Pearson 95% interval of a simulated Type I rate: coverage of the true rate")
    print(f"{'experiments':>11} {'true 0.05':>10} {'true 0.10':>10}")
    for n in (200, 2000):
        row = []
        for p in (0.05, 0.10):
            counts = rng.binomial(n, p, 2000)
            covered = [
                (ci := clopper_pearson(int(k), n)).low <= p <= ci.high for k in np.unique(counts)
            ]
            weight = np.array([np.mean(counts == k) for k in np.unique(counts)])
            row.append(float(np.sum(weight * np.array(covered))))
        print(f"{n:>11} {row[0]:>10.3f} {row[1]:>10.3f}")


if __name__ == "__main__":
    sweep_table()
    band_table()
