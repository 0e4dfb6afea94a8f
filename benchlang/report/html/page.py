"""The page around the sections: one self-contained HTML document (inline CSS, inline SVG, no
script, no font or image fetched), readable without images and printable.

Building blocks only: escaping, tables, a figure with its text alternative and the data behind
it in a ``<details>``, a section. Sections are plain strings of HTML, joined in order.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence

from benchlang.report.table import format_number

MAX_ROWS = 400
"""Rows of a plot's data table; a longer table shows evenly spaced rows and says so."""

CSS = """
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --warn-bg: #fff4e5;
  --warn: #9a3412; --bad: #b91c1c; --ok: #15803d; --diff: #fde68a; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); max-width: 1100px; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; }
h2 { font-size: 1.3rem; border-bottom: 2px solid var(--line); padding-bottom: .2rem;
  margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
nav ul { display: flex; flex-wrap: wrap; gap: .1rem 1.4rem; list-style: none; padding: 0;
  margin: .3rem 0; }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace;
  font-size: .86em; }
pre { background: #f6f8fa; padding: .5rem; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; margin: .4rem 0 .8rem; font-size: .9em; }
th, td { border: 1px solid var(--line); padding: .2rem .45rem; text-align: left;
  vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f6f8fa; }
figure { margin: .6rem 0 1.2rem; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: var(--fg); font-size: .95em; }
figcaption .note { display: block; margin-top: .3rem; font-size: 1em; }
caption { text-align: left; font-weight: 600; padding: .2rem 0; }
table.answer { font-size: 1.05em; }
table.answer td:nth-child(2) { text-align: right; font-variant-numeric: tabular-nums; }
.basis { color: var(--muted); margin: .2rem 0; }
details { margin: .3rem 0; }
summary { cursor: pointer; color: var(--muted); }
.descriptive, .failed { background: var(--warn-bg); border-left: 4px solid var(--warn);
  padding: .4rem .7rem; margin: .5rem 0; color: var(--warn); }
.bad { color: var(--bad); font-weight: 600; }
.ok { color: var(--ok); }
tr.diff td, td.diff { background: var(--diff); }
.note { color: #3d444d; font-size: 1em; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr));
  gap: .5rem 1.2rem; }
@media print { body { max-width: none; padding: 0; font-size: 11pt; }
  details { display: block; } h2 { break-before: auto; } figure { break-inside: avoid; } }
"""


def esc(value: object) -> str:
    """Text as HTML text: every value from a spec or a store is escaped, never trusted."""
    return html.escape(str(value), quote=True)


def cell(value: object, digits: int = 4) -> str:
    """A table cell: numbers right-aligned with ``digits`` significant digits."""
    if isinstance(value, bool) or value is None:
        return f"<td>{esc(format_number(value))}</td>"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return "<td class='num'>n/a</td>"
        return f"<td class='num'>{esc(format_number(value, digits))}</td>"
    return f"<td>{esc(value)}</td>"


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    caption: str | None = None,
    highlight: Iterable[int] = (),
    bad: dict[int, str] | None = None,
    css: str | None = None,
) -> str:
    """An HTML table; rows whose index is in ``highlight`` are marked (differences), ``bad``
    maps a row index to the CSS class of its first cell; ``css`` is the table's class."""
    marked = set(highlight)
    head = "".join(f"<th scope='col'>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cells = [cell(v) for v in row]
        if bad and i in bad and cells:
            cells[0] = cells[0].replace("<td", f"<td class='{bad[i]}'", 1)
        attr = " class='diff'" if i in marked else ""
        body.append(f"<tr{attr}>{''.join(cells)}</tr>")
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    attr = f" class='{esc(css)}'" if css else ""
    return f"<table{attr}>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def figure(
    svg: str,
    alt: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    note: str | None = None,
    ident: str | None = None,
) -> str:
    """A plot with its text alternative (the SVG's accessible name and the caption) and the
    data drawn in it as a table inside ``<details>``, so the page works without images.
    A table of more than ``MAX_ROWS`` rows shows that many, evenly spaced, and says so.
    ``ident`` is the figure's id (``fig-NAME`` for the papers' figures, docs/figures.md)."""
    from benchlang.report.html.plots import thin

    labelled = svg.replace("<svg ", f"<svg role='img' aria-label='{esc(alt)}' ", 1)
    caption = esc(alt) + (f" <span class='note'>{esc(note)}</span>" if note else "")
    keep, thinned = thin(len(rows), MAX_ROWS)
    shown = (
        f"{len(rows)} rows"
        if thinned is None
        else f"{keep.size:,} of {len(rows):,} rows, evenly spaced"
    )
    data = table(headers, rows if thinned is None else [rows[i] for i in keep.tolist()])
    attr = f' id="{esc(ident)}"' if ident else ""
    return (
        f"<figure class='plot'{attr}>{labelled}<figcaption>{caption}</figcaption>"
        f"<details><summary>data behind this plot ({shown})</summary>{data}</details>"
        "</figure>"
    )


def section(ident: str, title: str, body: Iterable[str]) -> str:
    return f"<section id='{esc(ident)}'><h2>{esc(title)}</h2>{''.join(body)}</section>"


def warning(text: str, kind: str = "descriptive") -> str:
    """A visible box: results that are descriptive only, or failures."""
    return f"<div class='{kind}' role='note'>{esc(text)}</div>"


def document(title: str, subtitle: str, sections: Sequence[tuple[str, str, str]]) -> str:
    """The whole page: ``sections`` are (id, title, html) in order, with a table of contents."""
    toc = "".join(f"<li><a href='#{esc(i)}'>{esc(t)}</a></li>" for i, t, _ in sections)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><p class='note'>{esc(subtitle)}</p>"
        f"<nav aria-label='sections'><ul>{toc}</ul></nav></header><main>"
        + "".join(body for _, _, body in sections)
        + "</main></body></html>\n"
    )
