"""The background floor of the stopping rule from two long runs (stats.ks_baseline): each run
a file (JSON list, CSV column) or a store (one configuration's values of one metric)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benchlang.errors import UserError

if TYPE_CHECKING:
    from benchlang.stats.ks_baseline import KSBaseline


def run_values(path: str | Path, column: str | None, configuration: str | None) -> np.ndarray:
    """A long run's values: a file's stream, or a store's successful trials (trial order) of
    one configuration's metric (``column`` names the metric: the only one by default)."""
    from benchlang.app.stores import is_store
    from benchlang.app.streams import read_stream

    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if not is_store(path):
        return read_stream(path, column)
    from benchlang.app.stores import load_store

    data = load_store(path, every_measure=False)
    metrics = list(data.metrics)
    name = column or (metrics[0] if len(metrics) == 1 else None)
    if name not in data.metrics:
        raise UserError(
            f"{path}: which metric? {', '.join(metrics)}", "--column NAME names the metric"
        )
    labels = [label for _, label, _, _ in data.configurations()]
    label = configuration or (labels[0] if len(labels) == 1 else None)
    if label not in labels:
        raise UserError(
            f"{path}: which configuration? {', '.join(labels)}",
            "--configuration LABEL (the baseline compares long runs of one benchmark)",
        )
    t = data.table
    y = data.metrics[name].values
    keep = t.ok & np.isfinite(y) & (np.asarray(t.label) == label)
    return np.asarray(y[keep][np.argsort(np.asarray(t.trial)[keep], kind="stable")], dtype=float)


def background_baseline(
    a: str | Path,
    b: str | Path,
    *,
    column: str | None = None,
    configuration: str | None = None,
    ks: float = 0.1,
) -> KSBaseline:
    """The KS distance between two long runs, the floor of what the stopping rule can promise."""
    from benchlang.stats.ks_baseline import ks_baseline

    try:
        return ks_baseline(
            run_values(a, column, configuration), run_values(b, column, configuration), ks
        )
    except ValueError as err:
        raise UserError(str(err)) from None
