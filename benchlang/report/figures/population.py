"""TriScale's Fig. 6 (Jacob et al., JSys 1(1) 2021, §5.3): ``population-kpis``, the KPI of
each input of a population factor and the KPI over the population. Numbers from
``report.population`` and ``stats.figure_population``; drawn with matplotlib, lazily."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchlang.report.figures import FigureKind, Inputs, NotApplicable
from benchlang.report.figures.render import Palette, panel_title, panels
from benchlang.stats.figure_data import FigureData
from benchlang.stats.figure_population import population_figure


def population_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.report.figures.triscale import in_cli_units
    from benchlang.report.population import population_analysis

    data = inputs.data
    found = population_analysis(data, inputs.kpis)
    if found is None:
        raise NotApplicable(
            "population-kpis draws the KPIs over a population factor's inputs, and the spec "
            "declares none",
            hint='factor trace in ["a", "b", "c", "d", "e"] population',
        )
    names = list(dict.fromkeys(r.metric for r in found.results))
    name = metric or (names[0] if names else None)
    results = [r for r in found.results if r.metric == name]
    if not results or name is None:  # None only when no result names a metric
        raise NotApplicable(
            f"population-kpis: no KPI of {name!r}", hint="metrics with a KPI: " + ", ".join(names)
        )
    labels = {
        (bench, tuple((k, v) for k, v in lv.items())): label
        for _i, label, bench, lv in data.configurations()
    }

    def configuration(r: Any, level: str) -> str:
        for (_bench, lv), label in labels.items():
            d = dict(lv)
            if str(d.get(r.factor)) == level and all(d.get(k) == v for k, v in r.levels.items()):
                return label
        return ""

    figure = population_figure(
        [r.cell for r in results],
        [[configuration(r, i) for i in r.inputs] for r in results],
        [r.inputs for r in results],
        [np.array(r.input_kpis) for r in results],
        [r.kpi for r in results],
        results[0].factor,
        name,
        data.experiment.metric(name).unit or "",
    )
    return in_cli_units(figure, inputs, name, "y")


def draw_population(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    """A panel per cell: the inputs' KPIs sorted left to right, each in its configuration's
    colour and labelled, and the population KPI as a line (a band for a two-sided one)."""
    scale = float(data.meta.get("y_scale", 1.0))
    cells = list(dict.fromkeys(r[0] for r in data.rows))
    axes = panels(fig, len(cells), paper, data.meta["x_label"], data.meta["y_label"])
    for ax, cell in zip(axes, cells, strict=True):
        rows = [dict(zip(data.columns, r, strict=True)) for r in data.rows if r[0] == cell]
        dots = [r for r in rows if r["part"] == "input KPI" and r["y"] is not None]
        for r in dots:
            ax.plot(
                r["x"], float(r["y"]) / scale, ls="none",
                marker=palette.marker(r["configuration"]),
                color=palette.colour(r["configuration"]), mec="black", mew=0.5, ms=6,
            )  # fmt: skip
        if len(dots) <= 20:
            ax.set_xticks(
                [r["x"] for r in dots], [str(r["input"]) for r in dots], rotation=30, ha="right"
            )
        for r in (r for r in rows if r["part"] == "population KPI"):
            y = float(r["y"]) / scale
            ax.axhline(y, color="black", lw=1.2, ls="--")
            ax.text(
                0.02, y, "population KPI", transform=ax.get_yaxis_transform(),
                ha="left", va="bottom", fontsize="small",
            )  # fmt: skip
            if r["low"] is not None and np.isfinite(float(r["low"])):
                ax.axhspan(float(r["low"]) / scale, float(r["high"]) / scale, color="0.85")
        if cell:
            panel_title(ax, cell)


FIGURES = (
    FigureKind(
        "population-kpis",
        "each input's KPI and the KPI over the population of inputs (TriScale Fig. 6)",
        population_data,
        draw_population,
    ),
)
