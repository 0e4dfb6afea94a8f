"""False alarms of ``history changes`` on series without change whose points carry gross
outliers (a second reading's question: the Huber-weighted segment mean's variance W / I^2,
stats/_changepoint_scan.py, counts a down-weighted point's spread as its weight h = c / |u|,
where Huber's sandwich (Huber, Ann. Math. Stat. 35, 1964, §4) would count psi^2 = c^2; does
the dispersion estimated over the series absorb it?).

Each series: normal noise (SD 1) with a share of its points moved by +-k SD, KPIs without
intervals (the case the weights matter most), ``detect_changes`` at alpha 5%; a series is a
false alarm if it shows any change point (level or spread). Prints the share with its normal
95% half-width.

    python benchmarks/sim_changepoints_outliers.py [--series 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlang.stats.changepoints import detect_changes

CONTAMINATIONS = ((0.05, 10.0), (0.02, 20.0), (0.10, 5.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    print("| points | outliers | any change (95% half-width) | level | s |")
    print("| --- | --- | --- | --- | --- |")
    for n in (200, 1000, 5000):
        count = args.series if n < 5000 else max(args.series // 3, 1)
        for share, size in CONTAMINATIONS:
            alarms = level = 0
            t0 = time.perf_counter()
            for _ in range(count):
                y = rng.normal(100.0, 1.0, n)
                bad = rng.random(n) < share
                y[bad] += size * rng.choice([-1.0, 1.0], int(bad.sum()))
                found = detect_changes(y)
                alarms += bool(found.points or found.spread)
                level += bool(found.points)
            p = alarms / count
            half = 1.96 * np.sqrt(p * (1 - p) / count)
            print(
                f"| {n:,} | {share:.0%} at {size:g} SD | **{p:.3f}** ± {half:.3f} | "
                f"{level / count:.3f} | {time.perf_counter() - t0:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
