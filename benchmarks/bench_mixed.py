"""Crossed random-effects fit time: statsmodels MixedLM (REML, sparse) vs the method of moments.

Bakshy & Frachtenberg (WWW 2015), §3, Eq. 3–4: request, host, request x batch and host x batch
effects on a fully balanced layout (16 hosts, two batches). Sizes of 1k, 10k and 50k trials.
The 50k REML fit is capped to keep the script under ~3 minutes: one REML log-likelihood + score
evaluation is timed and scaled by the number of evaluation-equivalents the 10k fit took (fit time
/ one evaluation at 10k); agreement is not checked there. The moments
fit is timed without its parametric-bootstrap SEs and with them (200 simulated data sets).

Run: python benchmarks/bench_mixed.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from benchlang.design.layouts import layout_schedule
from benchlang.stats.ab.designs import VarianceComponents
from benchlang.stats.ab.mixed import fit_mixed_moments, fit_mixed_reml, reml_model
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes

TRUE = VarianceComponents.from_sd(
    request=1.0, host=0.3, request_batch=0.2, host_batch=0.1, residual=0.3
)
CASES = [(100, 5, False), (500, 10, False), (1000, 25, True)]  # (R, T, REML capped)


def timed(fn, *args, repeat: int = 1, **kwargs):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t)
    return best, out


def one_evaluation(y: np.ndarray, d: ABDesign) -> None:
    from statsmodels.regression.mixed_linear_model import MixedLMParams

    model, _ = reml_model(y, d)
    model.reml, model.fe_pen, model.cov_pen, model._freepat = True, None, None, None
    params = MixedLMParams.from_components(
        fe_params=np.zeros(2), cov_re=np.zeros((0, 0)), vcomp=np.ones(model.k_vc)
    )
    model.loglike(params, profile_fe=True)
    model.score(params, profile_fe=True)


def main() -> None:
    print(
        f"{'trials':>7} {'REML s':>9} {'MoM s':>8} {'MoM+SE s':>9} {'ratio':>9}  max |REML-MoM| / MoM SE"
    )
    evaluations = None  # REML fit time / one evaluation, measured at the largest uncapped size
    for R, T, cap in CASES:
        d = ABDesign.from_schedule(layout_schedule("fully_balanced", 16, R, T, seed=0))
        y = simulate_outcomes(d, TRUE, 1, np.random.default_rng(1))[0]
        mom_s, _ = timed(fit_mixed_moments, y, d, se_replicates=0, repeat=5)
        full_s, mom = timed(fit_mixed_moments, y, d, se_replicates=200, seed=2)
        eval_s, _ = timed(one_evaluation, y, d)
        if cap:
            reml_s = eval_s * evaluations
            gap = "-"
            note = (
                f" (REML capped: one evaluation took {eval_s:.1f} s, x {evaluations:.1f}"
                " evaluation-equivalents of the 10k fit)"
            )
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reml_s, reml = timed(fit_mixed_reml, y, d)
            evaluations = reml_s / eval_s
            worst = max(
                abs(reml.components[k] - v) / mom.component_se[k] for k, v in mom.components.items()
            )
            gap, note = f"{worst:.2f}", ""
        print(
            f"{d.size:>7} {reml_s:>9.3f} {mom_s:>8.4f} {full_s:>9.3f} {reml_s / mom_s:>8.0f}x  {gap}{note}",
            flush=True,
        )
    print("target: moments >= 100x faster than REML and within one MoM SE of it (uncapped sizes)")


if __name__ == "__main__":
    main()
