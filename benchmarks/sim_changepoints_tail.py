"""Change points next to the end of a series: is a step a few runs before the newest placed at
its commit, said to be possible (``ChangePoints.possible``: "a possible change in the last N
runs, M more to confirm"), or put at a wrong commit (issue 48, item 6; docs/history.md "Change
points")?

Each series: ``--points`` runs of lognormal noise (``--noise``, 3%) with a step of ``--step``
(15%) before the last ``d`` runs, d = 1 to 6, seeded. Values only, or each with its 95% interval
(+-1.96 sd, the noise known). A series is "exact" when its only change point is at the step,
"possible" when the step is reported as possible at its index (nothing misplaced), "wrong" when
a change point or a possible change names another commit near the step (within 6), "missed"
when nothing is reported; "false" counts change points further away. Prints the shares with
Wilson 95% intervals for the wrong ones. Run it from another checkout (PYTHONPATH) to compare.

    python benchmarks/sim_changepoints_tail.py [--series 200] [--seed 48]
"""

from __future__ import annotations

import argparse
import math
import os

import numpy as np

from benchlang.stats.changepoints import detect_changes


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion k / n (Wilson, JASA 22, 1927)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def classify(result, at: int) -> str:
    """exact / possible / wrong / missed for a step at index ``at`` (see the module's doc)."""
    near = [p.index for p in result.points if abs(p.index - at) <= 6]
    possible = getattr(result, "possible", None)
    if possible is not None and abs(possible.index - at) <= 6:
        near.append(possible.index)
    if any(i != at for i in near):
        return "wrong"
    if any(p.index == at for p in result.points):
        return "exact"
    return "possible" if near else "missed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=200, help="series per cell")
    parser.add_argument("--points", type=int, default=30)
    parser.add_argument("--step", type=float, default=0.15)
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=48)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n, count = args.points, args.series
    print(f"{count} series a cell of {n} points, step {args.step:.0%}, noise {args.noise:.0%}, "
          f"seed {args.seed}")  # fmt: skip
    print("| runs after the step | intervals | exact | possible | missed | wrong (95% interval) | "
          "false elsewhere |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    half = 1.959963984540054 * args.noise
    for d in range(1, 7):
        for intervals in (False, True):
            tally = dict.fromkeys(("exact", "possible", "missed", "wrong"), 0)
            false = 0
            for _ in range(count):
                log = rng.normal(0.0, args.noise, n)
                log[n - d :] += math.log1p(args.step)
                y = np.exp(log)
                if intervals:
                    found = detect_changes(y, np.exp(log - half), np.exp(log + half))
                else:
                    found = detect_changes(y)
                tally[classify(found, n - d)] += 1
                false += any(abs(p.index - (n - d)) > 6 for p in found.points)
            low, high = wilson(tally["wrong"], count)
            cells = " | ".join(f"{tally[k] / count:.3f}" for k in ("exact", "possible", "missed"))
            print(f"| {d} | {'yes' if intervals else 'no'} | {cells} | **{tally['wrong'] / count:.3f}**"
                  f" [{low:.3f}, {high:.3f}] | {false / count:.3f} |", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
