"""The between-session share of a campaign's metrics (several stores of one experiment read as
sessions), as ``analyze``, ``results`` and ``report`` show it: per configuration the sessions,
the spread within and between them (as a coefficient of variation of the log values), the
intraclass correlation and its F test (``stats.campaign``: one-way ANOVA variance components,
Searle, Casella & McCulloch 1992 §3.5; ICC and design effect, Bakshy & Frachtenberg 2015 §3)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TextIO

import attrs
import numpy as np

from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table
from benchlang.stats.campaign import SessionShare, session_share

SPREAD = (
    "sessions as the top clusters: intervals carry the spread between sessions "
    "(docs/statistics.md, Campaigns)"
)
"""What every answer across sessions says it carries."""


@attrs.frozen
class SessionShareRow:
    """One configuration's between-session share of one metric."""

    metric: str
    configuration: str
    share: SessionShare

    def to_dict(self) -> dict:
        return {"metric": self.metric, "configuration": self.configuration, **self.share.to_dict()}


def session_count(data: ExperimentData) -> int:
    """How many sessions (stores) the data holds: 1 for a single store."""
    session = data.table.session
    return 1 if session is None else int(np.unique(session).size)


def share_rows(data: ExperimentData, metrics: Iterable[str]) -> list[SessionShareRow]:
    """Per metric of ``metrics`` and configuration, the between-session share of its
    successful trials (empty for a single session)."""
    table = data.table
    if session_count(data) < 2:
        return []
    rows = []
    for name in dict.fromkeys(metrics):
        values = data.metrics[name].values
        for index, label, _, _ in data.configurations():
            mine = table.ok & (table.configuration == index)
            rows.append(
                SessionShareRow(name, label, session_share(values[mine], table.sessions[mine]))
            )
    return rows


def percent(variance: float) -> str:
    """A log-scale variance as the coefficient of variation it implies (sqrt(e^v - 1))."""
    if not math.isfinite(variance):
        return "-"
    return f"{100 * math.sqrt(math.expm1(variance)):.2g}%"


SHARE_HEADERS = ("metric", "configuration", "sessions", "n", "within", "between", "ICC", "p")


def share_cells(rows: Sequence[SessionShareRow]) -> list[list]:
    """The cells of ``SHARE_HEADERS`` per row, as text."""
    return [
        [
            r.metric,
            r.configuration,
            r.share.sessions,
            r.share.trials,
            percent(r.share.within),
            percent(r.share.between),
            "-" if not math.isfinite(r.share.icc) else f"{r.share.icc:.2f}",
            "-" if not math.isfinite(r.share.p_value) else f"{r.share.p_value:.2g}",
        ]
        for r in rows
    ]


def share_title(sessions: int) -> str:
    return (
        f"between sessions ({sessions} stores, one session each): spread as a CV of the log\n"
        "values; ICC = between / (between + within); p: no session effect (F test)"
    )


def render_session_shares(
    rows: Sequence[SessionShareRow],
    sessions: int,
    stream: TextIO | None = None,
    *,
    using: str = "The KPIs and the ranking above use",
) -> None:
    """One row per metric and configuration, then what the share means for comparisons
    (``using`` names the answers above that use sessions as clusters)."""
    render_table(
        list(SHARE_HEADERS),
        share_cells(rows),
        title=share_title(sessions),
        stream=stream,
        align=["left", "left", "right", "right", "right", "right", "right", "right"],
    )
    print(
        f"{using} sessions as their top clusters: their intervals\n"
        "carry the spread between sessions (docs/statistics.md, Campaigns).",
        file=stream,
    )
