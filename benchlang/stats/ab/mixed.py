"""Crossed random effects of request, host, request x batch and host x batch (Bakshy & Frachtenberg, WWW 2015, §3, Eq. 3–4).

Two estimators of the same model ``y = mu + delta*version + a_req + b_host + g_reqbatch +
h_hostbatch + e``:

- :func:`fit_mixed_reml`: statsmodels ``MixedLM`` by REML, the crossed effects written as
  variance components of one group that covers every trial, with sparse design matrices.
- :func:`fit_mixed_moments`: a method-of-moments (ANOVA, Henderson's method 1 on version-centred
  data) estimator: one quadratic form per component, expectations solved as a linear system.
  Exact expectations for any design, closed-form, O(trials); its standard errors come from a
  vectorised parametric bootstrap.

Both first ask the design which components can be separated (:func:`identifiability`): factors
that partition the trials identically cannot be told apart (e.g. request and request x batch when
every request runs in one batch; any request x batch term with one repetition, which is then the
residual; host and host x batch in one-batch layouts), and a factor with a single level per
version is absorbed by the fixed effects. Only their sum is estimated, under a combined name, and
the parts are listed as not identifiable instead of printing numbers that mean nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

if TYPE_CHECKING:
    import scipy.sparse

from benchlang.stats.ab.designs import (
    COMPONENTS,
    VarianceComponents,
    contrast_variance,
    design_effect,
    icc,
)
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes

FACTORS = ("request", "host", "request_batch", "host_batch")


@attrs.frozen
class Identifiability:
    """Which variance components a design separates.

    ``groups`` are tuples of component names whose factors partition the trials identically;
    only the sum of a group is estimable. ``absorbed`` are components with no variation left once
    the version means are fitted (one level per version).
    """

    groups: tuple[tuple[str, ...], ...]
    absorbed: tuple[str, ...]

    @property
    def separable(self) -> tuple[str, ...]:
        return tuple(g[0] for g in self.groups if len(g) == 1)

    @property
    def not_identifiable(self) -> tuple[str, ...]:
        merged = tuple(n for g in self.groups if len(g) > 1 for n in g)
        return tuple(n for n in COMPONENTS if n in merged or n in self.absorbed)


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    na, nb = a.max() + 1, b.max() + 1
    return bool(na == nb and np.unique(a * nb + b).size == na)


def identifiability(design: ABDesign) -> Identifiability:
    """Group the components of Eq. 3–4 that the design cannot separate (see module docstring)."""
    codes = dict(design.factors())
    codes["residual"] = np.arange(design.size)
    version = design.version.astype(np.int64)
    absorbed = tuple(n for n in FACTORS if np.unique(codes[n] * 2 + version).size == 2)
    groups: list[list[str]] = []
    for name in COMPONENTS:
        if name in absorbed:
            continue
        for g in groups:
            if _same_partition(codes[g[0]], codes[name]):
                g.append(name)
                break
        else:
            groups.append([name])
    return Identifiability(tuple(tuple(g) for g in groups), absorbed)


@attrs.frozen
class MixedEffectsResult:
    """Treatment effect and variance components of a crossed random-effects fit (§3, Eq. 3–4).

    ``components`` maps each estimable name (a single component, or ``a+b`` for an inseparable
    group; the group holding the residual is named after all its members) to its variance,
    **clipped at 0**: a variance cannot be negative, and a negative moment estimate means the
    component is too small to be told from 0 with these data (Searle, Casella & McCulloch,
    *Variance Components*, 1992, §4.4 and §4.7: truncating the ANOVA estimator at 0, which
    is also closer in mean squared error). ``raw_components`` keeps the unbiased estimates as
    solved and ``clipped`` names the components set to 0. ``component_se`` holds standard
    errors where the method provides them. ``icc`` and ``design_effect`` (§3.1) are None when
    request and residual variance cannot be separated.
    """

    method: str
    effect: float
    effect_se: float
    components: Mapping[str, float]
    component_se: Mapping[str, float]
    not_identifiable: tuple[str, ...]
    repetitions: float
    icc: float | None
    design_effect: float | None
    converged: bool
    trials: int
    raw_components: Mapping[str, float] = attrs.field(factory=dict)
    clipped: tuple[str, ...] = ()

    def variance_components(self) -> VarianceComponents:
        """The estimates as :class:`VarianceComponents`, each group's sum put on its first member."""
        return _as_components(self.components)


