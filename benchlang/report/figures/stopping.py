"""The stopping rule's figures (Mittal et al., PMBS 2023; docs/stopping.md): Fig. 1
``stopping-ks``, Figs. 2/4/5 ``stopping-density``. The spec's rule is replayed over each
configuration's trials in trial order, every series pooled as the reference; numbers from
``stats.figure_stopping``, drawing here (matplotlib, lazily)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.report.figures import FigureKind, Inputs, NotApplicable
from benchlang.report.figures.render import (
    Palette,
    legend_above,
    marked_x,
    panel_title,
    panels,
)
from benchlang.stats import figure_stopping as fs
from benchlang.stats.figure_data import FigureData


@attrs.frozen
class Streams:
    """Each configuration's stream of the metric the rule watches, and the rule's replay."""

    metric: str
    unit: str
    rule: str
    labels: list[str]
    streams: list[np.ndarray]
    replays: list[fs.Replay]
    notes: tuple[str, ...]


_LAST: list[tuple[Any, str | None, Streams]] = []
"""The last replay (inputs' data, metric, result): both figures of one report replay once."""


def streams(inputs: Inputs, metric: str | None, figure: str) -> Streams:
    data = inputs.data
    for seen, name, result in _LAST:
        if seen is data and name == metric:
            return result
    stop = data.experiment.stop
    if stop is None or stop.kind == "after":
        raise NotApplicable(
            f"{figure} replays the spec's stopping rule over each configuration's trials, and "
            "the spec has no `stop adaptive` or `stop when` rule",
            hint="add `stop adaptive { ks 0.1 max 400 }` to the spec (docs/stopping.md); a long "
            "recorded stream: benchlang stopping-eval FILE",
        )
    from benchlang.report.table import metric_scale
    from benchlang.run.stopping import build_rule

    watched = stop.settings["metric"]
    name = metric or watched
    if name not in data.metrics:
        raise NotApplicable(
            f"{figure}: no metric {name!r}", hint="metrics: " + ", ".join(data.metrics)
        )
    rule = build_rule(stop)
    least = int(getattr(rule, "min_n", 1))
    ks = float(stop.settings.get("ks", 0.1))
    t = data.table
    values = np.asarray(data.metrics[name].values, dtype=float)
    ok = np.asarray(t.ok, dtype=bool) & np.isfinite(values)
    unit, factor = metric_scale(values[ok], data.experiment.metric(name).unit)
    notes = [] if name == watched else [f"the run's rule watched {watched}; replayed on {name}"]
    labels, series, replays = [], [], []
    for index, label, _b, _l in data.configurations():
        mask = ok & (np.asarray(t.configuration) == index)
        x = values[mask][np.argsort(np.asarray(t.trial)[mask], kind="stable")] / factor
        if x.size < max(2, least):
            notes.append(
                f"{label}: not drawn ({x.size} successful trial{'s' * (x.size != 1)}; the rule "
                f"decides from {least})"
            )
            continue
        r = fs.replay(x, rule, ks)
        labels.append(label)
        series.append(x)
        replays.append(r)
        notes += _recorded(inputs, index, label, np.asarray(t.series)[mask], r)
    if not labels:
        raise NotApplicable(
            f"{figure}: no configuration has the {max(2, least)} successful trials the rule "
            "needs before it decides"
        )
    out = Streams(name, unit or "", stop.kind, labels, series, replays, tuple(notes))
    _LAST[:] = [(data, metric, out)]
    return out


def _recorded(inputs: Inputs, index: int, label: str, series: np.ndarray, r: fs.Replay) -> list:
    """A note where the run's stop of the configuration's first series differs from the
    replay's (the same rule on the same values stops at the same trial)."""
    first = int(series.min())
    for s, c, after, action, rule, _k, _why in inputs.stops:
        if int(s) == first and int(c) == index and int(after) != r.evaluation.stop_n:
            return [
                f"{label}: the run stopped series {first} after {after} trials ({action}, "
                f"{rule}); the replay over its trials stops at {r.evaluation.stop_n}"
            ]
    return []


def _with(data: FigureData, s: Streams) -> FigureData:
    return attrs.evolve(data, notes=(*s.notes, *data.notes)) if s.notes else data


def ks_data(inputs: Inputs, metric: str | None) -> FigureData:
    s = streams(inputs, metric, "stopping-ks")
    return _with(fs.stopping_ks(s.labels, s.replays, s.metric, s.rule), s)


def density_data(inputs: Inputs, metric: str | None) -> FigureData:
    s = streams(inputs, metric, "stopping-density")
    return _with(fs.stopping_density(s.labels, s.streams, s.replays, s.metric, s.unit), s)


def _by(data: FigureData, key: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in data.where():
        out.setdefault(row["configuration"], []).append(row)
    return out


def draw_ks(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    from matplotlib.lines import Line2D

    configs = _by(data, "configuration")
    axes = panels(fig, len(configs), paper, data.meta["x_label"], data.meta["y_label"])
    threshold = data.meta["threshold"]
    for ax, (label, rows) in zip(axes, configs.items(), strict=True):
        c = palette.colour(label)
        curve = [r for r in rows if r["part"] == "curve"]
        ax.plot([r["k"] for r in curve], [r["ks"] for r in curve], color=c, lw=1)
        ax.axhline(threshold, color="black", ls="--", lw=0.8)
        for r in rows:
            if r["part"] == "stop":
                marked_x(ax, r["k"], f"{r['k']} ({r['class']})", c, lw=1.2)
                ax.plot(r["k"], r["ks"], marker=palette.marker(label), color=c, ms=5)
            elif r["part"] == "optimal":
                ax.axvline(r["k"], color="grey", ls=":", lw=1.2)
        ax.set_ylim(0, 1.02)
        panel_title(ax, label, c)
    legend_above(
        fig,
        [
            Line2D([], [], color="black", ls="--", lw=0.8, label=f"threshold {threshold:g}"),
            Line2D([], [], color="black", lw=1.2, label="the rule's stop"),
            Line2D([], [], color="grey", ls=":", lw=1.2, label="optimal stop"),
        ],
        paper,
    )


def draw_density(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    configs = _by(data, "configuration")
    axes = panels(fig, len(configs), paper, data.meta["x_label"], data.meta["y_label"])
    for ax, (label, rows) in zip(axes, configs.items(), strict=True):
        c = palette.colour(label)
        for sample in ("reference", "stopped", "optimal"):
            mine = [r for r in rows if r["sample"] == sample]
            if not mine:
                continue
            x = [r["x"] for r in mine]
            y = [r["density"] for r in mine]
            n, ks = mine[0]["n"], mine[0]["ks"]
            if sample == "reference":
                ax.fill_between(x, y, color="grey", alpha=0.35, lw=0, label=f"all n={n}")
            elif sample == "stopped":
                ax.plot(x, y, color=c, lw=1.3, label=f"stopped n={n}, KS {ks:.3f}")
            else:
                ax.plot(x, y, color="black", ls="--", lw=1, label=f"optimal n={n}, KS {ks:.3f}")
        panel_title(ax, label, c)
        ax.legend(fontsize="xx-small" if paper else "x-small", loc="upper right")


FIGURES = (
    FigureKind(
        "stopping-ks",
        "KS of the first k trials to all, the threshold, the rule's and the optimal stop "
        "(Mittal et al. Fig. 1)",
        ks_data,
        draw_ks,
    ),
    FigureKind(
        "stopping-density",
        "densities of all trials, the stopped and the optimal sample, with their KS "
        "(Mittal et al. Figs. 2, 4, 5)",
        density_data,
        draw_density,
    ),
)
