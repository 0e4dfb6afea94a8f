"""KPI: a one-sided distribution-free confidence bound of a percentile (TriScale §4.2, §4.5),
or with ``bound both`` the equal-tailed two-sided interval.

Source: Jacob et al., JSys 1(1) 2021, §4.2 and §4.5, Eq. 1-3 (Thompson's order statistics);
two-sided: Thompson, Ann. Math. Stat. 7, 1936; Hahn & Meeker, Statistical Intervals, 1991,
ch. 5 (§5.2, distribution-free intervals for a quantile), TriScale §7 (two-sided KPIs wanted).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.stats._orderstat import (
    check_percent,
    min_samples,
    order_statistic_bounds,
    two_sided_ranks,
)
from benchlang.stats.independence import Independence, independence_rows


@attrs.frozen
class KPI:
    """A percentile bound over the metric values of one series.

    ``value`` is the ``rank``-th smallest value (1-based), nan when ``n < min_n``;
    ``achieved_confidence`` is the exact binomial coverage of that rank (a percent).
    ``method`` names the statistics method that computed it (``thompson`` here; a kpi method
    of the registry fills in its own name, rank None and nan achieved confidence when its
    bound is no order statistic of known coverage). ``refusal`` says, in words with the fix,
    why the method gives no bound on these values (then ``value`` is nan); ``details`` holds
    the method's own numbers (docs/plugins.md, "What a KPI method receives and returns").

    ``bound`` "both": [``lower``, ``upper``] = [X_(l), X_(u)] is the equal-tailed interval of
    ranks ``ranks`` = (l, u), ``achieved_confidence`` its exact coverage, ``rank`` None and
    ``value`` the sample percentile (numpy's linear interpolation), the point the interval
    surrounds (what a variability score over series ranges over).
    """

    value: float
    rank: int | None
    n: int
    min_n: int
    percentile: float
    confidence: float
    achieved_confidence: float
    bound: str
    independence: Independence
    method: str = "thompson"
    refusal: str | None = None
    details: Mapping[str, Any] = attrs.field(factory=dict, eq=False)
    lower: float = math.nan
    upper: float = math.nan
    ranks: tuple[int, int] | None = None

    @property
    def two_sided(self) -> bool:
        return self.bound == "both"

    @property
    def independent(self) -> bool:
        return self.independence.passed

    @property
    def enough(self) -> bool:
        """A bound was computed (enough values, and the method did not refuse)."""
        return self.refusal is None and math.isfinite(self.value)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; a bound not computed is null, with the reason."""
        few = f"too few values for this bound ({self.n} < {self.min_n} needed)"
        why = self.refusal or (few if self.n < self.min_n else "not defined for these values")
        return undefined(self._fields(), {"*": why})

    def _fields(self) -> dict[str, Any]:
        both = {"lower": self.lower, "upper": self.upper, "ranks": self.ranks}
        return {
            **(both if self.two_sided else {}),
            "method": self.method,
            "value": self.value,
            "rank": self.rank,
            "n": self.n,
            "min_n": self.min_n,
            "percentile": self.percentile,
            "confidence": self.confidence,
            "achieved_confidence": self.achieved_confidence,
            "bound": self.bound,
            "refusal": self.refusal,
            "details": dict(self.details),
            "independent": self.independent,
            "independence": self.independence.to_dict(),
        }


def kpi(
    values: np.ndarray,
    percentile: float,
    confidence: float,
    bound: str = "upper",
    exclude: int = 0,
) -> KPI:
    """The C-level one-sided bound of the p-th percentile of ``values`` (TriScale §4.5).

    ``bound="upper"`` (lower is better, e.g. latency) returns X_(k) for the smallest k with
    P(Bin(N, p) <= k-1) >= C (Eq. 2); ``bound="lower"`` (higher is better) the largest k
    with P(Bin(N, p) >= k) >= C (Eq. 1). NaN values (non-converged trials) are dropped;
    the independence verdict is computed on the remaining values in trial order.
    ``exclude`` = r asks for a bound that never rests on the r most extreme values on the
    bound's side (§4.5): ``min_n`` is then sizing with r excluded and, with fewer values,
    the KPI is nan (once N >= min_n the rank is at most N - r, resp. at least r + 1).
    ``bound="both"``: the equal-tailed interval [X_(l), X_(u)], l the largest rank with
    P(Bin(N, p) >= l) >= (1 + C)/2 and u the smallest with P(Bin(N, p) <= u - 1) >= (1 + C)/2
    (Hahn & Meeker §5.2), coverage P(l <= Bin(N, p) <= u - 1) >= C; below ``min_n`` (6 for
    the median at 95%, 72 for p95) it refuses, naming that minimum.
    """
    return kpis([values], percentile, confidence, bound, exclude)[0]


def kpis(
    series: Sequence[np.ndarray],
    percentile: float,
    confidence: float,
    bound: str = "upper",
    exclude: int = 0,
) -> list[KPI]:
    """``kpi`` of each of ``series``, the series of one length together: one order-statistic
    rank, one partition and one vectorised independence test for all of them, so a run's
    thousand series cost what a few do. Identical to calling ``kpi`` on each."""
    p = check_percent("percentile", percentile)
    c = check_percent("confidence", confidence)
    finite = []
    for values in series:
        x = np.asarray(values, dtype=float).ravel()
        finite.append(x[np.isfinite(x)])
    min_n = min_samples(p, c, bound, exclude)
    by_length: dict[int, list[int]] = {}
    for i, x in enumerate(finite):
        by_length.setdefault(x.size, []).append(i)
    if bound == "both":
        return _two_sided(finite, by_length, percentile, confidence, min_n)
    done: dict[int, KPI] = {}
    for n, members in by_length.items():
        rows = np.stack([finite[i] for i in members])
        rank, achieved = order_statistic_bounds(n, p, c, bound) if n >= min_n else (None, math.nan)
        if rank is None:
            values = np.full(len(members), math.nan)
        else:
            values = np.partition(rows, rank - 1, axis=1)[:, rank - 1]
        for i, value, test in zip(members, values, independence_rows(rows), strict=True):
            done[i] = KPI(
                value=float(value),
                rank=rank,
                n=n,
                min_n=min_n,
                percentile=float(percentile),
                confidence=float(confidence),
                achieved_confidence=100.0 * achieved,
                bound=bound,
                independence=test,
            )
    return [done[i] for i in range(len(finite))]


def _two_sided(
    finite: list[np.ndarray],
    by_length: dict[int, list[int]],
    percentile: float,
    confidence: float,
    min_n: int,
) -> list[KPI]:
    """``kpis`` with ``bound="both"``: one pair of ranks per length, both order statistics
    and the sample percentile of every series of that length at once."""
    p, c = percentile / 100.0, confidence / 100.0
    done: dict[int, KPI] = {}
    for n, members in by_length.items():
        rows = np.stack([finite[i] for i in members])
        low, high, achieved = two_sided_ranks(n, p, c) if n >= min_n else (None, None, math.nan)
        refusal = None
        if low is None or high is None:
            nan = np.full(len(members), math.nan)
            lows, highs, points = nan, nan, nan
            refusal = (
                f"a two-sided {confidence:g}% interval of p{percentile:g} needs at least "
                f"{min_n} values (equal-tailed order statistics, Thompson 1936); {n} given"
            )
        else:
            ordered = np.partition(rows, sorted({low - 1, high - 1}), axis=1)
            lows, highs = ordered[:, low - 1], ordered[:, high - 1]
            points = np.percentile(rows, percentile, axis=1)
        for i, lo, hi, point, test in zip(
            members, lows, highs, points, independence_rows(rows), strict=True
        ):
            done[i] = KPI(
                value=float(point),
                rank=None,
                n=n,
                min_n=min_n,
                percentile=float(percentile),
                confidence=float(confidence),
                achieved_confidence=100.0 * achieved,
                bound="both",
                independence=test,
                refusal=refusal,
                lower=float(lo),
                upper=float(hi),
                ranks=None if low is None or high is None else (low, high),
            )
    return [done[i] for i in range(len(finite))]
