"""What a history says: each series' change points with their commit ranges, and the CI gate
on the newest point.

Change points come from ``stats.changepoints.detect_changes`` (binary segmentation with
Otava's merge step, each point weighed by its own interval and the spread between points,
DerSimonian & Laird 1986; docs/statistics.md "Change points over a history"). The gate judges the newest point against the current segment of
the history before it (the points since its last change point) with the equivalence test
``diff`` uses (TOST, Schuirmann 1987; stats.equivalence): the ratio interval is
[new lower / baseline upper, new upper / baseline lower], where the baseline interval is the
distribution-free interval of the segment's median (Thompson 1936) and the new point's is its
stored interval; two 95% intervals give the ratio at least 90% coverage (Bonferroni), the
(1 - 2 alpha) level TOST at alpha = 5% needs.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.history.series import Series
from benchlang.jsonout import undefined
from benchlang.stats._orderstat import two_sided_ranks
from benchlang.stats.equivalence import Equivalence, equivalence


@attrs.frozen
class Change:
    """One change point of a series, located between two commits."""

    index: int
    commit_before: str | None
    commit_after: str | None
    date_after: str
    before: float
    after: float
    ratio: float
    ratio_low: float
    ratio_high: float
    p_value: float
    kind: str

    def to_dict(self) -> dict[str, Any]:
        return undefined(attrs.asdict(self), {"*": "too few points around the change"})


@attrs.frozen
class SeriesChanges:
    """A series' change points of level (``changes``: regressions and improvements) and of
    noise (``spread``, kind "spread": the ratio of the points' standard errors after/before),
    kept apart so that the gate's baseline starts at a change of level only."""

    series: Series
    changes: tuple[Change, ...]
    method: str
    spread: tuple[Change, ...] = ()
    note: str | None = None
    """Why the result is descriptive only or partial (stats.changepoints' note), else None."""

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.kind == "regression")

    def to_dict(self) -> dict[str, Any]:
        s = self.series
        return {
            "metric": s.metric,
            "configuration": s.configuration,
            "host_class": s.host_class,
            "unit": s.unit,
            "better": s.better,
            "points": len(s),
            "method": self.method,
            "changes": [c.to_dict() for c in self.changes],
            "spread": [c.to_dict() for c in self.spread],
            "note": self.note,
        }


@attrs.frozen
class SeriesCheck:
    """The gate's verdict on a series' newest point."""

    series: Series
    commit: str | None
    value: float
    baseline: float
    baseline_points: int
    ratio: float
    gate: Equivalence | None
    reason: str
    descriptive_only: bool
    last_change: Change | None = None
    """The last change point of the history before the newest point: where the baseline starts."""

    @property
    def verdict(self) -> str:
        return self.gate.verdict if self.gate is not None else "not judged"

    def to_dict(self) -> dict[str, Any]:
        s = self.series
        fields = {
            "metric": s.metric,
            "configuration": s.configuration,
            "host_class": s.host_class,
            "unit": s.unit,
            "better": s.better,
            "commit": self.commit,
            "value": self.value,
            "baseline": self.baseline,
            "baseline_points": self.baseline_points,
            "ratio": self.ratio,
            "verdict": self.verdict,
            "interval": None if self.gate is None else [self.gate.lower, self.gate.upper],
            "reason": self.reason,
            "descriptive_only": self.descriptive_only,
            "last_change": None if self.last_change is None else self.last_change.to_dict(),
        }
        return undefined(fields, {"*": self.reason})


def _kind(ratio: float, better: str) -> str:
    worse = ratio > 1 if better == "lower" else ratio < 1
    return "regression" if worse else "improvement"


def changes(series: Series, *, alpha: float = 0.05, confidence: float = 95.0) -> SeriesChanges:
    """Every change point of one series, each with the commits it lies between; points
    without a value (a run whose KPI could not be computed) are left out of the detection."""
    from benchlang.stats.changepoints import detect_changes

    kept = np.flatnonzero(np.isfinite(series.values))
    if kept.size < 2:
        return SeriesChanges(series, (), "none")
    found = detect_changes(
        series.values[kept],
        series.lower[kept],
        series.upper[kept],
        alpha=alpha,
        confidence=confidence,
    )

    def located(cp, kind: str | None) -> Change:
        i, before = int(kept[cp.index]), int(kept[cp.index - 1]) if cp.index > 0 else None
        return Change(
            i,
            series.commits[before] if before is not None else None,
            series.commits[i],
            series.dates[i],
            float(cp.before),
            float(cp.after),
            float(cp.ratio),
            float(cp.ratio_low),
            float(cp.ratio_high),
            float(cp.p_value),
            kind or _kind(float(cp.ratio), series.better),
        )

    return SeriesChanges(
        series,
        tuple(located(cp, None) for cp in found.points),
        found.method,
        tuple(located(cp, "spread") for cp in found.spread),
        found.note,
    )


def _median_interval(
    values: np.ndarray, lower: np.ndarray, upper: np.ndarray, level: float
) -> tuple:
    lo, hi, _ = two_sided_ranks(values.size, 0.5, level)
    if lo is not None and hi is not None:
        ordered = np.sort(values)
        return float(ordered[lo - 1]), float(ordered[hi - 1])
    lows, highs = lower[np.isfinite(lower)], upper[np.isfinite(upper)]
    if lows.size == values.size and highs.size == values.size:
        return float(lows.min()), float(highs.max())  # too few points: their intervals' hull
    return math.nan, math.nan


def check(
    series: Series, margin: float, *, alpha: float = 0.05, confidence: float = 95.0
) -> SeriesCheck:
    """The newest point against the current segment of the history before it."""
    n = len(series)
    new, commit = float(series.values[-1]), series.commits[-1]
    descriptive = series.independence[-1] == "failed"
    if n < 2 or not math.isfinite(new):
        why = "no history before this point" if n < 2 else "the newest point has no value"
        return SeriesCheck(series, commit, new, math.nan, 0, math.nan, None, why, descriptive)
    before = series.head(n - 1)
    previous = changes(before, alpha=alpha, confidence=confidence)
    last = previous.changes[-1] if previous.changes else None
    start = last.index if last is not None else 0
    keep = np.isfinite(before.values[start:])
    values = before.values[start:][keep]
    base_lo, base_hi = _median_interval(
        values, before.lower[start:][keep], before.upper[start:][keep], 1.0 - alpha
    )
    baseline = float(np.median(values)) if values.size else math.nan
    lo, hi = float(series.lower[-1]), float(series.upper[-1])
    ratio = new / baseline if baseline > 0 else math.nan
    ok = all(math.isfinite(x) and x > 0 for x in (lo, hi, base_lo, base_hi))
    gate = equivalence(
        lo / base_hi if ok else math.nan,
        hi / base_lo if ok else math.nan,
        margin,
        alpha=alpha,
        better=series.better,
    )
    reason = (
        f"against the median of {values.size} point(s) since "
        + (
            f"the {last.kind} at {(last.commit_after or str(start))[:12]} "
            f"({(last.ratio - 1) * 100:+.1f}%)"
            if last is not None
            else "the start"
        )
        + ("" if ok else "; an interval is missing, so not decided")
        + ("; the newest run's independence check failed: descriptive only" if descriptive else "")
    )
    return SeriesCheck(
        series, commit, new, baseline, int(values.size), ratio, gate, reason, descriptive, last
    )
