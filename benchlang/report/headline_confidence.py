"""The headline's closing lines: the confidence the KPI's order statistic achieves and the
variability interval's bounds, each and jointly (Bonferroni, ``C_lower + C_upper - 1``)."""

from __future__ import annotations

import textwrap

WIDTH = 100


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="    ", break_on_hyphens=False)


def _pct(x: float) -> str:
    return f"{x:.3g}%" if x < 99.95 else f"{x:.4g}%"


def _span(values: tuple, fmt) -> str:
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt(lo) if lo == hi else f"{fmt(lo)}–{fmt(hi)}"


def confidence_lines(h) -> list[str]:
    """What the KPI and variability confidences asked and achieved, in words (``h`` a
    ``report.headline.MetricHeadline``)."""
    out = []
    if h.achieved:
        runs = _span(h.runs, str)
        ranks = _span(h.ranks, lambda r: f"x({r})")
        achieved = _span(tuple(round(a, 1) for a in h.achieved), lambda a: f"{a:g}%")
        out += _wrap(
            f"Confidence: KPI {h.kpi_confidence:g}% asked; with {runs} runs per series the "
            f"order statistic {ranks} gives {achieved}."
        )
    b = h.variability_bounds
    if b is not None and h.variability_confidence is not None:
        rl, ru, cl, cu = b
        exact = h.variability_percentile == 50
        same = f"{_pct(cl)} each" if round(cl, 1) == round(cu, 1) else f"{_pct(cl)}, {_pct(cu)}"
        joint = (
            f"jointly {_pct(cl + cu - 100)} (exact)"
            if exact
            else f"jointly ≥ {_pct(cl + cu - 100)} (sum − 100%)"
        )
        out += _wrap(
            f"  Variability: {h.variability_confidence:g}% asked each; x({rl}), x({ru}) of "
            f"{h.series} series: {same}, {joint}."
        )
    return out
