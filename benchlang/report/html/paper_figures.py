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
    from benchlang.report.figures import applicable, labels
    from benchlang.report.figures.render import Palette, draw, inline_svg, matplotlib_or_error

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
        body.append(figure(svg, data.caption, data.columns, data.rows, note=note, ident=ident))
    return section("figures", "Figures of the papers", body)
