"""The numbers of OrderSage's figures (Duplyakin et al., ATC 2023), from the fixed-versus-random
analysis ``stats.order_dependence`` already computes: Figs. 2/3 (``order-pvalues``), 4
(``order-delta``), 5 (``order-ci``) and 6 (``order-cases``); docs/figures.md.
"""

from __future__ import annotations

import math

from benchlang.stats.figure_data import FigureData
from benchlang.stats.order_dependence import ConfigurationOrder, OrderDependence

PAPER = "OrderSage (Duplyakin et al., ATC 2023)"
CASES = {
    1: "case 1: CIs disjoint",
    2: "case 2: a median inside the other CI",
    3: "case 3: CIs overlap, no median inside",
}
"""The CI-overlap cases of §3 step 5 (``stats.order_dependence.ci_case``)."""


def _uncompared(dep: OrderDependence) -> tuple[str, ...]:
    return tuple(
        f"{c.configuration}: not compared ({c.n_fixed} fixed, {c.n_random} random trials; "
        "2 of each needed)"
        for c in dep.configurations
        if not c.compared
    )


def _compared(dep: OrderDependence) -> list[ConfigurationOrder]:
    return [c for c in dep.configurations if c.compared]


def order_pvalues(dep: OrderDependence, metric: str) -> FigureData:
    """Figs. 2/3: configurations ranked by η², each with −log10 p of its Kruskal–Wallis test
    (fixed vs random order) against the Bonferroni line −log10(α/m), and η² (§3 steps 2-3)."""
    ranked = sorted(_compared(dep), key=lambda c: (-_finite(c.eta_squared), c.p_value))
    rows = [
        (
            c.configuration,
            c.p_value,
            -math.log10(c.p_value) if c.p_value > 0 else math.inf,
            c.eta_squared,
            c.significant,
        )
        for c in ranked
    ]
    caption = (
        f"{metric}: configurations ranked by η² (effect size of the order, from the "
        f"Kruskal–Wallis H); −log10 p of each test of fixed against random order, with the "
        f"Bonferroni threshold α/m = {dep.alpha:g}/{dep.m} = {dep.threshold:.3g} as a line; "
        f"above it, order changed the results. After {PAPER} Figs. 2 and 3."
    )
    return FigureData(
        "order-pvalues",
        f"{PAPER} Figs. 2, 3",
        caption,
        ("configuration", "p", "minus_log10_p", "eta_squared", "significant"),
        rows,
        _uncompared(dep),
        {"threshold": dep.threshold, "alpha": dep.alpha, "m": dep.m},
    )


def _finite(x: float) -> float:
    return x if math.isfinite(x) else -math.inf


def order_delta(dep: OrderDependence, metric: str, unit: str) -> FigureData:
    """Fig. 4: Δ% = (mean fixed − mean random) / mean fixed × 100 per configuration, sorted
    (§3 step 4; ``stats.order_dependence``)."""
    compared = _compared(dep)
    ranked = sorted(compared, key=lambda c: _finite(c.delta_percent))
    rows = [(c.configuration, c.delta_percent, c.significant, c.delta_meaning) for c in ranked]
    undefined = tuple(
        f"{c.configuration}: Δ% undefined (mean of fixed-order trials is 0)"
        for c in compared
        if not math.isfinite(c.delta_percent)
    )
    caption = (
        f"Δ% of {metric} = (mean in fixed order − mean in random order) / mean in fixed order "
        "× 100, per configuration, sorted; positive: higher in fixed order. Configurations "
        f"whose Kruskal–Wallis p is below {dep.threshold:.3g} are marked. After {PAPER} Fig. 4."
    )
    return FigureData(
        "order-delta",
        f"{PAPER} Fig. 4",
        caption,
        ("configuration", "delta_percent", "significant", "meaning"),
        rows,
        _uncompared(dep) + undefined,
        {"unit": unit},
    )


def order_ci(dep: OrderDependence, metric: str, unit: str) -> FigureData:
    """Fig. 5: the median and its distribution-free confidence interval in fixed and in random
    order, side by side per configuration, with the CI-overlap case (§3 step 5)."""
    rows = []
    for c in _compared(dep):
        rows.append(
            (c.configuration, "fixed", c.median_fixed, c.ci_fixed_low, c.ci_fixed_high, c.ci_case)
        )
        rows.append(
            (
                c.configuration,
                "random",
                c.median_random,
                c.ci_random_low,
                c.ci_random_high,
                c.ci_case,
            )
        )
    caption = (
        f"Median of {metric} with its {100 * dep.ci_level:.4g}% distribution-free confidence interval "
        "(order statistics) in fixed order and in random order, side by side per configuration; "
        "the number is the CI-overlap case (1: disjoint, 2: a median inside the other CI, "
        f"3: inconclusive). After {PAPER} Fig. 5."
    )
    return FigureData(
        "order-ci",
        f"{PAPER} Fig. 5",
        caption,
        ("configuration", "order", "median", "low", "high", "case"),
        rows,
        _uncompared(dep),
        {"y_label": f"{metric} ({unit})", "ci_level": dep.ci_level},
    )


def order_cases(dep: OrderDependence, metric: str) -> FigureData:
    """Fig. 6: how many configurations fall in each CI-overlap case (§3 step 5)."""
    compared = _compared(dep)
    rows = [
        (
            case,
            text,
            sum(1 for c in compared if c.ci_case == case),
            "; ".join(c.configuration for c in compared if c.ci_case == case),
        )
        for case, text in CASES.items()
    ]
    caption = (
        f"{metric}: number of configurations in each case of the overlap of the fixed-order and "
        f"random-order {100 * dep.ci_level:.4g}% confidence intervals of the median ({len(compared)} "
        f"configurations compared). After {PAPER} Fig. 6."
    )
    return FigureData(
        "order-cases",
        f"{PAPER} Fig. 6",
        caption,
        ("case", "meaning", "configurations", "names"),
        rows,
        _uncompared(dep),
        {},
    )
