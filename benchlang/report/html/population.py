"""The report's "Population" section: the KPIs generalised over a population factor's inputs
(TriScale, Jacob et al. JSys 2021, §5.3), the block ``benchlang analyze`` prints, from the same
``report.population.population_analysis`` over the same KPIs; each input's KPI in a table."""

from __future__ import annotations

import io

from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import esc, section, table


def population_section(inputs: ReportInputs) -> str | None:
    """Nothing without a population factor (or without a KPI); else analyze's block as text
    and, per metric and cell, the inputs' KPIs the population KPI is an order statistic of."""
    from benchlang.report.analysis_text import render_population
    from benchlang.report.population import population_analysis

    exp = inputs.data.experiment
    if exp.population is None or not inputs.kpis:
        return None
    found = population_analysis(inputs.data, inputs.kpis)
    if found is None or not found.results:
        return None
    out = io.StringIO()
    units = {m.name: m.unit for m in exp.metrics}
    render_population(found, units, out)
    head, *lines = out.getvalue().strip().splitlines()
    body = [
        f"<p>{esc(head)}</p>",
        "<ul class='population'>" + "".join(f"<li>{esc(x.strip())}</li>" for x in lines) + "</ul>",
    ]
    for r in found.results:
        unit = units[r.metric]
        cell = f" ({r.cell})" if r.cell else ""
        ranked = sorted(zip(r.inputs, r.input_kpis, strict=True), key=lambda p: p[1])
        body.append(
            "<details><summary>"
            + esc(f"{r.metric}{cell}: the KPI of each of the {len(r.inputs)} inputs")
            + "</summary>"
            + table(
                [r.factor, f"KPI of {r.metric}" + (f" ({unit})" if unit else "")],
                ranked,
            )
            + "</details>"
        )
    return section("population", "Population (TriScale §5.3)", body)
