"""The stopping rule's figures (Mittal et al., PMBS 2023; docs/stopping.md): Fig. 1
``stopping-ks``, Figs. 2/4/5 ``stopping-density``, Figs. 4/5 on synthetic ground truth
``stopping-synthetic``. The spec's rule is replayed over each
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


def synthetic_data(inputs: Inputs, metric: str | None) -> FigureData:
    """The spec's rule over the synthetic streams (``stats.stopping_eval.synthetic_streams``,
    seeded with the spec's seed, at least 1,000 samples and twice the rule's cap): the same
    streams and verdicts as ``stopping-eval --synthetic all --seed SEED --ks KS --max MAX``.
    The streams stay in their own units (centred near 100): the block bootstrap draws its
    replicates from a hash of the values, so a rescaled stream may stop a few samples apart."""
    from benchlang.run.stopping import build_rule
    from benchlang.stats.stopping_eval import MIN_STREAM, SYNTHETIC_CRITERIA, synthetic_streams

    s = streams(inputs, metric, "stopping-synthetic")
    stop = inputs.data.experiment.stop
    rule = build_rule(stop)
    ks = float(stop.settings.get("ks", 0.1))
    length = max(MIN_STREAM, 2 * int(getattr(rule, "max_n", 0) or 0))
    seed = int(inputs.data.experiment.seed or 0)
    generated = synthetic_streams(seed, length)
    names = list(generated)
    xs = [generated[n] for n in names]
    replays = [fs.replay(x, rule, ks) for x in xs]
    criteria = [SYNTHETIC_CRITERIA[n] for n in names]
    data = fs.stopping_synthetic(names, xs, replays, criteria, ks + 0.02, "", s.rule)
    x_label = "value (synthetic)"
    return attrs.evolve(data, meta={**data.meta, "x_label": x_label, "seed": seed})


def draw_synthetic(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    draw_density(fig, data, Palette(list(data.meta["verdicts"])), paper)


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
    """A panel per configuration; n and KS of each sample in its title and the line styles in
    one legend above the panels (a legend inside a panel hid its curves and ticks). A stopped
    sample's density more than twice the others' peak (a drifting stream's first trials) is
    cut at 1.3 times that peak and its own peak written in the panel."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    configs = _by(data, "configuration")
    axes = panels(fig, len(configs), paper, data.meta["x_label"], data.meta["y_label"])
    for ax, (label, rows) in zip(axes, configs.items(), strict=True):
        c = palette.colour(label)
        said, peaks = [], {}
        for sample in ("reference", "stopped", "optimal"):
            mine = [r for r in rows if r["sample"] == sample]
            if not mine:
                continue
            x = [r["x"] for r in mine]
            y = np.array([r["density"] for r in mine])
            peaks[sample] = float(y.max())
            n, ks = mine[0]["n"], mine[0]["ks"]
            if sample == "reference":
                ax.fill_between(x, y, color="grey", alpha=0.35, lw=0)
            elif sample == "stopped":
                ax.plot(x, y, color=c, lw=1.3)
                said.append(f"stop n={n}, KS {ks:.3f}")
            else:
                ax.plot(x, y, color="black", ls="--", lw=1)
                said.append(f"optimal n={n}, KS {ks:.3f}")
        rest = max(peaks.get("reference", 0.0), peaks.get("optimal", 0.0))
        if peaks.get("stopped", 0.0) > 2 * rest > 0:
            ax.set_ylim(0, 1.3 * rest)
            ax.text(
                0.98,
                0.95,
                f"stop's peak\n{peaks['stopped']:.3g} (cut)",
                transform=ax.transAxes,
                ha="right",
                va="top",
                fontsize="xx-small",
                color=c,
            )
        panel_title(ax, "\n".join([_title(data, label), *said]), size="x-small")
    legend_above(
        fig,
        [
            Patch(color="grey", alpha=0.35, label="all trials (reference)"),
            Line2D([], [], color="black", lw=1.3, label="up to the rule's stop"),
            Line2D([], [], color="black", ls="--", lw=1, label="up to the optimal stop"),
        ],
        paper,
    )


def _title(data: FigureData, label: str) -> str:
    verdicts = data.meta.get("verdicts")
    if verdicts is None:
        return label
    return f"{label}: {'pass' if verdicts[label] else 'FAIL'} by {data.meta['criteria'][label]}"


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
    FigureKind(
        "stopping-synthetic",
        "the spec's rule over ten synthetic streams of known shape: densities of each stream, "
        "the stopped and the optimal sample, the verdict (Mittal et al. Figs. 4, 5)",
        synthetic_data,
        draw_synthetic,
    ),
)
