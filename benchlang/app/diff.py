"""``benchlang diff``: stores of one spec before and after, each store one session."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from benchlang.app.stores import load_store
from benchlang.errors import UserError
from benchlang.report.data import ExperimentData
from benchlang.report.diff import StoreDiff, diff, diff_sessions, labels_of
from benchlang.stats.sessions import MIN_HISTORY_RUNS, MIN_SESSIONS, run_to_run_spread


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
    fewer than 3 sessions a side, ``history`` lends its run-to-run spread of this machine class."""
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
        held = ", ".join(f"{n}: {d.experiment.name}" for n, d in everyone)
        raise UserError(
            f"the stores hold different experiments ({held}): diff compares sessions of one experiment",
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
    borrowed, notes = {}, []
    if history is not None:
        if min(len(base), len(new)) >= MIN_SESSIONS:
            notes.append(f"--history {history} not used: the sessions' own spread decides")
        else:
            borrowed, notes = _borrowed(history, [d for _, d in everyone], common)
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


def _borrowed(
    history: str, datas: Sequence[ExperimentData], labels: Sequence[str]
) -> tuple[dict[tuple[str, str], tuple[float, float, str]], list[str]]:
    """The run-to-run spread of each (metric, configuration) the history holds on the stores'
    machine class, from at least ``MIN_HISTORY_RUNS`` runs; and what could not be borrowed."""
    from benchlang.app.history import history_target, open_history
    from benchlang.history.points import host_class
    from benchlang.history.series import read_series

    classes = sorted({host_class(d.hosts) for d in datas})
    notes = []
    if len(classes) > 1:
        notes.append(f"the stores ran on different machine classes ({'; '.join(classes)})")
    h = open_history(history_target(history))
    try:
        series = [s for s in read_series(h) if s.host_class in classes]
    finally:
        h.close()
    out = {}
    wanted = set(labels)
    for s in series:
        if s.configuration not in wanted:
            continue
        sd, df = run_to_run_spread(s.values)
        n = int(np.isfinite(s.values).sum())
        if n < MIN_HISTORY_RUNS or not sd > 0:
            notes.append(
                f"history {history}: {s.metric} {s.configuration} has {n} runs on "
                f"{s.host_class}; a spread is borrowed from {MIN_HISTORY_RUNS} or more"
            )
            continue
        out[(s.metric, s.configuration)] = (
            sd,
            df,
            f"history {history}, {n} runs on {s.host_class}",
        )
    return out, notes
