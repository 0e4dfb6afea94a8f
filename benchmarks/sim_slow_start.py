"""How often the slow-start note (stats/slow_start.py) fires on a run of i.i.d. values, and how
often it sees a first trial that really is slower: per run (any configuration flagged), 10,000
seeded runs a cell, with hyperfine's own rule (modified Z-score of the raw first time above
1.4826 x 10, src/outlier_detection.rs) beside it. docs/statistics.md, "Slow first trials".

    python benchmarks/sim_slow_start.py [--runs 10000]
"""

from __future__ import annotations

import argparse

import numpy as np

from benchlang.stats.slow_start import leading_slow

NOISE = {
    "lognormal sd 0.1": lambda rng, size: rng.lognormal(0.0, 0.1, size),
    "lognormal sd 0.5": lambda rng, size: rng.lognormal(0.0, 0.5, size),
    "lognormal sd 1.0": lambda rng, size: rng.lognormal(0.0, 1.0, size),
    "1 + exponential(0.2)": lambda rng, size: 1.0 + rng.exponential(0.2, size),
    "1 + 0.05 pareto(2)": lambda rng, size: 1.0 + 0.05 * rng.pareto(2.0, size),
}
SHAPES = {"hyperfine 2 x 20": (2, 20), "quickstart 3 x 25": (3, 25), "10 x 10": (10, 10)}


def hyperfine_flags(x: np.ndarray) -> np.ndarray:
    """hyperfine's check of each row's first value: (x0 - median) / MAD > 1.4826 * 10."""
    median = np.median(x, axis=-1, keepdims=True)
    mad = np.median(np.abs(x - median), axis=-1, keepdims=True)
    mad = np.where(mad > 0, mad, np.finfo(float).eps)
    return ((x[..., 0:1] - median) / mad > 1.4826 * 10)[..., 0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args()
    slows = (1.0, 1.5, 2.0)
    head = " ".join(f"{f'x{s:g} ours':>9} {'hyperfine':>9}" for s in slows)
    print(f"{'noise':22} {'shape':18} {head}")
    for noise, draw in NOISE.items():
        for shape, (k, n) in SHAPES.items():
            rng = np.random.default_rng([k, n, len(noise)])
            cells = []
            for slow in slows:
                x = draw(rng, (args.runs, k, n))
                x[:, 0, 0] *= slow  # one configuration's first trial this much slower
                ours = (leading_slow(x.reshape(-1, n))[0] > 0).reshape(args.runs, k)
                cells.append(f"{ours.any(axis=1).mean():9.4f} ")
                cells.append(f"{hyperfine_flags(x).any(axis=1).mean():9.4f}")
            print(f"{noise:22} {shape:18} {' '.join(cells)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
