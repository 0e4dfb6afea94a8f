"""Minimal number of samples for a one-sided order-statistic CI of a percentile.

Source: Jacob et al., "Designing Replicable Networking Experiments With TriScale",
JSys 1(1) 2021, §4.5, Eq. 4 (and Table 2), after Thompson's order-statistic bounds
(Le Boudec, "Performance Evaluation of Computer and Communication Systems", §2.2).
"""

from __future__ import annotations

from benchlang.stats._orderstat import check_percent, min_samples


def sizing(percentile: float, confidence: float, exclude: int = 0) -> int:
    """Smallest N for which a one-sided C-level bound of the p-th percentile exists.

    The bound is the order statistic X_(N-r) (upper bound) or X_(r+1) (lower bound)
    after excluding ``exclude`` = r extreme samples. With q = max(p, 1-p) (the binding
    side), it is the smallest N with P(Bin(N, q) <= N-r-1) >= C. For r = 0 this is
    Eq. 4 of TriScale, N >= log(1-C) / log(q); Table 2 of the paper gives
    p95/C95 -> 59, p95/C99 -> 90, p99/C95 -> 299, p90/C95 -> 29, p50/C95 -> 5.
    """
    p = check_percent("percentile", percentile)
    c = check_percent("confidence", confidence)
    if isinstance(exclude, bool) or int(exclude) != exclude or exclude < 0:
        raise ValueError(f"exclude must be a non-negative integer, got {exclude!r}")
    return min_samples(p, c, None, int(exclude))
