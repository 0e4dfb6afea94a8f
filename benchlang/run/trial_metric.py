"""One trial's metric value from its raw series: trim, then the aggregate with the optional
convergence test (TriScale §4.1). Used by the stopping rule during a run and by reports."""

from __future__ import annotations

import math

import numpy as np

from benchlang import model
from benchlang.stats.metric import Metric, metric


def trim_samples(trim: model.Trim | None, n: int, runtime: float | None) -> float | int:
    """A spec's ``trim`` as what stats.metric takes: a fraction or a sample count.

    A duration is converted with the design's runtime (n samples over ``runtime`` seconds);
    without a runtime the checker has already refused it.
    """
    if trim is None:
        return 0
    if trim.kind == "fraction":
        return float(trim.value)
    if trim.kind == "samples":
        return int(trim.value)
    if not runtime:
        return 0
    return math.floor(min(1.0, trim.value / runtime) * n)


def series_metric(m: model.Metric, series: np.ndarray, runtime: float | None) -> Metric:
    convergence = (m.convergence.confidence, m.convergence.tolerance) if m.convergence else None
    return metric(series, m.aggregate, convergence, trim_samples(m.trim, series.size, runtime))
