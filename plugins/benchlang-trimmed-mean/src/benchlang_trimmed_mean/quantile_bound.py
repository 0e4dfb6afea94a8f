"""A KPI by fractional order statistics: ``kpi M with hutson { percentile P confidence C }``.

Source: Hutson, "Calculating nonparametric confidence intervals for quantiles using fractional
order statistics", Journal of Applied Statistics 26(3), 1999, §2 (Eq. 2.1-2.3). The u-th
fractional order statistic U_(u) of n uniforms is Beta(u, n + 1 - u); the upper C-level bound of
the p-th percentile is X_(u) with P(Beta(u, n + 1 - u) >= p) = C, the lower one with
P(Beta(u, n + 1 - u) <= p) = C, X_(u) interpolated linearly between the neighbouring order
statistics. Thompson's bound (benchlang's default) rounds u up to an integer rank, so it
over-covers; this one aims at the nominal level. Below the n where u would exceed n (resp. fall
below 1) there is no bound: the KPI says so instead of extrapolating.
"""

from __future__ import annotations

import math

import numpy as np

from benchlang.stats.independence import independence_rows
from benchlang.stats.kpi import KPI


def fractional_rank(n: int, p: float, c: float, bound: str) -> float | None:
    """u in [1, n] solving Hutson's Eq. 2.2 (upper) or 2.3 (lower); None when out of reach."""
    from scipy.optimize import brentq
    from scipy.special import betainc

    def coverage(u: float) -> float:
        below = betainc(u, n + 1.0 - u, p)  # P(U_(u) <= p)
        return (1.0 - below if bound == "upper" else below) - c

    low, high = coverage(1.0), coverage(float(n))
    if (bound == "upper" and high < 0) or (bound == "lower" and low < 0):
        return None
    if bound == "upper" and low >= 0:
        return 1.0
    if bound == "lower" and high >= 0:
        return float(n)
    return float(brentq(coverage, 1.0, float(n), xtol=1e-12))


def hutson(
    values: np.ndarray,
    percentile: float,
    confidence: float,
    bound: str = "upper",
    exclude: int = 0,
) -> KPI:
    """The C-level one-sided bound of the p-th percentile at Hutson's fractional rank."""
    x = np.asarray(values, dtype=float).ravel()
    x = np.sort(x[np.isfinite(x)])
    n = x.size
    test = independence_rows(x[None, :] if n else np.zeros((1, 0)))[0]
    u = fractional_rank(n, percentile / 100, confidence / 100, bound) if n >= 2 else None
    refusal = None
    value = math.nan
    if u is None:
        refusal = (
            f"{n} values are too few for a fractional order statistic bound of "
            f"p{percentile:g} at {confidence:g}% (Hutson 1999): run more trials"
        )
    else:
        i = min(math.floor(u), n - 1)
        value = float(x[i - 1] + (u - i) * (x[i] - x[i - 1]))
    return KPI(
        value=value,
        rank=None,
        n=n,
        min_n=2,
        percentile=float(percentile),
        confidence=float(confidence),
        achieved_confidence=math.nan if u is None else float(confidence),
        bound=bound,
        independence=test,
        method="hutson",
        refusal=refusal,
        details={} if u is None else {"fractional_rank": u},
    )
