"""False alarms and detections of ``history changes`` on series whose points carry gross
outliers: does the Huber-weighted segment mean's sandwich variance (stats/_changepoint_scan.py,
``Sums.mean``: (phi I + C) / I^2, C the down-weighted points' psi^2 / var = c^2 / var; Huber &
Ronchetti, Robust Statistics, 2009, §3.2) keep the level when outliers are scattered, and when
they crowd into one stretch of the series?

Each series: normal noise (SD 1) with a share of its points moved by +-k SD ("scattered"), or
30% of the points of one stretch of a tenth of the series moved by +-10 SD ("burst": a noisy
week, no change of level); KPIs without intervals (the case the weights matter most),
``detect_changes`` at alpha 5%. A series without change is a false alarm if it shows any change
point. "step found": the same series with a level step of ``--step`` SD at a random place in
the middle three fifths, found within +-5 points. Prints each share with its normal 95%
half-width. Run it from a checkout of the code to compare (PYTHONPATH=that checkout).

    python benchmarks/sim_changepoints_outliers.py [--series 1000] [--step 0.5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlang.stats.changepoints import detect_changes

# (label, share of points moved, by how many SD, crowded into one tenth of the series)
PATTERNS = (
    ("5% at 10 SD", 0.05, 10.0, False),
    ("2% at 20 SD", 0.02, 20.0, False),
    ("10% at 5 SD", 0.10, 5.0, False),
    ("burst: 30% of a tenth at 10 SD", 0.30, 10.0, True),
)
K = 5  # a detection within +-K points of the step finds it


def contaminated(n: int, share: float, size: float, burst: bool, rng: np.random.Generator):
    """Normal noise with outliers: scattered over the series, or in one stretch of n / 10."""
    y = rng.normal(100.0, 1.0, n)
    where = np.zeros(n, dtype=bool)
    if burst:
        start = int(rng.integers(0, n - n // 10 + 1))
        where[start : start + n // 10] = True
    else:
        where[:] = True
    bad = where & (rng.random(n) < share)
    y[bad] += size * rng.choice([-1.0, 1.0], int(bad.sum()))
    return y


def half_width(p: float, count: int) -> float:
    return 1.96 * float(np.sqrt(p * (1 - p) / count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=1000, help="series per cell")
    parser.add_argument("--step", type=float, default=0.5, help="the step, in noise SDs")
    parser.add_argument("--lengths", default="200,1000,5000")
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    count = args.series
    print(f"alpha 0.05, {count} series a cell, seed 11; step {args.step:g} SD, found within +-{K}")
    print("| points | outliers | false alarm (95% half-width) | step found | s |")
    print("| --- | --- | --- | --- | --- |")
    for n in (int(x) for x in args.lengths.split(",")):
        for label, share, size, burst in PATTERNS:
            alarms = found = 0
            t0 = time.perf_counter()
            for _ in range(count):
                y = contaminated(n, share, size, burst, rng)
                result = detect_changes(y)
                alarms += bool(result.points or result.spread)
                at = int(rng.integers(n // 5, n - n // 5))
                y[at:] += args.step
                found += any(abs(p.index - at) <= K for p in detect_changes(y).points)
            p, q = alarms / count, found / count
            print(
                f"| {n:,} | {label} | **{p:.3f}** ± {half_width(p, count):.3f} | "
                f"{q:.3f} ± {half_width(q, count):.3f} | {time.perf_counter() - t0:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
