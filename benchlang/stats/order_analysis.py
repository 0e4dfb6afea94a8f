"""Order dependence of one metric's trials: OrderSage's fixed-vs-random test (Duplyakin et al.,
USENIX ATC 2023, §4: Kruskal-Wallis per configuration with Bonferroni, η², Δ%, the CI-overlap
case) where the plan ran both orders, and benchlang's position-in-round and carry-over views
within random-order rounds. Over several sessions (a campaign) every test is stratified by
session (``stats.session_strata``: aligned ranks, Hodges & Lehmann 1962; Cochran-Mantel-Haenszel,
Landis, Heyman & Koch 1978). The tests come from the statistics registry, so a plugin may
replace them (docs/plugins.md)."""

from __future__ import annotations

import attrs
import numpy as np

from benchlang.stats.order_dependence import OrderDependence
from benchlang.stats.position_effects import CarryOver, PositionEffect
from benchlang.stats.registry import statistics_methods
from benchlang.stats.session_strata import STRATIFIED, session_count

ONLY_FIXED = (
    "only fixed-order rounds: order dependence cannot be tested (use order random or "
    "fixed_vs_random)"
)
NO_FIXED = (
    "no fixed-order rounds: the fixed-vs-random test needs order fixed_vs_random; position and "
    "carry-over effects are shown instead"
)


@attrs.frozen
class OrderReport:
    """One metric's order analysis: the fixed-vs-random test (None without both orders), the
    position and carry-over views (None without random-order rounds) and the note that says
    what could not be tested."""

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


def order_analysis(
    metric: str,
    values: np.ndarray,
    label: np.ndarray,
    order: np.ndarray,
    rounds: np.ndarray,
    positions: np.ndarray,
    alpha: float,
    better: str,
    session: np.ndarray | None = None,
    scale: tuple[str | None, float] = (None, 1.0),
) -> OrderReport:
    """The order analysis of successful trials: each one's value, configuration ``label``,
    round's order kind (``fixed`` or ``random``), round, position in it and (several
    sessions) session code; ``alpha`` is the family-wise level, ``better`` the metric's
    direction."""
    kinds = set(order.tolist())
    sessions = session_count(session)
    strata = {"session": session} if sessions > 1 else {}
    methods = statistics_methods()
    dependence = (
        methods["order_dependence"].load()(values, label, order, alpha, better, **strata)
        if kinds == {"fixed", "random"}
        else None
    )
    where = carry = None
    if "random" in kinds:
        views = methods["position_effects"].load()
        where, carry = views(values, label, rounds, positions, alpha, order=order, **strata)
    note = None
    if dependence is None:
        note = ONLY_FIXED if kinds == {"fixed"} else NO_FIXED
    return OrderReport(metric, dependence, where, carry, note, scale, sessions)
