"""Simultaneous intervals for a ranking: the comparisons a ranking prints, with the best chosen
from the data, hold jointly at the stated confidence.

A ranking is read as one claim and its order is chosen from the data, so intervals each at 95%
against the observed best miss far more often than 5% per run (measured: 9 of 20 runs of ten
identical configurations printed a false claim). Two families are built here, both from one
single-step studentized maximum (Westfall & Young, *Resampling-Based Multiple Testing*, Wiley
1993, §2.6; Romano & Wolf, "Stepwise multiple testing as formalized data snooping", Econometrica
73(4) 2005, §4): each contrast's bootstrap deviation in units of its own percentile half-width on
that side, so every contrast has the same marginal level (Beran, "Balanced simultaneous
confidence sets", JASA 83(403) 1988, 679-686; an unstudentized maximum lets the noisiest contrast
set every bound), and the 1 - alpha quantile of the maximum over the family widens each one.

* ``pairs`` (the headline's): every pair of configurations, so any comparison read off the
  ranking, whichever was found best, is covered; for normal balanced data it is Tukey-Kramer's
  family (Tukey 1953; Kramer, Biometrics 12(3) 1956).
* ``mcb``: Hsu's *multiple comparisons with the best* (Hsu, "Constrained simultaneous confidence
  intervals for multiple comparisons with the best", Ann. Stat. 12(3) 1984, 1136-1144; Hsu,
  *Multiple Comparisons: Theory and Methods*, Chapman & Hall 1996, ch. 4): one family of k - 1
  comparisons with the *true* best as control; on it the true best is among the candidates C
  (no configuration surely better), and ``with_the_best`` deduces each configuration's interval
  for ``theta_i - min_{j != i} theta_j`` (Hsu 1996 §4.1-4.2; Edwards & Hsu, JASA 78(384) 1983).
  Its claims that a configuration is *not the best* are Hsu's constrained ones (ties allowed), so
  they are not strict: among identical configurations they fire. A *strict* claim ("b is 1.08x
  faster than j", lower bound above 1) needs every candidate surely better than j, which fails
  together for all j as soon as one configuration is close to the best: in
  benchmarks/sim_ranking_family.py it had less power than all pairs at every k from 3 on (k =
  10: 13.5% against 36.7%; docs/statistics.md), so the headline uses ``pairs``.

With two configurations either family is the one comparison, with its single interval. On the
cluster-level t (``stats.headline.takes_the_t``: from 3 top-level units when they hold enough
trials for the percentile; Donald & Lang, Rev. Econ. Stat. 89(2) 2007, §2) the critical value is
``cluster_max_t``, the single-step max-t with G - 1 degrees of freedom, when every configuration
is in every unit, else ``bonferroni_t``, t at alpha / (2m) over the m comparisons of the family.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import attrs
import numpy as np

from benchlang.stats._special import t_ppf


@attrs.frozen
class Family:
    """How a ranking's intervals hold together: ``method`` in words, ``comparisons`` the family
    size (the pairs, or the comparisons with the best), ``confidence`` the joint confidence in
    percent, ``critical`` the largest family critical value (in units of a contrast's single
    interval for the bootstrap, of its standard error for t), ``df`` the degrees of freedom
    (None for the bootstrap), ``bounds`` each configuration's (lower, upper) ratio to the best
    of the others (input order; nan where none)."""

    method: str
    comparisons: int
    confidence: float
    critical: float
    df: float | None = None
    bounds: tuple[tuple[float, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "method": self.method,
            "comparisons": self.comparisons,
            "joint_confidence": self.confidence,
            "critical_value": num(self.critical),
            "df": self.df,
            "bounds": [[num(lo), num(hi)] for lo, hi in self.bounds],
        }


def balanced_max(diff: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, float]:
    """One family's bootstrap contrasts ``diff`` (R replicates x m contrasts, nan allowed): each
    contrast's single-level percentile bounds about its bootstrap median, and the studentized
    maximum's critical value ``d`` (1 for a family of one). Returns (low, high) deviations from
    the median (each contrast's interval is ``estimate + d * (low, high)``) and ``d``."""
    import warnings

    a = (100.0 - confidence) / 200.0
    with warnings.catch_warnings():  # a contrast no replicate defines stays nan, unsaid
        warnings.simplefilter("ignore", RuntimeWarning)
        # without nan the plain forms give the same numbers, vectorised (the nan forms apply a
        # Python function per contrast)
        whole = not np.isnan(diff).any()
        center = np.median(diff, axis=0) if whole else np.nanmedian(diff, axis=0)
        quantile = np.quantile if whole else np.nanquantile
        low = quantile(diff, a, axis=0) - center
        high = quantile(diff, 1.0 - a, axis=0) - center
        spread = np.nanstd(diff, axis=0)
    if diff.shape[1] < 2:
        return low, high, 1.0
    dev = diff - center
    scale_up = np.where(high > 0, high, np.where(-low > 0, -low, spread))
    scale_dn = np.where(-low > 0, -low, np.where(high > 0, high, spread))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(dev >= 0, dev / scale_up, -dev / scale_dn)
    t = np.where(dev == 0, 0.0, t)
    worst = np.nanmax(np.where(np.isnan(t), -np.inf, t), axis=1)
    worst = worst[np.isfinite(worst) | (worst == np.inf)]
    if worst.size == 0:
        return low, high, math.nan
    d = float(np.quantile(worst, 1.0 - 2.0 * a, method="higher"))
    return low, high, max(d, 1.0)


def column_max(a: np.ndarray) -> np.ndarray:
    """Each column's largest value, nan ignored, nan for a column of nan (no warning): on the
    all-pairs event each configuration's ratio to the best of the others lies between the
    column maxima of the pairs' lower and upper bounds."""
    filled = np.where(np.isnan(a), -np.inf, a)
    top = filled.max(axis=0)
    return np.where(np.isnan(a).all(axis=0), np.nan, top)


def bonferroni_t(df: float, comparisons: int, confidence: float) -> float:
    """The two-sided t critical value with ``df`` degrees of freedom at alpha / (2 m): each of
    ``m`` comparisons at 1 - alpha / m, jointly at least 1 - alpha (Bonferroni)."""
    alpha = 1.0 - confidence / 100.0
    return float(t_ppf(1.0 - alpha / (2.0 * max(comparisons, 1)), df))


MAX_T_DRAWS = 200_000
"""Draws of the simulated maximum (seeded): the achieved level of its 95% quantile is within
sqrt(0.05 · 0.95 / 200,000) = 0.05 points of 95%."""


def _max_t_draws(
    rng: np.random.Generator, draws: int, units: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """``draws`` means and sample covariances of ``units`` x ``k`` independent standard normals:
    the means N(0, I / G), the covariances W_k(I, G - 1) / (G - 1) independent of them, from
    Bartlett's decomposition (Bartlett, Proc. Royal Soc. Edinburgh 53, 1933; Anderson, *An
    Introduction to Multivariate Statistical Analysis*, 3rd ed. 2003, §7.2) when G - 1 >= k,
    so the cost does not grow with G; else from the normals themselves (a singular W)."""
    df = units - 1
    if df < k:
        z = rng.standard_normal((draws, units, k))
        mean = z.mean(axis=1)
        z -= mean[:, None, :]
        return mean, np.matmul(z.transpose(0, 2, 1), z) / df
    mean = rng.standard_normal((draws, k)) / math.sqrt(units)
    a = np.tril(rng.standard_normal((draws, k, k)), -1)
    diag = np.arange(k)
    a[:, diag, diag] = np.sqrt(rng.chisquare(df - diag, size=(draws, k)))
    return mean, np.matmul(a, a.transpose(0, 2, 1)) / df


@functools.lru_cache(maxsize=256)
def cluster_max_t(units: int, k: int, family: str, confidence: float) -> float:
    """The single-step max-t critical value for ``k`` configurations measured in every one of
    ``units`` top-level units, each contrast studentized by its own per-unit sd (df G - 1): the
    ``confidence`` quantile of max |T| over the ``family`` (every pair for ``pairs``, the k - 1
    comparisons with one control for ``mcb``, one contrast for ``alone``: t itself).

    Hothorn, Bretz & Westfall, "Simultaneous inference in general parametric models", Biometrical
    J. 50(3) 2008, §3: the single-step critical value is the quantile of the maximum of the
    studentized contrasts under their joint null distribution. With normal per-unit statistics
    whose configuration x unit deviations are exchangeable (sphericity), that distribution is
    free of the unknowns and is Tukey's correlation for the pairs (Tukey 1953; Kramer 1956),
    Dunnett's for a control (Dunnett, JASA 50(272) 1955); unlike their pooled-scale multivariate
    t, each contrast here keeps its own sd with G - 1 df (Donald & Lang 2007, §2), so the
    maximum is simulated: ``MAX_T_DRAWS`` draws of the G x k standard normals' means and
    covariances (``_max_t_draws``), seeded, cached per (G, k, family, confidence). Not an
    estimated correlation: with G - 1 < k - 1 the units' covariance is singular and a plug-in
    maximum too small. Never above Bonferroni's ``bonferroni_t`` (the smaller is returned)."""
    m = {"pairs": k * (k - 1) // 2, "mcb": k - 1}.get(family, 1)
    bonferroni = bonferroni_t(units - 1, m, confidence)
    if m <= 1 or units < 2:
        return bonferroni
    if family == "pairs":
        c, i = np.triu_indices(k, 1)
    else:
        c, i = np.zeros(k - 1, dtype=np.int64), np.arange(1, k)
    rng = np.random.default_rng(20080603)
    worst = []
    chunk = 20_000
    for start in range(0, MAX_T_DRAWS, chunk):
        mean, s = _max_t_draws(rng, min(chunk, MAX_T_DRAWS - start), units, k)
        var = s[:, i, i] + s[:, c, c] - 2.0 * s[:, c, i]
        worst.append(np.max(np.abs(mean[:, i] - mean[:, c]) / np.sqrt(var / units), axis=1))
    crit = float(np.quantile(np.concatenate(worst), confidence / 100.0))
    return min(crit, bonferroni)


def with_the_best(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hsu's deduction from the families' intervals to ``theta_i - min_{j != i} theta_j``.

    ``lo[c, i]``, ``hi[c, i]`` bound ``theta_i - theta_c`` in family ``c`` (the comparisons
    with ``c`` as the control, jointly at the confidence; the diagonal is ignored), theta
    oriented so that smaller is better. Returns each configuration's (lower, upper); a lower
    bound above 0 says the configuration is not the best, by at least that much.
    """
    k = lo.shape[0]
    off = ~np.eye(k, dtype=bool)
    candidate = np.array([bool(np.all(hi[c][off[c]] >= 0)) for c in range(k)])
    lower = np.full(k, np.inf)
    upper = np.full(k, -np.inf)
    for i in range(k):
        others = off[i]
        for c in np.flatnonzero(candidate & others):
            lower[i] = min(lower[i], lo[c, i])
            upper[i] = max(upper[i], hi[c, i])
        if candidate[i]:
            # i the best: max_j (theta_i - theta_j) <= 0, each theta_i - theta_j from family i
            lower[i] = min(lower[i], float(np.max(-hi[i][others])))
            upper[i] = max(upper[i], min(0.0, float(np.max(-lo[i][others]))))
    return lower, upper