def _as_components(estimates: Mapping[str, float]) -> VarianceComponents:
    """Clip at 0 and put each group's sum on its first member (the residual if it is one)."""
    values = {}
    for label, v in estimates.items():
        names = label.split("+")
        values["residual" if "residual" in names else names[0]] = max(v, 0.0)
    return VarianceComponents(**values)


def _label(group: tuple[str, ...]) -> str:
    return "+".join(group)


def _summary(
    method: str,
    design: ABDesign,
    ident: Identifiability,
    effect: float,
    effect_se: float,
    estimates: Mapping[str, float],
    ses: Mapping[str, float],
    converged: bool,
) -> MixedEffectsResult:
    reps = design.size / (design.factors()["request_batch"].max() + 1)
    res_group = next(g for g in ident.groups if "residual" in g)
    rho = deff = None
    if not {"request", "request_batch"} & set(res_group):
        req = sum(
            max(estimates.get(_label(g), 0.0), 0.0)
            for g in ident.groups
            if set(g) <= {"request", "request_batch"}
        )
        vc = VarianceComponents(request=req, residual=max(estimates[_label(res_group)], 0.0))
        rho, deff = icc(vc), design_effect(vc, max(1, round(reps)))
    return MixedEffectsResult(
        method=method,
        effect=float(effect),
        effect_se=float(effect_se),
        components={k: max(float(v), 0.0) for k, v in estimates.items()},
        component_se=dict(ses),
        not_identifiable=ident.not_identifiable,
        repetitions=float(reps),
        icc=rho,
        design_effect=deff,
        converged=converged,
        trials=design.size,
        raw_components=dict(estimates),
        clipped=tuple(k for k, v in estimates.items() if v < 0),
    )


def _indicator(codes: np.ndarray) -> scipy.sparse.csr_array:
    import scipy.sparse as sp

    n = codes.size
    return sp.csr_array((np.ones(n), (np.arange(n), codes)), shape=(n, int(codes.max()) + 1))


def reml_model(y: np.ndarray, design: ABDesign) -> tuple[Any, Identifiability]:
    """The statsmodels MixedLM of Eq. 3–4: one group, one variance component per estimable group."""
    from statsmodels.regression.mixed_linear_model import MixedLM, VCSpec

    ident = identifiability(design)
    codes = design.factors()
    vc_groups = [g for g in ident.groups if "residual" not in g]
    names = [_label(g) for g in vc_groups]
    mats = [[_indicator(codes[g[0]])] for g in vc_groups]
    colnames = [
        [[f"{n}{i}" for i in range(m[0].shape[1])]] for n, m in zip(names, mats, strict=True)
    ]
    X = np.column_stack([np.ones(design.size), design.version.astype(np.float64)])
    y = np.asarray(y, dtype=np.float64)
    return MixedLM(y, X, np.zeros(design.size), exog_vc=VCSpec(names, colnames, mats)), ident


def reml_start(y: np.ndarray, design: ABDesign, model: Any, ident: Identifiability) -> Any:
    """Start values for REML: the method-of-moments components (Henderson's method 1, exact
    and closed-form; clipped to a small positive fraction of the residual so that every
    component starts inside the parameter space), relative to the residual variance as
    MixedLM parameterises them, and the OLS fixed effects."""
    from statsmodels.regression.mixed_linear_model import MixedLMParams

    mom = fit_mixed_moments(y, design, se_replicates=0)
    scale = max(mom.components[_label(next(g for g in ident.groups if "residual" in g))], 1e-12)
    vcomp = np.array([max(mom.components[n], 1e-4 * scale) for n in model.exog_vc.names]) / scale
    beta = np.linalg.lstsq(model.exog, np.asarray(y, dtype=np.float64), rcond=None)[0]
    return MixedLMParams.from_components(fe_params=beta, cov_re=np.zeros((0, 0)), vcomp=vcomp)


