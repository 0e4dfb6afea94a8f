"""The CI gate (``history check``, docs/history.md "The gate for CI"): a run judged as a run.

1. **The newest run** of every series is judged against its current segment (the points since
   the last change of level of the history before it) by a prediction interval for a new run's
   level on log levels, ``Var(new - mean) = s² (1 + 1/n)``, t with n - 1 df (Hahn & Meeker 1991,
   §4.6; stats.prediction), or the rank bound where the segment is long enough for it; the
   segment's spread already holds the within-run noise, so the new point's own interval is
   not added, unless its design differs (another trial count): then the excess of its
   within-run variance (from its interval) over the segment's runs' is. Runs just before it that were themselves worse (a step the change-point search
   cannot place yet) are left out of the segment.
2. **One check is one family**: the one-sided p-values "worse beyond the margin" of every
   series are adjusted by Holm (1979; stats.family), so the chance that a check raises any
   false regression is at most alpha; the intervals shown are Bonferroni's at alpha / k.
3. **A regression stays open**: every regression change point of a series (stats.changepoints
   on the whole series) is open until the same prediction test, on the mean of the runs after
   it (Hahn & Meeker §4.7), decides the level is back within the margin of the segment before
   it (stats.prediction.back_within: decided once, it stays decided: one run inside the margin
   by chance does not close it, one outside does not reopen it). Every run after the change is
   one look of that test, the t-th at ``alpha / (t (t + 1))`` (stats.prediction.spent: the
   error spent over unbounded looks, Lan & DeMets 1983, by Bonferroni's inequality), so a
   level that is not back is called back at most alpha of the time however long it is
   watched (at each look at alpha, 14-19% at the margin's edge). Or until it is acknowledged
   (history.acks). While one is open the gate fails and names it.
4. **A possible change** in a series' last runs, too few to place at a commit
   (history.verdicts.Possible), is named with the runs that decide it; it is not a failure on
   its own (a check fails on the newest run's verdict, 1, or an open regression, 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.history.acks import Ack, acknowledged, change_id
from benchlang.history.series import Series
from benchlang.history.verdicts import Change, Possible, SeriesChanges, changes
from benchlang.jsonout import undefined
from benchlang.stats.equivalence import equivalence
from benchlang.stats.family import holm
from benchlang.stats.prediction import (
    Prediction,
    back_within,
    distribution_free_minimum,
    predict,
    runs_to_close,
    runs_to_decide,
)

FEWEST = 3
"""The fewest points of a segment the gate judges against (t with 2 df)."""
TAIL = 10
"""How many of the segment's last runs are looked at for a step not yet placed."""


@attrs.frozen
class Regression:
    """A regression change point of a series and its state: ``open``, ``closed`` (decided
    back within the margin at ``closed_at``) or ``acknowledged`` (``ack``)."""

    series: Series
    change: Change
    id: str
    state: str
    now: float
    """The level of the latest segment over the level before the change (a ratio)."""
    closed_at: str | None = None
    ack: Ack | None = None
    needs: int | None = None
    """Runs after the last change, at its level, that would decide the level back (None:
    closed, or its level is not within the margin, or no number would)."""

    def to_dict(self) -> dict[str, Any]:
        s, c = self.series, self.change
        fields = {
            "id": self.id,
            "metric": s.metric,
            "configuration": s.configuration,
            "host_class": s.host_class,
            "state": self.state,
            "commit_before": c.commit_before,
            "commit_after": c.commit_after,
            "index": c.index,
            "ratio": c.ratio,
            "ratio_low": c.ratio_low,
            "ratio_high": c.ratio_high,
            "p_value": c.p_value,
            "level_now": self.now,
            "closed_at": self.closed_at,
            "needs_runs": self.needs,
            "ack": None if self.ack is None else {"reason": self.ack.reason, "date": self.ack.date},
        }
        return undefined(fields, {"*": "too few points"})


@attrs.frozen
class SeriesCheck:
    """The gate's verdict on a series' newest run, and the series' regressions."""

    series: Series
    commit: str | None
    value: float
    baseline: float
    baseline_points: int
    ratio: float
    lower: float
    upper: float
    p_value: float
    p_adjusted: float
    method: str
    verdict: str
    reason: str
    descriptive_only: bool
    last_change: Change | None = None
    needs: int | None = None
    """Runs still needed before the newest run can be judged (None: judged, or no number)."""
    regressions: tuple[Regression, ...] = ()
    possible: Possible | None = None
    """A change in the series' last runs, not yet a change point (named, not a failure)."""

    @property
    def open(self) -> tuple[Regression, ...]:
        return tuple(r for r in self.regressions if r.state == "open")

    @property
    def fails(self) -> bool:
        return self.verdict == "worse" or bool(self.open)

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
            "interval": [self.lower, self.upper],
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "method": self.method,
            "needs_runs": self.needs,
            "reason": self.reason,
            "descriptive_only": self.descriptive_only,
            "last_change": None if self.last_change is None else self.last_change.to_dict(),
            "regressions": [r.to_dict() for r in self.regressions],
            "possible": None if self.possible is None else self.possible.to_dict(),
        }
        return undefined(fields, {"*": self.reason})


