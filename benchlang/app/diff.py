"""``benchlang diff``: two stores of the same spec, before and after."""

from __future__ import annotations

from pathlib import Path

from benchlang.app.stores import load_store
from benchlang.report.diff import StoreDiff, diff


def diff_stores(
    store_a: str | Path,
    store_b: str | Path,
    *,
    margin: float | None = None,
    confidence: float = 95.0,
    plan_a: str | None = None,
    plan_b: str | None = None,
) -> StoreDiff:
    """Compare the latest (or named) plans of two stores, read-only."""
    a = load_store(store_a, plan_a)
    b = load_store(store_b, plan_b)
    return diff(a, b, (str(store_a), str(store_b)), margin=margin, confidence=confidence)