def fit_mixed_reml(y: np.ndarray, design: ABDesign) -> MixedEffectsResult:
    """REML fit with statsmodels MixedLM: crossed effects as variance components of one group (§3).

    Inseparable components are fitted once, as their sum (see :func:`identifiability`).
    Component standard errors are not reported: MixedLM's are on its internal scale.

    Optimiser: L-BFGS (Nocedal & Wright, *Numerical Optimization*, 2nd ed., §7.2) on the
    profiled REML log-likelihood, started at the method-of-moments estimates
    (:func:`reml_start`), which are consistent, so the optimiser starts near the optimum.
    statsmodels' default (BFGS from its own start, then L-BFGS, then CG when that fails)
    spends most of its time in the failed first attempts: 5-8x slower on the layout
    benchmarks (docs/ab-designs.md). When L-BFGS does not converge, statsmodels' default
    sequence is run as before.
    """
    model, ident = reml_model(y, design)
    if not model.exog_vc.names:
        return _ols_summary(y, design, ident)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = model.fit(
                reml=True, method=["lbfgs"], start_params=reml_start(y, design, model, ident)
            )
        except (ValueError, np.linalg.LinAlgError):
            fit = None
        if fit is None or not fit.converged:
            model, _ = reml_model(y, design)
            fit = model.fit(reml=True)
    names = list(model.exog_vc.names)
    estimates = dict(zip(names, (float(v) for v in np.atleast_1d(fit.vcomp)), strict=True))
    estimates[_label(next(g for g in ident.groups if "residual" in g))] = float(fit.scale)
    return _summary(
        "reml", design, ident, fit.fe_params[1], fit.bse_fe[1], estimates, {}, bool(fit.converged)
    )


def _ols_summary(y: np.ndarray, design: ABDesign, ident: Identifiability) -> MixedEffectsResult:
    """No random term is estimable: the model is ordinary least squares on the version."""
    import statsmodels.api as sm

    X = np.column_stack([np.ones(design.size), design.version.astype(np.float64)])
    fit = sm.OLS(np.asarray(y, dtype=np.float64), X).fit()
    label = _label(next(g for g in ident.groups if "residual" in g))
    return _summary(
        "reml", design, ident, fit.params[1], fit.bse[1], {label: float(fit.scale)}, {}, True
    )


def _moment_system(
    design: ABDesign, ident: Identifiability
) -> tuple[list[np.ndarray | None], np.ndarray]:
    """Level codes of each group's quadratic form and the matrix K of their expectations.

    For a factor g with indicator Z_g, counts n_a, the form is ``T_g = y' M Z_g D_g^-1 Z_g' M y``
    with M the projection off the two version means; ``E T_g = sum_k s2_k tr(Z_k' M P_g M Z_k)``.
    """
    import scipy.sparse as sp

    codes = design.factors()
    version = design.version.astype(np.int64)
    Nv = np.bincount(version, minlength=2).astype(np.float64)
    reps = [None if "residual" in g else codes[g[0]] for g in ident.groups]

    def by_version(c: np.ndarray) -> np.ndarray:
        return np.stack(
            [np.bincount(c[version == v], minlength=c.max() + 1) for v in (0, 1)]
        ).astype(np.float64)

    K = np.zeros((len(reps), len(reps)))
    n = design.size
    for i, g in enumerate(reps):
        for j, k in enumerate(reps):
            if g is None:
                if k is None:
                    K[i, j] = n - 2.0
                else:
                    nk = by_version(k)
                    K[i, j] = n - ((nk**2).sum(axis=1) / Nv).sum()
            elif k is None:
                ng = by_version(g)
                K[i, j] = ng.shape[1] - ((ng**2 / Nv[:, None]).sum(axis=0) / ng.sum(axis=0)).sum()
            else:
                ng, nk = by_version(g), by_version(k)
                na = ng.sum(axis=0)
                cont = sp.csr_array((np.ones(n), (g, k)), shape=(na.size, nk.shape[1]))
                t1 = np.asarray(cont.multiply(cont).sum(axis=1)).ravel()
                t2 = sum(ng[v] / Nv[v] * (cont @ nk[v]) for v in (0, 1))
                G = nk @ nk.T / np.outer(Nv, Nv)
                t3 = np.einsum("va,vw,wa->a", ng, G, ng)
                K[i, j] = ((t1 - 2 * t2 + t3) / na).sum()
    return reps, K