def _bad(series: Series) -> int:
    return 1 if series.better == "lower" else -1


def _logs(values: np.ndarray) -> np.ndarray:
    v = values[np.isfinite(values) & (values > 0)]
    logs: np.ndarray = np.log(v)
    return logs


def _levels(found: SeriesChanges) -> list[int]:
    return sorted(c.index for c in found.changes)


def _may_be_back(reference: np.ndarray, after: np.ndarray, margin: float, bad: int) -> bool:
    """Whether ``back_within`` can find a prefix of ``after`` back within the margin: only one
    whose mean is already inside it, since the bound it tests adds a positive t quantile times
    a spread to that mean. Skipping the others saves the quantiles, the gate's main cost."""
    if reference.size < 1 or after.size < 1:
        return False
    shift = np.cumsum(after) / np.arange(1, after.size + 1) - reference.mean()
    return bool(np.any(bad * shift < math.log1p(margin)))


def regressions(
    found: SeriesChanges, acks: Sequence[Ack], margin: float, alpha: float
) -> tuple[Regression, ...]:
    """Every regression change point of the series with its state (module docstring, 3)."""
    s, bad = found.series, _bad(found.series)
    cuts = _levels(found)
    bounds = [0, *cuts, len(s)]
    out = []
    for c in found.changes:
        if c.kind != "regression":
            continue
        at = bounds.index(c.index)
        reference = _logs(s.values[bounds[at - 1] : c.index])
        closed_at, last = None, _logs(s.values[bounds[-2] : bounds[-1]])
        for j in range(at, len(bounds) - 1):
            segment = s.values[bounds[j] : bounds[j + 1]]
            keep = np.flatnonzero(np.isfinite(segment) & (segment > 0))
            after = np.log(segment[keep])
            if not _may_be_back(reference, after, margin, bad):
                continue
            e = back_within(
                reference, after, margin, bad=bad, alpha=alpha, first_look=bounds[j] - c.index + 1
            )
            if e is not None:
                closed_at = s.commits[bounds[j] + int(keep[e - 1])] or str(bounds[j] + keep[e - 1])
                break
        now = (
            math.exp(float(last.mean() - reference.mean()))
            if last.size and reference.size
            else math.nan
        )
        ack = acknowledged(s, c, acks)
        state = "closed" if closed_at else ("acknowledged" if ack else "open")
        needs = None
        if state == "open":
            first = bounds[-2] - c.index + 1
            total = runs_to_close(reference, last, margin, bad=bad, alpha=alpha, first_look=first)
            needs = None if total is None else total - last.size
        out.append(Regression(s, c, change_id(s, c), state, now, closed_at, ack, needs))
    return tuple(out)


