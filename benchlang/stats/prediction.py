"""Prediction tests for a new run's level against the runs before it (the CI gate on a history,
docs/history.md "The gate for CI").

A run's KPI on a shared machine moves with the machine's level from session to session; the
points of a history's segment already show that spread (between sessions plus within a run).
So a new run is judged by a **prediction interval** for its level, on log levels: with the
segment's n points of mean ``x̄`` and standard deviation ``s``,
``Var(new - x̄) = s² (1 + 1/n)`` and ``(new - x̄) / (s √(1 + 1/n))`` is Student's t with n - 1
degrees of freedom (Hahn & Meeker, *Statistical Intervals*, Wiley 1991, §4.6 (4.7); Vardeman,
Am. Stat. 46(3) 1992, 193-199, on what such an interval covers). The new point's own interval
is not added: the segment's spread already holds the within-run noise of a run of the same
design (when its design differs, the excess of its within-run variance over theirs is: see
``extra``). The mean of ``m`` new runs has ``Var = s² (1/m + 1/n)`` (Hahn & Meeker §4.7): the same
test decides whether a level is back, tested again at every run and so with its error spent
over the looks (``spent``: Lan & DeMets 1983).

Where the segment is long enough, the **distribution-free** bound from order statistics
replaces the normal one: under exchangeability the new run is above the largest of n
segment points with probability 1/(n + 1) (Hahn & Meeker §5.3; Wilks 1941), so the rank
p-value ``(1 + #{x_i >= new}) / (n + 1)`` (the conformal p-value: Vovk, Gammerman & Shafer,
*Algorithmic Learning in a Random World*, 2005, §2.1) can reach a one-sided level ``a`` only
when ``n + 1 >= 1 / a``: n >= 19 at 5% for one series, n >= 79 for the first of four under
Holm at 5% (``distribution_free_minimum``).

Pure functions on numpy arrays; the gate's family (Holm 1979, stats.family) is the caller's.
"""

from __future__ import annotations

import math

import attrs
import numpy as np


@attrs.frozen
class Prediction:
    """A new level (``m`` runs' mean, log scale) against a segment of ``n`` runs.

    ``shift`` is the new level minus the segment's mean (log); ``se`` its standard error
    ``s √(1/m + 1/n)``; ``p_worse`` the one-sided p-value of "the shift is at most the margin
    on the bad side" (small: worse beyond the margin); ``method`` ``t`` or ``rank``."""

    n: int
    m: int
    shift: float
    s: float
    se: float
    df: int
    p_worse: float
    method: str

    def ratio_interval(self, alpha: float) -> tuple[float, float]:
        """The two-sided (1 - 2 alpha) prediction interval of the ratio new/segment level."""
        if not (self.df >= 1 and math.isfinite(self.se)):
            return math.nan, math.nan
        half = _t_quantile(1.0 - alpha, self.df) * self.se
        return math.exp(self.shift - half), math.exp(self.shift + half)


def _t_quantile(q: float, df: float) -> float:
    from benchlang.stats._special import t_ppf

    return float(t_ppf(q, df))


def _t_sf(t: float, df: float) -> float:
    from benchlang.stats._special import t_sf

    return float(t_sf(t, df))


def distribution_free_minimum(alpha: float) -> int:
    """The fewest segment points for which the rank p-value can reach ``alpha`` (one-sided):
    ``n + 1 >= 1 / alpha``, so 19 at 5%."""
    return max(1, math.ceil(1.0 / alpha - 1.0 - 1e-9))


def predict(
    segment: np.ndarray,
    new: np.ndarray,
    margin: float,
    *,
    bad: int = 1,
    rank_alpha: float | None = None,
    extra: float = 0.0,
) -> Prediction:
    """``new`` (the mean of its log levels) against ``segment`` (log levels).

    ``bad`` is +1 when a higher level is worse (times), -1 when lower is (throughput); the
    null is "the new level is at most ``log(1 + margin)`` beyond the segment's on the bad
    side". With one new run and ``rank_alpha`` given, the rank p-value is used when the
    segment has at least ``distribution_free_minimum(rank_alpha)`` points. ``extra`` is a
    variance (log scale) added to the new level's: the excess of its own within-run variance
    over the segment's runs' when its design differs from theirs (then the t test is used)."""
    segment = np.asarray(segment, dtype=float)
    new = np.asarray(new, dtype=float)
    n, m = int(segment.size), int(new.size)
    if n < 2 or m < 1:
        return Prediction(n, m, math.nan, math.nan, math.nan, 0, math.nan, "t")
    shift = float(new.mean() - segment.mean())
    edge = math.log1p(margin)
    ranks = rank_alpha is not None and n >= distribution_free_minimum(rank_alpha)
    if m == 1 and ranks and extra == 0.0:
        s = float(segment.std(ddof=1))
        above = int(np.count_nonzero(bad * segment >= bad * (new[0]) - edge))
        p = (1 + above) / (n + 1)
        return Prediction(n, 1, shift, s, s * math.sqrt(1 + 1 / n), n - 1, p, "rank")
    if m == 1:
        s, df = float(segment.std(ddof=1)), n - 1
    else:  # pooled over both (Hahn & Meeker §4.7 assume one spread)
        ss = float(((segment - segment.mean()) ** 2).sum() + ((new - new.mean()) ** 2).sum())
        df = n + m - 2
        s = math.sqrt(ss / df)
    se = math.sqrt(s * s * (1.0 / m + 1.0 / n) + extra)
    flat = 0.0 if bad * shift > edge else 1.0
    p = _t_sf((bad * shift - edge) / se, df) if se > 0.0 else flat
    return Prediction(n, m, shift, s, se, df, p, "t")


