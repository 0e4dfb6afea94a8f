"""Crossed random-effects fit time: statsmodels MixedLM (REML, sparse) vs the method of moments.

Bakshy & Frachtenberg (WWW 2015), §3, Eq. 3–4: request, host, request x batch and host x batch
effects on a fully balanced layout (16 hosts, two batches). Sizes of 1k, 10k and 50k trials.
The 50k REML fit is capped at a few optimiser iterations to keep the script short (a full fit
takes minutes here); its time is a lower bound and the ratio is reported as such. The moments
fit is timed without its parametric-bootstrap SEs and with them (200 simulated data sets).

Run: python benchmarks/bench_mixed.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from benchlang.plan.layouts import layout_schedule
from benchlang.stats.ab.designs import VarianceComponents
from benchlang.stats.ab.mixed import fit_mixed_moments, fit_mixed_reml
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes

TRUE = VarianceComponents.from_sd(request=1.0, host=0.3, request_batch=0.2, host_batch=0.1, residual=0.3)
CASES = [(100, 5, None), (500, 10, None), (1000, 25, 3)]  # (R, T, REML iteration cap)


def timed(fn, repeat: int = 1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    print(f"{'trials':>7} {'REML s':>9} {'MoM s':>8} {'MoM+SE s':>9} {'ratio':>9}  max |REML-MoM| / MoM SE")
    for R, T, cap in CASES:
        d = ABDesign.from_schedule(layout_schedule("fully_balanced", 16, R, T, seed=0))
        y = simulate_outcomes(d, TRUE, 1, np.random.default_rng(1))[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reml_s, reml = timed(lambda: fit_mixed_reml(y, d, maxiter=cap) if cap else fit_mixed_reml(y, d))
        mom_s, _ = timed(lambda: fit_mixed_moments(y, d, se_replicates=0), repeat=5)
        full_s, mom = timed(lambda: fit_mixed_moments(y, d, se_replicates=200, seed=2))
        gap = max(abs(reml.components[k] - v) / mom.component_se[k] for k, v in mom.components.items())
        note = f" (REML capped at {cap} iterations: lower bound)" if cap else ""
        print(f"{d.size:>7} {reml_s:>9.3f} {mom_s:>8.4f} {full_s:>9.3f} {reml_s / mom_s:>8.0f}x  {gap:.2f}{note}")
    print("target: moments >= 100x faster than REML and within one MoM SE of it (uncapped sizes)")


if __name__ == "__main__":
    main()
