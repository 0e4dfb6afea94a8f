"""A composite effect over several benchmarks (or requests) and its two standard errors.

Perflab (Bakshy & Frachtenberg, WWW 2015, §7 and footnote 11) pools the effects of several
endpoints into one weighted effect, ``sum_k w_k d_k`` with weights that sum to 1 (traffic
shares, or equal), whose variance is ``sum_k w_k^2 Var(d_k)`` *when the endpoints are
independent*; correlated endpoints are left as future work. Endpoints measured on the same
hosts are not independent: a host that runs the treatment slowly does so for every benchmark, so
the effects covary and the footnote's formula understates the variance (benchmarks/
sim_composite.py shows by how much).

The joint cluster bootstrap carries that covariance. Each replicate draws one weight per
cluster (host, host block, series or round) with mean 1 and variance 1 (Poisson(1) by default:
Owen & Eckles, "Bootstrapping data arrays of arbitrary order", Ann. Appl. Stat. 6(3) 2012;
the weights of Perflab §5.1) and the same weight multiplies that cluster's trials of *every*
benchmark, so each replicate recomputes all K effects together (the pairs cluster bootstrap of
Field & Welsh, JRSS B 69(3) 2007, §3, with Cameron, Gelbach & Miller, Rev. Econ. Stat. 90(3)
2008, on few clusters). The replicates' covariance matrix S gives both standard errors from one
bootstrap: the footnote's ``sqrt(sum w_k^2 S_kk)`` (each S_kk is what that benchmark's own
cluster bootstrap estimates, since its weights have the same marginal law) and the joint
``sqrt(w' S w)``, and its correlation matrix is the correlation between the benchmarks' effects
that the data show.

The interval is ``estimate +- t(G - 1) SE`` with every SE scaled by ``sqrt(G / (G - 1))``, G the
clusters holding trials. The Poisson bootstrap's variance of a mean over clusters is, to first
order, the CR0 sandwich ``sum_g u_g^2`` (Owen & Eckles 2012), which is biased down by
(G - 1)/G and whose Wald statistic is closer to Student's t than to the normal with few clusters:
Cameron & Miller, "A Practitioner's Guide to Cluster-Robust Inference", J. Human Resources
50(2) 2015: §II on the CR1 factor G/(G - 1), §VI on few clusters and T(G - 1) critical values.
Perflab's own normal interval (§5.1, estimate +- z SE) under-covered in benchmarks/
sim_composite.py: 89-91% at 6 hosts, 93-95% at 40; with the correction every cell covered
94.1-97.2% (no cell below 95% by more than 1.3 Monte Carlo SEs; conservative at 6-10 hosts, up
to 3.2 SEs above). In the split layout (a host runs one version) G counts every cluster; Donald
& Lang's t(G - 2) and a per-version factor would be stricter, and the simulation shows no need.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.stats.ab.bootstrap import (
    MIN_CLUSTERS,
    clusters_per_version,
    draw_weights,
    outcomes_on_scale,
)

FEW_CLUSTERS = 20
"""Below this many clusters per version a note says the interval rests on the t(G - 1)
correction, checked only for balanced clusters with normal effects (Cameron, Gelbach & Miller
2008, §IV; Cameron & Miller 2015, §VI; the coverage table in docs/statistics.md)."""


def small_sample(clusters: int) -> tuple[float, int]:
    """The CR1 factor ``sqrt(G / (G - 1))`` applied to the bootstrap SEs and the degrees of
    freedom ``G - 1`` of the t critical value (Cameron & Miller 2015, §II and §VI)."""
    g = max(int(clusters), 2)
    return math.sqrt(g / (g - 1)), g - 1


_BLOCK = 1 << 22
_NONE = (math.nan, math.nan)


@attrs.frozen(eq=False)
class CompositeResult:
    """The weighted effect treatment - control over K components, with the footnote-11 SE
    (independent components) and the joint bootstrap SE (their covariance carried), both
    intervals, the components' own effects and SEs and the correlation matrix between their
    effects. SEs include the CR1 factor; intervals use t with ``df`` = G - 1 (module
    docstring). ``notes`` say what the reader must know (few clusters, renormalised weights)."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    effects: tuple[float, ...]
    effect_se: tuple[float, ...]
    estimate: float
    se_independent: float
    se_joint: float
    correlation: tuple[tuple[float, ...], ...]
    confidence: float
    cluster: str
    clusters: int
    clusters_per_version: tuple[int, ...]
    replicates: int
    dropped: int
    weight_kind: str
    log: bool
    notes: tuple[str, ...] = ()
    df: int = 0
    """Degrees of freedom of the t critical value, G - 1."""

    @property
    def critical(self) -> float:
        """The two-sided t(G - 1) quantile at ``confidence`` (Cameron & Miller 2015, §VI)."""
        from scipy.stats import t

        return float(t.ppf(0.5 + self.confidence / 200.0, max(self.df, 1)))

    @property
    def ci_independent(self) -> tuple[float, float]:
        h = self.critical * self.se_independent
        return self.estimate - h, self.estimate + h

    @property
    def ci_joint(self) -> tuple[float, float]:
        h = self.critical * self.se_joint
        return self.estimate - h, self.estimate + h

    @property
    def p_value(self) -> float:
        """Two-sided t(G - 1) p-value of the composite against no change, with the joint SE."""
        if not (math.isfinite(self.se_joint) and self.se_joint > 0.0):
            return float("nan")
        from scipy.stats import t

        return float(2.0 * t.sf(abs(self.estimate) / self.se_joint, max(self.df, 1)))

    @property
    def significant(self) -> bool:
        """The joint interval excludes 0 (the verdict; the footnote's interval is shown beside)."""
        lo, hi = self.ci_joint
        return self.se_joint > 0.0 and not (lo <= 0.0 <= hi)

    @property
    def descriptive_only(self) -> str | None:
        """Why no interval or verdict holds (the composite did not vary over the replicates)."""
        if math.isfinite(self.se_joint) and self.se_joint > 0.0:
            return None
        return (
            "the composite did not vary over the bootstrap replicates (every cluster holds the "
            "same values): no interval and no verdict, the estimate is descriptive only"
        )

    @property
    def mean_correlation(self) -> float:
        """The mean of the off-diagonal correlations (NaN with one component)."""
        r = np.asarray(self.correlation, dtype=np.float64)
        off = r[~np.eye(r.shape[0], dtype=bool)]
        off = off[np.isfinite(off)]
        return float(off.mean()) if off.size else float("nan")

    def to_dict(self) -> dict[str, Any]:
        from benchlang.jsonout import undefined

        flat = {
            "estimate": self.estimate,
            "se_independent": self.se_independent,
            "se_joint": self.se_joint,
            "ci_independent": list(self.ci_independent if not self.descriptive_only else _NONE),
            "ci_joint": list(self.ci_joint if not self.descriptive_only else _NONE),
            "p_value": self.p_value,
            "mean_correlation": self.mean_correlation,
        }
        why = "undefined: a component's effect did not vary over the replicates"
        out = {
            "components": [
                undefined(
                    {"name": n, "weight": w, "effect": e, "se": s},
                    {"se": why},
                )
                for n, w, e, s in zip(
                    self.names, self.weights, self.effects, self.effect_se, strict=True
                )
            ],
            **undefined(flat, {"mean_correlation": "one component, or " + why, "*": why}),
            "correlation": [
                [x if math.isfinite(x) else None for x in row] for row in self.correlation
            ],
            "significant": self.significant,
            "descriptive_only": self.descriptive_only,
            "confidence": self.confidence,
            "df": self.df,
            "interval": "estimate +- t(df) SE, SEs x sqrt(G/(G-1)) (CR1), G = clusters",
            "cluster": self.cluster,
            "clusters": self.clusters,
            "clusters_per_version": list(self.clusters_per_version),
            "replicates": self.replicates,
            "dropped": self.dropped,
            "weights_kind": self.weight_kind,
            "log": self.log,
            "notes": list(self.notes),
        }
        return out


