"""The Wilcoxon-Mann-Whitney test with the Hodges-Lehmann shift and its distribution-free
interval (what asv and Google Benchmark's compare.py report, here with the interval).

Sources: Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*, 3rd ed., Wiley 2014,
§4.1 (the rank-sum test, large-sample approximation with ties, Eq. 4.6-4.7), §4.2 (the
estimator: the median of the m·n differences Y_j - X_i, Eq. 4.13) and §4.3 (the interval
[U(C_α), U(mn + 1 - C_α)] of the ordered differences, C_α from the exact null distribution,
Eq. 4.14, or its normal approximation, Eq. 4.15); Lehmann, *Nonparametrics*, 1975, §2.6;
Hodges & Lehmann, Ann. Math. Stat. 34, 1963. Assumption: the two samples are independent and
differ by a location shift; the exact interval's confidence is the achieved one (>= nominal).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

import numpy as np

from benchlang.stats.contract import ComparisonOutcome, ComparisonSample

EXACT_LIMIT = 2500
"""Largest m·n for the exact null distribution under ``exact auto`` (O(m·n·mn) work)."""


@functools.lru_cache(maxsize=64)
def u_null_cdf(m: int, n: int) -> np.ndarray:
    """P(U <= u) for u = 0..mn under H0, U the Mann-Whitney count (no ties): the recursion
    p(u; m, n) = m/(m+n) p(u - n; m-1, n) + n/(m+n) p(u; m, n-1) (H&W §4.1, Comment 5),
    positive terms only, so stable in floating point."""
    size = m * n + 1
    # row[j] holds p(.; i, j) for the current i, as arrays of length size
    prev = [np.zeros(size) for _ in range(n + 1)]
    for j in range(n + 1):
        prev[j][0] = 1.0  # i = 0: U = 0
    for i in range(1, m + 1):
        cur = [np.zeros(size) for _ in range(n + 1)]
        cur[0][0] = 1.0
        for j in range(1, n + 1):
            shifted = np.zeros(size)
            shifted[j:] = prev[j][: size - j]
            cur[j] = (i / (i + j)) * shifted + (j / (i + j)) * cur[j - 1]
        prev = cur
    cdf = np.minimum(np.cumsum(prev[n]), 1.0)
    cdf.flags.writeable = False  # cached: shared by every caller
    return cdf


def _count_at_most(x: np.ndarray, y: np.ndarray, t: float) -> int:
    """#{(i, j): y_j - x_i <= t} for sorted ``x``."""
    return int((x.size - np.searchsorted(x, y - t, side="left")).sum())


