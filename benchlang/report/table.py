"""Terminal tables: rich on a terminal, plain aligned text otherwise (CI logs, pipes)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO


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


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    title: str | None = None,
    stream: TextIO | None = None,
    plain: bool | None = None,
) -> None:
    """Print a table; ``plain`` defaults to True when ``stream`` is not a terminal."""
    stream = stream or sys.stdout
    cells = [[format_number(v) for v in row] for row in rows]
    if plain is None:
        plain = not stream.isatty()
    if not plain:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for h in headers:
            table.add_column(h, overflow="fold")
        for row in cells:
            table.add_row(*row)
        Console(file=stream).print(table)
        return
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    if title:
        stream.write(title + "\n")
    stream.write(
        "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip() + "\n"
    )
    stream.write("  ".join("-" * w for w in widths) + "\n")
    for row in cells:
        stream.write(
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )
