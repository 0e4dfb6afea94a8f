"""What ``stopping-eval --baseline A B`` claims about two runs of one unchanged process
(stats/ks_baseline.py; docs/stopping.md, "The background floor").

Each pair: two runs of n values from the same process, i.i.d. normal or AR(1) with
coefficient phi (stationary, unit variance). Nothing moved between the runs, so every "the two
runs differ beyond sampling" is a false claim. Columns: the share of pairs the KS test alone
(``scipy.stats.ks_2samp``, p < 5%) calls different, as ``--baseline`` did before it checked
independence; the share now said descriptive only (a run failed the TriScale §4.5 independence
test, Bonferroni over the two runs); and the share now called different.

1,000 pairs per cell; Monte Carlo SE of a rate near 5%: 0.7 points. Prints a Markdown table.

    python3 benchmarks/sim_ks_baseline.py [--pairs 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlang.stats.ks_baseline import ks_baseline


def runs(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    from scipy.signal import lfilter

    e = rng.standard_normal(n) * np.sqrt(1.0 - phi**2)
    return lfilter([1.0], [1.0, -phi], e, zi=[phi * rng.standard_normal()])[0]


def main() -> None:
    from scipy.stats import ks_2samp

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=1000)
    args = parser.parse_args()
    started = time.perf_counter()
    print("| n | phi | differ, KS alone (before) | descriptive only (now) | differ (now) |")
    print("|---|---|---|---|---|")
    for n in (500, 2000):
        for phi in (0.0, 0.3, 0.7):
            rng = np.random.default_rng(int(1000 * phi) + n)
            alone = descriptive = differ = 0
            for _ in range(args.pairs):
                a, b = runs(rng, n, phi), runs(rng, n, phi)
                alone += ks_2samp(a, b).pvalue < 0.05
                found = ks_baseline(a, b)
                descriptive += found.descriptive_only is not None
                differ += bool(found.differ)
            share = [100 * x / args.pairs for x in (alone, descriptive, differ)]
            print(f"| {n} | {phi:g} | {share[0]:.1f}% | {share[1]:.1f}% | {share[2]:.1f}% |")
    print(
        f"\n{args.pairs} pairs per cell; Monte Carlo SE of a rate near 5%: "
        f"{100 * np.sqrt(0.05 * 0.95 / args.pairs):.1f} points; "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
