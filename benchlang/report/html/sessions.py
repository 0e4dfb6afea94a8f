"""The report's "Between sessions" section of a campaign (several stores of one experiment
read as sessions): the stores in session order, each configuration's between-session share
(``stats.campaign``: one-way ANOVA variance components, Searle, Casella & McCulloch 1992 §3.5;
ICC and design effect, Bakshy & Frachtenberg 2015 §3), and which spread the page's answers
carry."""

from __future__ import annotations

import math

from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import esc, section, table
from benchlang.report.sessions_text import SHARE_HEADERS, SPREAD, share_cells, share_title


def sessions_section(inputs: ReportInputs) -> str | None:
    """Nothing for one store; for a campaign the stores and the share table."""
    if not inputs.stores:
        return None
    data = inputs.data
    table_ = data.table
    plans = inputs.plans or ("-",) * len(inputs.stores)
    stores = [
        [
            i + 1,
            store,
            plan[:19],
            int((table_.sessions == i).sum()),
            int((~table_.ok & (table_.sessions == i)).sum()),
        ]
        for i, (store, plan) in enumerate(zip(inputs.stores, plans, strict=True))
    ]
    body = [
        f"<p>This page covers {len(inputs.stores)} sessions of experiment "
        f"{esc(data.experiment.name)}, one per store; its KPIs, ranking and summaries use "
        f"{esc(SPREAD)}.</p>",
        table(["session", "store", "plan", "trials", "failed"], stores, caption="the sessions"),
    ]
    rows = inputs.sessions
    if rows:
        effects = [
            "-" if not math.isfinite(r.share.design_effect) else f"{r.share.design_effect:.2f}"
            for r in rows
        ]
        cells = [[*c, e] for c, e in zip(share_cells(rows), effects, strict=True)]
        body.append(
            table(
                [*SHARE_HEADERS, "design effect"],
                cells,
                caption=share_title(len(inputs.stores)).replace("\n", " "),
                css="sessions",
            )
        )
        body.append(
            "<p class='note'>The design effect 1 + (m - 1) ICC is how much the spread between "
            "sessions inflates the variance of one session's mean of m trials (Bakshy &amp; "
            "Frachtenberg 2015 §3): a comparison of two sessions that ignores it is that much "
            "too confident.</p>"
        )
    else:
        body.append("<p class='note'>The spec declares no KPI: no share is computed.</p>")
    return section("sessions", "Between sessions", body)
