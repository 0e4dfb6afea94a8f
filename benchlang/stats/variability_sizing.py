"""Minimal number of series for a variability score (TriScale §4.3, §4.5, Table 2).

Source: Jacob et al., "Designing Replicable Networking Experiments With TriScale", JSys 1(1)
2021, §4.3 (variability score), §4.5 (Eq. 4) and Table 2, as TriScale's own tool computes it
(``helpers.min_number_samples``, which returns a single-sided and a double-sided N; the
variability score of the median uses the double-sided one):

* median (p = 50): the score is the two-sided distribution-free interval
  [X_(r+1), X_(N-r)] of the median at confidence C, whose coverage is
  1 - 2 P(Bin(N, 1/2) <= r) (Thompson 1936; Le Boudec §2.2.1). With r = 0 this is
  1 - 2^(1-N) >= C, i.e. N >= 1 - log2(1 - C): 75% -> 3, 90% -> 5, 95% -> 6, 99% -> 8.
* any other p: two one-sided C-level bounds (the lower bound of the p-th percentile and the
  upper bound of the (100-p)-th), each needing the one-sided N of Eq. 4,
  N >= log(1 - C) / log(1 - min(p, 100 - p)/100); both hold together with probability at
  least 2C - 1 (Bonferroni), which the score reports as its joint confidence.

Like :mod:`benchlang.stats.sizing`, this module imports neither numpy nor scipy: the checker
sizes ``series auto`` with it.
"""

from __future__ import annotations

import math

from benchlang.stats.sizing import binom_cdf, sizing

_EPS = 1e-12


def median_two_sided_coverage(n: int, exclude: int = 0) -> float:
    """Coverage of [X_(r+1), X_(n-r)] for the median of n i.i.d. continuous values:
    1 - 2 P(Bin(n, 1/2) <= r); 0 when the interval does not exist (n < 2r + 2)."""
    r = int(exclude)
    if n < 2 * r + 2:
        return 0.0
    return max(0.0, 1.0 - 2.0 * binom_cdf(r, n, 0.5))


def variability_sizing(percentile: float, confidence: float, exclude: int = 0) -> int:
    """Smallest number of series for a variability score at ``percentile`` (the pair p,
    100 - p) and ``confidence`` (percents), with ``exclude`` = r extreme series ignored on
    each side. Median: the two-sided median interval at C; otherwise the one-sided sizing of
    Eq. 4 (see the module docstring; TriScale Table 2)."""
    p = float(percentile)
    c = float(confidence)
    if not (0.0 < p < 100.0) or not (0.0 < c < 100.0):
        raise ValueError("percentile and confidence must lie strictly between 0 and 100")
    if isinstance(exclude, bool) or int(exclude) != exclude or exclude < 0:
        raise ValueError(f"exclude must be a non-negative integer, got {exclude!r}")
    r = int(exclude)
    if p != 50.0:
        return sizing(p, c, r)
    target = c / 100.0
    n = max(math.ceil(1.0 - math.log2(1.0 - target) - _EPS), 2 * r + 2)
    while median_two_sided_coverage(n, r) < target - _EPS:
        n += 1
    return n
