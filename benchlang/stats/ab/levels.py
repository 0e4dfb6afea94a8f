"""k ≥ 2 levels of a factor compared with a reference level (or all pairs): ratios of means
with clustered-bootstrap intervals on the log scale, small-cluster corrections and Bonferroni
multiplicity control.

Sources:

* Bakshy & Frachtenberg, "Design and Analysis of Benchmarking Experiments for Distributed
  Internet Services", WWW 2015, §5.1-5.2: the clustered bootstrap by reweighting (every
  cluster one weight with mean 1 and variance 1; Owen & Eckles 2012). Here the two versions
  become k levels: per-(level, cluster) sums are reweighted in one matrix product.
* Cameron & Miller, "A Practitioner's Guide to Cluster-Robust Inference", J. Human Resources
  50(2), 2015, §VI.A-C: with G clusters, scale the cluster-robust SE by sqrt(G / (G - 1)) and
  use T(G - 1) critical values instead of the normal; Cameron, Gelbach & Miller, Rev. Econ.
  Stat. 90(3), 2008, §IV: with few clusters (G = 5-10) cluster-robust and pairs-cluster
  bootstrap Wald tests over-reject; the floor here is ``MIN_CLUSTERS`` = 5 clusters holding
  each compared level. Below it the cluster-level t interval (Donald & Lang, Rev. Econ. Stat.
  89(2), 2007; :mod:`benchlang.stats.ab.fewclusters`) is given where its coverage was measured
  (from 3 clusters per level); below that no interval is given (descriptive only).
* Ratios on the log scale: the ratio of two means is estimated by exp(log m_j - log m_ref),
  and its interval is the exponentiated interval of the log ratio, whose sampling
  distribution is closer to normal than the ratio's (delta method; Efron & Tibshirani, *An
  Introduction to the Bootstrap*, 1993, §12.6 on transformations).
* Multiplicity: Bonferroni (Dunn, "Multiple comparisons among means", JASA 56(293), 1961):
  each of the m intervals at level 1 - α/m, so that all m hold together with probability at
  least 1 - α; a pair is significant when its simultaneous interval excludes 1 (0 for a
  difference), equivalently when its Bonferroni-adjusted p-value min(1, m p) is below α.
  Bonferroni rather than Holm so that the decision and the printed interval always agree.

The estimand is the ratio (or difference) of the levels' *means* over the measured trials,
pooled over everything else the trials vary in (benchmarks, other factors' levels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.stats.ab.bootstrap import MIN_CLUSTERS, draw_weights
from benchlang.stats.ab.fewclusters import MIN_CLUSTERS_T, cluster_t_pairs, offered, structure

_BLOCK = 1 << 22


@attrs.frozen
class PairComparison:
    """One level against another: ``estimate`` is level / reference (scale "ratio") or
    level - reference ("difference"); ``ci_low``/``ci_high`` its simultaneous interval at the
    family's confidence (nan when refused). ``se`` is the bootstrap SE on the test scale (log
    ratio or difference), already widened by sqrt(G / (G - 1)); ``clusters`` is G, the
    clusters holding either level; ``p_value`` two-sided from T(G - 1), ``p_adjusted`` its
    Bonferroni adjustment."""

    level: int
    reference: int
    estimate: float
    ci_low: float
    ci_high: float
    se: float
    clusters: int
    p_value: float
    p_adjusted: float

    @property
    def significant(self) -> bool:
        """Bonferroni-adjusted p below alpha, i.e. the simultaneous interval excludes the null;
        never when the SE is 0 or missing."""
        return bool(math.isfinite(self.se) and self.se > 0 and math.isfinite(self.ci_low)) and not (
            self.ci_low <= self._null <= self.ci_high
        )

    _null: float = 1.0
    df: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if isinstance(x, float) and math.isnan(x) else x

        return {
            "level": self.level,
            "reference": self.reference,
            "estimate": num(self.estimate),
            "ci_low": num(self.ci_low),
            "ci_high": num(self.ci_high),
            "se": num(self.se),
            "clusters": self.clusters,
            "p_value": num(self.p_value),
            "p_adjusted": num(self.p_adjusted),
            "df": num(self.df),
            "significant": self.significant,
        }


@attrs.frozen
class LevelComparison:
    """Every compared pair of a factor's levels (see the module docstring).

    ``names`` are the levels in declared order, ``means`` and ``trials`` per level,
    ``clusters_per_level`` how many clusters hold each level's trials. ``refused`` says why
    no interval is given (too few clusters); the estimates are then descriptive only.
    ``confidence`` is the family-wise level (percent) the intervals hold at together,
    ``per_pair_confidence`` the level of each (Bonferroni).
    """

    names: tuple[str, ...]
    means: tuple[float, ...]
    trials: tuple[int, ...]
    scale: str
    pairs: tuple[PairComparison, ...]
    reference: int
    mode: str
    cluster: str
    clusters_per_level: tuple[int, ...]
    confidence: float
    per_pair_confidence: float
    adjustment: str
    replicates: int
    weights: str
    min_clusters: int
    refused: str | None
    method: str = "bootstrap"

    @property
    def descriptive_only(self) -> bool:
        return self.refused is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "levels": list(self.names),
            "means": list(self.means),
            "trials": list(self.trials),
            "scale": self.scale,
            "reference": self.names[self.reference],
            "pairs_mode": self.mode,
            "pairs": [
                {**p.to_dict(), "level": self.names[p.level], "reference": self.names[p.reference]}
                for p in self.pairs
            ],
            "cluster": self.cluster,
            "clusters_per_level": list(self.clusters_per_level),
            "confidence": self.confidence,
            "per_pair_confidence": self.per_pair_confidence,
            "adjustment": self.adjustment,
            "replicates": self.replicates,
            "weights": self.weights,
            "min_clusters": self.min_clusters,
            "refused": self.refused,
            "method": self.method,
            "descriptive_only": self.descriptive_only,
        }


def pair_list(k: int, reference: int, mode: str) -> list[tuple[int, int]]:
    """(level, reference) pairs: every other level against ``reference`` ("reference"), or
    every pair i < j as (j, i) ("all")."""
    if mode == "reference":
        return [(j, reference) for j in range(k) if j != reference]
    if mode == "all":
        return [(j, i) for i in range(k) for j in range(i + 1, k)]
    raise ValueError(f"pairs must be 'reference' or 'all', got {mode!r}")


def level_sums(
    Y: np.ndarray, level: np.ndarray, codes: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-(level, cluster) sums ``(E, k, C)`` of the rows of Y (E x n) and counts ``(k, C)``."""
    C = int(codes.max()) + 1
    col = level * C + codes
    counts = np.bincount(col, minlength=k * C).reshape(k, C).astype(np.float64)
    sums = np.stack([np.bincount(col, weights=row, minlength=k * C) for row in Y])
    return sums.reshape(Y.shape[0], k, C), counts


