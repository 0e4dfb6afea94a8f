"""Do a replication's series KPIs fall inside the published variability score as often as
they should? An exact, distribution-free test (docs/replicate.md).

The published bounds are order statistics x(r) <= x(s) of n series KPIs. For continuous
i.i.d. KPIs, the fraction of the distribution between them is Beta(s - r, n - s + r + 1)
(Wilks, Ann. Math. Statist. 13(4), 1942, §3; David & Nagaraja, *Order Statistics*, 3rd ed.
2003, §7.2), so the number of k new KPIs from the same distribution that fall inside is
beta-binomial BB(k, s - r, n - s + r + 1) (Gumbel & von Schelling, Ann. Math. Statist.
21(2), 1950, the distribution of exceedances). Too few inside is the evidence of a
replication that disagrees: the p-value is P(BB <= inside). It accounts for the bounds being
random, which a binomial with the nominal percentile mass does not (that one is
conservative: 0.1-2.7% rejections at 5% in tests/test_replication_stats.py).
"""

from __future__ import annotations

import math

import attrs
import numpy as np


@attrs.frozen
class InsideTest:
    inside: int
    k: int
    rank_lower: int
    rank_upper: int
    n: int
    p_value: float
    """P(at most ``inside`` of ``k`` inside) when published and new KPIs are exchangeable."""

    @property
    def expected_coverage(self) -> float:
        """The mean fraction of KPIs between x(r) and x(s): (s - r) / (n + 1)."""
        return (self.rank_upper - self.rank_lower) / (self.n + 1)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def beta_binomial_cdf(x: int, k: int, a: float, b: float) -> float:
    """P(BB(k, a, b) <= x), summed from the log pmf (k is a number of series: small)."""
    if x < 0:
        return 0.0
    if x >= k:
        return 1.0
    base = _log_beta(a, b)
    total = sum(
        math.exp(
            math.lgamma(k + 1) - math.lgamma(i + 1) - math.lgamma(k - i + 1)
            + _log_beta(i + a, k - i + b) - base
        )
        for i in range(x + 1)
    )  # fmt: skip
    return min(1.0, total)


def inside_bounds_test(
    new_kpis: np.ndarray, lower: float, upper: float, rank_lower: int, rank_upper: int, n: int
) -> InsideTest:
    """How many ``new_kpis`` fall in [lower, upper] = [x(rank_lower), x(rank_upper)] of ``n``
    published series KPIs, and how unlikely so few are under exchangeability."""
    if not 1 <= rank_lower < rank_upper <= n:
        raise ValueError(f"ranks {rank_lower}, {rank_upper} of {n} do not bound an interval")
    y = np.asarray(new_kpis, dtype=float).ravel()
    y = y[np.isfinite(y)]
    inside = int(np.count_nonzero((y >= lower) & (y <= upper)))
    a, b = rank_upper - rank_lower, n - rank_upper + rank_lower + 1
    p = beta_binomial_cdf(inside, int(y.size), a, b)
    return InsideTest(inside, int(y.size), rank_lower, rank_upper, n, p)
