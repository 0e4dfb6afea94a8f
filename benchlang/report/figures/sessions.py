"""The papers' figures of a campaign (several stores of one experiment read as sessions,
``app.campaign``): a figure that keeps sessions apart (DataMill's, whose sessions take a panel,
a line or the boxes' labels) or draws an analysis stratified by session (OrderSage's, from the
order tests of ``stats.session_strata``) is built as for one store, with a note saying how;
any other figure draws one session's trials, and with several it would pool them silently: it
does not apply, and says why."""

from __future__ import annotations

from benchlang.report.figures import FigureKind, Inputs, NotApplicable, registry
from benchlang.stats.figure_data import FigureData

SESSION_AWARE = frozenset(
    {
        "series-boxes",
        "levels",
        "level-means",
        "order-pvalues",
        "order-delta",
        "order-ci",
        "order-cases",
    }
)
"""The figures that label each session in what they draw (``report.figures.datamill``) or
draw the order tests stratified by session (``report.figures.ordersage``)."""


def sessions_of(inputs: Inputs) -> int:
    """How many sessions the figures' inputs hold (1: one store)."""
    return max(1, len(getattr(inputs, "stores", ())))


def build(kind: FigureKind, inputs: Inputs, metric: str | None) -> FigureData:
    """``kind``'s numbers, or ``NotApplicable`` where a campaign would be pooled."""
    n = sessions_of(inputs)
    if n > 1 and kind.name not in SESSION_AWARE:
        raise NotApplicable(
            f"{kind.name} draws one session and would pool these {n} sessions (stores): "
            "draw it from one store",
            hint=f"benchlang figure STORE {kind.name}; across sessions: "
            + ", ".join(sorted(SESSION_AWARE)),
        )
    return kind.build(inputs, metric)


def applicable(
    inputs: Inputs, metric: str | None = None
) -> list[tuple[FigureKind, FigureData | None, str | None]]:
    """``report.figures.applicable`` with the campaign's rule (``build``)."""
    out: list[tuple[FigureKind, FigureData | None, str | None]] = []
    for kind in registry().values():
        try:
            out.append((kind, build(kind, inputs, metric), None))
        except NotApplicable as err:
            out.append((kind, None, err.message))
    return out