def kth_difference(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """The k-th smallest (1-based) of the m·n differences y_j - x_i without forming them:
    bisection on the value with counts by binary search (O((m + n) log m) per step), then the
    few differences left in the bracket sorted explicitly."""
    x = np.sort(np.asarray(x, dtype=np.float64))
    y = np.sort(np.asarray(y, dtype=np.float64))
    total = x.size * y.size
    if not 1 <= k <= total:
        raise ValueError(f"k must lie in 1..{total}")
    lo, hi = y[0] - x[-1], y[-1] - x[0]
    if _count_at_most(x, y, lo) >= k:
        return float(lo)
    while _count_at_most(x, y, hi) < total:  # y - hi may round above x[0]
        hi = np.nextafter(hi, np.inf) + abs(hi) * 1e-15
    # invariant: count(lo) < k <= count(hi)
    for _ in range(200):
        if _count_at_most(x, y, hi) - _count_at_most(x, y, lo) <= max(x.size, y.size, 64):
            break
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            break
        if _count_at_most(x, y, mid) >= k:
            hi = mid
        else:
            lo = mid
    first = np.searchsorted(x, y - hi, side="left")  # x_i >= y_j - hi  <=>  d <= hi
    last = np.searchsorted(x, y - lo, side="left")  # x_i >= y_j - lo  <=>  d <= lo
    inside = np.concatenate([y[j] - x[first[j] : last[j]] for j in range(y.size)])
    inside.sort()
    return float(inside[k - _count_at_most(x, y, lo) - 1])


def hodges_lehmann(x: np.ndarray, y: np.ndarray) -> float:
    """Median of the differences y_j - x_i (H&W Eq. 4.13)."""
    total = np.size(x) * np.size(y)
    if total % 2:
        return kth_difference(x, y, total // 2 + 1)
    return 0.5 * (kth_difference(x, y, total // 2) + kth_difference(x, y, total // 2 + 1))


def mann_whitney(sample: ComparisonSample, settings: Mapping[str, Any]) -> ComparisonOutcome:
    """Treatment minus control: the Hodges-Lehmann shift, its interval and the two-sided
    rank-sum p-value (first compared level against the reference)."""
    confidence = float(settings.get("confidence", 95.0))
    mode = settings.get("exact", "auto")
    ref = sample.reference
    other = next(i for i in range(len(sample.names)) if i != ref)
    x = np.asarray(sample.y[sample.level == ref], dtype=np.float64)
    y = np.asarray(sample.y[sample.level == other], dtype=np.float64)
    notes = []
    if len(sample.names) > 2:
        notes.append(
            f"mann_whitney compares two levels: {sample.names[other]} against {sample.names[ref]}"
        )
    return _shift_test(x, y, confidence, mode, tuple(notes))


def _shift_test(
    x: np.ndarray, y: np.ndarray, confidence: float, mode: str, notes: tuple[str, ...]
) -> ComparisonOutcome:
    m, n = x.size, y.size
    mn = m * n
    alpha = 1.0 - confidence / 100.0
    pooled = np.concatenate([x, y])
    ties = np.unique(pooled).size < pooled.size
    exact = mode == "exact" or (mode == "auto" and mn <= EXACT_LIMIT and not ties)
    if exact and ties:
        notes += ("ties: the exact null distribution assumes none; intervals are approximate",)
    # U = #{y_j > x_i} + ties/2
    xs = np.sort(x)
    below = np.searchsorted(xs, y, side="left").sum()
    equal = (np.searchsorted(xs, y, side="right") - np.searchsorted(xs, y, side="left")).sum()
    u = float(below + 0.5 * equal)
    estimate = hodges_lehmann(x, y)
    if exact:
        cdf = u_null_cdf(m, n)
        # largest C with P(U <= C - 1) <= alpha / 2 (H&W Eq. 4.14, by symmetry)
        c = int(np.searchsorted(cdf, alpha / 2.0, side="right"))
        p_low = cdf[math.floor(u)] if u >= 0 else 0.0
        p_high = 1.0 - (cdf[math.ceil(u) - 1] if math.ceil(u) >= 1 else 0.0)
        p_value = float(min(1.0, 2.0 * min(p_low, p_high)))
        achieved = float(100.0 * (1.0 - 2.0 * (cdf[c - 1] if c >= 1 else 0.0)))
        method = "exact"
    else:
        counts = np.unique(pooled, return_counts=True)[1]
        total = m + n
        var = mn / 12.0 * ((total + 1) - (counts**3 - counts).sum() / (total * (total - 1)))
        z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        c = round(mn / 2.0 - z * math.sqrt(var))  # H&W Eq. 4.15
        dist = abs(u - mn / 2.0) - 0.5
        p_value = 1.0
        if var > 0:
            p_value = min(1.0, 2.0 * (1.0 - NormalDist().cdf(max(dist, 0.0) / math.sqrt(var))))
        achieved = math.nan
        method = "asymptotic"
    if c < 1:
        return ComparisonOutcome(
            "mann_whitney",
            estimate,
            "shift",
            confidence=confidence,
            p_value=p_value,
            notes=notes,
            descriptive_only=(
                f"{m} and {n} trials are too few for a {confidence:g}% rank interval "
                "(every ordering of the samples is too likely)"
            ),
            details={"u": u, "m": m, "n": n, "interval": method},
        )
    low = kth_difference(x, y, c)
    high = kth_difference(x, y, mn + 1 - c)
    return ComparisonOutcome(
        "mann_whitney",
        estimate,
        "shift",
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        achieved_confidence=achieved,
        significant=bool(low > 0 or high < 0),
        p_value=p_value,
        notes=notes,
        details={"u": u, "m": m, "n": n, "interval": method},
    )
