"""``benchlang order`` over several stores of one experiment, read as the sessions of a
campaign (``app.campaign.load_campaign``: other experiments or configurations refused), with
every order test stratified by session (``stats.session_strata``; docs/statistics.md, "Order
tests across sessions")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchlang.app.analysis import order_of, order_of_store
from benchlang.errors import UserError
from benchlang.stats.order_analysis import OrderReport


def order_of_stores(
    paths: Sequence[str | Path], plan_hash: str | None, metric: str | None, alpha: float
) -> OrderReport:
    """``order_of_store`` for one store; for several, their trials as sessions of one data set
    (each store's latest plan unless ``plan_hash``)."""
    if len(paths) == 1:
        return order_of_store(paths[0], plan_hash, metric, alpha)
    from benchlang.app.campaign import load_campaign

    if not 0.0 < alpha < 1.0:
        raise UserError("--alpha must lie strictly between 0 and 1")
    data = load_campaign(paths, plan_hash, every_measure=False)
    if data.experiment.design.layout is not None:
        raise UserError(
            "an A/B layout has no fixed- and random-order rounds to compare",
            "order effects within its host batches show in 'benchlang analyze' (warm-up and cool-down advice)",
        )
    return order_of(data, metric, alpha)
