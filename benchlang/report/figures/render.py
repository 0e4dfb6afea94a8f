"""Drawing a figure with matplotlib: the one drawing path of the papers' figures, shared by the
HTML report (inline SVG) and ``benchlang figure`` (SVG, PDF, PNG); docs/figures.md says why.

matplotlib is imported only inside these functions (it costs about 0.3 s), so every other
command starts at once and the report works without it (it then says how to get the figures).
PDFs embed their fonts as TrueType (Type 42): ACM and IEEE checks reject Type 3, matplotlib's
default.
"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from benchlang.errors import UserError
from benchlang.stats.figure_data import FigureData

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
"""Okabe & Ito's colour-blind-safe palette (2008), the yellow last: it is faint on white."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("-", "--", ":", "-.")
FORMATS = ("svg", "pdf", "png")
PAPER_WIDTH = 3.3
"""Inches: one column of a two-column paper (ACM, IEEE)."""

BASE_RC: dict[str, Any] = {
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
    "savefig.dpi": 200,
}
STYLES: dict[str, dict[str, Any]] = {
    "report": {"font.size": 9, "figure.figsize": (7.0, 4.0)},
    "paper": {
        "font.size": 8,
        "axes.titlesize": 8,
        "axes.labelsize": 8,
        "xtick.labelsize": 7,
        "ytick.labelsize": 7,
        "legend.fontsize": 7,
        "figure.figsize": (PAPER_WIDTH, 2.4),
        "lines.linewidth": 1.0,
        "lines.markersize": 4,
    },
}


DENSE_POINTS = 2_000
"""Above this many points (or 60 boxes) in one panel, its dense layer (trials as dots, boxes)
is one image inside the SVG or PDF, at ``savefig.dpi``; text, ticks, grid and the statistics
drawn over it stay vector. Thousands of vector marks are slow to write and to open, and their
pixels are what a reader sees anyway."""
DENSE_Z, RASTER_Z = 1.2, 1.3
"""The dense layer's zorder and the rasterization threshold above it: the axis and its labels
(zorder 1.5 under ``axes.axisbelow: line``) stay vector."""


def dense_layer(
    ax: Any, count: int, limit: int = DENSE_POINTS, usual: float | None = None
) -> dict[str, Any]:
    """Keyword arguments for one panel's dense marks: above ``limit`` marks, a zorder below
    ``RASTER_Z`` and the panel's marks there drawn as one image; else their ``usual`` zorder
    (matplotlib's default when None), drawn as vectors as before."""
    if count > limit:
        ax.set_rasterization_zorder(RASTER_Z)
        return {"zorder": DENSE_Z}
    return {} if usual is None else {"zorder": usual}


