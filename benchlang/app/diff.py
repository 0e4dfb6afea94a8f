"""``benchlang diff``: stores of one spec before and after, each store one session."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchlang.app.stores import load_store
from benchlang.errors import UserError
from benchlang.report.diff import StoreDiff, diff, diff_sessions, labels_of


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
) -> StoreDiff:
    """The CLI's diff: each store a session; fails closed (exit 2) on different experiments,
    a configuration not in every store (unless ``allow_missing``) or nothing to compare."""
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
    result = diff_sessions(
        sides[0],
        sides[1],
        (names[0], names[1]),
        margin=margin,
        confidence=confidence,
        labels=common,
    )
    if not result.metrics or not any(m.rows for m in result.metrics):
        raise UserError("no metric is in every store's spec: nothing to compare")
    return result
