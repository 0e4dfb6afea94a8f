"""Minimal number of samples for a one-sided order-statistic CI of a percentile.

Source: Jacob et al., "Designing Replicable Networking Experiments With TriScale",
JSys 1(1) 2021, §4.5, Eq. 4 (and Table 2), after Thompson's order-statistic bounds
(Le Boudec, "Performance Evaluation of Computer and Communication Systems", §2.2).

The checker sizes ``runs auto`` with this module, so it imports neither scipy nor numpy:
``benchlang check`` loads no scipy (tests/test_import_budget.py; numpy it loads elsewhere, for
the A/B layouts of ``design.layouts``). The binomial CDF is computed here
exactly enough (math.comb in log space, math.fsum) to agree with scipy.stats.binom.cdf to
1e-12; tests/test_csv_and_sizing.py holds that comparison and the TriScale table. It is the
package's one ``binom_cdf``; where every k is needed at once (the ranks of a bound over a
million trials) ``_orderstat`` tabulates the whole CDF in numpy.
"""

from __future__ import annotations

import math

_EPS = 1e-12


def _pmf_terms(n: int, p: float, ks: range) -> list[float]:
    """P(Bin(n, p) = k) for each k of ``ks`` (0 <= k <= n, 0 < p < 1, step 1).

    The binomial coefficient is exact (integer recurrence); only its logarithm and the
    powers are floating point, so each term has a relative error of a few 1e-13 at most.
    """
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = []
    coefficient = math.comb(n, ks.start) if ks else 1
    for k in ks:
        terms.append(math.exp(math.log(coefficient) + k * log_p + (n - k) * log_q))
        coefficient = coefficient * (n - k) // (k + 1)
    return terms


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(Bin(n, p) <= k), as ``scipy.stats.binom.cdf`` (0 below 0, 1 from n on).

    Sums the shorter tail so that the result keeps full precision near 0 and near 1.
    """
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    if k + 1 <= n - k:
        return min(1.0, math.fsum(_pmf_terms(n, p, range(k + 1))))
    return _one_minus_upper_tail(k, n, p)


def _one_minus_upper_tail(k: int, n: int, p: float) -> float:
    """P(Bin(n, p) <= k) as 1 - P(Bin(n, p) > k): n - k terms, for 0 <= k < n, 0 < p < 1."""
    return max(0.0, 1.0 - math.fsum(_pmf_terms(n, p, range(k + 1, n + 1))))


def _fraction(name: str, value: float) -> float:
    """A percent in (0, 100) as a fraction; ValueError otherwise."""
    v = float(value)
    if not (0.0 < v < 100.0):
        raise ValueError(f"{name} must lie strictly between 0 and 100, got {value!r}")
    return v / 100.0


def sizing(percentile: float, confidence: float, exclude: int = 0, two_sided: bool = False) -> int:
    """Smallest N for which a one-sided C-level bound of the p-th percentile exists; with
    ``two_sided``, the equal-tailed two-sided interval (both sides at (1 + C) / 2, Hahn &
    Meeker, Statistical Intervals, §5.2): 6 for the median at 95%, 72 for p95.

    The bound is the order statistic X_(N-r) (upper bound) or X_(r+1) (lower bound)
    after excluding ``exclude`` = r extreme samples. With q = max(p, 1-p) (the binding
    side), it is the smallest N with P(Bin(N, q) <= N-r-1) >= C. For r = 0 this is
    Eq. 4 of TriScale, N >= log(1-C) / log(q); Table 2 of the paper gives
    p95/C95 -> 59, p95/C99 -> 90, p99/C95 -> 299, p90/C95 -> 29, p50/C95 -> 5.
    """
    p = _fraction("percentile", percentile)
    c = _fraction("confidence", confidence)
    if two_sided:
        c = (1.0 + c) / 2.0
    if isinstance(exclude, bool) or int(exclude) != exclude or exclude < 0:
        raise ValueError(f"exclude must be a non-negative integer, got {exclude!r}")
    return smallest_n(max(p, 1.0 - p), c, int(exclude))


def smallest_n(q: float, c: float, r: int = 0) -> int:
    """Smallest N with P(Bin(N, q) <= N - r - 1) >= c: the bound X_(N-r) of the q-quantile
    at confidence c (``q`` and ``c`` fractions; TriScale Eq. 4 for r = 0, else bisected).
    Shared by :func:`sizing` and ``_orderstat.min_samples``."""
    if r < 0:
        raise ValueError(f"exclude must be a non-negative integer, got {r!r}")
    n = max(math.ceil(math.log1p(-c) / math.log(q) - _EPS), 1) + r
    if r == 0:
        return n

    def enough(m: int) -> bool:
        # P(Bin(m, q) <= m-r-1) = 1 - P(Bin(m, q) >= m-r): r + 1 terms whatever m is. It
        # grows with m (more samples, more of them beyond x_q), so the first m is bisected.
        return _one_minus_upper_tail(m - r - 1, m, q) >= c - _EPS

    low, step = n - 1, 1
    while not enough(n):
        low, n, step = n, n + step, step * 2
    while n - low > 1:
        mid = (low + n) // 2
        low, n = (low, mid) if enough(mid) else (mid, n)
    return n
