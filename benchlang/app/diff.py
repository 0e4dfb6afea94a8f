"""``benchlang diff``: stores of one spec before and after, each store one session."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from benchlang.app.stores import load_store
from benchlang.errors import UserError
from benchlang.report.data import ExperimentData
from benchlang.report.diff import StoreDiff, diff, diff_sessions, labels_of
from benchlang.stats.sessions import MIN_HISTORY_RUNS, MIN_SESSIONS, lag_spread


def diff_stores(
    store_a: str | Path,
    store_b: str | Path,
    *,
    margin: float | None = None,
    confidence: float = 95.0,
    plan_a: str | None = None,
    plan_b: str | None = None,
) -> StoreDiff:
    """Compare the latest (or named) plans of two stores, read-only, without failing closed
    (``bisect`` reads the intervals)."""
    a = load_store(store_a, plan_a)
    b = load_store(store_b, plan_b)
    return diff(a, b, (str(store_a), str(store_b)), margin=margin, confidence=confidence)


def diff_across_sessions(
    base: Sequence[str | Path],
    new: Sequence[str | Path],
    *,
    margin: float | None = None,
    confidence: float = 95.0,
    plan_a: str | None = None,
    plan_b: str | None = None,
    allow_missing: bool = False,
    history: str | None = None,
) -> StoreDiff:
    """The CLI's diff: each store a session; fails closed (exit 2) on different experiments,
    a configuration not in every store (unless ``allow_missing``) or nothing to compare. With
    fewer than 3 sessions a side, ``history`` lends the spread between sessions of this machine
    class (``_borrowed``)."""
    if not base or not new:
        raise UserError("diff needs at least one store per side", "benchlang diff A B")
    sides = [
        [load_store(s, plan) for s in stores] for stores, plan in ((base, plan_a), (new, plan_b))
    ]
    names = [list(map(str, base)), list(map(str, new))]
    everyone = [
        (n, d) for ns, ds in zip(names, sides, strict=True) for n, d in zip(ns, ds, strict=True)
    ]
    experiments = {d.experiment.name for _, d in everyone}
    if len(experiments) > 1:
        shown = ", ".join(f"{n}: {d.experiment.name}" for n, d in everyone)
        raise UserError(
            f"the stores hold different experiments ({shown}): diff compares sessions of one experiment",
            "compare stores made from the same spec",
        )
    held = {n: labels_of(d) for n, d in everyone}
    order = list(dict.fromkeys(x for labels in held.values() for x in labels))
    common = [x for x in order if all(x in labels for labels in held.values())]
    missing = {
        x: [n for n, labels in held.items() if x not in labels] for x in order if x not in common
    }
    if missing and not allow_missing:
        what = "; ".join(f"{x} is not in {', '.join(ns)}" for x, ns in missing.items())
        raise UserError(
            f"not every configuration is in every store: {what}",
            "a renamed or removed benchmark? --allow-missing compares the common ones",
        )
    if not common:
        raise UserError("no configuration is in every store: nothing to compare")
    borrowed: dict[tuple[str, str], tuple[float, float, str]] = {}
    notes: list[str] = []
    if history is not None:
        if min(len(base), len(new)) >= MIN_SESSIONS:
            notes.append(f"--history {history} not used: the sessions' own spread decides")
        else:
            from benchlang.app.history.runs import store_date

            dates = [store_date(Path(n), d.plan.plan_hash) for n, d in everyone]
            borrowed, notes = _borrowed(history, [d for _, d in everyone], dates, common, len(base))
    result = diff_sessions(
        sides[0],
        sides[1],
        (names[0], names[1]),
        margin=margin,
        confidence=confidence,
        labels=common,
        borrowed=borrowed,
    )
    if notes:
        result = attrs.evolve(result, warnings=(*result.warnings, *notes))
    if not result.metrics or not any(m.rows for m in result.metrics):
        raise UserError("no metric is in every store's spec: nothing to compare")
    return result


def _trials(data: ExperimentData, metric: str, label: str) -> int:
    """The trials of ``label`` with a value of ``metric`` in one store: what ``history add``
    counts as a point's trials (history.points.points_of)."""
    table = data.table
    values = data.metrics[metric].values[(table.label == label) & table.ok & table.measured]
    return int(np.isfinite(values).sum())