def _design_excess(series: Series, start: int, confidence: float) -> float:
    """The newest run's within-run variance (log scale, from its interval) beyond the typical
    one of the segment's runs, when its design differs from theirs (another trial count);
    0 when it is the same design or an interval is missing (module docstring, 1)."""
    from benchlang.stats._special import norm_ppf

    trials = np.array(series.trials[start:-1])
    if trials.size == 0 or series.trials[-1] == int(np.median(trials)):
        return 0.0
    z = 2.0 * norm_ppf(0.5 + confidence / 200.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = (np.log(series.upper[start:]) - np.log(series.lower[start:])) / z
    if not np.all(np.isfinite(se)):
        return 0.0
    return max(0.0, float(se[-1] ** 2 - np.median(se[:-1] ** 2)))


@attrs.frozen
class _Baseline:
    series: Series
    start: int
    reference: np.ndarray
    new: float
    last: Change | None
    left_out: int
    why: str | None  # not judged: why
    needs: int | None


def _baseline(
    series: Series,
    alpha_each: float,
    margin: float,
    alpha: float,
    confidence: float,
    kept: tuple[int, tuple[Change, ...]] | None = None,
) -> _Baseline:
    """The segment the newest run is judged against (module docstring, 1); ``kept``: the
    change points of the series without its newest run as the history stored them (with
    their point count), found here when absent or of another count."""
    n = len(series)
    new = float(series.values[-1])
    if n < 2 or not (math.isfinite(new) and new > 0):
        why = "no history before this run" if n < 2 else "the newest run has no value"
        return _Baseline(series, 0, np.empty(0), new, None, 0, why, FEWEST if n < 2 else None)
    before = series.head(n - 1)
    if kept is not None and kept[0] == n - 1:
        previous = kept[1]
    else:
        previous = changes(before, alpha=alpha, confidence=confidence).changes
    last = previous[-1] if previous else None
    start = last.index if last else 0
    segment = _logs(before.values[start:])
    bad, chain = _bad(series), 0
    for j in range(max(FEWEST, segment.size - TAIL), segment.size):
        reference = segment[: j - chain] if chain else segment[:j]
        p = predict(reference, segment[j : j + 1], margin, bad=bad).p_worse
        chain = chain + 1 if p <= alpha_each else 0
    reference = segment[: segment.size - chain]
    if reference.size < FEWEST:
        since = (
            f"the {last.kind} at {(last.commit_after or str(last.index))[:10]}"
            if last
            else "the start"
        )
        why = f"{reference.size} run(s) since {since}; the gate needs {FEWEST}"
        return _Baseline(series, start, reference, new, last, chain, why, FEWEST - reference.size)
    return _Baseline(series, start, reference, new, last, chain, None, None)


def gate(
    found: Sequence[SeriesChanges],
    acks: Sequence[Ack],
    margin: float,
    *,
    alpha: float = 0.05,
    confidence: float = 95.0,
    before: Mapping[tuple[str, str, str], tuple[int, tuple[Change, ...]]] | None = None,
) -> list[SeriesCheck]:
    """The verdicts of one check over the series ``found`` (each with its change points on the
    whole series): the newest runs as one family, and every series' regressions. ``before``:
    what the history keeps of each series without its newest run (history.stored)."""
    k = max(1, len(found))
    kept = before or {}
    bases = [
        _baseline(f.series, alpha / k, margin, alpha, confidence, kept.get(f.series.key))
        for f in found
    ]
    judged = [b for b in bases if b.why is None]
    preds: dict[int, Prediction] = {}
    extras: dict[int, float] = {}
    for b in judged:
        preds[id(b)] = predict(
            b.reference,
            np.array([math.log(b.new)]),
            margin,
            bad=_bad(b.series),
            rank_alpha=alpha / k,
            extra=extras.setdefault(id(b), _design_excess(b.series, b.start, confidence)),
        )
    adjusted = holm(np.array([preds[id(b)].p_worse for b in judged])) if judged else np.empty(0)
    p_adj = {id(b): float(a) for b, a in zip(judged, adjusted, strict=True)}
    out = []
    for f, b in zip(found, bases, strict=True):
        s = f.series
        open_ = regressions(f, acks, margin, alpha)
        descriptive = s.independence[-1] == "failed"
        pred = preds.get(id(b))
        if pred is None:
            out.append(
                SeriesCheck(s, s.commits[-1], b.new, math.nan, b.reference.size, math.nan,
                            math.nan, math.nan, math.nan, math.nan, "none", "not judged",
                            b.why or "", descriptive, b.last, b.needs, open_, f.possible)
            )  # fmt: skip
            continue
        lo, hi = pred.ratio_interval(alpha / k)
        adjusted_p = p_adj[id(b)]
        verdict = equivalence(lo, hi, margin, alpha=alpha, better=s.better).verdict
        if adjusted_p <= alpha:
            verdict = "worse"
        elif verdict == "worse":
            verdict = "inconclusive"
        needs = None
        if verdict == "inconclusive" and _bad(s) * pred.shift > math.log1p(margin):
            more = runs_to_decide(pred.shift, pred.s, pred.n, margin, bad=_bad(s), alpha=alpha / k)
            needs = None if more is None else more - pred.n
        baseline = math.exp(float(b.reference.mean()))
        reason = _reason(b, pred, k, alpha, needs, descriptive)
        if extras.get(id(b), 0.0) > 0.0:
            reason += (
                f"; its design differs from the segment's ({s.trials[-1]} trials against "
                f"{int(np.median(s.trials[b.start : -1]))}): its own within-run spread beyond "
                "theirs is added"
            )
        out.append(
            SeriesCheck(s, s.commits[-1], b.new, baseline, pred.n, b.new / baseline, lo, hi,
                        pred.p_worse, adjusted_p, pred.method, verdict, reason, descriptive,
                        b.last, needs, open_, f.possible)
        )  # fmt: skip
    return sorted(out, key=lambda c: (not c.fails, c.series.name))


def _reason(
    b: _Baseline, pred: Prediction, k: int, alpha: float, needs: int | None, descriptive: bool
) -> str:
    last = b.last
    since = (
        f"the {last.kind} at {(last.commit_after or str(last.index))[:10]} "
        f"({(last.ratio - 1) * 100:+.1f}%)"
        if last is not None
        else "the start"
    )
    text = f"against {pred.n} run(s) since {since}, run-to-run spread {pred.s * 100:.1f}%"
    if b.left_out:
        text += f"; the {b.left_out} run(s) before it were worse too and are left out"
    least = distribution_free_minimum(alpha / k)
    text += (
        "; distribution-free bound (rank)"
        if pred.method == "rank"
        else f"; t prediction interval (the distribution-free bound needs >= {least} runs)"
    )
    if needs is not None:
        text += f"; about {needs} more run(s) in the segment would decide it"
    if descriptive:
        text += "; the newest run's independence check failed: descriptive only"
    return text
