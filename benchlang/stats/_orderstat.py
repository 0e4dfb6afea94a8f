"""Order-statistic ranks for distribution-free confidence bounds of percentiles.

Shared by the KPI, the variability score, the CDF band and any other helper that needs a
rank-based percentile CI (e.g. a median CI). Source: W. R. Thompson, "On confidence ranges
for the median and other expectation distributions...", Ann. Math. Stat. 7(3), 1936;
Le Boudec, "Performance Evaluation of Computer and Communication Systems", §2.2.1;
TriScale (Jacob et al., JSys 1(1) 2021), §4.5, Eq. 1-3.

For N i.i.d. samples of a continuous distribution with p-quantile x_p and order statistics
X_(1) <= ... <= X_(N), the number of samples below x_p is Bin(N, p), hence

    P(X_(k) >= x_p) = P(Bin(N, p) <= k - 1)       (upper bound, Eq. 2)
    P(X_(k) <= x_p) = P(Bin(N, p) >= k)           (lower bound, Eq. 1)

All ranks here are 1-based. For discrete data the achieved confidence is a lower bound.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from benchlang.stats.sizing import smallest_n

_EPS = 1e-12


def _cdf_table(n: int, ps: np.ndarray) -> np.ndarray:
    """Rows ``P(Bin(n, p) <= i)`` for i = 0..n, one row per p: the whole binomial CDF at once,
    where a rank search needs every k (n up to a million: the scalar
    :func:`benchlang.stats.sizing.binom_cdf` would loop over each). Pure numpy, so a run's
    closing report does not import scipy (0.5-1 s of start-up): the log pmf
    ``log C(n, i) + i log p + (n - i) log(1 - p)`` with the log factorials of
    :func:`_log_factorials`; tests check it against ``scipy.special.bdtr`` (within 1e-13 at
    n <= 100, 5e-11 at n = 20,000: the rounding of logs near n log 2)."""
    i = np.arange(n + 1, dtype=np.float64)
    log_factorial = _log_factorials(n)
    log_comb = log_factorial[n] - log_factorial - log_factorial[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.log(ps)[:, None]
        log_q = np.log1p(-ps)[:, None]
        successes = np.where(i == 0, 0.0, i * log_p)
        failures = np.where(i == n, 0.0, (n - i) * log_q)
    pmf = np.exp(log_comb + successes + failures)
    cdf: np.ndarray = np.minimum(np.cumsum(pmf, axis=1), 1.0)
    return cdf


@functools.lru_cache(maxsize=64)
def _log_factorials(n: int) -> np.ndarray:
    """log(j!) for j = 0..n: exact (math.lgamma) below 16, else Stirling's series to the
    x^-7 term (Abramowitz & Stegun 6.1.41), whose truncation error there is below 1e-16.
    Cached (read-only): every series of a run has the same n."""
    j = np.arange(n + 1, dtype=np.float64)
    x = j + 1.0
    with np.errstate(divide="ignore"):
        series = (
            (x - 0.5) * np.log(x)
            - x
            + 0.5 * math.log(2.0 * math.pi)
            + 1.0 / (12.0 * x)
            - 1.0 / (360.0 * x**3)
            + 1.0 / (1260.0 * x**5)
            - 1.0 / (1680.0 * x**7)
        )
    exact = np.array([math.lgamma(v + 1.0) for v in range(min(n + 1, 16))])
    series[: exact.size] = exact
    series.flags.writeable = False
    return series


def check_percent(name: str, value: float) -> float:
    """A percent in (0, 100) as a fraction; ValueError otherwise."""
    v = float(value)
    if not (0.0 < v < 100.0):
        raise ValueError(f"{name} must lie strictly between 0 and 100, got {value!r}")
    return v / 100.0


def upper_rank(n: int, p: float, c: float) -> tuple[int | None, float]:
    """Smallest rank k with P(X_(k) >= x_p) >= c, and that exact probability.

    ``p`` and ``c`` are fractions. Returns (None, nan) when even X_(n) is not enough.
    """
    if n < 1:
        return None, math.nan
    cover = _cdf_table(n, np.array([p]))[0, :n]
    hit = np.flatnonzero(cover >= c - _EPS)
    if hit.size == 0:
        return None, math.nan
    return int(hit[0]) + 1, float(cover[hit[0]])


def lower_rank(n: int, p: float, c: float) -> tuple[int | None, float]:
    """Largest rank k with P(X_(k) <= x_p) >= c, and that exact probability.

    By symmetry, the lower bound of x_p is the mirror of the upper bound of x_(1-p).
    """
    k, achieved = upper_rank(n, 1.0 - p, c)
    return (None, math.nan) if k is None else (n + 1 - k, achieved)


def order_statistic_bounds(n: int, p: float, c: float, bound: str) -> tuple[int | None, float]:
    """Rank and achieved confidence of a one-sided bound ("upper" or "lower") of x_p."""
    if bound == "upper":
        return upper_rank(n, p, c)
    if bound == "lower":
        return lower_rank(n, p, c)
    raise ValueError(f"bound must be 'upper' or 'lower', got {bound!r}")


def two_sided_level(c: float) -> float:
    """The level of each side of an equal-tailed two-sided interval at ``c``: (1 + c) / 2, so
    each side misses x_p with probability at most (1 - c) / 2 (Hahn & Meeker, Statistical
    Intervals, 1991, §5.2)."""
    return (1.0 + c) / 2.0


def two_sided_ranks(n: int, p: float, c: float) -> tuple[int | None, int | None, float]:
    """Ranks (l, u) of a two-sided interval [X_(l), X_(u)] for x_p with coverage >= c.

    Equal-tailed: each side at (1 + c) / 2. The exact coverage is
    P(l <= Bin(N, p) <= u - 1) = F(u - 1) - F(l - 1). At p = 0.5 this is the classic
    distribution-free median CI (Le Boudec §2.2.1, Thompson 1936).
    """
    side = two_sided_level(c)
    lo, _ = lower_rank(n, p, side)
    hi, _ = upper_rank(n, p, side)
    if lo is None or hi is None:
        return None, None, math.nan
    cdf = _cdf_table(n, np.array([p]))[0]
    achieved = float(cdf[hi - 1] - cdf[lo - 1])
    return lo, hi, achieved


def min_samples(p: float, c: float, bound: str | None = None, exclude: int = 0) -> int:
    """Smallest N for which a one-sided bound of x_p at confidence c exists (§4.5, Eq. 4).

    ``bound`` None means either side (the binding side q = max(p, 1 - p)); with ``exclude``
    = r, the bound is X_(N-r) (upper) or X_(r+1) (lower), reached when
    P(Bin(N, q) <= N - r - 1) >= c with q = p (upper) or 1 - p (lower). ``bound`` "both"
    is the equal-tailed two-sided interval (:func:`two_sided_ranks`): both sides at
    (1 + c) / 2, so N >= log((1 - c) / 2) / log(max(p, 1 - p)) (6 for the median at 95%,
    72 for p95: TriScale's ``min_number_samples`` two-sided).
    """
    if bound == "both":
        return min_samples(p, two_sided_level(c), None, exclude)
    if bound is None:
        q = max(p, 1.0 - p)
    elif bound == "upper":
        q = p
    elif bound == "lower":
        q = 1.0 - p
    else:
        raise ValueError(f"bound must be 'upper', 'lower', 'both' or None, got {bound!r}")
    return smallest_n(q, c, int(exclude))
