"""What a history says: each series' change points with their commit ranges (the CI gate that
reads them is history.gate).

Change points come from ``stats.changepoints.detect_changes`` (binary segmentation with
Otava's merge step, each point weighed by its own interval and the spread between points,
DerSimonian & Laird 1986; docs/statistics.md "Change points over a history").
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from benchlang.history.series import Series
from benchlang.jsonout import undefined

if TYPE_CHECKING:
    from benchlang.stats.changepoints import ChangePoint


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
class Possible:
    """A change of level in a series' last ``runs`` runs, too few to place at a commit
    (stats._changepoint_checks.PossibleChange): from ``commit`` on (the first run at the new
    level, point ``index``) if ``to_confirm`` more runs at that level confirm it; ``kind``
    regression or improvement by the metric's ``better``."""

    index: int
    commit: str | None
    runs: int
    to_confirm: int
    ratio: float
    p_value: float
    kind: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return undefined(attrs.asdict(self), {"*": "the level before it is not positive"})


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
    """Why the result is descriptive only or partial (stats.changepoints' note without the
    possible change, which is ``possible``), else None."""
    possible: Possible | None = None
    """A change in the last runs, not yet a change point (None: none)."""

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.kind == "regression")

    def to_dict(self) -> dict[str, Any]:
        s = self.series
        level = []
        for c in self.changes:
            d = c.to_dict()
            d["id"] = change_id(s, c)
            level.append(d)
        return s.described() | {
            "method": self.method,
            "changes": level,
            "spread": [c.to_dict() for c in self.spread],
            "note": self.note,
            "possible": None if self.possible is None else self.possible.to_dict(),
        }


def change_id(series: Series, change: Change) -> str:
    """A short id for a change of a series: the series and the change's commit range (a
    re-estimated location gets another id; history.acks matches those by position)."""
    text = "|".join([*series.key, change.commit_before or "", change.commit_after or ""])
    text += "" if change.commit_after else f"|{change.index}"
    return hashlib.sha1(text.encode()).hexdigest()[:8]


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

    def located(cp: ChangePoint, kind: str | None) -> Change:
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

    possible = None
    note = found.note
    if found.possible is not None:
        p, message = found.possible, found.possible.describe()
        i = int(kept[p.index])
        kind = _kind(p.ratio, series.better) if np.isfinite(p.ratio) else "change"
        possible = Possible(
            i, series.commits[i], p.runs, p.to_confirm, float(p.ratio), float(p.p_value), kind,
            message,
        )  # fmt: skip
        note = "; ".join(part for part in (note or "").split("; ") if part != message) or None
    return SeriesChanges(
        series,
        tuple(located(cp, None) for cp in found.points),
        found.method,
        tuple(located(cp, "spread") for cp in found.spread),
        note,
        possible,
    )
