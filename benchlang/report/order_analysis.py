"""Order dependence of a stored experiment: OrderSage's fixed-vs-random table, plus the
position and carry-over views within random-order rounds. Over several sessions (a campaign)
every test is stratified by session (``stats.session_strata``)."""

from __future__ import annotations

from typing import TextIO

import attrs
import numpy as np

from benchlang.errors import UserError
from benchlang.report.data import ExperimentData
from benchlang.report.order import (
    render_carry_over_table,
    render_order_table,
    render_position_table,
)
from benchlang.report.table import metric_scale
from benchlang.stats.order_dependence import OrderDependence
from benchlang.stats.position_effects import CarryOver, PositionEffect
from benchlang.stats.registry import statistics_methods
from benchlang.stats.session_strata import STRATIFIED, session_count


@attrs.frozen
class OrderReport:
    metric: str
    dependence: OrderDependence | None
    positions: PositionEffect | None
    carry: CarryOver | None
    note: str | None
    scale: tuple[str | None, float] = (None, 1.0)
    """The metric's one display unit (``report.table.metric_scale``)."""
    sessions: int = 1
    """Sessions (stores) pooled; above 1 every test is stratified by session."""

    @property
    def stratification(self) -> str | None:
        """The line that says how the sessions were pooled (None for one session)."""
        return f"{STRATIFIED}; {self.sessions} sessions" if self.sessions > 1 else None


def order_report(
    data: ExperimentData, metric: str | None = None, alpha: float = 0.05
) -> OrderReport:
    exp = data.experiment
    if metric is None:
        if not exp.metrics:
            raise UserError("the experiment declares no metric")
        metric = exp.metrics[0].name
    if metric not in data.metrics:
        raise UserError(f"no metric {metric!r}", f"metrics: {', '.join(data.metrics)}")
    t = data.table
    values = data.metrics[metric].values
    keep = t.ok & np.isfinite(values)
    v, label, order = values[keep], t.label[keep].astype(str), t.order_kind[keep].astype(str)
    declared = exp.metric(metric)
    if declared is None:
        raise UserError(f"no metric {metric!r}", f"metrics: {', '.join(data.metrics)}")
    better = declared.better
    kinds = set(order.tolist())
    session = None if t.session is None else t.session[keep]
    sessions = session_count(session)
    strata = {"session": session} if sessions > 1 else {}
    methods = statistics_methods()  # the order methods' implementations, from the registry
    dependence = (
        methods["order_dependence"].load()(v, label, order, alpha, better, **strata)
        if kinds == {"fixed", "random"}
        else None
    )
    positions = carry = None
    note = None
    if "random" in kinds:
        views = methods["position_effects"].load()
        positions, carry = views(
            v, label, t.round[keep], t.position[keep], alpha, order=order, **strata
        )
    if dependence is None:
        note = (
            "only fixed-order rounds: order dependence cannot be tested (use order random or fixed_vs_random)"
            if kinds == {"fixed"}
            else "no fixed-order rounds: the fixed-vs-random test needs order fixed_vs_random; position and carry-over effects are shown instead"
        )
    scale = metric_scale(v, declared.unit)
    return OrderReport(metric, dependence, positions, carry, note, scale, sessions)


def render_order_report(report: OrderReport, stream: TextIO | None = None) -> None:
    import sys

    out = stream or sys.stdout
    if report.stratification:
        out.write(
            f"{report.stratification}: the medians, means and shifts below are of the aligned "
            "values; CMH p = the stratified test's p-value\n"
        )
    if report.dependence is not None:
        render_order_table(report.dependence, out, report.scale)
    if report.note:
        out.write(f"note: {report.note}\n")
    if report.positions is not None:
        render_position_table(report.positions, out)
    if report.carry is not None:
        render_carry_over_table(report.carry, out, report.scale)
