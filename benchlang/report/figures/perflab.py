"""Perflab's figures (Bakshy & Frachtenberg, WWW 2015): Fig. 1 ``requests``, 3 ``timeline``,
2/4 ``se-curves``, 5/6 ``aa-estimates``, 7 ``aa-ladder``, 8 ``aa-empirical``, from an A/B
layout's trials. Numbers from ``stats.figure_perflab``; drawing here (matplotlib, lazily).

The two versions take the palette's first two colours in every Perflab figure (a layout's
configurations are version x request, too many to tell apart); values are drawn in the unit
the CLI prints (``report.table.metric_scale``).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.model import REQUEST_FACTOR, VERSION_FACTOR
from benchlang.report.figures import FigureKind, Inputs, NotApplicable
from benchlang.report.figures.render import OKABE_ITO, Palette, legend_above, panels
from benchlang.stats import figure_perflab as fp
from benchlang.stats.figure_data import FigureData

LAYOUT_ORDER = ("unbalanced", "request_balanced", "host_balanced", "fully_balanced")
AA_WORK = 4_000_000
"""Simulated values (experiments x trials) one A/A figure may draw: the experiments shrink
from 400 (at most) for large runs, at least 50, and the caption says how many."""
RED, GREY = "#D55E00", "#7f7f7f"


@attrs.frozen
class ABView:
    """One metric's measured trials of an A/B layout with their roles (§3, Eq. 3-4)."""

    metric: str
    unit: str
    y: np.ndarray
    version: np.ndarray
    request: np.ndarray
    host: np.ndarray
    batch: np.ndarray
    position: np.ndarray
    versions: tuple[str, str]
    texts: tuple[str, str]
    layout: Any
    seed: int
    notes: tuple[str, ...]
    meta: dict

    @property
    def design(self) -> Any:
        from benchlang.stats.ab.simulate import ABDesign

        codes = [np.unique(a, return_inverse=True)[1] for a in (self.request, self.host)]
        return ABDesign(self.version, codes[0], codes[1], self.batch)


def ab_view(inputs: Inputs, metric: str | None, figure: str) -> ABView:
    """The trials of ``metric`` (default: the first compared by version) with their roles."""
    from benchlang.report.table import metric_scale

    data = inputs.data
    exp = data.experiment
    if exp.design.layout is None:
        raise NotApplicable(
            f"{figure} draws an A/B layout (Bakshy & Frachtenberg) and this spec has none",
            hint='design { versions { a "..." b "..." } layout fully_balanced { hosts 4 '
            "requests 32 } requests [...] } (docs/ab-designs.md)",
        )
    compared = [c.metric for c in exp.comparisons if c.by == VERSION_FACTOR]
    name = metric or (compared[0] if compared else exp.metrics[0].name)
    if exp.metric(name) is None:
        raise NotApplicable(
            f"{figure}: no metric {name!r}",
            hint="metrics: " + ", ".join(m.name for m in exp.metrics),
        )
    factor = exp.factor(VERSION_FACTOR)
    versions = (str(factor.levels[0]), str(factor.levels[1]))
    t = data.table
    y = data.metrics[name].values
    level = [lv.get(VERSION_FACTOR) for lv in t.levels]
    version = np.array([versions.index(str(v)) if str(v) in versions else -1 for v in level])
    keep = t.ok & np.isfinite(y) & (version >= 0)
    notes = []
    if (~keep).any():
        notes.append(f"{int((~keep).sum())} trials failed or have no {name}: not drawn")
    if data.left_out:
        notes.append(f"{data.left_out} warm-up and cool-down trials: run, not analysed, not drawn")
    if keep.sum() < 4 or np.unique(version[keep]).size < 2:
        raise NotApplicable(f"{figure}: too few successful trials of both versions")
    unit = exp.metric(name).unit or ""
    display, scale = metric_scale(y[keep], unit)
    requests = np.array([str(lv.get(REQUEST_FACTOR)) for lv in t.levels], dtype=object)
    return ABView(
        name,
        unit,
        np.asarray(y[keep], float),
        version[keep].astype(np.int8),
        requests[keep],
        np.asarray(t.host[keep]),
        np.asarray(t.round[keep]),
        np.asarray(t.position[keep]),
        versions,
        (str(factor.text(factor.levels[0])), str(factor.text(factor.levels[1]))),
        exp.design.layout,
        int(exp.seed or 0),
        tuple(notes),
        {"metric": name, "unit": unit, "display_unit": display or "", "factor": scale},
    )


