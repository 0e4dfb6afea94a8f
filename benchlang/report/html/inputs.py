"""What the HTML report is drawn from: a stored plan's data and the results the analyses
already computed (``benchlang analyze``, ``order``, ``profile``), gathered by the use case
``benchlang.app.report``; the page never recomputes a statistic another way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from benchlang.report.data import ExperimentData


@attrs.frozen
class ProfileView:
    """One ``profile`` of the spec: its sampling period and result, or why it is missing."""

    name: str
    path: str
    seconds: float
    result: Any = None
    problem: str | None = None


@attrs.frozen
class FailedTrial:
    trial: int
    label: str
    reason: str | None
    exit_status: int | None
    stdout_tail: str
    stderr_tail: str


PARTS: dict[str, Callable[[], Any]] = {
    "kpis": list,
    "headline": list,
    "comparisons": list,
    "warmup": list,
    "order": lambda: None,
    "profiles": list,
    "stops": list,
    "failed": list,
    "raw": dict,
    "equal_hosts": list,
    "sessions": list,
    "stores": tuple,
    "plans": tuple,
}
"""The parts of a report besides its data, each empty unless given."""


class ReportInputs:
    """Everything one report shows; a section appears only when its part is non-empty.

    Each part of ``PARTS`` is given as a value or as a function computing it, called on first
    use and kept: the page reads every part once, an exported figure only what it draws (one
    figure of a 100,000-trial store need not run the order analysis or the comparisons).

    ``kpis`` (``report.analysis.analyze``), ``headline`` (``report.headline.headline``),
    ``comparisons``, ``warmup``, ``order``, ``profiles`` (``ProfileView``), ``stops``
    (``Store.stops``), ``failed`` (``FailedTrial``), ``equal_hosts`` (with ``design {
    redundancy N }``: ``report.equal_hosts``) and ``raw``, which maps (metric, configuration
    index) to one trial's raw series (trial number, samples): the first successful trial of
    the configuration, drawn with its convergence test. In a campaign (several stores read
    as sessions, ``app.campaign``) ``stores`` names them in session order, ``plans`` their
    plan hashes, and ``sessions``
    holds each configuration's between-session share (``report.sessions_text``); both are
    empty for one store.
    """

    def __init__(
        self, data: ExperimentData, store: str, note: str | None = None, **parts: Any
    ) -> None:
        unknown = sorted(set(parts) - set(PARTS))
        if unknown:
            raise TypeError(f"ReportInputs has no part {', '.join(unknown)}")
        self.data = data
        self.store = store
        self.note = note
        self._given = parts

    def scale(self, metric: str) -> tuple[str | None, float]:
        """The metric's one display unit and factor on the whole page
        (``report.table.metric_scale`` over the successful trials, as the headline's)."""
        from benchlang.report.table import metric_scale

        mv = self.data.metrics[metric]
        return metric_scale(mv.values[self.data.table.ok], mv.metric.unit)

    def __getattr__(self, name: str) -> Any:
        if name not in PARTS:
            raise AttributeError(name)
        given = self.__dict__["_given"].get(name, PARTS[name])
        value = given() if callable(given) else given
        setattr(self, name, value)
        return value
