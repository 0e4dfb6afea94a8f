"""Order-dependence tables (Duplyakin et al., USENIX ATC 2023, Tables 3–5), their JSON and the
whole order analysis as text."""

from __future__ import annotations

import sys
from typing import TextIO

from benchlang.report.table import format_quantity, render_table
from benchlang.stats.order_analysis import OrderReport
from benchlang.stats.order_dependence import OrderDependence, format_percent
from benchlang.stats.position_effects import CarryOver, PositionEffect

CASE_MEANING = {
    1: "CIs disjoint: conclusions can change with order",
    2: "a median lies inside the other CI: order unlikely to change conclusions",
    3: "CIs overlap, no median inside the other CI: inconclusive",
}


Scale = tuple[str | None, float]
"""A metric's display unit and factor (``report.table.metric_scale``): one unit per metric."""


def _q(value: float, scale: Scale) -> str:
    return format_quantity(value, None, scale=(None, scale[1]))


def _unit(scale: Scale) -> str:
    return f" ({scale[0]})" if scale[0] else ""


def _interval(low: float, high: float, scale: Scale = (None, 1.0)) -> str:
    return f"[{_q(low, scale)}, {_q(high, scale)}]"


def _strata(sessions: int) -> str:
    return f"; stratified by {sessions} sessions" if sessions > 1 else ""


def _p(value: float) -> str:
    return "-" if value != value else f"{value:.2g}"


def order_json(result: OrderDependence) -> list[dict[str, object]]:
    """One object per configuration, with the Bonferroni threshold and CI level on each."""
    rows = []
    for row in result.configurations:
        item = row.to_dict()
        item["alpha"] = result.alpha
        item["m"] = result.m
        rows.append(item)
    return rows


def order_tally_json(result: OrderDependence) -> dict[str, object]:
    """k of m significant and the count per CI case (OrderSage Table 2, Fig. 6), with the
    sentence the text report prints."""
    tally = result.tally
    return {**tally.to_dict(), "summary": tally.sentence()}


def order_report_json(report: OrderReport) -> dict[str, object]:
    """The body of ``order --json``: the metric, the note, how sessions were pooled, each
    configuration's fixed-vs-random row, the tallies, the position and carry-over views (None
    where the plan's orders could not give them)."""
    dep = report.dependence
    return {
        "metric": report.metric,
        "note": report.note,
        "sessions": report.sessions,
        "stratification": report.stratification,
        "configurations": order_json(dep) if dep is not None else None,
        "tally": order_tally_json(dep) if dep is not None else None,
        "positions": report.positions.to_dict() if report.positions is not None else None,
        "carry_over": report.carry.to_dict() if report.carry is not None else None,
    }


def render_order_tally(result: OrderDependence, stream: TextIO | None = None) -> None:
    """OrderSage's tallies: "k of m configurations significant (x%)" (Table 2) and how many
    compared configurations fall in each CI-overlap case (Fig. 6)."""
    stream = stream or sys.stdout
    tally = result.tally
    stream.write(f"{tally.sentence()}: Kruskal–Wallis p < α/m (OrderSage Table 2)\n")
    if tally.compared:
        counts = ", ".join(f"case {case}: {count}" for case, count in tally.cases)
        stream.write(f"configurations per CI case (OrderSage Fig. 6): {counts}\n")


def render_order_table(
    result: OrderDependence, stream: TextIO | None = None, scale: Scale = (None, 1.0)
) -> None:
    """The paper-style table, then the verdict, the Δ% sign and the case legend."""
    stream = stream or sys.stdout
    headers = [
        "configuration",
        "n fixed",
        "n random",
        "KW p" if result.sessions == 1 else "CMH p",
        "significant",
        "η²",
        "Δ%",
        "case",
        f"median fixed [CI]{_unit(scale)}",
        f"median random [CI]{_unit(scale)}",
    ]
    rows = []
    clipped = False
    for c in result.configurations:
        clipped |= c.eta_squared_clipped
        rows.append(
            [
                c.configuration,
                c.n_fixed,
                c.n_random,
                _p(c.p_value),
                c.significant if c.compared else "-",
                "-"
                if not c.compared
                else f"{c.eta_squared:.3g}" + ("*" if c.eta_squared_clipped else ""),
                format_percent(c.delta_percent, signed=True),
                c.ci_case if c.ci_case is not None else "-",
                f"{_q(c.median_fixed, scale)} {_interval(c.ci_fixed_low, c.ci_fixed_high, scale)}",
                f"{_q(c.median_random, scale)} "
                f"{_interval(c.ci_random_low, c.ci_random_high, scale)}",
            ]
        )
    title = (
        f"Order dependence: fixed vs random order (α = {result.alpha:g}, m = {result.m}, "
        f"α/m = {result.threshold:.4g}, median CIs at {result.ci_level:.4%}"
        f"{_strata(result.sessions)})"
    )
    align = ["left"] + ["right"] * 3 + ["left"] + ["right"] * 5
    render_table(headers, rows, title=title, stream=stream, align=align)
    write = stream.write
    if result.m == 0:
        write(
            "verdict: nothing to compare (no configuration has 2 or more trials in both "
            "fixed and random rounds)\n"
        )
    elif result.order_matters:
        names = ", ".join(result.significant)
        write(f"verdict: order matters: Kruskal–Wallis p < α/m for {names}\n")
    else:
        write("verdict: no configuration shows an order effect (every p >= α/m)\n")
    render_order_tally(result, stream)
    skipped = [c.configuration for c in result.configurations if not c.compared]
    if skipped:
        write(f"not compared (fewer than 2 trials on a side): {', '.join(skipped)}\n")
    write("Δ% = (mean fixed − mean random) / mean fixed × 100:\n")
    for c in result.configurations:
        if c.compared:
            write(f"  {c.configuration}: {c.delta_meaning}\n")
    if clipped:
        write("* η² = (H − 1)/(n − 2) was negative and is shown clipped at 0 (no effect)\n")
    short = [c for c in result.configurations if c.compared and c.ci_short_of_level]
    if short:
        write(
            "too few trials for a median CI at the corrected level, [min, max] used for: "
            + ", ".join(c.configuration for c in short)
            + "\n"
        )
    for case, meaning in CASE_MEANING.items():
        write(f"case {case}: {meaning}\n")


