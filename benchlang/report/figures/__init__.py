"""The papers' figures (docs/figures.md): a registry of named figures, each a builder of its
numbers (a ``stats`` function's ``FigureData``, from what the report already computed) and one
drawing function (``render.draw`` calls it with matplotlib), shared by the HTML report and
``benchlang figure``.

A paper's figures are one module here with a ``FIGURES`` tuple, listed in ``MODULES``; a
builder raises ``NotApplicable`` with the reason when the store cannot show its figure.
"""

from __future__ import annotations

import importlib
import weakref
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from benchlang.errors import UserError
from benchlang.stats.figure_data import FigureData

Inputs = Any
"""What a builder reads: ``report.html.inputs.ReportInputs`` (not imported: the report's page
imports this package, and siblings of ``report`` may not import each other both ways)."""

NAMES = {
    "triscale": (
        "kpi-scatter",
        "convergence",
        "series-kpis",
        "runtimes",
        "variability",
        "cdf",
        "cdf-overlay",
        "profile",
    ),
    "ordersage": ("order-pvalues", "order-delta", "order-ci", "order-cases"),
    "perflab": (
        "requests",
        "timeline",
        "se-curves",
        "aa-estimates",
        "bootstrap-model",
        "aa-ladder",
        "aa-empirical",
    ),
    "datamill": ("series-boxes", "levels", "level-means"),
    "stopping": ("stopping-ks", "stopping-density", "stopping-synthetic"),
    "population": ("population-kpis",),
}
"""Each paper's module and its figures' names in the report's order, so exporting one figure
imports its own module only (tests/test_figures.py checks these against each ``FIGURES``)."""
MODULES = tuple(f"benchlang.report.figures.{module}" for module in NAMES)


class NotApplicable(UserError):
    """This figure cannot be drawn from this store; the message says why."""


@attrs.frozen
class FigureKind:
    """A named figure: its one-line description, its numbers and its drawing."""

    name: str
    line: str
    build: Callable[[Inputs, str | None], FigureData]
    draw: Callable[[Any, FigureData, Any, bool], None]


def registry() -> dict[str, FigureKind]:
    """Every figure by name, in the order the report shows them."""
    out: dict[str, FigureKind] = {}
    for module in MODULES:
        for kind in importlib.import_module(module).FIGURES:
            out[kind.name] = kind
    return out


def kind_of(name: str) -> FigureKind:
    """The figure ``name``, its paper's module alone imported."""
    for module, names in NAMES.items():
        if name in names:
            kinds = importlib.import_module(f"benchlang.report.figures.{module}").FIGURES
            return next(kind for kind in kinds if kind.name == name)
    every = [n for names in NAMES.values() for n in names]
    raise UserError(
        f"no figure named {name!r}", hint="figures: " + ", ".join(every) + " (see --list)"
    )


def applicable(
    inputs: Inputs, metric: str | None = None
) -> list[tuple[FigureKind, FigureData | None, str | None]]:
    """Each figure with its numbers, or None and the reason it does not apply."""
    out: list[tuple[FigureKind, FigureData | None, str | None]] = []
    for kind in registry().values():
        try:
            out.append((kind, kind.build(inputs, metric), None))
        except NotApplicable as err:
            out.append((kind, None, err.message))
    return out


_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def shared(inputs: Inputs, key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per report (its ``inputs``) and ``key``: what several figures read (a
    metric's CDF bands, its trials by factor level) is built for the first and reused."""
    try:
        memo = _SHARED.setdefault(inputs, {})
    except TypeError:  # inputs that cannot be weakly referenced: nothing shared
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def labels(inputs: Inputs) -> list[str]:
    """The store's configurations in plan order: the palette's order in every figure."""
    return [label for _i, label, _b, _l in inputs.data.configurations()]


@attrs.frozen
class MetricView:
    """One metric's per-configuration analyses and values, in plan order."""

    metric: str
    unit: str
    labels: list[str]
    analyses: list[Any]
    values: list[np.ndarray]
    series: list[np.ndarray]
    indices: list[int]


def metric_view(
    inputs: Inputs, metric: str | None, figure: str, *, analysed: bool = True
) -> MetricView:
    """The analyses of ``metric`` (default: the first metric with a KPI) per configuration.
    Without ``analysed``, its values only (``analyses`` empty) for the configurations the
    analysis holds (``report.analysis.analyze``: those with a finite value, or a series
    metric's): a CDF draws no KPI, so its export skips the KPIs and independence tests."""
    data = inputs.data
    if analysed:
        names = list(dict.fromkeys(r.metric for r in inputs.kpis))
    else:
        names = list(dict.fromkeys(k.metric for k in data.experiment.kpis))
    if not names:
        raise NotApplicable(
            f"{figure} draws TriScale KPIs and the spec asks for none",
            hint="add `kpi METRIC { percentile P confidence C }` to the spec",
        )
    name = metric or names[0]
    if name not in names:
        raise NotApplicable(
            f"{figure}: no KPI of {name!r}", hint="metrics with a KPI: " + ", ".join(names)
        )
    by_label = (
        {r.configuration: r.analysis for r in inputs.kpis if r.metric == name} if analysed else {}
    )
    t = data.table
    mv = data.metrics[name]
    view = MetricView(name, data.experiment.metric(name).unit or "", [], [], [], [], [])
    for index, label, _b, _l in data.configurations():
        mask = (t.configuration == index) & t.ok
        if analysed and label not in by_label:
            continue
        if not analysed and mv.converged is None and not np.isfinite(mv.values[mask]).any():
            continue
        view.labels.append(label)
        if analysed:
            view.analyses.append(by_label[label])
        view.values.append(mv.values[mask])
        view.series.append(t.series[mask])
        view.indices.append(index)
    return view