def _components(v: ABView, figure: str) -> Any:
    from benchlang.stats.ab.auto import fit_components

    comps = fit_components(v.y, v.design)
    if comps is None:
        raise NotApplicable(f"{figure}: the variance components cannot be fitted on this run")
    return comps


def _with_notes(data: FigureData, notes: tuple[str, ...]) -> FigureData:
    return attrs.evolve(data, notes=(*notes, *data.notes)) if notes else data


def requests_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = ab_view(inputs, metric, "requests")
    data = fp.requests(v.y, v.version, v.request, v.versions, v.metric, v.meta)
    return _with_notes(data, v.notes)


def timeline_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.stats.ab.mixed import fit_mixed

    v = ab_view(inputs, metric, "timeline")
    try:
        comps = fit_mixed(v.y, v.design, "moments").components
    except (ValueError, np.linalg.LinAlgError):
        comps = None
    data = fp.timeline(
        v.y, v.version, v.host, v.batch, v.position, v.versions, comps, v.metric, v.meta
    )
    return _with_notes(data, v.notes)


def se_curves_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.stats.ab.sweep import request_grid, se_sweep

    v = ab_view(inputs, metric, "se-curves")
    lay = v.layout
    hosts = sorted({max(2, lay.hosts // 2), lay.hosts, 2 * lay.hosts, 4 * lay.hosts})
    grid = request_grid(max(2, lay.requests // 4), 8 * lay.requests, 7)
    sweep = se_sweep(
        _components(v, "se-curves"), hosts, grid, lay.repetitions, simulate_every=3, seed=v.seed
    )
    data = fp.se_curves(sweep, (lay.kind, lay.hosts, lay.requests, lay.repetitions), v.meta)
    return _with_notes(data, v.notes)


def _cluster(kind: str) -> str:
    return "host_block" if kind == "request_balanced" else "host"


def _simulate(v: ABView, kind: str, comps: Any, most: int) -> tuple[Any, str]:
    from benchlang.stats.ab.simulate import simulate_aa

    lay = v.layout
    experiments = int(np.clip(AA_WORK // (2 * lay.requests * lay.repetitions), 50, most))
    result = simulate_aa(
        kind,
        lay.hosts,
        lay.requests,
        lay.repetitions,
        comps,
        experiments,
        100,
        v.seed,
        schemes=(_cluster(kind),),
    )
    return result, _cluster(kind)


def _few(kinds_results: list[tuple[str, Any]]) -> list[str]:
    """Layouts whose host clusters per version are too few for a bootstrap interval, said once
    per count."""
    from benchlang.design.layouts import hosts_per_version
    from benchlang.stats.ab.bootstrap import MIN_CLUSTERS

    by_k: dict[int, list[str]] = {}
    for kind, result in kinds_results:
        k = hosts_per_version(kind, result.hosts)
        if k < MIN_CLUSTERS:
            by_k.setdefault(k, []).append(kind)
    return [
        f"{', '.join(kinds)}: {k} host cluster{'s' * (k != 1)} per version, under the "
        f"{MIN_CLUSTERS} a bootstrap interval needs (Cameron, Gelbach & Miller 2008); drawn as "
        "they come out, not claimed valid"
        for k, kinds in by_k.items()
    ]


def aa_estimates_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.design.layouts import check_layout

    v = ab_view(inputs, metric, "aa-estimates")
    comps = _components(v, "aa-estimates")
    lay = v.layout
    results, notes = {}, list(v.notes)
    for kind in LAYOUT_ORDER:
        try:
            check_layout(kind, lay.hosts, lay.requests, lay.repetitions)
        except ValueError as err:
            notes.append(f"{kind}: not simulated ({err})")
            continue
        results[kind] = _simulate(v, kind, comps, 400)
    notes += _few([(kind, res) for kind, (res, _c) in results.items()])
    return fp.aa_estimates(results, v.meta, notes)


def aa_ladder_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = ab_view(inputs, metric, "aa-ladder")
    result, cluster = _simulate(v, v.layout.kind, _components(v, "aa-ladder"), 200)
    return fp.aa_ladder(result, cluster, v.meta, (*v.notes, *_few([(v.layout.kind, result)])))


def aa_empirical_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = ab_view(inputs, metric, "aa-empirical")
    if v.texts[0] != v.texts[1]:
        raise NotApplicable(
            f"aa-empirical counts false positives of A/A runs; this is an A/B store (version "
            f"{v.versions[0]} = {v.texts[0]!r}, {v.versions[1]} = {v.texts[1]!r}), whose real "
            "effect would read as false positives",
            hint="run a spec whose two versions are the same, several times, then "
            "benchlang aa-check STORE... -o aa-empirical.pdf",
        )
    raise NotApplicable(
        "aa-empirical counts false positives over several A/A stores, and this is one",
        hint="benchlang aa-check STORE1 STORE2 ... -o aa-empirical.pdf (docs/ab-designs.md)",
    )


# -- the drawings -----------------------------------------------------------------------------


def _scale(data: FigureData) -> tuple[float, str]:
    factor = float(data.meta.get("factor") or 1.0)
    unit = str(data.meta.get("display_unit") or data.meta.get("unit") or "")
    return factor, unit


def _label(data: FigureData, what: str) -> str:
    _f, unit = _scale(data)
    return f"{what} ({unit})" if unit else what


def draw_requests(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    factor, _u = _scale(data)
    versions = list(data.meta["versions"])
    own = Palette(versions)
    names = list(dict.fromkeys(r["request"] for r in data.where()))
    w, h = fig.get_size_inches()
    fig.set_size_inches(max(w, 0.25 * len(names)) if not paper else w, h)
    ax = fig.subplots()
    for j, vname in enumerate(versions):
        rows = data.where(version=vname)
        stats = [
            {
                "whislo": r["min"] / factor,
                "q1": r["q1"] / factor,
                "med": r["median"] / factor,
                "q3": r["q3"] / factor,
                "whishi": r["max"] / factor,
                "mean": r["mean"] / factor,
                "fliers": [],
            }
            for r in rows
        ]
        pos = [names.index(r["request"]) + (j - 0.5) * 0.4 for r in rows]
        c = own.colour(vname)
        ax.bxp(
            stats,
            positions=pos,
            widths=0.35,
            showmeans=True,
            patch_artist=True,
            boxprops={"facecolor": c, "alpha": 0.6, "edgecolor": c},
            medianprops={"color": "black"},
            meanprops={
                "marker": own.marker(vname),
                "markerfacecolor": "white",
                "markeredgecolor": c,
            },
            whiskerprops={"color": c},
            capprops={"color": c},
        )
    step = max(1, len(names) // (12 if paper else 30))
    ax.set_xticks(range(0, len(names), step), names[::step], rotation=60, ha="right")
    ax.set_xlabel("request (ordered by median)")
    ax.set_ylabel(_label(data, data.meta["metric"]))
    from matplotlib.patches import Patch

    legend_above(fig, [Patch(color=own.colour(n), alpha=0.6, label=n) for n in versions], paper)


def draw_timeline(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    factor, _u = _scale(data)
    versions = list(data.meta["versions"])
    rows = data.where()
    batches = list(dict.fromkeys(r["batch"] for r in rows))
    hosts = list(dict.fromkeys(r["host"] for r in rows))
    axes = panels(fig, len(batches), paper, "position in batch", _label(data, data.meta["metric"]))
    for ax, b in zip(axes, batches, strict=True):
        mine = [r for r in rows if r["batch"] == b]
        host, vname = mine[0]["host"], mine[0]["version"]
        c = OKABE_ITO[hosts.index(host) % len(OKABE_ITO)]
        x = [r["position"] for r in mine]
        y = np.array([r["value"] for r in mine]) / factor
        ax.plot(x, y, ls="none", marker="os"[versions.index(vname)], ms=3, color=c)
        ax.axhline(y.mean(), color="black", ls="--", lw=0.8)
        ax.set_title(
            f"batch {b}: {host}, {vname}; offset {mine[0]['batch_offset'] / factor:+.3g}",
            fontsize="x-small",
        )
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=OKABE_ITO[i % len(OKABE_ITO)], marker="o", ls="none", label=h)
        for i, h in enumerate(hosts)
    ] + [
        Line2D([], [], color=GREY, marker="os"[i], ls="none", label=f"version {n}")
        for i, n in enumerate(versions)
    ]
    legend_above(fig, handles, paper)


def draw_se_curves(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    from benchlang.report.figures.render import DASHES, MARKERS

    factor, _u = _scale(data)
    rows = data.where()
    layouts = [k for k in LAYOUT_ORDER if any(r["layout"] == k for r in rows)]
    hosts = sorted({r["hosts"] for r in rows})
    axes = panels(fig, len(layouts), paper, "requests per version", _label(data, "SE"))
    for ax, kind in zip(axes, layouts, strict=True):
        for i, H in enumerate(hosts):
            mine = [r for r in rows if r["layout"] == kind and r["hosts"] == H]
            if not mine:
                continue
            c = OKABE_ITO[i % len(OKABE_ITO)]
            x = [r["requests"] for r in mine]
            ax.plot(x, [r["analytic_se"] / factor for r in mine], color=c, ls=DASHES[i % 4])
            sim = [(r["requests"], r["simulated_sd"] / factor) for r in mine]
            sim = [p for p in sim if np.isfinite(p[1])]
            if sim:
                ax.plot(*zip(*sim, strict=True), ls="none", marker=MARKERS[i % 8], ms=3, color=c)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(kind, fontsize="small")
        if kind == data.meta["layout"]:
            here = [
                r
                for r in rows
                if (r["layout"], r["hosts"], r["requests"])
                == (kind, data.meta["hosts"], data.meta["requests"])
            ]
            for r in here:
                ax.plot(
                    r["requests"],
                    r["analytic_se"] / factor,
                    marker="o",
                    ms=9,
                    mfc="none",
                    color="black",
                )
    from matplotlib.lines import Line2D

    handles = [
        Line2D(
            [],
            [],
            color=OKABE_ITO[i % 8],
            ls=DASHES[i % 4],
            marker=MARKERS[i % 8],
            label=f"H = {H}",
        )
        for i, H in enumerate(hosts)
    ]
    handles.append(
        Line2D([], [], color="black", marker="o", mfc="none", ls="none", label="this run")
    )
    legend_above(fig, handles, paper)


def draw_aa_estimates(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    factor, _u = _scale(data)
    rows = data.where()
    layouts = [k for k in LAYOUT_ORDER if any(r["layout"] == k for r in rows)]
    axes = panels(fig, len(layouts), paper, _label(data, "estimate"), "density")
    for ax, kind in zip(axes, layouts, strict=True):
        est = np.array([r["estimate"] for r in rows if r["layout"] == kind]) / factor
        se = np.array([r["bootstrap_se"] for r in rows if r["layout"] == kind]) / factor
        ax.hist(est, bins=30, density=True, color=OKABE_ITO[4], alpha=0.7)
        span = max(float(np.max(np.abs(est))), 4 * float(np.median(se)))
        x = np.linspace(-span, span, 200)
        for sd, ls in ((float(np.median(se)), "--"), (float(np.std(est, ddof=1)), ":")):
            if sd > 0:
                ax.plot(x, np.exp(-0.5 * (x / sd) ** 2) / (sd * np.sqrt(2 * np.pi)), "k", ls=ls)
        ax.set_title(kind, fontsize="small")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    legend_above(
        fig,
        [
            Patch(color=OKABE_ITO[4], alpha=0.7, label="simulated estimates"),
            Line2D([], [], color="black", ls="--", label="bootstrap (median SE)"),
            Line2D([], [], color="black", ls=":", label="SD of the estimates"),
        ],
        paper,
    )


def draw_aa_ladder(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    factor, _u = _scale(data)
    rows = data.where()
    ax = fig.subplots()
    for positive, colour in ((False, GREY), (True, RED)):
        mine = [r for r in rows if r["false_positive"] == positive]
        if not mine:
            continue
        x = np.array([r["rank"] for r in mine])
        est = np.array([r["estimate"] for r in mine]) / factor
        lo = est - np.array([r["low"] for r in mine]) / factor
        hi = np.array([r["high"] for r in mine]) / factor - est
        ax.errorbar(
            x,
            est,
            yerr=[lo, hi],
            fmt="o" if positive else ".",
            ms=3,
            color=colour,
            lw=0.6,
            label="excludes 0 (false positive)" if positive else "covers 0",
        )
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("simulated A/A experiment, ranked by estimate")
    ax.set_ylabel(_label(data, "difference"))
    ax.legend(loc="upper left", fontsize="x-small")


def draw_aa_empirical(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    rows = data.where()
    w, h = fig.get_size_inches()
    fig.set_size_inches(max(w, 0.6 * len(rows)) if not paper else w, h)
    ax = fig.subplots()
    x = np.arange(len(rows))
    for i, r in enumerate(rows):
        ax.fill_between(
            [i - 0.4, i + 0.4], r["band_low"], r["band_high"], color=GREY, alpha=0.3, lw=0
        )
        inside = r["band_low"] <= r["rate"] <= r["band_high"]
        c = OKABE_ITO[0] if inside else RED
        ax.errorbar(
            i,
            r["rate"],
            yerr=[[r["rate"] - r["low"]], [r["high"] - r["rate"]]],
            fmt="o" if inside else "D",
            color=c,
            capsize=2,
        )
        ax.annotate(
            f"{r['false_positives']}/{r['runs']}",
            (i, r["high"]),
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
            fontsize="x-small",
        )
    ax.axhline(
        data.meta["alpha"], color="black", ls="--", lw=0.8, label=f"α = {data.meta['alpha']:g}"
    )
    ax.set_xticks(
        x,
        [r["test"] for r in rows],
        rotation=30 if len(rows) > 3 else 0,
        ha="right" if len(rows) > 3 else "center",
    )
    ax.set_ylabel("Type I error (false positives / runs)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize="x-small")


FIGURES = (
    FigureKind(
        "requests",
        "per-request distributions of the metric by version (Perflab Fig. 1)",
        requests_data,
        draw_requests,
    ),
    FigureKind(
        "timeline",
        "value by position in each host batch, colour = host, batch offsets (Perflab Fig. 3)",
        timeline_data,
        draw_timeline,
    ),
    FigureKind(
        "se-curves",
        "SE against requests per layout and hosts, analytic and simulated (Perflab Figs. 2, 4)",
        se_curves_data,
        draw_se_curves,
    ),
    FigureKind(
        "aa-estimates",
        "simulated A/A estimates per layout beside the bootstrap's SE (Perflab Figs. 5, 6)",
        aa_estimates_data,
        draw_aa_estimates,
    ),
    FigureKind(
        "aa-ladder",
        "ranked intervals of simulated A/A runs, false positives marked (Perflab Fig. 7)",
        aa_ladder_data,
        draw_aa_ladder,
    ),
    FigureKind(
        "aa-empirical",
        "empirical Type I error per metric over real A/A stores, binomial band (Perflab Fig. 8)",
        aa_empirical_data,
        draw_aa_empirical,
    ),
)
