"""Terminal tables: rich on a terminal, plain aligned text otherwise (CI logs, pipes).

Every string handed to rich goes in as a ``rich.text.Text``, never as markup: labels such as
``digest[tool=sha256sum]`` hold square brackets that rich would otherwise read as markup tags
and drop (a label printed as ``digest``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Literal, TextIO


def format_number(value: object, digits: int = 4) -> str:
    """A number as a reader wants it: ``digits`` significant digits, ``-`` for missing."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "n/a"
        return f"{value:.{digits}g}"
    return str(value)


# Units a quantity is rescaled through, smallest first, as (name, size in the base unit).
_TIME = (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0))
_BYTES = (("B", 1), ("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3), ("TiB", 1024**4))
_SCALES: dict[str, tuple[tuple[str, float], ...]] = {
    "ns": _TIME,
    "us": _TIME,
    "µs": _TIME,
    "ms": _TIME,
    "s": _TIME,
    "B": _BYTES,
    "KiB": _BYTES,
    "kB": _BYTES,
    "KB": _BYTES,
    "MiB": _BYTES,
    "MB": _BYTES,
    "GiB": _BYTES,
}
_ALIASES = {"us": "µs", "kB": "KiB", "KB": "KiB", "MB": "MiB"}


def _significant(value: float, digits: int) -> str:
    """``digits`` significant digits without an exponent for magnitudes in [1e-3, 1e6)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    if not -3 <= magnitude < 6:
        return f"{value:.{digits}g}"
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:.{decimals}f}"


def scale_for(value: float | None, unit: str | None) -> tuple[str | None, float]:
    """The display unit for ``value`` (in ``unit``) and the factor to divide by: the largest
    unit of the same kind in which the value is at least 1 (ms for 0.0468 s, MiB for
    162400 KiB). Units benchlang does not know are kept with factor 1."""
    if unit is None or unit not in _SCALES:
        return unit, 1.0
    ladder = _SCALES[unit]
    base = dict(ladder)[_ALIASES.get(unit, unit)]
    if value is None or not math.isfinite(value) or value == 0:
        return _ALIASES.get(unit, unit), 1.0
    size = abs(value) * base
    name, factor = ladder[0]
    for candidate, candidate_size in ladder:
        if size >= candidate_size:
            name, factor = candidate, candidate_size
    return name, factor / base


def metric_scale(values: object, unit: str | None) -> tuple[str | None, float]:
    """The one display unit of a metric in every view (headline, record, ``results``,
    ``order``, ``diff``, ``replicate``, the HTML report): ``scale_for`` the median of its
    finite values (all successful trials of a store), so no view picks another unit from
    other numbers of the same metric."""
    import numpy as np

    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    return scale_for(float(np.median(v)) if v.size else None, unit)


def scale_named(display: str | None, unit: str | None) -> tuple[str | None, float]:
    """The scale that shows values in ``unit`` as ``display`` (a unit ``metric_scale`` chose,
    as stored in a record or an export); unknown pairs keep ``unit`` with factor 1."""
    if unit is None or display is None or unit not in _SCALES:
        return unit, 1.0
    sizes = dict(_SCALES[unit])
    base = sizes[_ALIASES.get(unit, unit)]
    if display not in sizes:
        return _ALIASES.get(unit, unit), 1.0
    return display, sizes[display] / base


def format_quantity(
    value: float | None, unit: str | None, digits: int = 4, scale: tuple | None = None
) -> str:
    """A value with its unit in human form: ``46.81 ms``, ``158.6 MiB``, ``1.2e+07`` only
    past a million of a unit benchlang cannot rescale. ``scale`` (from ``scale_for``) fixes
    the display unit, so a column of numbers shares one."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    name, factor = scale if scale is not None else scale_for(value, unit)
    text = _significant(float(value) / factor, digits)
    return f"{text} {name}" if name else text


def terminal_width() -> int:
    """The width text is laid out in on a terminal: the terminal's, at most 100 columns (the
    width the docs and the tests read, and a comfortable line)."""
    import shutil

    return min(100, shutil.get_terminal_size((100, 24)).columns)


def write_wrapped(
    lines: Sequence[str], stream: TextIO | None = None, terminal: bool | None = None
) -> None:
    """Lines of prose (notes, verdicts): on a terminal wrapped to ``terminal_width`` with the
    continuation indented, so no line runs past the edge; unchanged elsewhere (a pipe, a log
    that a reader greps)."""
    out = stream or sys.stdout
    if not (out.isatty() if terminal is None else terminal):
        out.writelines(line + "\n" for line in lines)
        return
    import textwrap

    width = terminal_width()
    for text in lines:
        for line in text.splitlines() or [""]:
            indent = " " * (len(line) - len(line.lstrip()))
            wrapped = textwrap.wrap(
                line, width, subsequent_indent=indent + "    ", break_on_hyphens=False
            )
            out.write("\n".join(wrapped or [""]) + "\n")


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    title: str | None = None,
    stream: TextIO | None = None,
    plain: bool | None = None,
    align: Sequence[str] | None = None,
) -> None:
    """Print a table; ``plain`` defaults to True when ``stream`` is not a terminal.

    ``align`` gives each column's justification ("left" or "right"; default left).
    """
    stream = stream or sys.stdout
    cells = [[format_number(v) for v in row] for row in rows]
    align = list(align) if align is not None else ["left"] * len(headers)
    if plain is None:
        plain = not stream.isatty()
    if not plain:
        from rich import box
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(
            title=Text(title) if title else None,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            show_edge=False,
            collapse_padding=True,
        )
        width = terminal_width()
        # the first column names the rows (labels such as digest[tool=sha256sum]): kept whole
        # while the labels take at most half the width; the other columns fold instead
        whole = max((len(row[0]) for row in cells if row), default=0) <= width // 2
        for i, (h, a) in enumerate(zip(headers, align, strict=True)):
            justify: Literal["left", "right"] = "right" if a == "right" else "left"
            table.add_column(Text(h), overflow="fold", justify=justify, no_wrap=i == 0 and whole)
        for row in cells:
            table.add_row(*(Text(c) for c in row))
        Console(file=stream, highlight=False, width=width).print(table)
        return
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if a == "right" else v.ljust(w)
            for v, w, a in zip(values, widths, align, strict=True)
        ).rstrip()

    if title:
        stream.write(title + "\n")
    stream.write(line(list(headers)) + "\n")
    stream.write("  ".join("-" * w for w in widths) + "\n")
    for row in cells:
        stream.write(line(row) + "\n")