def replicate_means(
    sums: np.ndarray, counts: np.ndarray, replicates: int, weights: str, rng: np.random.Generator
) -> np.ndarray:
    """Reweighted level means ``(E, k, B)``: one weight per cluster and replicate (§5.1),
    shared by every level; nan where a level got total weight 0."""
    E, k, C = sums.shape
    num = np.zeros((E, k, replicates))
    den = np.zeros((E, k, replicates))
    e_step = max(1, _BLOCK // max(1, replicates * C))
    for e0 in range(0, E, e_step):
        e1 = min(E, e0 + e_step)
        w = draw_weights(weights, (e1 - e0, replicates, C), rng)
        wt = w.transpose(0, 2, 1)
        num[e0:e1] = np.matmul(sums[e0:e1], wt)
        den[e0:e1] = np.matmul(counts, wt)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def pair_intervals(
    means: np.ndarray,
    boot: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    clusters: Sequence[int],
    scale: str,
    confidence: float,
) -> dict[str, np.ndarray]:
    """Estimates, SEs, simultaneous intervals and p-values of every pair, for E data sets.

    ``means`` (E, k), ``boot`` (E, k, B); ``clusters`` is G per pair. On the test scale
    θ (log ratio or difference): SE = sqrt(G / (G - 1)) · sd(θ*), interval θ ± t · SE with
    t the T(G - 1) quantile at 1 - α / (2m) (Bonferroni over m pairs; Cameron & Miller 2015
    §VI.C), back-transformed by exp for ratios. Returns arrays of shape (E, m).
    """
    from scipy.stats import t as student_t

    m = len(pairs)
    alpha = 1.0 - confidence / 100.0
    j = np.array([p[0] for p in pairs])
    r = np.array([p[1] for p in pairs])
    with np.errstate(invalid="ignore", divide="ignore"):
        if scale == "ratio":
            theta = np.log(means[:, j]) - np.log(means[:, r])
            star = np.log(boot[:, j]) - np.log(boot[:, r])
        else:
            theta = means[:, j] - means[:, r]
            star = boot[:, j] - boot[:, r]
    g = np.asarray(clusters, dtype=float)
    ok = np.isfinite(star)
    count = ok.sum(axis=2)
    filled = np.where(ok, star, 0.0)
    mean_star = filled.sum(axis=2) / np.maximum(count, 1)
    var = (np.where(ok, star - mean_star[..., None], 0.0) ** 2).sum(axis=2) / np.maximum(
        count - 1, 1
    )
    se = np.where(count >= 2, np.sqrt(var * g / (g - 1.0)), np.nan)
    df = g - 1.0
    crit = student_t.ppf(1.0 - alpha / (2.0 * m), df)
    lo, hi = theta - crit * se, theta + crit * se
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(se > 0, 2.0 * student_t.sf(np.abs(theta) / se, df), np.nan)
    est = np.exp(theta) if scale == "ratio" else theta
    if scale == "ratio":
        lo, hi = np.exp(lo), np.exp(hi)
    return {
        "estimate": est,
        "ci_low": lo,
        "ci_high": hi,
        "se": se,
        "p_value": p,
        "p_adjusted": np.minimum(1.0, p * m),
    }


def compare_levels(
    y: np.ndarray,
    level: np.ndarray,
    codes: np.ndarray,
    *,
    names: Sequence[str] | None = None,
    reference: int = 0,
    pairs: str = "reference",
    scale: str = "ratio",
    cluster: str = "cluster",
    replicates: int = 2000,
    weights: str = "poisson",
    confidence: float = 95.0,
    seed: int | np.random.Generator = 0,
    min_clusters: int = MIN_CLUSTERS,
    small_sample: bool = True,
) -> LevelComparison:
    """Compare the means of k ≥ 2 levels with a reference (or all pairs): clustered
    reweighting bootstrap (Bakshy & Frachtenberg §5), log-scale ratio intervals, T(G - 1)
    critical values and the sqrt(G/(G-1)) correction (Cameron & Miller 2015 §VI), Bonferroni
    over the pairs (Dunn 1961). See the module docstring.

    ``y`` one value per trial, ``level`` its level 0..k-1, ``codes`` its cluster (any labels;
    all levels share a cluster's weight, so paired designs stay paired). ``scale="ratio"``
    needs strictly positive values. When a compared level lies in fewer than
    ``min_clusters`` clusters, nothing is resampled: the estimates are given, the intervals
    are nan and ``refused`` says why (never an SE of 0 presented as a result) — unless
    ``small_sample`` and every pair's clusters allow the cluster-level t interval (Donald &
    Lang 2007; :mod:`benchlang.stats.ab.fewclusters`), which is then given (``method``
    "cluster_t").
    """
    if scale not in ("ratio", "difference"):
        raise ValueError("scale must be 'ratio' or 'difference'")
    if not 0 < confidence < 100:
        raise ValueError("confidence is a percent in (0, 100)")
    if replicates < 2 or min_clusters < 2:
        raise ValueError("replicates and min_clusters must be >= 2")
    y = np.asarray(y, dtype=np.float64).ravel()
    level = np.asarray(level, dtype=np.int64).ravel()
    codes = np.unique(np.asarray(codes).ravel(), return_inverse=True)[1].ravel()
    if not (y.size == level.size == codes.size):
        raise ValueError("y, level and codes need one entry per trial")
    if not np.isfinite(y).all():
        raise ValueError("values must be finite")
    k = int(level.max()) + 1 if level.size else 0
    labels = tuple(str(x) for x in names) if names is not None else tuple(map(str, range(k)))
    k = max(k, len(labels))
    if k < 2:
        raise ValueError("at least two levels are needed")
    if scale == "ratio" and (y <= 0).any():
        raise ValueError("ratios need strictly positive values")
    trials = np.bincount(level, minlength=k)
    if (trials == 0).any():
        missing = [labels[i] for i in np.flatnonzero(trials == 0)]
        raise ValueError(f"no trials for level {', '.join(missing)}")
    plist = pair_list(k, reference, pairs)
    m = len(plist)
    per_level = tuple(int(np.unique(codes[level == v]).size) for v in range(k))
    per_pair = [int(np.unique(codes[(level == a) | (level == b)]).size) for a, b in plist]
    sums, counts = level_sums(y[None], level, codes, k)
    means = sums.sum(axis=2) / counts.sum(axis=1)
    few = [labels[v] for v in sorted({v for p in plist for v in p}) if per_level[v] < min_clusters]
    refused, method, df = None, "bootstrap", [math.nan] * m
    small = [structure(level, codes, a, b) for a, b in plist]
    if few and small_sample and all(offered(kind, g) for kind, g in small):
        out = cluster_t_pairs(y[None], level, codes, plist, scale, confidence)
        method, df, per_pair = "cluster_t", [float(x) for x in out["df"]], [g for _, g in small]
    elif few:
        refused = (
            f"cluster {cluster}: level{'s' if len(few) > 1 else ''} {', '.join(few)} "
            f"{'lie' if len(few) > 1 else 'lies'} in fewer than {min_clusters} clusters "
            f"({', '.join(f'{labels[v]} {per_level[v]}' for v in range(k))}); a cluster "
            "bootstrap interval needs at least "
            f"{min_clusters} (Cameron, Gelbach & Miller 2008)"
            + (
                f" and the cluster-level t at least {min(MIN_CLUSTERS_T.values())} (Donald & Lang"
                " 2007)"
                if small_sample
                else ""
            )
            + ": estimates only, no interval"
        )
        nan = np.full((1, m), np.nan)
        theta = np.array(
            [
                [
                    means[0, a] / means[0, b] if scale == "ratio" else means[0, a] - means[0, b]
                    for a, b in plist
                ]
            ]
        )
        out = {
            "estimate": theta,
            "ci_low": nan,
            "ci_high": nan,
            "se": nan,
            "p_value": nan,
            "p_adjusted": nan,
        }
    else:
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        boot = replicate_means(sums, counts, replicates, weights, rng)
        out = pair_intervals(means, boot, plist, per_pair, scale, confidence)
    null = 1.0 if scale == "ratio" else 0.0
    result_pairs = tuple(
        PairComparison(
            level=a,
            reference=b,
            estimate=float(out["estimate"][0, i]),
            ci_low=float(out["ci_low"][0, i]),
            ci_high=float(out["ci_high"][0, i]),
            se=float(out["se"][0, i]),
            clusters=per_pair[i],
            p_value=float(out["p_value"][0, i]),
            p_adjusted=float(out["p_adjusted"][0, i]),
            null=null,
            df=df[i],
        )
        for i, (a, b) in enumerate(plist)
    )
    return LevelComparison(
        names=labels,
        means=tuple(float(x) for x in means[0]),
        trials=tuple(int(x) for x in trials),
        scale=scale,
        pairs=result_pairs,
        reference=int(reference),
        mode=pairs,
        cluster=cluster,
        clusters_per_level=per_level,
        confidence=float(confidence),
        per_pair_confidence=100.0 - (100.0 - float(confidence)) / m,
        adjustment="bonferroni" if m > 1 else "none",
        replicates=int(replicates),
        weights=weights,
        min_clusters=int(min_clusters),
        refused=refused,
        method=method,
    )


def compare_levels_many(
    Y: np.ndarray,
    level: np.ndarray,
    codes: np.ndarray,
    *,
    reference: int = 0,
    pairs: str = "reference",
    scale: str = "ratio",
    replicates: int = 500,
    weights: str = "poisson",
    confidence: float = 95.0,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """The intervals of :func:`compare_levels` for E data sets on one design at once (rows of
    Y), for coverage simulations; arrays of shape (E, m). No cluster floor is applied."""
    level = np.asarray(level, dtype=np.int64)
    codes = np.unique(np.asarray(codes), return_inverse=True)[1].ravel()
    k = int(level.max()) + 1
    plist = pair_list(k, reference, pairs)
    per_pair = [int(np.unique(codes[(level == a) | (level == b)]).size) for a, b in plist]
    sums, counts = level_sums(np.atleast_2d(Y), level, codes, k)
    means = sums.sum(axis=2) / counts.sum(axis=1)
    boot = replicate_means(sums, counts, replicates, weights, rng)
    return pair_intervals(means, boot, plist, per_pair, scale, confidence)
