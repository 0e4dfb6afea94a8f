"""Exact small-sample p-values of Spearman's rank correlation (permutation distribution).

Source: Kendall & Gibbons, *Rank Correlation Methods*, 5th ed., 1990, §3.1-3.3 and ch. 4:
under the null hypothesis of independence every one of the n! pairings of the x ranks with
the y ranks is equally likely, so the exact null distribution of S = Σ x_i y_i (an affine
function of Spearman's rho for fixed tie patterns) is obtained by enumerating the pairings.
With ties, midranks are used and the distribution is the conditional permutation
distribution given the tie pattern (Kendall & Gibbons §3.8). The t approximation
(rho sqrt((n-2)/(1-rho^2)) ~ t_{n-2}) breaks down for small n: for n = 5 values in perfectly
monotone order it gives p = 0 (the statistic is infinite) while the exact two-sided p is
2/5! = 0.0167.

Enumeration is done by dynamic programming over subsets (Held-Karp style): positions are
taken in order, the state is the set of y ranks already paired and the partial sum, so the
cost is O(2^n · n · range(S)) instead of O(n!); n <= ``EXACT_MAX_N`` (10) takes a few
milliseconds and the distribution of a tie pattern is cached.
"""

from __future__ import annotations

import functools

import numpy as np

from benchlang.stats._special import rankdata

EXACT_MAX_N = 10


@functools.lru_cache(maxsize=256)
def _null_distribution(xw: tuple[int, ...], yv: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Support and probabilities of S = Σ_i xw[i] · yv[π(i)] over the n! permutations π
    (integer weights: doubled midranks)."""
    n = len(yv)
    top = sum(sorted(xw)[i] * sorted(yv)[i] for i in range(n))
    dp = np.zeros((1 << n, top + 1), dtype=np.float64)
    dp[0, 0] = 1.0
    popcount = np.array([bin(m).count("1") for m in range(1 << n)])
    for mask in range(1 << n):
        row = dp[mask]
        if mask == (1 << n) - 1 or not row.any():
            continue
        w = xw[popcount[mask]]
        for v in range(n):
            bit = 1 << v
            if mask & bit:
                continue
            shift = w * yv[v]
            dp[mask | bit, shift:] += row[: top + 1 - shift]
    final = dp[-1]
    support = np.flatnonzero(final)
    return support.astype(np.float64), final[support] / final.sum()


def _doubled_ranks(a: np.ndarray) -> np.ndarray:
    return np.rint(2.0 * rankdata(a)).astype(np.int64)


def spearman_exact_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided exact permutation p-value of Spearman's rho between x and y (n <= 10,
    ties by midranks, conditional on the tie pattern): P(|S - E S| >= |s - E S|).

    1.0 when either variable is constant (no association can be shown)."""
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    n = x.size
    if n != y.size:
        raise ValueError("x and y must have the same length")
    if n > EXACT_MAX_N:
        raise ValueError(f"exact Spearman p-values are computed for n <= {EXACT_MAX_N}")
    if n < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return 1.0
    rx, ry = _doubled_ranks(x), _doubled_ranks(y)
    support, prob = _null_distribution(tuple(sorted(rx.tolist())), tuple(sorted(ry.tolist())))
    centre = float(support @ prob)
    observed = abs(float(rx @ ry) - centre)
    return float(min(1.0, prob[np.abs(support - centre) >= observed - 1e-9].sum()))


def spearman_trend_exact_p(rows: np.ndarray) -> np.ndarray:
    """Exact two-sided p of Spearman's rho between each row (R x n, n <= 10) and its order
    1..n (Daniels' trend test). Rows sharing a tie pattern share one null distribution."""
    x = np.atleast_2d(np.asarray(rows, dtype=float))
    r, n = x.shape
    positions = np.arange(1, n + 1)
    return np.array([spearman_exact_p(positions, x[i]) for i in range(r)], dtype=float)


EXACT_MAX_ASSIGNMENTS = 20_000


@functools.lru_cache(maxsize=64)
def _assignments(n: int, sizes: tuple[int, ...]) -> np.ndarray:
    """Every split of items 0..n-1 into groups of ``sizes`` (in order), as an
    (assignments x n) array of group labels."""
    import itertools

    if len(sizes) == 1:
        return np.zeros((1, n), dtype=np.int8)
    rows = []
    items = range(n)
    for first in itertools.combinations(items, sizes[0]):
        rest = [i for i in items if i not in first]
        for sub in _assignments(len(rest), sizes[1:]):
            row = np.empty(n, dtype=np.int8)
            row[list(first)] = 0
            row[rest] = sub + 1
            rows.append(row)
    return np.array(rows)


def kruskal_exact_p(*groups: np.ndarray) -> float | None:
    """Exact permutation p-value of the Kruskal-Wallis H (Kruskal & Wallis, JASA 47(260),
    1952, §6: the exact null distribution over the N! / Π n_g! equally likely splits of the
    midranks into groups of the observed sizes), or None when there are more than
    ``EXACT_MAX_ASSIGNMENTS`` splits (the chi-square approximation is then used). The
    splits of a size pattern are enumerated once and cached.
    Ties are kept as midranks; the tie correction is the same for every split, so it
    cancels from the comparison."""
    from math import factorial, lgamma, log, prod

    sizes = tuple(int(np.asarray(g).size) for g in groups)
    n = sum(sizes)
    log_splits = lgamma(n + 1) - sum(lgamma(s + 1) for s in sizes)
    if log_splits > log(EXACT_MAX_ASSIGNMENTS) + 1.0:  # no factorial of a big n
        return None
    if factorial(n) // prod(factorial(s) for s in sizes) > EXACT_MAX_ASSIGNMENTS:
        return None
    ranks = rankdata(np.concatenate([np.asarray(g, dtype=float) for g in groups]))
    labels = np.repeat(np.arange(len(sizes)), sizes)
    every = _assignments(n, sizes)
    sums = np.stack([(every == g) @ ranks for g in range(len(sizes))], axis=1)
    stat = (sums**2 / np.array(sizes, dtype=float)).sum(axis=1)
    observed = sum(ranks[labels == g].sum() ** 2 / sizes[g] for g in range(len(sizes)))
    return float(np.mean(stat >= observed - 1e-9 * max(1.0, observed)))