def _moment_forms(Y: np.ndarray, design: ABDesign, reps: list[np.ndarray | None]) -> np.ndarray:
    """The quadratic forms T_g of each row of Y (experiments x trials), vectorised."""
    version = design.version.astype(bool)
    centred = Y.copy()
    for mask in (version, ~version):
        centred[:, mask] -= centred[:, mask].mean(axis=1, keepdims=True)
    out = np.empty((Y.shape[0], len(reps)))
    for i, g in enumerate(reps):
        if g is None:
            out[:, i] = (centred**2).sum(axis=1)
        else:
            sums = np.asarray(_indicator(g).T @ centred.T).T
            out[:, i] = (sums**2 / np.bincount(g)).sum(axis=1)
    return out


def fit_mixed_moments(
    y: np.ndarray,
    design: ABDesign,
    *,
    se_replicates: int = 200,
    seed: int = 0,
) -> MixedEffectsResult:
    """Method-of-moments (expected mean squares) fit of Eq. 3–4; exact expectations, any design.

    Estimates solve ``K s2 = T`` (see :func:`_moment_system`); they are unbiased and may be
    negative: ``components`` clips them at 0 and names them in ``clipped``,
    ``raw_components`` keeps them as solved. The
    effect is the difference in version means with its exact variance under the fitted components
    (:func:`benchlang.stats.ab.designs.contrast_variance`). Component SEs: the SD of the
    estimator over ``se_replicates`` data sets simulated from the fit (0 skips it).
    """
    y = np.asarray(y, dtype=np.float64)
    ident = identifiability(design)
    reps, K = _moment_system(design, ident)
    if np.linalg.cond(K) > 1e12:
        raise ValueError("the moment equations are singular for this design")
    est = np.linalg.solve(K, _moment_forms(y[None], design, reps)[0])
    labels = [_label(g) for g in ident.groups]
    estimates = dict(zip(labels, (float(v) for v in est), strict=True))
    vc = _as_components(estimates)
    codes = design.factors()
    factors = {n: codes[n] for n in FACTORS if n not in ident.absorbed}
    effect = y[design.version == 1].mean() - y[design.version == 0].mean()
    ses: dict[str, float] = {}
    if se_replicates > 1:
        sim = simulate_outcomes(design, vc, se_replicates, np.random.default_rng(seed))
        boot = np.linalg.solve(K, _moment_forms(sim, design, reps).T).T
        ses = dict(zip(labels, (float(s) for s in boot.std(axis=0, ddof=1)), strict=True))
    effect_var = contrast_variance(design.version, _merged_factors(factors, ident), vc)
    return _summary("moments", design, ident, effect, np.sqrt(effect_var), estimates, ses, True)


def _merged_factors(
    factors: Mapping[str, np.ndarray], ident: Identifiability
) -> dict[str, np.ndarray]:
    """One factor per estimable group, named after the member that carries the group's variance."""
    return {g[0]: factors[g[0]] for g in ident.groups if "residual" not in g}


def fit_mixed(
    y: np.ndarray,
    design: ABDesign,
    method: str = "auto",
    *,
    se_replicates: int = 200,
    seed: int = 0,
) -> MixedEffectsResult:
    """``method``: ``reml``, ``moments``, or ``auto`` (moments on balanced designs, else REML)."""
    if method == "auto":
        method = "moments" if is_balanced(design) else "reml"
    if method == "reml":
        return fit_mixed_reml(y, design)
    if method == "moments":
        return fit_mixed_moments(y, design, se_replicates=se_replicates, seed=seed)
    raise ValueError("method must be 'reml', 'moments' or 'auto'")


def is_balanced(design: ABDesign) -> bool:
    """Every level of every factor has the same number of trials under each version it appears in."""
    version = design.version.astype(np.int64)
    for codes in design.factors().values():
        counts = np.bincount(codes * 2 + version)
        if np.unique(counts[counts > 0]).size > 1:
            return False
    return True
