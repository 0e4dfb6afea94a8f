"""Coverage of the ratio interval between configurations that ran in blocks
(stats/block_ranking.py: each block bootstrapped on its own, expanded percentile), by
simulation: two blocks of ``n`` i.i.d. values, the second ``TRUTH`` times the first (a scale
change, so every percentile's ratio is ``TRUTH``); the share of 95% intervals holding it, their
median width, and hyperfine's ``ratio ± sd`` (src/benchmark/relative_speed.rs: means, standard
deviations propagated to first order) read as an interval, for comparison. The last rows let
the machine drift between the blocks (the second block 3% slower for reasons of its own):
what the interval's assumption means (docs/statistics.md, "Configurations run in blocks").

    python benchmarks/sim_block_ratio.py [--datasets 1000] [--replicates 400]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchlang.stats.block_ranking import rank_blocks

TRUTH = 1.25
NOISE = {
    "lognormal sd 0.1": lambda rng, size: rng.lognormal(0.0, 0.1, size),
    "lognormal sd 0.5": lambda rng, size: rng.lognormal(0.0, 0.5, size),
    "1 + exponential(0.2)": lambda rng, size: 1.0 + rng.exponential(0.2, size),
}
CELLS = [
    (noise, n, p, 1.0)
    for noise in NOISE
    for p in (50.0, 90.0)
    for n in ((5, 10, 20, 50, 100) if p == 50.0 else (5, 10, 20, 25, 50, 100))
    if not (p == 90.0 and noise == "lognormal sd 0.5")
] + [("lognormal sd 0.1", n, 50.0, 1.03) for n in (20, 100)]


def cell(noise: str, n: int, percentile: float, drift: float, datasets: int, replicates: int):
    """(coverage, median log width of ours, hyperfine's coverage, its median log width)."""
    rng = np.random.default_rng([n, int(percentile), int(1000 * drift), len(noise)])
    config = np.repeat([0, 1], n)
    clusters = np.stack([np.zeros(2 * n), np.zeros(2 * n), config], axis=1)
    hits = hf_hits = 0
    widths, hf_widths = [], []
    for d in range(datasets):
        a = NOISE[noise](rng, n)
        b = TRUTH * drift * NOISE[noise](rng, n)
        r = rank_blocks(
            np.concatenate([a, b]),
            config,
            clusters,
            percentile=percentile,
            replicates=replicates,
            seed=d,
        )
        c = r.comparisons[0]
        hits += c.lower <= TRUTH <= c.upper
        widths.append(math.log(c.upper / c.lower))
        ratio = b.mean() / a.mean()
        sd = ratio * math.hypot(a.std(ddof=1) / a.mean(), b.std(ddof=1) / b.mean())
        hf_hits += ratio - sd <= TRUTH <= ratio + sd
        hf_widths.append(math.log((ratio + sd) / (ratio - sd)) if ratio > sd else math.inf)
    return hits / datasets, float(np.median(widths)), hf_hits / datasets, np.median(hf_widths)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=400)
    args = parser.parse_args()
    print(
        f"{'noise':22} {'n':>4} {'pct':>4} {'drift':>6} {'coverage':>9} {'log width':>10} "
        f"{'hyperfine ±sd':>14} {'its width':>10} {'s':>6}"
    )
    for noise, n, p, drift in CELLS:
        t0 = time.perf_counter()
        cov, width, hf_cov, hf_width = cell(noise, n, p, drift, args.datasets, args.replicates)
        print(
            f"{noise:22} {n:4d} {p:4.0f} {drift:6.2f} {cov:9.3f} {width:10.3f} "
            f"{hf_cov:14.3f} {hf_width:10.3f} {time.perf_counter() - t0:6.1f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
