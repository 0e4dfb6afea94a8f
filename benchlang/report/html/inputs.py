"""What the HTML report is drawn from: a stored plan's data and the results the analyses
already computed (``benchlang analyze``, ``order``, ``profile``), gathered by the use case
``benchlang.app.report``; the page never recomputes a statistic another way."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

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


@attrs.frozen
class ReportInputs:
    """Everything one report shows; a section appears only when its part is non-empty.

    ``raw`` maps (metric, configuration index) to one trial's raw series (trial number,
    samples): the first successful trial of the configuration, drawn with its convergence
    test. ``stops`` are the store's stopping decisions (``Store.stops``); ``headline`` is
    ``report.headline.headline`` of the KPIs (what ``run`` and ``analyze`` end with).
    """

    data: ExperimentData
    store: str
    kpis: list = attrs.field(factory=list)
    headline: list = attrs.field(factory=list)
    comparisons: list = attrs.field(factory=list)
    warmup: list = attrs.field(factory=list)
    order: Any = None
    profiles: list[ProfileView] = attrs.field(factory=list)
    stops: list[tuple] = attrs.field(factory=list)
    failed: list[FailedTrial] = attrs.field(factory=list)
    raw: dict[tuple[str, int], tuple[int, np.ndarray]] = attrs.field(factory=dict)
    note: str | None = None
    equal_hosts: list = attrs.field(factory=list)
    """With ``design { redundancy N }``: each metric's equal-hosts check (report.equal_hosts)."""