def render_position_table(result: PositionEffect, stream: TextIO | None = None) -> None:
    """Position-in-round tests over random-order rounds (benchlang's extension)."""
    stream = stream or sys.stdout
    rows = [
        [
            r.configuration,
            r.n,
            r.n_positions,
            r.spearman_rho,
            _p(r.spearman_p),
            _p(r.kruskal_p),
            r.eta_squared,
            r.significant,
        ]
        for r in result.configurations
    ]
    render_table(
        ["configuration", "n", "positions", "Spearman ρ", "ρ p", "KW p", "η²", "significant"]
        if result.sessions == 1
        else [
            "configuration",
            "n",
            "positions",
            "ρ within",
            "CMH ρ p",
            "CMH p",
            "η²",
            "significant",
        ],
        rows,
        title=(
            f"Position in round (random-order rounds; threshold α/(2m) = {result.threshold:.4g}"
            f"{_strata(result.sessions)})"
        ),
        stream=stream,
        align=["left"] + ["right"] * 6 + ["left"],
    )
    stream.write(
        "verdict: position in the round predicts the metric\n"
        if result.position_matters
        else "verdict: no position effect found\n"
    )


def render_carry_over_table(
    result: CarryOver, stream: TextIO | None = None, scale: Scale = (None, 1.0)
) -> None:
    """Per configuration, the predecessor that shifts its median most."""
    stream = stream or sys.stdout
    rows = [
        [
            p.configuration,
            p.predecessor,
            p.n_after,
            p.n_other,
            _q(p.median_after, scale),
            _q(p.median_other, scale),
            format_percent(p.shift_percent, signed=True),
            _p(p.p_value),
            p.significant,
        ]
        for p in result.strongest
    ]
    render_table(
        [
            "configuration",
            "after",
            "n after",
            "n other",
            f"median after{_unit(scale)}",
            f"median other{_unit(scale)}",
            "shift %",
            "MW p" if result.sessions == 1 else "CMH p",
            "significant",
        ],
        rows,
        title=(
            f"Carry-over (random-order rounds; {result.n_tests} pairs, "
            f"threshold α/{result.n_tests} = {result.threshold:.4g}{_strata(result.sessions)})"
            if result.n_tests
            else "Carry-over (random-order rounds): too few trials per predecessor to test"
        ),
        stream=stream,
        align=["left", "left"] + ["right"] * 6 + ["left"],
    )
    found = [p for p in result.pairs if p.significant]
    if not result.n_tests:
        stream.write("verdict: carry-over not tested (too few trials per predecessor)\n")
    elif found:
        stream.write(
            "verdict: carry-over found: "
            + ", ".join(f"{p.configuration} after {p.predecessor}" for p in found)
            + "\n"
        )
    else:
        stream.write("verdict: no carry-over found\n")


def render_order_report(report: OrderReport, stream: TextIO | None = None) -> None:
    """An order analysis (``stats.order_analysis``) as text: how sessions were pooled, the
    fixed-vs-random table, the note on what could not be tested, the position and carry-over
    tables."""
    out = stream or sys.stdout
    if report.stratification:
        out.write(
            f"{report.stratification}: the medians, means and shifts below are of the aligned "
            "values; CMH p = the stratified test's p-value\n"
        )
    if report.dependence is not None:
        render_order_table(report.dependence, out, report.scale)
    if report.note:
        out.write(f"note: {report.note}\n")
    if report.positions is not None:
        render_position_table(report.positions, out)
    if report.carry is not None:
        render_carry_over_table(report.carry, out, report.scale)
