"""The papers' figures in a notebook (docs/api.md#figures-in-a-notebook): ``BenchStore.figures()``
lists them (as these rows and text) and ``BenchStore.figure(name)`` gives one as a
:class:`Drawn`, shown inline by Jupyter and saved as SVG, PDF or PNG.

Everything goes through one ``app.figures.FigureSource`` per store, so the store is read and
analysed once, and matplotlib imported once, for every figure of a session; the drawing is
``FigureSource.picture``, the same as ``benchlang figure`` and the HTML report (one drawing
path; docs/figures.md).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from benchlang.app.figures import (
    FigureSource,
    Listed,
    Picture,
    csv_text,
    format_of,
    write_files,
)
from benchlang.errors import UserError
from benchlang.stats.figure_data import FigureData

if TYPE_CHECKING:
    import pandas

_SHOWN = itertools.count(1)
"""Numbers each inline figure of a notebook's page, so the ids inside its SVG stay unique."""


def listed_rows(listed: list[Listed]) -> list[list[str]]:
    """The figures as table rows: name, whether it applies, what it draws or why not."""
    return [
        [f.name, "yes" if f.applies else "no", f.line if f.applies else f.reason or ""]
        for f in listed
    ]


def drawn(
    source: FigureSource, name: str, style: str | None = None, metric: str | None = None
) -> Drawn:
    """Figure ``name`` of the store: its numbers built now (a figure that does not apply is a
    ``NotApplicable`` UserError with the reason; an unknown name a UserError listing the
    names), its picture when first shown or saved."""
    return Drawn(name, source.data(name, metric), source, style)


@attrs.frozen(repr=False)
class Drawn:
    """One of the papers' figures of a store: ``.data`` (caption, columns, rows, notes),
    ``.frame()`` its rows as a DataFrame, ``.save(path)`` (SVG, PDF with TrueType fonts, or
    PNG, by suffix); Jupyter shows it inline with its caption and what it leaves out."""

    name: str
    data: FigureData
    source: FigureSource = attrs.field(eq=False)
    style: str | None = None
    _pictures: dict[str, Picture] = attrs.field(factory=dict, init=False, eq=False)

    def picture(self, fmt: str) -> bytes:
        """The figure as ``fmt`` ("svg", "pdf" or "png") bytes, drawn once per format (a
        ``Drawn`` keeps its style: another style is another ``figure(name, style=...)``)."""
        return self._drawn(fmt).content

    def said(self, fmt: str = "svg") -> tuple[str, ...]:
        """What matplotlib warned drawing the figure as ``fmt`` (a font of the style that is
        not installed, a layout it could not apply); the notebook shows it as notes."""
        return self._drawn(fmt).said

    def _drawn(self, fmt: str) -> Picture:
        if fmt not in self._pictures:
            self._pictures[fmt] = self.source.picture(self.data, fmt, self.style)
        return self._pictures[fmt]

    def save(self, path: str | Path, data_csv: str | Path | None = None) -> Path:
        """Write the figure to ``path`` (format by its suffix: .svg, .pdf or .png) and, when
        asked, its rows as CSV to ``data_csv``, as ``benchlang figure NAME -o PATH --data
        CSV`` does (both made before either is written); the path written."""
        path = Path(path)
        files = [(path, self.picture(format_of(path)))]
        if data_csv is not None:
            files.append((Path(data_csv), csv_text(self.data).encode("utf-8")))
        write_files(files)
        return path

    def frame(self) -> pandas.DataFrame:
        """The figure's rows (one per drawn element, as ``--data`` writes them) as a
        DataFrame with its columns; a cell with no number is NaN or None."""
        import pandas as pd

        return pd.DataFrame.from_records(list(self.data.rows), columns=list(self.data.columns))

    def _repr_svg_(self) -> str | None:
        """The figure for Jupyter; None (the text shows instead) when it cannot be drawn,
        whose reason ``_repr_html_`` and ``save`` give."""
        try:
            return self.picture("svg").decode("utf-8")
        except UserError:
            return None

    def _repr_html_(self) -> str:
        """The figure inline with its caption, what it leaves out and its numbers, as the
        HTML report shows it; the reason and its remedy where it cannot be drawn."""
        from benchlang.report.figures.render import inline_svg
        from benchlang.report.html.page import esc, figure

        try:
            svg = self.picture("svg")
        except UserError as err:
            hint = f" ({err.hint})" if err.hint else ""
            return (
                f"<p>{esc(self.data.caption)}</p><p><b>not drawn:</b> {esc(err.message + hint)}</p>"
            )
        ident = f"fig-{self.name}-{next(_SHOWN)}"
        notes = (*self.data.notes, *(f"matplotlib: {said}" for said in self.said("svg")))
        note = ("Not drawn or not claimed: " + "; ".join(notes)) if notes else None
        return figure(
            inline_svg(svg, ident),
            self.data.caption,
            self.data.columns,
            self.data.rows,
            note=note,
            ident=ident,
        )

    def __repr__(self) -> str:
        return f"<Drawn {self.name}: {self.data.paper}, {len(self.data.rows)} rows>"

    def __str__(self) -> str:
        notes = "".join(f"\n  note: {note}" for note in self.data.notes)
        return f"{self.name} ({self.data.paper}): {self.data.caption}{notes}"
