"""Variability score: the spread of KPIs across series (TriScale §4.3).

Source: Jacob et al., JSys 1(1) 2021, §4.3 (and the bounds of §4.5, Eq. 1-2, Table 2). For
the median the score is the two-sided distribution-free median interval at C, as in
TriScale's tool (``ThompsonCI(..., 'two-sided')`` and the double-sided N of
``min_number_samples``); for other percentiles two one-sided C-level bounds, whose joint
level 2C - 1 is stated.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.stats._orderstat import check_percent, lower_rank, two_sided_ranks, upper_rank
from benchlang.stats.independence import Independence, independence
from benchlang.stats.variability_sizing import variability_sizing


@attrs.frozen
class Variability:
    """Lower bound of the low percentile and upper bound of the high one, over series KPIs.

    ``joint_confidence`` (percent) is the probability that both bounds hold. At p = 50,
    [lower, upper] is the two-sided median interval sized so that its exact coverage
    (``joint_exact``) is at least C; each bound alone then holds with
    ``confidence_lower`` = ``confidence_upper`` = (1 + coverage)/2. Elsewhere each bound is
    one-sided at C (its exact level in ``confidence_lower``/``confidence_upper``) and the
    joint level is C_lower + C_upper - 1 (Bonferroni, >= 2C - 1), a lower bound.
    """

    lower: float
    upper: float
    score: float
    relative: float
    percentile_low: float
    percentile_high: float
    confidence: float
    joint_confidence: float
    joint_exact: bool
    rank_lower: int | None
    rank_upper: int | None
    n: int
    min_n: int
    independence: Independence
    confidence_lower: float = math.nan
    confidence_upper: float = math.nan

    @property
    def independent(self) -> bool:
        return self.independence.passed

    @property
    def enough(self) -> bool:
        return self.rank_lower is not None and self.rank_upper is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; with too few series the bounds are null, with why."""
        few = f"too few series for the variability score ({self.n} < {self.min_n} needed)"
        zero = "relative to a KPI median of zero" if self.enough else few
        return undefined(self._fields(), {"*": few, "relative": zero})

    def _fields(self) -> dict[str, Any]:
        return {
            "lower": self.lower,
            "upper": self.upper,
            "score": self.score,
            "relative": self.relative,
            "percentile_low": self.percentile_low,
            "percentile_high": self.percentile_high,
            "confidence": self.confidence,
            "joint_confidence": self.joint_confidence,
            "joint_exact": self.joint_exact,
            "rank_lower": self.rank_lower,
            "rank_upper": self.rank_upper,
            "confidence_lower": self.confidence_lower,
            "confidence_upper": self.confidence_upper,
            "n": self.n,
            "min_n": self.min_n,
            "independent": self.independent,
            "independence": self.independence.to_dict(),
        }


def variability(kpis: np.ndarray, percentile: float, confidence: float) -> Variability:
    """Variability score over the KPIs of all series (TriScale §4.3, Table 2).

    For the symmetric pair (p, 100 - p) with p < 50, ``lower`` is the C-level lower bound
    of the p-th percentile and ``upper`` the C-level upper bound of the (100-p)-th; at
    p = 50, [lower, upper] is the two-sided C-level median interval (equal tails, exact
    coverage >= C; Thompson 1936, Le Boudec §2.2.1), as TriScale's tool computes it. The
    score is upper - lower and ``relative`` the score over their midpoint. NaN KPIs are
    dropped; with too few series every number is nan and ``min_n``
    (:func:`benchlang.stats.variability_sizing.variability_sizing`) says how many are needed.
    """
    check_percent("percentile", percentile)
    c = check_percent("confidence", confidence)
    low = min(float(percentile), 100.0 - float(percentile))
    high = 100.0 - low
    x = np.asarray(kpis, dtype=float).ravel()
    x = x[np.isfinite(x)]
    n = int(x.size)
    median = low == 50.0
    if median:
        rl, ru, joint_cover = two_sided_ranks(n, 0.5, c) if n >= 2 else (None, None, math.nan)
        cl = cu = (1.0 + joint_cover) / 2.0
    else:
        rl, cl = lower_rank(n, low / 100.0, c)
        ru, cu = upper_rank(n, high / 100.0, c)
    if rl is None or ru is None:
        lo = hi = score = rel = joint = math.nan
        cl = cu = math.nan
    else:
        s = np.sort(x)
        lo, hi = float(s[rl - 1]), float(s[ru - 1])
        score = hi - lo
        mid = (hi + lo) / 2.0
        rel = score / abs(mid) if mid != 0 else math.nan
        joint = 100.0 * (joint_cover if median else cl + cu - 1.0)
    return Variability(
        lower=lo,
        upper=hi,
        score=score,
        relative=rel,
        percentile_low=low,
        percentile_high=high,
        confidence=float(confidence),
        joint_confidence=joint,
        joint_exact=median,
        rank_lower=rl,
        rank_upper=ru,
        n=n,
        min_n=variability_sizing(low, confidence),
        independence=independence(x),
        confidence_lower=100.0 * cl,
        confidence_upper=100.0 * cu,
    )
