"""The between-session share of a campaign's metrics, as ``analyze`` prints it: per
configuration the sessions, the spread within and between them (as a coefficient of variation
of the log values), the intraclass correlation and its F test (``stats.campaign``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TextIO

from benchlang.report.table import render_table


def _percent(variance: float) -> str:
    """A log-scale variance as the coefficient of variation it implies (sqrt(e^v - 1))."""
    if not math.isfinite(variance):
        return "-"
    return f"{100 * math.sqrt(math.expm1(variance)):.2g}%"


def render_session_shares(rows: Sequence, sessions: int, stream: TextIO | None = None) -> None:
    """One row per metric and configuration, then what the share means for comparisons."""
    table = [
        (
            r.metric,
            r.configuration,
            r.share.sessions,
            r.share.trials,
            _percent(r.share.within),
            _percent(r.share.between),
            "-" if not math.isfinite(r.share.icc) else f"{r.share.icc:.2f}",
            "-" if not math.isfinite(r.share.p_value) else f"{r.share.p_value:.2g}",
        )
        for r in rows
    ]
    render_table(
        ["metric", "configuration", "sessions", "n", "within", "between", "ICC", "p"],
        table,
        title=(
            f"between sessions ({sessions} stores, one session each): spread as a CV of the log\n"
            "values; ICC = between / (between + within); p: no session effect (F test)"
        ),
        stream=stream,
        align=["left", "left", "right", "right", "right", "right", "right", "right"],
    )
    print(
        "The KPIs and the ranking above use sessions as their top clusters: their intervals\n"
        "carry the spread between sessions (docs/statistics.md, Campaigns).",
        file=stream,
    )
