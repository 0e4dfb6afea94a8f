"""One trial's metric value from its raw series: trim, then the aggregate with the optional
convergence test (TriScale §4.1); and every stored trial's value of every metric. Used by the
stopping rule during a run (and on resume) and by reports."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from benchlang import model
from benchlang.run.store import Store, TrialTable
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


def evaluate(
    expression: model.Expression, measure: Callable[[str], np.ndarray | float]
) -> np.ndarray:
    """A derived metric's values from the measures of the same trials (elementwise); a
    result that is not finite (a division by zero, a missing measure) is nan: no value,
    never a number stored as good."""
    with np.errstate(all="ignore"):
        out = np.asarray(_value(expression, measure), dtype=float)
    return np.where(np.isfinite(out), out, np.nan)


def _value(e: model.Expression, measure: Callable[[str], np.ndarray | float]) -> Any:
    if e.op == "name":
        return np.asarray(measure(e.value), dtype=float)
    if e.op == "number":
        return e.value
    args = [_value(a, measure) for a in e.args]
    if e.op == "neg":
        return -args[0]
    return _OPERATORS[e.op](args[0], args[1])


_OPERATORS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide}


def series_metric(m: model.Metric, series: np.ndarray, runtime: float | None) -> Metric:
    convergence = (m.convergence.confidence, m.convergence.tolerance) if m.convergence else None
    return metric(series, m.aggregate, convergence, trim_samples(m.trim, series.size, runtime))


@attrs.frozen
class MetricValues:
    """One value per trial (nan: failed, missing, or not converged); converged is None
    when no convergence test applies."""

    metric: model.Metric
    values: np.ndarray
    converged: np.ndarray | None


def metric_values(
    experiment: model.Experiment, store: Store, plan_hash: str, table: TrialTable
) -> dict[str, MetricValues]:
    out = {}
    missing = np.full(len(table), np.nan)
    for m in experiment.metrics:
        if m.expression is not None:
            values = evaluate(m.expression, lambda name: table.measures.get(name, missing))
            values[~table.ok] = np.nan
            out[m.name] = MetricValues(m, values, None)
            continue
        is_series = any(
            (b.measure(m.measure) or model.Measure("")).series for b in experiment.benchmarks
        )
        if not is_series:
            values = table.measures.get(m.measure, np.full(len(table), np.nan)).copy()
            values[~table.ok] = np.nan
            out[m.name] = MetricValues(m, values, None)
            continue
        raw = store.series_values(plan_hash, m.measure)
        values = np.full(len(table), np.nan)
        converged = np.zeros(len(table), dtype=bool) if m.convergence else None
        for i, t in enumerate(table.trial.tolist()):
            series = raw.get(t)
            if series is None or not table.ok[i] or series.size == 0:
                continue
            result = series_metric(m, series, experiment.design.runtime)
            values[i] = result.value
            if converged is not None:
                converged[i] = bool(result.converged)
        out[m.name] = MetricValues(m, values, converged)
    return out
