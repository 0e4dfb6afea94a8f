"""OrderSage's figures (Duplyakin et al., ATC 2023): Figs. 2/3 ``order-pvalues``, 4
``order-delta``, 5 ``order-ci``, 6 ``order-cases``, from the fixed-versus-random analysis the
report's order section shows (``stats.order_analysis``). Numbers from
``stats.figure_ordersage``; drawing here (matplotlib, lazily)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.report.figures import FigureKind, Inputs, NotApplicable
from benchlang.report.figures.render import Palette, labels_fitted, legend_above
from benchlang.stats import figure_ordersage as fo
from benchlang.stats.figure_data import FigureData
from benchlang.stats.order_dependence import format_percent


def _dependence(inputs: Inputs, metric: str | None, figure: str) -> tuple[Any, str, str]:
    rep = inputs.order
    if rep is None or rep.dependence is None:
        raise NotApplicable(
            f"{figure} compares fixed-order and random-order rounds, and this plan has none",
            hint="run the spec with `design { order fixed_vs_random }` (docs/order.md)",
        )
    if metric and metric != rep.metric:
        raise NotApplicable(
            f"{figure}: the order analysis is of {rep.metric}, not {metric}",
            hint=f"benchlang order STORE --metric {metric} analyses another metric",
        )
    dep = rep.dependence
    if not any(c.compared for c in dep.configurations):
        raise NotApplicable(
            f"{figure}: no configuration has two fixed-order and two random-order trials",
        )
    unit = inputs.data.experiment.metric(rep.metric).unit or ""
    return dep, rep.metric, unit


def _stratified(inputs: Inputs, dep: Any, data: FigureData) -> FigureData:
    """A campaign's order figure says that its tests were stratified by session and names
    each session's store (``stats.session_strata``)."""
    if dep.sessions < 2:
        return data
    stores = getattr(inputs, "stores", ())
    named = "; ".join(f"session {i + 1} = {s}" for i, s in enumerate(stores))
    note = (
        f"{dep.sessions} sessions, stratified: each session x configuration level removed "
        "before pooling (values drawn are aligned), p-values permute within sessions"
        + (f" ({named})" if named else "")
    )
    return attrs.evolve(data, notes=(*data.notes, note))


def pvalues_data(inputs: Inputs, metric: str | None) -> FigureData:
    dep, name, _unit = _dependence(inputs, metric, "order-pvalues")
    return _stratified(inputs, dep, fo.order_pvalues(dep, name))


def delta_data(inputs: Inputs, metric: str | None) -> FigureData:
    dep, name, unit = _dependence(inputs, metric, "order-delta")
    return _stratified(inputs, dep, fo.order_delta(dep, name, unit))


def ci_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.report.figures.triscale import in_cli_units

    dep, name, unit = _dependence(inputs, metric, "order-ci")
    return _stratified(inputs, dep, in_cli_units(fo.order_ci(dep, name, unit), inputs, name, "y"))


def cases_data(inputs: Inputs, metric: str | None) -> FigureData:
    dep, name, _unit = _dependence(inputs, metric, "order-cases")
    return _stratified(inputs, dep, fo.order_cases(dep, name))


def _tall(fig: Any, n: int, paper: bool) -> None:
    """Room for one labelled row per configuration."""
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, max(h, 0.9 + n * (0.16 if paper else 0.24)))