def spent(alpha: float, look: np.ndarray | int) -> np.ndarray:
    """The level of the ``look``-th test (1, 2, ...) of a rule tested again at every new run:
    ``alpha / (t (t + 1))``, whose sum over all looks is ``alpha`` (the cumulative error spent
    after t looks is ``alpha · t / (t + 1)``, an error-spending function in the number of looks:
    Lan & DeMets, *Biometrika* 70(3), 1983, 659-663, with unbounded looks; the union over looks
    is held by Bonferroni's inequality, whatever their correlation)."""
    t = np.asarray(look, dtype=float)
    return alpha / (t * (t + 1.0))


def back_within(
    reference: np.ndarray,
    after: np.ndarray,
    margin: float,
    *,
    bad: int = 1,
    alpha: float = 0.05,
    first_look: int = 1,
) -> int | None:
    """The first prefix length ``e`` of ``after`` whose mean the prediction test decides is
    within the margin of ``reference`` on the bad side (the one-sided upper bound of
    ``bad * (mean(after[:e]) - mean(reference))``, pooled spread, below ``log(1 + margin)``),
    else None. The prefix of length e is the look ``first_look + e - 1`` of the rule (every run
    after the regression is one) and is tested at ``spent(alpha, look)``: a level that is not
    back is decided back at most ``alpha`` of the time over all looks (a test at alpha at
    every look closed one that sits at the margin in 14-19% of histories; docs/history.md).
    Once decided it stays decided: a later point outside does not undo it (hysteresis)."""
    reference = np.asarray(reference, dtype=float)
    after = np.asarray(after, dtype=float)
    n, k = reference.size, after.size
    if n < 1 or k < 1:
        return None
    e = np.arange(1, k + 1)
    df = n + e - 2
    ok = df >= 1
    if not ok.any():
        return None
    csum, csq = np.cumsum(after), np.cumsum(after**2)
    mean_after = csum / e
    ss_after = np.maximum(csq - csum * mean_after, 0.0)
    ss_ref = float(((reference - reference.mean()) ** 2).sum())
    s = np.sqrt((ss_ref + ss_after) / np.maximum(df, 1))
    from benchlang.stats._special import stdtrit

    q = stdtrit(np.maximum(df, 1), 1.0 - spent(alpha, first_look + e - 1))
    upper = bad * (mean_after - reference.mean()) + q * s * np.sqrt(1.0 / n + 1.0 / e)
    hits = np.flatnonzero(ok & (upper < math.log1p(margin)))
    return int(hits[0]) + 1 if hits.size else None


def runs_to_decide(
    shift: float, s: float, n: int, margin: float, *, bad: int = 1, alpha: float, most: int = 500
) -> int | None:
    """How many segment points (``n`` or more) would let one new run at ``shift`` be decided
    worse at one-sided level ``alpha``, the spread staying ``s``; None when no number would
    (the prediction interval cannot be narrower than about ``z s``)."""
    if not (math.isfinite(shift) and math.isfinite(s)):
        return None
    from benchlang.stats._special import stdtrit

    k = np.arange(max(n, 2), most + 1)
    bound = bad * shift - stdtrit(k - 1, 1.0 - alpha) * s * np.sqrt(1.0 + 1.0 / k)
    hits = np.flatnonzero(bound > math.log1p(margin))
    return int(k[hits[0]]) if hits.size else None


def runs_to_close(
    reference: np.ndarray,
    after: np.ndarray,
    margin: float,
    *,
    bad: int = 1,
    alpha: float = 0.05,
    first_look: int = 1,
    most: int = 500,
) -> int | None:
    """How many runs (``after``'s count or more) at ``after``'s mean and spread would let
    ``back_within`` decide the level back within the margin of ``reference``, each at the
    level its look is spent (``first_look`` as there); None when its mean is not inside the
    margin, or no number up to ``most`` would."""
    from benchlang.stats._special import stdtrit

    reference = np.asarray(reference, dtype=float)
    after = np.asarray(after, dtype=float)
    n, e0 = reference.size, after.size
    if n < 1 or e0 < 1:
        return None
    shift = float(after.mean() - reference.mean())
    if bad * shift >= math.log1p(margin):
        return None
    ss = float(((reference - reference.mean()) ** 2).sum() + ((after - after.mean()) ** 2).sum())
    df0 = n + e0 - 2
    if df0 < 1:
        return None
    s = math.sqrt(ss / df0)
    e = np.arange(e0, most + 1)
    q = stdtrit(n + e - 2, 1.0 - spent(alpha, first_look + e - 1))
    upper = bad * shift + q * s * np.sqrt(1.0 / n + 1.0 / e)
    hits = np.flatnonzero(upper < math.log1p(margin))
    return int(e[hits[0]]) if hits.size else None
