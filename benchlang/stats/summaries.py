"""The summaries papers print per configuration: mean with its confidence interval, SD, IQR
and coefficient of variation.

The mean's interval respects the design as the comparisons do (``stats.ab.fewclusters``):
trials of one host, series or round share that unit's state and are not independent, so the
interval is Student's t on the G cluster means of the coarsest clustering level with at least
``MIN_CLUSTERS`` units, mean(ybar_g) ± t(G - 1) · sd(ybar_g) / sqrt(G): the two-step estimator
of Donald & Lang, Rev. Econ. Stat. 89(2), 2007, §2, exact when the cluster means are normal.
With equal cluster sizes it equals the cluster-robust (CR1) interval of the trial mean
(Cameron & Miller, J. Human Resources 50(2), 2015, §II.C Eq. 12, §VI.D); with unequal sizes CR1 with
t(G - 1) under-covers badly (59–81% at 95% with sizes like 2, 2, 2, 2, 40), so the interval is
for the mean of the cluster means, and a note says so with that value. Where the trials are one block of one host (one host, series and round) no level has
clusters and the summary is descriptive only: a t interval treating those trials as
independent under-covers when they share a cluster effect (benchmarks/sim_mean_interval.py,
docs/statistics.md "Per-configuration summaries").

SD (n - 1 divisor), IQR (numpy's linear percentiles 25 and 75) and CV = SD / |mean| are
descriptive: they describe the trials, not the population of hosts or runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.stats._multistage import nested_units
from benchlang.stats._special import t_ppf
from benchlang.stats.ab.fewclusters import MIN_CLUSTERS_T

MIN_CLUSTERS = MIN_CLUSTERS_T["paired"]
"""Fewest clusters for the t(G - 1) interval: below 3 one or two degrees of freedom give no
usable interval (``stats.ab.fewclusters``, whose simulation covered from G = 3 on)."""


METHOD = "cluster-robust t(G-1) over cluster means (Cameron & Miller 2015 §4)"


@attrs.frozen
class Summary:
    """Mean with its ``confidence`` interval, SD, IQR and CV of one configuration's values.

    ``lower``/``upper`` are nan when ``descriptive`` (``reason`` says why); ``level`` names
    the clustering level the interval used and ``clusters`` its number of units (G), the
    interval having G - 1 degrees of freedom. ``note`` names a coarser level whose variation
    the interval does not carry (too few of its units).
    """

    n: int
    mean: float
    lower: float
    upper: float
    sd: float
    iqr: float
    cv: float
    confidence: float
    level: str | None
    clusters: int
    descriptive: bool
    reason: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: a number not defined is null, with its reason in ``null_reasons``."""
        interval = undefined(
            {
                "lower": self.lower,
                "upper": self.upper,
                "confidence": self.confidence,
                "level": self.level,
                "clusters": self.clusters,
                "df": self.clusters - 1 if self.level is not None else None,
                "method": METHOD,
            },
            {"*": self.reason or "not defined for these values"},
        )
        few = "fewer than two values" if self.n < 2 else "the mean is zero"
        return undefined(
            {
                "n": self.n,
                "mean": self.mean,
                "mean_interval": interval,
                "sd": self.sd,
                "iqr": self.iqr,
                "cv": self.cv,
                "descriptive": self.descriptive,
                "reason": self.reason,
                "note": self.note,
            },
            {"mean": "no values", "iqr": "no values", "sd": few, "cv": few},
        )


def summarize(
    values: np.ndarray,
    clusters: np.ndarray | None = None,
    level_names: Sequence[str] = ("host", "series", "round"),
    confidence: float = 95.0,
) -> Summary:
    """The summary of ``values`` (nan = missing, left out) whose trials sit in ``clusters``, an
    (n, L) array of unit ids from coarsest (column 0) to finest, named by ``level_names``.
    Units are nested: level k's unit is the row of columns 0..k (``nested_units``)."""
    if not 0 < confidence < 100:
        raise ValueError("confidence is a percent in (0, 100)")
    v = np.asarray(values, dtype=float).ravel()
    cl = np.zeros((v.size, 1), dtype=np.int64) if clusters is None else np.asarray(clusters)
    if cl.ndim == 1:
        cl = cl[:, None]
    names = list(level_names)[: cl.shape[1]]
    keep = np.isfinite(v)
    v, cl = v[keep], cl[keep]
    n = int(v.size)
    if n == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, confidence, None, 0, True, "no values")
    mean = float(v.mean())
    sd = float(v.std(ddof=1)) if n > 1 else math.nan
    q1, q3 = np.percentile(v, [25, 75])
    cv = sd / abs(mean) if mean != 0 and math.isfinite(sd) else math.nan
    summary = partial(Summary, n=n, mean=mean, sd=sd, iqr=float(q3 - q1), cv=cv)
    nested = nested_units(cl) if cl.shape[1] else []
    counts = [int(u.max()) + 1 for u in nested]
    chosen = next((k for k, g in enumerate(counts) if g >= MIN_CLUSTERS), None)
    if chosen is None:
        if all(g == 1 for g in counts):
            reason = "the trials are one block of one host: no interval (they are not independent)"
        else:
            found = ", ".join(f"{name} {g}" for g, name in zip(counts, names, strict=False))
            reason = f"fewer than {MIN_CLUSTERS} units at every clustering level ({found})"
        return summary(
            lower=math.nan,
            upper=math.nan,
            confidence=confidence,
            level=None,
            clusters=max(counts, default=1),
            descriptive=True,
            reason=reason,
        )
    unit = nested[chosen]
    G = counts[chosen]
    sizes = np.bincount(unit, minlength=G)
    means = np.bincount(unit, weights=v, minlength=G) / sizes
    centre = float(means.mean())
    half = t_ppf(0.5 + confidence / 200.0, G - 1) * float(means.std(ddof=1)) / math.sqrt(G)
    notes = []
    if sizes.min() != sizes.max():
        notes.append(
            f"the {names[chosen]} units ran {sizes.min()}–{sizes.max()} trials: the interval is for the "
            f"mean of the {G} {names[chosen]} means ({centre:.6g}), not the trial mean"
        )
    coarser = [f"{counts[k]} {names[k]}" for k in range(chosen) if counts[k] > 1]
    if coarser:
        notes.append(
            f"over {names[chosen]} means; {', '.join(coarser)}: too few to carry their variation"
        )
    if chosen > 0 and counts[0] == 1:
        notes.append(f"one {names[0]}: the interval holds for this {names[0]}, not for others")
    note = "; ".join(notes) or None
    return summary(
        lower=centre - half,
        upper=centre + half,
        confidence=confidence,
        level=names[chosen],
        clusters=G,
        descriptive=False,
        note=note,
    )


__all__ = ["MIN_CLUSTERS", "Summary", "summarize"]