def draw_pvalues(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    rows = data.where()
    _tall(fig, len(rows), paper)
    left, right = fig.subplots(1, 2, sharey=True)
    names = [r["configuration"] for r in rows]
    y = np.arange(len(rows))[::-1]
    logp = np.array([r["minus_log10_p"] for r in rows], dtype=float)
    finite = logp[np.isfinite(logp)]
    cap = (finite.max() if finite.size else 1.0) * 1.1 + 1.0
    colours = [palette.colour(n) for n in names]
    hatch = ["//" if r["significant"] else "" for r in rows]
    left.barh(
        y,
        np.where(np.isfinite(logp), logp, cap),
        color=colours,
        hatch=hatch,
        edgecolor="black",
        lw=0.4,
    )
    line = -np.log10(data.meta["threshold"])
    alpha = left.axvline(
        line, color="black", ls="--", lw=1, label=f"α/m = {data.meta['threshold']:.3g}"
    )
    left.set_xlabel("−log10 p (Kruskal–Wallis)")
    left.set_yticks(y, names)
    right.barh(
        y, [r["eta_squared"] for r in rows], color=colours, hatch=hatch, edgecolor="black", lw=0.4
    )
    right.set_xlabel("η² (effect size of the order)")
    legend_above(fig, [alpha, _significant()], paper)
    labels_fitted(fig)


def _significant() -> Any:
    """The legend's key of a hatched bar."""
    from matplotlib.patches import Patch

    return Patch(facecolor="white", edgecolor="black", hatch="//", label="order significant")


def draw_delta(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    rows = [r for r in data.where() if np.isfinite(r["delta_percent"])]
    _tall(fig, len(rows), paper)
    ax = fig.subplots()
    y = np.arange(len(rows))
    bars = ax.barh(
        y,
        [r["delta_percent"] for r in rows],
        color=[palette.colour(r["configuration"]) for r in rows],
        hatch=["//" if r["significant"] else "" for r in rows],
        edgecolor="black",
        lw=0.4,
    )
    ax.axvline(0, color="black", lw=0.8)
    ax.margins(x=0.05)
    beside = ax.get_yaxis_transform()
    for bar, r in zip(bars, rows, strict=True):
        ax.text(  # a column right of the panel: never over a bar, the zero line or a name
            1.02,
            bar.get_y() + bar.get_height() / 2,
            format_percent(r["delta_percent"]),
            transform=beside,
            ha="left",
            va="center",
            fontsize="x-small",
        )
    ax.set_yticks(y, [r["configuration"] for r in rows])
    ax.set_xlabel("Δ% = (mean fixed − mean random) / mean fixed × 100")
    legend_above(fig, [_significant()], paper)
    labels_fitted(fig)


def draw_ci(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    rows = data.where()
    names = list(dict.fromkeys(r["configuration"] for r in rows))
    w, h = fig.get_size_inches()
    fig.set_size_inches(max(w, 0.5 * len(names)) if not paper else w, h + 0.6)
    ax = fig.subplots()
    short = paper and len(names) > 8  # "case 2" wider than a column: the number alone
    for i, name in enumerate(names):
        c = palette.colour(name)
        for r in (r for r in rows if r["configuration"] == name):
            dx, fill = (-0.15, c) if r["order"] == "fixed" else (0.15, "white")
            err = np.array([[r["median"] - r["low"]], [r["high"] - r["median"]]])
            ax.errorbar(
                i + dx,
                r["median"],
                yerr=np.clip(err, 0, None),
                color=c,
                capsize=2,
                marker=palette.marker(name),
                mfc=fill,
                ms=5,
                ls="none",
            )
        top = max(r["high"] for r in rows if r["configuration"] == name)
        case = next(r["case"] for r in rows if r["configuration"] == name)
        ax.annotate(
            str(case) if short else f"case {case}",
            (i, top),
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
            fontsize="x-small",
        )
    ax.set_xticks(
        range(len(names)),
        names,
        rotation=30 if len(names) > 3 else 0,
        ha="right" if len(names) > 3 else "center",
    )
    ax.set_ylabel(data.meta["y_label"])
    from matplotlib.lines import Line2D

    legend_above(
        fig,
        [
            Line2D([], [], color="grey", marker="o", ls="none", label="fixed order (filled)"),
            Line2D(
                [],
                [],
                color="grey",
                marker="o",
                mfc="white",
                ls="none",
                label="random order (open)",
            ),
            *([Line2D([], [], ls="none", label="1, 2, 3: CI-overlap case")] if short else []),
        ],
        paper,
    )


def draw_cases(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    rows = data.where()
    ax = fig.subplots()
    x = np.arange(len(rows))
    bars = ax.bar(
        x,
        [r["configurations"] for r in rows],
        color="#56B4E9",
        edgecolor="black",
        hatch=["//", "", ".."][: len(rows)],
    )
    ax.bar_label(bars, fontsize="small")
    ax.margins(y=0.12)  # the tallest bar's count under the panel's top, not on it
    ax.set_xticks(x, [r["meaning"] for r in rows])
    ax.set_ylabel("configurations")
    ax.yaxis.get_major_locator().set_params(integer=True)
    labels_fitted(fig, ticks=[ax])


FIGURES = (
    FigureKind(
        "order-pvalues",
        "configurations ranked by η², −log10 p with the α/m line (OrderSage Figs. 2, 3)",
        pvalues_data,
        draw_pvalues,
    ),
    FigureKind(
        "order-delta",
        "sorted Δ% of the means, fixed vs random order (OrderSage Fig. 4)",
        delta_data,
        draw_delta,
    ),
    FigureKind(
        "order-ci",
        "median and CI in fixed and random order per configuration (OrderSage Fig. 5)",
        ci_data,
        draw_ci,
    ),
    FigureKind(
        "order-cases",
        "configurations per CI-overlap case (OrderSage Fig. 6)",
        cases_data,
        draw_cases,
    ),
)
