"""What a change-point search checks after it has its segments: the independence of the points
from commit to commit, and a change in the last few runs, too recent to place.

A change with fewer than ``min_size`` points after it cannot be told from that many outliers
(stats._changepoint_scan.huber_var down-weights such a run), and a search confined to segments
of ``min_size`` points put it at the last place it allowed: a commit or two early. So the last
``min_size`` - 1 runs are tested apart, and a change there is *possible*, with how many more
runs would confirm it, not a change point at a commit.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.stats._changepoint_scan import (
    HUBER_C,
    Dispersion,
    Sums,
    huber_capped,
    huber_info,
)

ASSUMED_RHO = 0.3  # the lag-1 correlation whose detection power a short history is said to lack
SERIAL_Z = 2.326  # one-sided 1% normal quantile of the lag-1 check


def lag1(z: np.ndarray, w: np.ndarray, cuts: list[int]) -> float:
    """The lag-1 autocorrelation r of the standardized residuals from the segments' weighted
    means (pairs within one segment), about N(0, 1/n) under independence (Box & Pierce, JASA
    65, 1970)."""
    edges = np.array([0, *cuts, z.size])
    seg = np.repeat(np.arange(edges.size - 1), np.diff(edges))
    level = np.add.reduceat(w * z, edges[:-1]) / np.add.reduceat(w, edges[:-1])
    u = (z - level[seg]) * np.sqrt(w)
    same = seg[1:] == seg[:-1]
    total = float(np.sum(u * u))
    return float(np.sum((u[1:] * u[:-1])[same]) / total) if total > 0 else 0.0


def long_run_factor(r: float, n: int, segments: int = 1) -> float:
    """The variance of a mean of AR(1) points over that of independent ones, (1 + rho) / (1 -
    rho) (the long-run variance that replaces sigma^2 in a change-point test under dependence;
    Antoch, Huskova & Praskova, J. Stat. Plan. Inference 60, 1997; the AR(1) plug-in of
    Andrews, Econometrica 59, 1991, Eq. 6.4), 1 when rho <= 0. rho is ``r`` corrected for its
    bias, E[r] = rho - (1 + 3 rho) / n for a series less its mean (Marriott & Pope,
    Biometrika 41, 1954; Kendall 1954), with n the points per segment (each of ``segments``
    means removed): rho = (n r + 1) / (n - 3); capped at 0.9."""
    per = n / max(segments, 1)
    rho = min((per * r + 1.0) / (per - 3.0), 0.9) if per > 6 else min(r, 0.9)
    return (1.0 + rho) / (1.0 - rho) if rho > 0 else 1.0


def serial_power(n: int, rho: float = ASSUMED_RHO) -> float:
    """The power of the one-sided 1% lag-1 check, r > 2.326 / sqrt(n), against an AR(1)
    coefficient ``rho``: r is about N(rho, (1 - rho^2) / n) (Bartlett's variance)."""
    from benchlang.stats._special import ndtr

    return float(ndtr((rho - SERIAL_Z / math.sqrt(n)) / math.sqrt((1.0 - rho * rho) / n)))


def serial_notes(r: float, n: int, found: bool) -> list[str]:
    """What the result says about correlated points: descriptive only when the check rejects
    independence; when it does not but has little power (below 80% against an AR(1)
    coefficient of 0.3) and a change was found, that a drift could have made it."""
    limit = SERIAL_Z / math.sqrt(n)
    if r > limit:
        return [
            f"the points are correlated from commit to commit (lag-1 autocorrelation {r:.2f}, "
            f"above {limit:.2f}): change points are descriptive only"
        ]
    power = serial_power(n)
    if found and power < 0.8:
        allowed = f"; the test allowed for the correlation seen ({r:.2f})" if r > 0 else ""
        return [
            f"with {n} points the check of independence from commit to commit has little "
            f"power ({power:.0%} against a lag-1 correlation of {ASSUMED_RHO}): a slow drift "
            f"can pass for a change{allowed}"
        ]
    return []


@attrs.frozen
class PossibleChange:
    """A change of level in the last ``runs`` points of a series, fewer than ``min_size``: at
    ``index`` (the first point after it) if confirmed, once ``to_confirm`` more runs show the
    new level. ``ratio`` = the last runs' level / the segment's before them; ``p_value`` the
    test of the last 1 to ``min_size`` - 1 runs against that segment (Bonferroni over them)."""

    index: int
    runs: int
    to_confirm: int
    ratio: float
    p_value: float
    statistic: float

    def describe(self) -> str:
        """One line for a reader: 'a possible change in the last 2 runs (x1.153), 1 more to
        confirm'."""
        runs = "run" if self.runs == 1 else f"{self.runs} runs"
        size = f"x{self.ratio:.3f}" if math.isfinite(self.ratio) else "level moved"
        return f"a possible change in the last {runs} ({size}), {self.to_confirm} more to confirm"

    def to_dict(self) -> dict[str, Any]:
        fields = attrs.asdict(self)
        fields["message"] = self.describe()
        return undefined(fields, {"*": "the level before it is not positive"})


def recent(
    z: np.ndarray,
    var: np.ndarray,
    dispersion: Dispersion,
    cuts: list[int],
    m: int,
    alpha: float,
    log: bool,
) -> tuple[list[int], PossibleChange | None, tuple[float, float] | None]:
    """The change points without one that a change in the last ``m`` - 1 runs was mistaken
    for, with one before the last ``m`` runs that Huber's weights hid, and a change in the last
    ``m`` - 1 runs if it is significant; the third value is the (z, p-value) of the change
    point added, if any. On the last two segments (or the whole series)
    the weighted least-squares place of one change (Bai, J. Time Ser. Anal. 15, 1994) is
    sought with a last side of one point or more, the points unweighted by Huber's rule
    (``var``: the noise model's variances): when it falls in the last ``m`` - 1 runs, the last
    change point found is that change placed early, and is dropped. Then the last segment's
    last 1 to ``m`` - 1 runs are tested against the rest of it under the search's dispersion
    (the z taken to its normal equivalent, stats._changepoint_scan.normal_equivalent), at
    ``alpha`` with Bonferroni over the ``m`` - 1 splits.

    A last segment of exactly ``m`` points is the majority of one window of the weighting
    (stats._changepoint_scan.huber_var) only with two points of the segment before, so its
    median there is an extreme of its own points and one of them can weigh less for no fault:
    the search then misses the change or puts it a commit later. So when the least-squares
    place is ``m`` runs before the end and the search put no change there, the split is
    tested again with Huber's weights from each side's own median (one IRLS step given the
    split; Huber 1964), by the search's max-type p-value over the segment. When the place is
    earlier than the last ``m`` - 1 runs, no possible change is said: a change in the last runs
    at another commit would name the wrong one."""
    n = z.size
    raw = Sums(z, var).tuned(dispersion)
    cuts = list(cuts)
    if cuts and n - cuts[-1] < 2 * m:
        a = cuts[-2] if len(cuts) > 1 else 0
        if _place(raw, a, n, m, 1) > n - m:
            cuts.pop()
    a = cuts[-1] if cuts else 0
    if n - a < m + 1:
        return cuts, None, None
    t = _place(raw, a, n, m, 1)
    if t == n - m and n - a >= 2 * m:
        added = _given_split(z[a:], var[a:], dispersion, n - m - a, m)
        if added[1] < alpha:
            return [*cuts, n - m], None, added
    if t <= n - m:
        return cuts, None, None
    zt = raw.z_at(a, n, t)
    p = min(1.0, (m - 1) * math.erfc(abs(raw.normal(a, n, t, zt)) / math.sqrt(2.0)))
    if not p < alpha:
        return cuts, None, None
    left, right = raw.mean(a, t)[0], raw.mean(t, n)[0]
    linear = right / left if left > 0 else math.nan
    ratio = math.exp(right - left) if log else linear
    return cuts, PossibleChange(t, n - t, m - (n - t), ratio, p, zt), None


def _given_split(
    z: np.ndarray, var: np.ndarray, dispersion: Dispersion, t: int, m: int
) -> tuple[float, float]:
    """The (z, max-type p-value) of the split ``t`` of ``z`` with each point's Huber weight
    from its own side's median."""
    level = np.where(np.arange(z.size) < t, np.median(z[:t]), np.median(z[t:]))
    weighted = var * np.maximum(1.0, np.abs(z - level) / np.sqrt(var) / HUBER_C)
    sums = Sums(z, weighted, huber_info(var, weighted), huber_capped(var, weighted))
    sums = sums.tuned(dispersion)
    zt = sums.z_at(0, z.size, t)
    return zt, sums.max_p(0, z.size, m, sums.normal(0, z.size, t, zt))


def _place(raw: Sums, a: int, b: int, left: int, right: int) -> int:
    """The split t of [a, b) with at least ``left`` points before and ``right`` after that
    maximizes the weighted least-squares criterion |shift| sqrt(W_left W_right / W)."""
    ts = np.arange(a + left, b - right + 1)
    wl = raw.cw[ts] - raw.cw[a]
    wr = raw.cw[b] - raw.cw[ts]
    shift = (raw.cy[b] - raw.cy[ts]) / wr - (raw.cy[ts] - raw.cy[a]) / wl
    return int(ts[int(np.argmax(np.abs(shift) * np.sqrt(wl * wr / (wl + wr))))])
