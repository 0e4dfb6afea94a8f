"""Order dependence of a stored experiment (``benchlang order``, the ``order`` section of
``run``, ``analyze`` and the HTML report): one metric's successful trials handed to
``stats.order_analysis``."""

from __future__ import annotations

import numpy as np

from benchlang.errors import UserError
from benchlang.report.data import ExperimentData
from benchlang.report.table import metric_scale
from benchlang.stats.order_analysis import OrderReport, order_analysis


def order_report(
    data: ExperimentData, metric: str | None = None, alpha: float = 0.05
) -> OrderReport:
    """OrderSage's fixed-vs-random test, position and carry-over effects of ``metric`` (the
    first declared by default)."""
    exp = data.experiment
    if metric is None:
        if not exp.metrics:
            raise UserError("the experiment declares no metric")
        metric = exp.metrics[0].name
    declared = exp.metric(metric)
    if metric not in data.metrics or declared is None:
        raise UserError(f"no metric {metric!r}", f"metrics: {', '.join(data.metrics)}")
    t = data.table
    values = data.metrics[metric].values
    keep = t.ok & np.isfinite(values)
    v = values[keep]
    return order_analysis(
        metric,
        v,
        t.label[keep].astype(str),
        t.order_kind[keep].astype(str),
        t.round[keep],
        t.position[keep],
        alpha,
        declared.better,
        None if t.session is None else t.session[keep],
        metric_scale(v, declared.unit),
    )