class Palette:
    """One colour, marker and dash per configuration of a store, the same in every figure.

    Colours repeat after eight; the marker then changes too (and the dash after eight more),
    so no two of the first 32 configurations share both colour and marker.
    """

    def __init__(self, labels: Sequence[str]) -> None:
        self.index = {label: i for i, label in enumerate(labels)}

    def colour(self, label: str) -> str:
        return OKABE_ITO[self.index.get(label, 0) % len(OKABE_ITO)]

    def marker(self, label: str) -> str:
        i = self.index.get(label, 0)
        return MARKERS[(i + i // len(OKABE_ITO)) % len(MARKERS)]

    def dash(self, label: str) -> str:
        return DASHES[(self.index.get(label, 0) // len(OKABE_ITO)) % len(DASHES)]


def _rc(style: str | None) -> tuple[dict[str, Any], str | None]:
    """rcParams of a named style, or the path of the user's .mplstyle applied over them."""
    if style is None or style in STYLES:
        return {**BASE_RC, **STYLES[style or "report"]}, None
    path = Path(style)
    if not path.is_file():
        raise UserError(
            f"no style {style!r}: not 'paper' and no such file",
            hint="--style paper, or --style FILE.mplstyle (matplotlib's style format)",
        )
    return {**BASE_RC, **STYLES["report"]}, str(path)


def matplotlib_or_error() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise UserError(
            "figures are drawn with matplotlib, which is not installed",
            hint="pip install 'benchlang[figures]'",
        ) from None
    return matplotlib


def draw(
    data: FigureData,
    drawer: Callable[[Any, FigureData, Palette, bool], None],
    palette: Palette,
    fmt: str,
    style: str | None = None,
    notes: str = "below",
) -> bytes:
    """The figure as ``fmt`` ("svg", "pdf" or "png") bytes; its notes printed under it
    (``notes="below"``) or not drawn (``"none"``: the report's caption says them). The caption
    and the notes are in the file's metadata either way (``described``)."""
    mpl = matplotlib_or_error()
    from matplotlib.figure import Figure

    rc, user_style = _rc(style)
    rc["svg.hashsalt"] = data.name  # ids unique across the figures of one page, and stable
    with mpl.rc_context(rc):
        if user_style is not None:
            _use_style(user_style)
        fig = Figure(layout="constrained")
        paper = style == "paper"
        drawer(fig, data, palette, paper)
        _scale_ticks(fig, data)
        if notes == "below":
            _notes(fig, data.notes, paper)
        return _written(fig, fmt, described(data))


NOTES = ("below", "none")
"""Where a figure's notes go: drawn under it, or only in its caption and metadata."""


def described(data: FigureData) -> str:
    """The caption and the notes in one text: the figure's description in its metadata (SVG
    ``dc:description``, PDF Subject, PNG Description), beside the figure rather than in it."""
    text = data.caption
    if data.notes:
        text += " Not drawn or not claimed: " + "; ".join(data.notes) + "."
    return text


def _written(fig: Any, fmt: str, description: str = "") -> bytes:
    """The figure as ``fmt`` bytes. SVG and PDF through their canvases, whose one drawing
    lays the figure out (constrained layout) with the very renderer that writes it:
    ``savefig`` draws a figure with a layout engine twice, once to lay it out and once to
    write it, the same picture for twice the time. The resolution of a rasterized layer is
    ``savefig.dpi``, as ``savefig`` sets it."""
    import matplotlib as mpl

    out = io.BytesIO()
    if fmt == "png":
        fig.savefig(out, format=fmt, metadata=_metadata(fmt, description))
        return out.getvalue()
    from matplotlib.backend_bases import FigureCanvasBase

    canvas: type[FigureCanvasBase]
    if fmt == "svg":
        from matplotlib.backends.backend_svg import FigureCanvasSVG as canvas
    else:
        from matplotlib.backends.backend_pdf import FigureCanvasPdf as canvas
    fig.set_dpi(mpl.rcParams["savefig.dpi"])
    getattr(canvas(fig), f"print_{fmt}")(out, metadata=_metadata(fmt, description))
    return out.getvalue()


def _scale_ticks(fig: Any, data: FigureData) -> None:
    """Tick labels in the unit the CLI prints (``meta["x_scale"]``/``["y_scale"]``: the
    divisor; the axis label already names the unit), the data left in the metric's unit."""
    from matplotlib.ticker import FuncFormatter

    for axis in ("x", "y"):
        factor = data.meta.get(f"{axis}_scale")
        if not factor:
            continue
        ticks = FuncFormatter(lambda v, _pos, f=factor: f"{v / f:.4g}")
        for ax in fig.axes:
            getattr(ax, f"{axis}axis").set_major_formatter(ticks)


@contextlib.contextmanager
def matplotlib_said() -> Iterator[list[str]]:
    """What matplotlib warns or logs (WARNING and above) inside the block, kept as lines (the
    first of each message, once) instead of reaching the user as a library's warning."""
    import logging
    import warnings

    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(_first_line(record.getMessage()))

    log = logging.getLogger("matplotlib")
    keep, propagate = Keep(logging.WARNING), log.propagate
    log.addHandler(keep)
    log.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield said
            said.extend(_first_line(str(w.message)) for w in caught)
    finally:
        log.removeHandler(keep)
        log.propagate = propagate
        said[:] = dict.fromkeys(said)


def _first_line(message: str) -> str:
    lines = [line for line in message.splitlines() if line.strip()]
    return lines[0] if lines else "rejected by matplotlib"


def _use_style(path: str) -> None:
    """Apply the user's .mplstyle; a line matplotlib rejects (it would log or warn) is an
    error naming it."""
    import warnings

    from matplotlib import style

    with matplotlib_said() as problems:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                style.use(path)
        except (OSError, ValueError, KeyError, Warning) as err:
            problems.append(str(err))
    if problems:
        raise UserError(
            f"cannot use style {path}: {problems[0]}",
            hint="a matplotlib style file: `key: value` lines with matplotlib's rcParams keys",
        )


def _metadata(fmt: str, description: str = "") -> dict[str, Any]:
    """No software version or date in the file: the same store draws the same bytes; the
    figure's caption and notes as its description."""
    said = {"png": "Description", "pdf": "Subject", "svg": "Description"}[fmt]
    text = {said: description} if description else {}
    if fmt == "png":
        return {"Software": None, **text}
    return {"Creator": None, "CreationDate" if fmt == "pdf" else "Date": None, **text}


def _notes(fig: Any, notes: Sequence[str], paper: bool) -> None:
    """What the figure leaves out or cannot claim, printed under it (at most 6 lines; the
    rest is in the report's caption and in --json)."""
    if not notes:
        return
    width = 60 if paper else 110
    lines = [line for n in notes for line in textwrap.wrap(n, width, subsequent_indent="  ")]
    shown = lines[:6]
    if len(lines) > 6:
        shown.append("... the rest in the caption (report) and the notes (--json)")
    fig.supxlabel("Note: " + "\n".join(shown), fontsize="small", ha="left", x=0.01)


def panels(
    fig: Any, n: int, paper: bool, xlabel: str, ylabel: str, *, sharey: bool = False
) -> list[Any]:
    """A grid of ``n`` small panels (one per configuration), the figure grown to fit them;
    the y label on the first column, the x label under the lowest panel of each column.
    ``sharey``: one y scale (a fraction, a probability), its tick labels on the first column
    only (laying out tick labels is most of a panel's drawing time)."""
    cols = min(n, 2 if paper else 4)
    rows = -(-n // cols)
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, max(h, rows * (1.5 if paper else 2.2) + 0.6))
    from matplotlib.ticker import MaxNLocator

    grid = fig.add_gridspec(rows, cols)
    axes: list[Any] = []
    for i in range(n):  # only the n panels: an axes costs a fortieth of a second to make
        first = axes[0] if sharey and axes else None
        ax = fig.add_subplot(grid[i // cols, i % cols], sharey=first)
        ax.xaxis.set_major_locator(MaxNLocator(3))
        if first is None:
            ax.yaxis.set_major_locator(MaxNLocator(4))  # shared axes share the locator
        if i % cols == 0:
            ax.set_ylabel(ylabel)
        elif sharey:
            ax.tick_params(labelleft=False)
        if i + cols >= n:
            ax.set_xlabel(xlabel)
        axes.append(ax)
    return axes


def panel_title(ax: Any, text: str, colour: str | None = None, size: str = "small") -> None:
    """A panel's name centred above it, as plain text: ``Axes.set_title`` re-places its title
    over the tick labels of every panel at each layout pass (a third of a 10-panel figure's
    layout time)."""
    ax.text(
        0.5,
        1.02,
        text,
        transform=ax.transAxes,
        ha="center",
        va="bottom",
        fontsize=size,
        color=colour,
    )


def marked_x(ax: Any, x: float, text: str, colour: str, lw: float = 1.0) -> None:
    """A vertical line at data ``x`` named by ``text`` beside its top (a profile's period, the
    stopping rule's stop)."""
    ax.axvline(x, color=colour, lw=lw)
    ax.annotate(
        text,
        (x, 1),
        xycoords=("data", "axes fraction"),
        fontsize="x-small",
        va="top",
        xytext=(2, 0),
        textcoords="offset points",
    )


def legend_above(fig: Any, handles: Sequence[Any], paper: bool) -> None:
    """Every configuration in the legend, above the plots (never cut to fit; the notes take
    the space under them)."""
    cols = min(2 if paper else 4, max(1, len(handles)))
    width = fig.bbox.width
    legend = fig.legend(handles=handles, loc="outside upper center", ncols=cols)
    while cols > 1 and legend.get_window_extent().width > width:
        legend.remove()  # wider than the figure: fewer columns, never a label cut
        cols -= 1
        legend = fig.legend(handles=handles, loc="outside upper center", ncols=cols)
    lines = -(-len(handles) // cols)
    wide = legend.get_window_extent().width
    if wide > width:  # one column and still wider: its long labels wrapped
        texts = legend.get_texts()
        chars = max(10, int(max(len(t.get_text()) for t in texts) * width / wide * 0.85))
        for t in texts:
            t.set_text(textwrap.fill(t.get_text(), chars))
        lines = sum(t.get_text().count("\n") + 1 for t in texts)
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, h + lines * (0.15 if paper else 0.2))


def inline_svg(svg: bytes, prefix: str) -> str:
    """matplotlib's SVG for an HTML page: no XML prolog, metadata or page-wide style, and every
    id (matplotlib numbers them "figure_1", "axes_1" in each file) prefixed to stay unique."""
    text = svg.decode("utf-8")
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r"<style[^>]*>.*?</style>", "", text, flags=re.S)
    text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", text)
    return re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', text)


def wrapped_to(text: Any, width: float) -> None:
    """Wrap a drawn text (an axis label, a tick label) until it is at most ``width`` display
    units wide, at spaces; a single word wider than that stays whole."""
    words = " ".join(text.get_text().split())
    wide = text.get_window_extent().width
    chars = max(len(line) for line in text.get_text().splitlines() or [""])
    while wide > width and chars > 6:
        chars = max(6, min(chars - 1, int(chars * width / wide)))
        text.set_text(textwrap.fill(words, chars, break_long_words=False))
        wide = text.get_window_extent().width


def labels_fitted(fig: Any, ticks: Sequence[Any] = ()) -> None:
    """Lay the figure out once, then wrap each panel's x label to the panel's width (two
    panels' labels never run into each other, none is cut at the figure's edge), and the x tick
    labels of ``ticks`` (axes) to their share of it (category names under bars); the figure's
    own drawing lays it out again with the wrapped texts."""
    fig.draw_without_rendering()
    for ax in fig.axes:
        width = ax.get_window_extent().width
        wrapped_to(ax.xaxis.label, width)
        if ax in ticks:
            labels = ax.get_xticklabels()
            for t in labels:
                wrapped_to(t, 0.92 * width / max(1, len(labels)))
            ax.set_xticks(ax.get_xticks(), [t.get_text() for t in labels])
