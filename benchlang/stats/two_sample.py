"""The ratio of a percentile between two independent samples (a before/after of the same
configuration in two stores), with a stratified multistage bootstrap interval.

Sources: Davison & Hinkley, *Bootstrap Methods and their Application*, CUP 1997, §3.2
(several samples: resample each sample separately, "stratified" resampling) and §3.8
(hierarchical data: resample top-level units, then the units inside each, at every stage);
Hesterberg, The American Statistician 69(4) 2015, §4.2 (the expanded percentile interval for
few units, with ``a`` the smaller sample's number of top-level units). The statistic is the
percentile of log values, so the ratio is the exponential of a difference
(:mod:`benchlang.stats.headline` uses the same estimator within one store).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.stats._multistage import multistage_weights
from benchlang.stats._weighted import weighted_percentile
from benchlang.stats.cluster_t import MIN_CLUSTERS
from benchlang.stats.headline import expansion


@attrs.frozen
class RatioInterval:
    """``ratio`` = statistic(b) / statistic(a), two-sided interval at ``confidence`` percent.

    ``lower``/``upper`` are nan when ``descriptive_only`` (``reasons`` say why)."""

    ratio: float
    lower: float
    upper: float
    confidence: float
    statistic_a: float
    statistic_b: float
    units: tuple[int, int]
    unit_level: tuple[str, str]
    descriptive_only: bool
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; a bound (or ratio) not computed is null, with the reasons."""
        why = "; ".join(self.reasons) or "descriptive only"
        return undefined(attrs.asdict(self), {"*": why})


def _units(clusters: np.ndarray, names: tuple[str, ...]) -> tuple[np.ndarray, str]:
    """The varying cluster levels (top first); every trial its own unit when none varies."""
    varying = [i for i in range(clusters.shape[1]) if np.unique(clusters[:, i]).size > 1]
    if not varying:
        return np.arange(clusters.shape[0])[:, None], "trial"
    return clusters[:, varying], names[varying[0]]


def ratio_of_percentiles(
    a: np.ndarray,
    a_clusters: np.ndarray,
    b: np.ndarray,
    b_clusters: np.ndarray,
    *,
    percentile: float = 50.0,
    confidence: float = 95.0,
    level_names: tuple[str, ...] = ("host", "series", "round"),
    replicates: int = 2000,
    seed: int = 0,
    min_clusters: int = MIN_CLUSTERS,
) -> RatioInterval:
    """Ratio of the ``percentile`` of ``b`` to that of ``a`` (positive values; others left
    out), each sample resampled on its own through its (n, L) cluster levels, top first.

    Assumptions: the two samples are independent (two stores, two runs); each has at least
    ``min_clusters`` top-level units, else the result is descriptive only (a ratio without an
    interval: with fewer, cluster bootstraps are far too narrow; Field & Welsh 2007).
    """
    if not (0 < percentile < 100 and 0 < confidence < 100):
        raise ValueError("percentile and confidence are percents in (0, 100)")
    samples = []
    reasons: list[str] = []
    too_few: list[str] = []
    for name, values, clusters in (("A", a, a_clusters), ("B", b, b_clusters)):
        v = np.asarray(values, dtype=float).ravel()
        cl = np.asarray(clusters).reshape(v.size, -1)
        keep = np.isfinite(v) & (v > 0)
        if (~keep).any():
            reasons.append(f"{int((~keep).sum())} values of {name} left out (missing or <= 0)")
        v, cl = v[keep], cl[keep]
        units, level = _units(cl, level_names) if v.size else (cl, "trial")
        count = int(np.unique(units[:, 0]).size) if v.size else 0
        if count < min_clusters:
            too_few.append(
                f"{name} has {count} {level} units: too few for a bootstrap interval "
                f"(it needs at least {min_clusters})",
            )
        samples.append((np.log(v), units, count, level))
    (la, ua, na, lev_a), (lb, ub, nb, lev_b) = samples
    stat = []
    for logs in (la, lb):
        order = np.argsort(logs, kind="stable")
        stat.append(float(weighted_percentile(logs[order], np.ones((1, logs.size)), percentile)[0]))
    estimate = stat[1] - stat[0] if la.size and lb.size else math.nan
    descriptive = min(na, nb) < min_clusters
    lower = upper = math.nan
    if not descriptive:
        rng = np.random.default_rng(seed)
        boot = []
        for logs, units in ((la, ua), (lb, ub)):
            weights, leaf = multistage_weights(units, replicates, rng)
            order = np.argsort(logs, kind="stable")
            boot.append(weighted_percentile(logs[order], weights, percentile, columns=leaf[order]))
        diff = boot[1] - boot[0]
        tail = (100.0 - confidence) / 200.0
        lo_q, hi_q = np.nanquantile(diff, [tail, 1.0 - tail])
        center = float(np.nanmedian(diff))
        grow = expansion(min(na, nb), confidence)
        lower = math.exp(estimate + (lo_q - center) * grow)
        upper = math.exp(estimate + (hi_q - center) * grow)
    return RatioInterval(
        ratio=math.exp(estimate) if math.isfinite(estimate) else math.nan,
        lower=lower,
        upper=upper,
        confidence=float(confidence),
        statistic_a=math.exp(stat[0]) if math.isfinite(stat[0]) else math.nan,
        statistic_b=math.exp(stat[1]) if math.isfinite(stat[1]) else math.nan,
        units=(na, nb),
        unit_level=(lev_a, lev_b),
        descriptive_only=descriptive,
        reasons=tuple(too_few + reasons),
    )