def cell_sums(
    y: np.ndarray, version: np.ndarray, component: np.ndarray, codes: np.ndarray, k: int, c: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-(cluster, version x component) sums ``(..., C, 2K)`` of y (1-D, or experiments x
    trials) and counts ``(C, 2K)``; column ``v * K + k``."""
    cell = codes * (2 * k) + version * k + component
    counts = np.bincount(cell, minlength=c * 2 * k).reshape(c, 2 * k).astype(np.float64)
    if y.ndim == 1:
        return np.bincount(cell, weights=y, minlength=c * 2 * k).reshape(c, 2 * k), counts
    order = np.argsort(cell, kind="stable")
    bounds = np.searchsorted(cell[order], np.arange(c * 2 * k + 1))
    cs = np.concatenate([np.zeros((y.shape[0], 1)), np.cumsum(y[:, order], axis=1)], axis=1)
    return (cs[:, bounds[1:]] - cs[:, bounds[:-1]]).reshape(y.shape[0], c, 2 * k), counts


def replicate_effects(
    sums: np.ndarray,
    counts: np.ndarray,
    replicates: int,
    weight_kind: str,
    rng: np.random.Generator,
) -> np.ndarray:
    """Replicate effects ``(..., B, K)`` under one weight per cluster shared by every component
    (NaN where a cell got weight 0). ``sums`` ``(C, 2K)`` or ``(E, C, 2K)``; vectorised with
    matrix products, in blocks that bound memory."""
    squeeze = sums.ndim == 2
    s = sums[None] if squeeze else sums
    e_n, c, k2 = s.shape
    out = np.empty((e_n, replicates, k2 // 2))
    step = max(1, _BLOCK // max(1, replicates * c))
    for e0 in range(0, e_n, step):
        e1 = min(e_n, e0 + step)
        w = draw_weights(weight_kind, (e1 - e0, replicates, c), rng)
        num = np.matmul(w, s[e0:e1])
        den = np.matmul(w, counts)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(den > 0, num / den, np.nan)
        out[e0:e1] = means[..., k2 // 2 :] - means[..., : k2 // 2]
    return out[0] if squeeze else out


def composite_ses(reps: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From replicate effects ``(..., B, K)``: each component's SE ``(..., K)``, the footnote-11
    SE ``sqrt(sum w^2 var_k)`` and the joint SE ``sd(reps @ w)`` (NaN replicates left out)."""
    ok = np.isfinite(reps).all(axis=-1, keepdims=True)
    n = ok.sum(axis=-2)
    z = np.where(ok, reps, 0.0)
    mean = z.sum(axis=-2) / np.maximum(n, 1)
    dev = np.where(ok, reps - mean[..., None, :], 0.0)
    var = (dev**2).sum(axis=-2) / np.maximum(n - 1, 1)
    pooled = dev @ w
    joint = np.sqrt((pooled**2).sum(axis=-1) / np.maximum(n[..., 0] - 1, 1))
    return np.sqrt(var), np.sqrt(var @ (w**2)), joint


def composite_bootstrap(
    y: np.ndarray,
    version: np.ndarray,
    component: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    names: tuple[str, ...] | None = None,
    cluster: str = "host",
    replicates: int = 10_000,
    weight_kind: str = "poisson",
    confidence: float = 95.0,
    log: bool = False,
    seed: int | np.random.Generator = 0,
    min_clusters: int = MIN_CLUSTERS,
) -> CompositeResult:
    """The composite ``sum_k w_k d_k`` of the components' treatment - control differences in
    means (of logs with ``log``), with its footnote-11 and joint cluster bootstrap SEs (see the
    module docstring). ``component`` codes 0..K-1, ``codes`` the cluster of each trial; weights
    default to equal and are renormalised to sum 1 (a note says so).

    Raises ValueError when a component lacks a version, or a version has trials in fewer than
    ``min_clusters`` clusters (one cluster per version gives SE 0)."""
    y = np.asarray(y, dtype=np.float64)
    version = np.asarray(version, dtype=np.int64)
    component = np.unique(np.asarray(component), return_inverse=True)[1].ravel()
    codes = np.unique(np.asarray(codes), return_inverse=True)[1].ravel()
    if not (y.size == version.size == component.size == codes.size):
        raise ValueError("y, version, component and codes need one entry per trial")
    y = outcomes_on_scale(y, log)
    k, c = int(component.max()) + 1, int(codes.max()) + 1
    names = names or tuple(str(i) for i in range(k))
    if len(names) != k:
        raise ValueError(f"{len(names)} names for {k} components")
    notes = []
    if weights is None:
        w = np.full(k, 1.0 / k)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (k,) or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError(f"weights: {k} non-negative numbers, not all 0")
        if abs(w.sum() - 1.0) > 1e-9:
            notes.append(f"weights renormalised to sum 1 (they summed to {w.sum():.4g})")
        w = w / w.sum()
    sums, counts = cell_sums(y, version, component, codes, k, c)
    totals = counts.sum(axis=0)
    missing = [names[j % k] for j in np.flatnonzero(totals == 0)]
    if missing:
        raise ValueError(f"no trials of both versions for {', '.join(dict.fromkeys(missing))}")
    per_version = clusters_per_version(version, codes)
    if min(per_version) < min_clusters:
        raise ValueError(
            f"cluster {cluster}: {' and '.join(map(str, per_version))} clusters hold the two "
            f"versions' trials; the joint bootstrap needs at least {min_clusters} per version"
        )
    per_cell = (counts > 0).sum(axis=0)
    thin = np.flatnonzero(per_cell < min_clusters)
    if thin.size:
        j = int(thin[0])
        raise ValueError(
            f"cluster {cluster}: {names[j % k]}'s {('control', 'treatment')[j // k]} trials lie "
            f"in {per_cell[j]} clusters; the joint bootstrap needs at least {min_clusters} per "
            "version of every component (with fewer its SE comes out too small: one cluster's "
            "weight cancels in its mean)"
        )
    if min(per_version) < FEW_CLUSTERS:
        notes.append(
            f"{min(per_version)} {cluster} clusters per version (fewer than {FEW_CLUSTERS}): the "
            "interval rests on the t(G - 1) small-sample correction, nominal in simulation for "
            "balanced clusters (Cameron & Miller 2015, §VI; docs/statistics.md), not proven for "
            "unequal or skewed ones"
        )
    means = sums.sum(axis=0) / totals
    effects = means[k:] - means[:k]
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    reps = replicate_effects(sums, counts, replicates, weight_kind, rng)
    valid = np.isfinite(reps).all(axis=1)
    if valid.sum() < 2:
        raise ValueError("too few clusters: almost every replicate left a cell without weight")
    se_k, se_ind, se_joint = composite_ses(reps, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.cov(reps[valid].T).reshape(k, k) / np.outer(se_k, se_k)
    corr[np.diag_indices(k)] = np.where(se_k > 0, 1.0, np.nan)
    factor, df = small_sample(c)
    return CompositeResult(
        names=tuple(names),
        weights=tuple(float(x) for x in w),
        effects=tuple(float(x) for x in effects),
        effect_se=tuple(float(x) for x in factor * se_k),
        estimate=float(effects @ w),
        se_independent=float(factor * se_ind),
        se_joint=float(factor * se_joint),
        correlation=tuple(tuple(float(x) for x in row) for row in corr),
        confidence=float(confidence),
        cluster=cluster,
        clusters=c,
        clusters_per_version=per_version,
        replicates=int(valid.sum()),
        dropped=int(replicates - valid.sum()),
        weight_kind=weight_kind,
        log=log,
        notes=tuple(notes),
        df=df,
    )
