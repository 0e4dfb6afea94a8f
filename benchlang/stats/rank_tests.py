"""Rank tests on numpy alone, equal to scipy's where the order views use them: Spearman's rho
with its t-test, the tie-corrected Kruskal–Wallis H with its chi-square p-value, and the
two-sided Mann–Whitney U with the tie-corrected normal approximation.

Why: ``scipy.stats`` costs about a second of start-up, as much as the order analysis of a
100,000-trial store itself (benchmarks/bench_report.py), and ``benchlang order`` of a
random-order store (the position and carry-over views, ``stats/position_effects.py``) needs
nothing else from scipy: these forms are what keeps it without. The small-sample exact
p-values scipy chooses (Mann–Whitney with a sample of at most 8 and no ties) still come from
scipy, as does the fixed-vs-random test's median CI (``order_dependence``), which loads
``scipy.stats`` anyway. tests/test_rank_tests.py checks each against scipy to 1e-9.

Sources: Spearman, Am. J. Psychol. 15 1904, with the t approximation
rho sqrt((n-2)/(1-rho^2)) ~ t_{n-2} (Kendall & Gibbons, *Rank Correlation Methods*, 1990,
§4.6); Kruskal & Wallis, JASA 47(260) 1952, Eq. 1.1 and the tie correction Eq. 1.3;
Mann & Whitney, Ann. Math. Stat. 18 1947, with the tie-corrected variance of Lehmann,
*Nonparametrics*, 1975, Eq. 1.53, and a continuity correction of 1/2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from benchlang.stats._special import chi2_sf, norm_sf, rankdata, t_sf, tie_counts


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman's rho between x and y and its two-sided p-value from t with n - 2 degrees of
    freedom (``scipy.stats.spearmanr``); both NaN when a variable is constant."""
    rx, ry = rankdata(np.asarray(x, float)), rankdata(np.asarray(y, float))
    n = rx.size
    if n < 3 or np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return math.nan, math.nan
    rho = float(np.corrcoef(rx, ry)[0, 1])
    df = n - 2
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (
            rho * math.sqrt(max(0.0, df / ((rho + 1.0) * (1.0 - rho))))
            if abs(rho) < 1
            else rho * math.inf
        )
    return rho, min(1.0, 2.0 * float(t_sf(abs(t), df)))


def kruskal(*groups: np.ndarray) -> tuple[float, float]:
    """The tie-corrected Kruskal–Wallis H of two or more non-empty groups and its chi-square
    p-value with k - 1 degrees of freedom (``scipy.stats.kruskal``)."""
    sizes = np.array([np.size(g) for g in groups], dtype=float)
    if sizes.size < 2 or np.any(sizes == 0):
        raise ValueError("kruskal needs at least two non-empty groups")
    pooled = np.concatenate([np.asarray(g, float).ravel() for g in groups])
    ranks = rankdata(pooled)
    n = pooled.size
    ties = tie_counts(pooled).astype(float)
    correction = 1.0 - float(np.sum(ties**3 - ties)) / (n**3 - n)
    if correction == 0:
        raise ValueError("kruskal: every value is identical")
    sums = np.add.reduceat(ranks, np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64))
    h = (12.0 / (n * (n + 1)) * float(np.sum(sums**2 / sizes)) - 3.0 * (n + 1)) / correction
    return h, float(chi2_sf(h, sizes.size - 1))


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the Mann–Whitney U test of a against b (``scipy.stats.mannwhitneyu``
    with its defaults); see ``mann_whitney_splits``."""
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    inside = np.zeros(a.size + b.size, dtype=bool)
    inside[: a.size] = True
    return mann_whitney_splits(np.concatenate((a, b)), [inside])[0]


def mann_whitney_splits(x: np.ndarray, splits: Sequence[np.ndarray]) -> list[float]:
    """For each boolean mask, the two-sided Mann–Whitney p-value of x[mask] against x[~mask],
    ranking x once (both samples always pool to x): the normal approximation with tie and
    continuity corrections when both samples exceed 8 values or there are ties, else scipy's
    exact distribution, as ``scipy.stats.mannwhitneyu`` chooses."""
    x = np.asarray(x, float).ravel()
    n = x.size
    ties = tie_counts(x).astype(float)
    tied = bool(np.any(ties > 1))
    tie_term = float(np.sum(ties**3 - ties))
    ranks = rankdata(x)
    out = []
    for inside in splits:
        n1 = int(inside.sum())
        n2 = n - n1
        if (n1 <= 8 or n2 <= 8) and not tied:
            from scipy import stats

            p = stats.mannwhitneyu(x[inside], x[~inside], alternative="two-sided").pvalue
            out.append(float(p))
            continue
        u1 = float(ranks[inside].sum()) - n1 * (n1 + 1) / 2.0
        u = max(u1, n1 * n2 - u1)
        s = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))))
        centred = u - n1 * n2 / 2.0 - 0.5
        z = centred / s if s > 0 else math.copysign(math.inf, centred)
        out.append(min(1.0, max(0.0, 2.0 * norm_sf(z))))
    return out
