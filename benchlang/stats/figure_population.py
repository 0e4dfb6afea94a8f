"""The numbers of TriScale's Fig. 6 (Jacob et al., JSys 1(1) 2021, §5.3): the KPI of each input
of a population factor and the population KPI over them (``stats.population``), per cell
(benchmark and the other factors' levels); docs/figures.md. Rows are long format:
``(cell, configuration, part, input, x, y, low, high)``, ``part`` "input KPI" (x the input's
rank among the cell's KPIs, 1 the smallest) or "population KPI" (x the rank of the order
statistic that bounds it; low/high a two-sided interval's ends)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchlang.stats.figure_data import NAN, FigureData
from benchlang.stats.population import PopulationKPI

PAPER = "TriScale (Jacob et al., JSys 2021)"
COLUMNS = ("cell", "configuration", "part", "input", "x", "y", "low", "high")


def population_figure(
    cells: Sequence[str],
    configurations: Sequence[Sequence[str]],
    inputs: Sequence[Sequence[str]],
    input_kpis: Sequence[np.ndarray],
    results: Sequence[PopulationKPI],
    factor: str,
    metric: str,
    unit: str,
) -> FigureData:
    """Each cell's inputs' KPIs sorted, and its population KPI (a refused one in the notes)."""
    rows: list[tuple[str, str, str, str, float, float, float, float]] = []
    notes: list[str] = []
    for cell, labels, names, kpis, k in zip(
        cells, configurations, inputs, input_kpis, results, strict=True
    ):
        values = np.asarray(kpis, dtype=float)
        order = np.argsort(np.where(np.isfinite(values), values, np.inf), kind="stable")
        for rank, i in enumerate(order, start=1):
            rows.append((cell, labels[i], "input KPI", names[i], rank, values[i], NAN, NAN))
        missing = [names[i] for i in range(values.size) if not np.isfinite(values[i])]
        if missing:
            notes.append(f"{cell or metric}: no KPI for input(s) {', '.join(missing)}")
        if not k.enough:
            notes.append(f"{cell or metric}: population KPI refused: {k.refusal}")
            continue
        x = k.rank if k.rank is not None else NAN
        low, high = (k.lower, k.upper) if k.bound == "both" else (NAN, NAN)
        rows.append((cell, "", "population KPI", "", x, k.value, low, high))
    first = next((k for k in results if k.enough), results[0] if results else None)
    what = (
        f"the {first.bound} bound of the p{first.percentile:g} of the inputs' KPIs at "
        f"{first.confidence:g}% confidence"
        if first is not None
        else "the population KPI"
    )
    caption = (
        f"{metric}: the KPI of each input of {factor} (dots, sorted) and the KPI over the "
        f"population of inputs, {what} (line). After {PAPER} Fig. 6."
    )
    u = f" ({unit})" if unit else ""
    return FigureData(
        "population-kpis",
        f"{PAPER} Fig. 6",
        caption,
        COLUMNS,
        rows,
        notes,
        {"y_label": f"{metric} KPI{u}", "x_label": f"inputs of {factor}, by KPI"},
    )
