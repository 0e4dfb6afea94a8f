"""Crossed random-effects fit time: statsmodels MixedLM (REML, sparse) before and after the
optimiser change (statsmodels' default sequence vs L-BFGS from the moments estimates), and the
method of moments.

Bakshy & Frachtenberg (WWW 2015), §3, Eq. 3–4: request, host, request x batch and host x batch
effects on a fully balanced layout (16 hosts, two batches). Sizes of 1k, 10k and 50k trials.
The 50k REML fit is capped to keep the script under ~3 minutes: one REML log-likelihood + score
evaluation is timed and scaled by the number of evaluation-equivalents the 10k fit took (fit time
/ one evaluation at 10k); agreement is not checked there. "REML before" is MixedLM.fit with
statsmodels' defaults (as benchlang fitted before), "REML after" is ``fit_mixed_reml``. The moments
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


def reml_before(y: np.ndarray, d: ABDesign):
    """The fit as it was: statsmodels' default optimiser sequence and start values."""
    model, _ = reml_model(y, d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(reml=True)


def main() -> None:
    print(
        f"{'trials':>7} {'REML before s':>13} {'REML after s':>12} {'speed-up':>8} {'same fit':>8}"
        f" {'MoM s':>8} {'MoM+SE s':>9} {'ratio':>9}  max |REML-MoM| / MoM SE"
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
            before_s, old = timed(reml_before, y, d)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reml_s, reml = timed(fit_mixed_reml, y, d)
            evaluations = reml_s / eval_s
            # the same optimum up to the flatness of the likelihood: the effect within 1% of its
            # SE, each component within 5% of its (moments) SE; components are in the same order
            # (MixedLM's variance components, then the residual)
            old_vc = np.append(np.atleast_1d(old.vcomp), old.scale)
            new_vc = np.array(list(reml.components.values()))
            ses = np.array([mom.component_se[k] for k in reml.components])
            same = abs(reml.effect - old.fe_params[1]) <= 0.01 * reml.effect_se and bool(
                np.all(np.abs(old_vc - new_vc) <= 0.05 * ses)
            )
            before = f"{before_s:>13.2f} {reml_s:>12.2f} {before_s / reml_s:>7.1f}x {'yes' if same else 'NO':>8}"
            worst = max(
                abs(reml.components[k] - v) / mom.component_se[k] for k, v in mom.components.items()
            )
            gap, note = f"{worst:.2f}", ""
        if cap:
            before = f"{'-':>13} {reml_s:>12.1f} {'-':>8} {'-':>8}"
        print(
            f"{d.size:>7} {before} {mom_s:>8.4f} {full_s:>9.3f} {reml_s / mom_s:>8.0f}x  {gap}{note}",
            flush=True,
        )
    print(
        "targets: REML after >= 3x faster than before with the same fit; moments within one"
        " MoM SE of REML (uncapped sizes)"
    )


if __name__ == "__main__":
    main()
