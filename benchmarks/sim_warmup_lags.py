"""How often the warm-up advice says "neighbouring trials influence each other" (stats/ab/warmup.py;
docs/ab-designs.md, "Warm-up and cool-down"), on pilots without and with dependence.

Each pilot: a Perflab layout (Bakshy & Frachtenberg, WWW 2015, §4) simulated from variance
components (request 1.0, host 0.3, request x batch 0.2, host x batch 0.1, residual 0.2 SDs, as
tests/test_ab_warmup.py), plus AR(1) errors of SD 0.3 within each host batch in execution order
(phi 0: independent). No warm-up. A pilot is flagged when some lag of the residuals after the
position effects lies beyond its bound. Two rules:

- ``now``: each lag against its exact expectation under independent errors, with its exact
  SD under independent normal errors (Durbin & Watson 1950 §3's moments of a ratio of quadratic
  forms), Bonferroni over the lags (what benchlang does);
- ``before``: each lag against 0 with Bartlett's ``1.96 sqrt(pairs) / n`` (the rule this
  replaced).

With phi 0 the flagged share is the false-alarm rate (nominal 5%); with phi > 0 it is power.
400 pilots per cell by default (Monte Carlo SE of a rate near 5%: 1.1 points; 0.7 at 1,000). Prints a Markdown table.

    python3 benchmarks/sim_warmup_lags.py [--pilots 400]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlang.design.layouts import layout_schedule
from benchlang.stats.ab.designs import VarianceComponents
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes
from benchlang.stats.ab.warmup import suggest_warmup

COMPS = VarianceComponents.from_sd(
    request=1.0, host=0.3, request_batch=0.2, host_batch=0.1, residual=0.2
)
LAYOUTS = (("fully_balanced", 8, 40, 4), ("fully_balanced", 4, 16, 2), ("host_balanced", 8, 32, 3))


def bartlett_flag(r, run: np.ndarray, n: int) -> bool:
    """The replaced rule: any lag's |acf| above 1.96 sqrt(pairs_l) / n."""
    for lag, x in zip(r.lags, r.acf_after, strict=True):
        pairs = int(np.sum(run[lag:] == run[:-lag]))
        if abs(x) > 1.96 * np.sqrt(pairs) / n:
            return True
    return False


def cell(layout: tuple, phi: float, pilots: int, seed: int) -> tuple[float, float]:
    kind, hosts, requests, reps = layout
    now = before = 0
    for i in range(pilots):
        s = layout_schedule(kind, hosts, requests, reps, seed=seed + i)
        rng = np.random.default_rng(seed + i)
        y = simulate_outcomes(ABDesign.from_schedule(s), COMPS, 1, rng)[0]
        batch = s.host * 2 + s.batch
        order = np.lexsort((s.position, batch))
        e = 0.3 * rng.standard_normal(y.size)
        ar = np.empty(y.size)
        for j, t in enumerate(order):
            same = j > 0 and batch[order[j - 1]] == batch[t]
            ar[t] = (phi * ar[order[j - 1]] if same else 0.0) + e[t]
        r = suggest_warmup(y + ar, s.request, batch, s.position)
        now += r.dependent_lags.size > 0
        before += bartlett_flag(r, batch[order], y.size)
    return now / pilots, before / pilots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pilots", type=int, default=400)
    args = parser.parse_args()
    started = time.perf_counter()
    print("| layout | H | R | T | phi | flagged, now | flagged, before (Bartlett per lag) |")
    print("|---|---|---|---|---|---|---|")
    for i, layout in enumerate(LAYOUTS):
        for j, phi in enumerate((0.0, 0.2, 0.4)):
            now, before = cell(layout, phi, args.pilots, seed=100_000 * i + 10_000 * j)
            kind, h, r, t = layout
            print(
                f"| {kind} | {h} | {r} | {t} | {phi:g} | {100 * now:.1f}% | {100 * before:.1f}% |"
            )
    print(
        f"\n{args.pilots} pilots per cell; Monte Carlo SE of a rate near 5%: "
        f"{100 * np.sqrt(0.05 * 0.95 / args.pilots):.1f} points; "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
