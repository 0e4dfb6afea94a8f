"""The papers' figures in the report (docs/figures.md): every figure of ``report.figures`` that
applies to the store, as ``<figure id="fig-NAME">`` with its caption (what is drawn, the
statistic and its confidence, the paper's figure), what it leaves out, and its numbers.

The same drawing ``benchlang figure`` exports, its notes in the caption (in the page's text
size) rather than drawn into it; without matplotlib the section says how to get
them and the rest of the report is unchanged.
"""

from __future__ import annotations

from benchlang.errors import UserError
from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import esc, figure, section


def figures_section(inputs: ReportInputs) -> str | None:
    from benchlang.report.figures import labels
    from benchlang.report.figures.render import Palette, draw, inline_svg, matplotlib_or_error
    from benchlang.report.figures.sessions import applicable

    built = [(kind, data) for kind, data, _why in applicable(inputs) if data is not None]
    if not built:
        return None
    try:
        matplotlib_or_error()
    except UserError as err:
        names = ", ".join(kind.name for kind, _d in built)
        text = f"{err.message}: {err.hint}. Figures that apply to this run: {names}."
        return section("figures", "Figures of the papers", [f"<p class='note'>{esc(text)}</p>"])
    palette = Palette(labels(inputs))
    body = [
        "<p class='note'>Each figure follows one of the papers' (named in its caption); "
        "one colour and marker per configuration throughout. <code>benchlang figure STORE "
        "NAME -o NAME.pdf</code> exports any of them for a paper.</p>"
    ]
    for kind, data in built:
        ident = f"fig-{kind.name}"
        svg = inline_svg(draw(data, kind.draw, palette, "svg", notes="none"), ident)
        note = ("Not drawn or not claimed: " + "; ".join(data.notes)) if data.notes else None
        body.append(f"<h3>{esc(kind.name)}</h3>")
        headers, rows = in_page_units(data)
        body.append(figure(svg, data.caption, headers, rows, note=note, ident=ident))
    return section("figures", "Figures of the papers", body)


def in_page_units(data) -> tuple[list[str], list[list]]:
    """The figure's numbers as its axis shows them: a figure drawn with one axis in the CLI's
    unit (``meta["x_scale"]`` or ``["y_scale"]``, ``report.figures.triscale.in_cli_units``)
    has that axis's column, its ``median`` (OrderSage's order-ci) and its ``low``/``high``
    bounds divided by the scale, the unit in
    their headers, so the table under a figure says ms where the page does. A figure with both
    axes scaled, or none, is shown as its rows hold it."""
    import re

    scaled = [axis for axis in ("x", "y") if data.meta.get(f"{axis}_scale")]
    if len(scaled) != 1:
        return list(data.columns), [list(r) for r in data.rows]
    axis = scaled[0]
    factor = float(data.meta[f"{axis}_scale"])
    unit = re.search(r"\(([^()]+)\)\s*$", str(data.meta.get(f"{axis}_label", "")))
    columns = [c for c in (axis, "median", "low", "high") if c in data.columns]
    at = [data.columns.index(c) for c in columns]
    headers = [f"{c} ({unit.group(1)})" if unit and c in columns else c for c in data.columns]
    rows = []
    for row in data.rows:
        row = list(row)
        for i in at:
            if isinstance(row[i], int | float) and not isinstance(row[i], bool):
                row[i] = row[i] / factor
        rows.append(row)
    return headers, rows
