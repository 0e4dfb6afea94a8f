"""Drawing Perflab's figures (Bakshy & Frachtenberg, WWW 2015) with matplotlib (lazily): the
numbers come from ``stats.figure_perflab`` through ``report.figures.perflab``; values are
divided by ``meta["factor"]`` to the unit the CLI prints. The two versions take the palette's
first two colours; hosts in ``timeline`` and host counts in ``se-curves`` take the palette's
colours in their order."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchlang.report.figures.render import OKABE_ITO, Palette, legend_above, panel_title, panels
from benchlang.stats.figure_data import FigureData

LAYOUT_ORDER = ("unbalanced", "request_balanced", "host_balanced", "fully_balanced")
RED, GREY = "#D55E00", "#7f7f7f"


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
    _cut(ax, data)
    ax.set_ylabel(_label(data, data.meta["metric"]))
    from matplotlib.patches import Patch

    legend_above(fig, [Patch(color=own.colour(n), alpha=0.6, label=n) for n in versions], paper)


def _cut(
    ax: Any,
    data: FigureData,
    x: np.ndarray | None = None,
    y: np.ndarray | None = None,
    colour: str = "black",
) -> None:
    """The panel cut to ``meta["y_view"]`` when a few trials lie far out (the notes name
    them); with ``x`` and ``y``, those trials marked as triangles on the edge they lie past."""
    view = data.meta.get("y_view")
    if not view:
        return
    from benchlang.report.figures.triscale_draw import _far_marks

    factor, _u = _scale(data)
    low, high = view[0] / factor, view[1] / factor
    if x is None or y is None:
        ax.set_ylim(low, high)
    else:
        _far_marks(ax, x, y, low, high, colour)


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
        _cut(ax, data, np.asarray(x, dtype=float), y, c)
        panel_title(
            ax,
            f"batch {b}: {host}, {vname}; offset {mine[0]['batch_offset'] / factor:+.3g}",
            size="x-small",
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


def _log_ticks(ax: Any) -> None:
    """A log y axis spanning less than two decades gets ticks at round values within its
    range (matplotlib's log locator labels only powers of ten, none inside 3-9 ms)."""
    from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator

    low, high = ax.get_ylim()
    if not (0 < low < high):
        return
    decades = [
        10.0**k for k in range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
    ]
    if sum(low <= d <= high for d in decades) >= 2:
        return
    ticks = [t for t in MaxNLocator(4).tick_values(low, high) if low <= t <= high and t > 0]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())


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
        panel_title(ax, kind)
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
    for ax in axes:
        _log_ticks(ax)
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
        panel_title(ax, kind)
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


def draw_bootstrap_model(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    factor, _u = _scale(data)
    ax = fig.subplots()
    boot = np.array([r["x"] for r in data.where(part="bootstrap")]) / factor
    view = [v / factor for v in data.meta["x_view"]]
    ax.hist(
        boot,
        bins=40,
        range=view,
        density=True,
        color=OKABE_ITO[4],
        alpha=0.5,
        label="bootstrap replicates",
    )
    ax.set_xlim(*view)
    for part, ls, c, label in (
        ("bootstrap density", "--", OKABE_ITO[4], "bootstrap density"),
        ("model density", "-", "black", "estimates simulated from the fitted model"),
    ):
        rows = data.where(part=part)
        x = np.array([r["x"] for r in rows]) / factor
        ax.plot(x, np.array([r["density"] for r in rows]) * factor, color=c, ls=ls, label=label)
    ax.axvline(data.meta["estimate"] / factor, color=RED, lw=1, label="this store's estimate")
    ax.set_xlabel(_label(data, "treatment − control"))
    ax.set_ylabel("density")
    legend_above(fig, ax.get_legend_handles_labels()[0], paper)


def draw_aa_ladder(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    factor, _u = _scale(data)
    null = float(data.meta.get("no_change", 0.0))
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
            label=f"excludes {null:g} (false positive)" if positive else f"covers {null:g}",
        )
    ax.axhline(null, color="black", lw=0.8)
    ax.set_xlabel(data.meta.get("x_label", "simulated A/A experiment, ranked by estimate"))
    ax.set_ylabel(data.meta.get("y_label") or _label(data, "difference"))
    legend_above(fig, ax.get_legend_handles_labels()[0], paper)  # over the data it hid ranks


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
        ax.plot([i - 0.4, i + 0.4], [r["alpha"]] * 2, color="black", ls="--", lw=0.8)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [
        Line2D([], [], color="black", ls="--", label="the test's α"),
        Patch(color=GREY, alpha=0.3, label=f"binomial band ({100 * data.meta['confidence']:g}%)"),
        Line2D([], [], color=OKABE_ITO[0], marker="o", label="rate inside the band"),
        Line2D([], [], color=RED, marker="D", label="rate outside the band"),
    ]
    ax.set_xticks(
        x,
        [r["test"] for r in rows],
        rotation=30 if len(rows) > 3 else 0,
        ha="right" if len(rows) > 3 else "center",
    )
    ax.set_ylabel("Type I error (false positives / runs)")
    ax.set_ylim(bottom=0)
    legend_above(fig, handles, paper)