def _lag(series_dates: Sequence[str], dates: Sequence[str], sides: int) -> tuple[int, int]:
    """How many of the history's runs lie between the compared sessions (the most over the
    pairs of a base and a new store, at least 1: the variogram's lag), and how many runs are
    before the earliest of them."""
    ordered = np.asarray(series_dates, dtype=str)
    at = np.searchsorted(ordered, np.asarray(dates, dtype=str), side="right")
    lag = int(np.max(np.abs(at[sides:, None] - at[None, :sides])))
    return max(1, lag), int(at.min())


def _borrowed(
    history: str,
    datas: Sequence[ExperimentData],
    dates: Sequence[str],
    labels: Sequence[str],
    sides: int,
) -> tuple[dict[tuple[str, str], tuple[float, float, str]], list[str]]:
    """The spread between the compared sessions of each (metric, configuration) the history
    holds on the stores' machine classes, and what could not be borrowed and why.

    The stores' dates (``dates``, as ``history add`` records them) place them among the
    history's runs: the spread is the semivariogram at their lag L, the runs of the history
    between them (``stats.sessions.lag_spread``): L = 1 for sessions next to each other,
    more when one is old, so a drifting level is in it. When every store is after the
    series' last change point, only the runs since it are used (a code change is a step,
    not a spread); else the whole series. ``datas[:sides]`` are the base stores. Every
    machine class's series is kept: with several classes the spread is pooled over them
    (df-weighted) when both sides ran on the same classes; sides on different classes are not
    borrowed for (a difference between classes is in no run-to-run spread). A series whose
    points were made of another number of trials than the stores' is not borrowed from."""
    from benchlang.app.history.runs import history_target, open_history
    from benchlang.history.points import host_class
    from benchlang.history.series import read_series
    from benchlang.history.verdicts import changes

    by_side = [
        sorted({host_class(d.hosts) for d in part}) for part in (datas[:sides], datas[sides:])
    ]
    classes = sorted(set(by_side[0]) | set(by_side[1]))
    if by_side[0] != by_side[1]:
        return {}, [
            f"--history {history} not used: the sides ran on different machine classes "
            f"(base: {'; '.join(by_side[0])}; new: {'; '.join(by_side[1])}): a difference "
            "between the classes is in no run-to-run spread"
        ]
    h = open_history(history_target(history))
    try:
        series = [s for s in read_series(h) if s.host_class in classes]
    finally:
        h.close()
    notes: list[str] = []
    kept: dict[tuple[str, str], dict[str, tuple[float, float, str]]] = {}
    wanted = set(labels)
    for s in series:
        if s.configuration not in wanted or s.metric not in datas[0].metrics:
            continue
        found = changes(s)
        last = found.changes[-1].index if found.changes else 0
        lag, first = _lag(s.dates, dates, sides)
        start = last if last and first > last else 0
        values = s.values[start:]
        values = values[np.isfinite(values)]
        n = int(values.size)
        part = f"{n} runs since its last change point" if start else f"{n} runs"
        where = f"{s.metric} {s.configuration} on {s.host_class}"
        if n < MIN_HISTORY_RUNS:
            notes.append(
                f"history {history}: {where} has {part}; a spread is borrowed from "
                f"{MIN_HISTORY_RUNS} or more"
            )
            continue
        made_of = int(np.median(np.asarray(s.trials[start:], dtype=float)))
        stores = sorted({_trials(d, s.metric, s.configuration) for d in datas})
        if stores != [made_of]:
            notes.append(
                f"history {history}: {where}: its points were made of {made_of} trials, the "
                f"stores' of {', '.join(map(str, stores))}: another design's spread, not borrowed"
            )
            continue
        sd, df = lag_spread(values, lag)
        if not sd > 0:
            notes.append(
                f"history {history}: {where}: the sessions compared are {lag} runs apart in "
                f"it, and its {part} hold fewer than 2 pairs that far apart"
            )
            continue
        kept.setdefault((s.metric, s.configuration), {})[s.host_class] = (
            sd,
            df,
            f"{part} on {s.host_class}, lag {lag}",
        )
    out = {}
    for key, per_class in kept.items():
        if set(per_class) != set(classes):
            lacking = ", ".join(c for c in classes if c not in per_class)
            notes.append(f"history {history}: {key[0]} {key[1]} has no usable series on {lacking}")
            continue
        df = sum(d for _, d, _ in per_class.values())
        sd = math.sqrt(sum(d * v * v for v, d, _ in per_class.values()) / df)
        runs = "; ".join(w for _, _, w in (per_class[c] for c in sorted(per_class)))
        pooled = ", pooled over the classes" if len(per_class) > 1 else ""
        out[key] = (sd, df, f"history {history} ({runs}{pooled})")
    return out, notes
