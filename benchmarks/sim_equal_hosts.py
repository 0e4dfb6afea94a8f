"""Family-wise false alarms and power of the equal-hosts check (docs/statistics.md, "DataMill:
equal hosts of a redundant design") by simulation.

Each cell draws ``--datasets`` seeded datasets of 4 configurations x 2 equal hosts x n trials
and runs them through the registry's ``equal_hosts`` (as ``design { redundancy 2 }`` does). With
no host effect the share of datasets with any configuration flagged must stay within alpha;
with a host effect (one host's values x (1 + effect)) the share is the power.

    python benchmarks/sim_equal_hosts.py [--datasets 1000] [--alpha 0.01]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlang.stats.registry import statistics_methods

DISTRIBUTIONS = {
    "lognormal(0.3)": lambda rng, n: rng.lognormal(0.0, 0.3, n),
    "1+exponential": lambda rng, n: 1.0 + rng.exponential(1.0, n),
}


def flagged_share(check, draw, n: int, effect: float, datasets: int, alpha: float, seed: int):
    rng = np.random.default_rng(seed)
    configuration = np.repeat(np.arange(4), 2 * n)
    host = np.tile(np.repeat([0, 1], n), 4)
    scale = np.where(host == 1, 1.0 + effect, 1.0)
    hits = sum(
        bool(check(draw(rng, configuration.size) * scale, host, configuration, alpha).differing)
        for _ in range(datasets)
    )
    return hits / datasets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--alpha", type=float, default=0.01)
    args = parser.parse_args()
    check = statistics_methods()["equal_hosts"].load()
    print(
        f"equal_hosts, alpha {args.alpha:g}, {args.datasets} datasets per cell, 4 configurations x 2 hosts"
    )
    print(
        f"{'distribution':16} {'n/host':>6} {'false alarms':>13} {'power +20%':>11} {'power +60%':>11}"
    )
    for k, (name, draw) in enumerate(DISTRIBUTIONS.items()):
        for n in (5, 10, 30):
            t0 = time.perf_counter()
            cells = [
                flagged_share(check, draw, n, effect, args.datasets, args.alpha, 1000 * k + n + i)
                for i, effect in enumerate((0.0, 0.2, 0.6))
            ]
            print(
                f"{name:16} {n:>6} {cells[0]:>13.1%} {cells[1]:>11.1%} {cells[2]:>11.1%}"
                f"   ({time.perf_counter() - t0:.0f} s)"
            )


if __name__ == "__main__":
    main()
