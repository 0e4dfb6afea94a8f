"""``benchlang figure``: the papers' figures of a stored run, listed or exported one at a time
as SVG, PDF or PNG with the numbers behind them as CSV (docs/figures.md).

The figures are built from the same inputs as the HTML report (``app.report.report_inputs``)
and drawn by the same functions (``report.figures``): one drawing path.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import attrs

from benchlang import model
from benchlang.errors import UserError
from benchlang.report.figures.render import FORMATS
from benchlang.stats.figure_data import FigureData


@attrs.frozen
class Listed:
    """One figure of the registry: whether it applies to the store, and if not, why."""

    name: str
    line: str
    applies: bool
    reason: str | None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "line": self.line,
            "applies": self.applies,
            "reason": self.reason,
        }


def _inputs(store: str | Path, plan_hash: str | None, experiment: model.Experiment | None):
    from benchlang.app.report import report_inputs

    return report_inputs(store, plan_hash, experiment, with_headline=False)


def list_figures(
    store: str | Path,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    metric: str | None = None,
) -> list[Listed]:
    """Every figure benchlang draws, each saying whether it applies to this store."""
    from benchlang.report.figures import applicable

    return [
        Listed(kind.name, kind.line, data is not None, reason)
        for kind, data, reason in applicable(_inputs(store, plan_hash, experiment), metric)
    ]


def figure_data(
    store: str | Path,
    name: str,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    metric: str | None = None,
) -> FigureData:
    """The numbers of figure ``name`` (``NotApplicable``, a UserError, says why it cannot be)."""
    from benchlang.report.figures import kind_of

    kind = kind_of(name)
    return kind.build(_inputs(store, plan_hash, experiment), metric)


def format_of(path: str | Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise UserError(
            f"cannot tell the format of {path}: name it .svg, .pdf or .png",
            hint="e.g. -o cdf.pdf (fonts embedded as TrueType, as ACM and IEEE require)",
        )
    return suffix


def export_figure(
    store: str | Path,
    name: str,
    out: str | Path,
    *,
    data_csv: str | Path | None = None,
    style: str | None = None,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    metric: str | None = None,
) -> FigureData:
    """Draw figure ``name`` of the store into ``out`` (format by suffix) and, when asked, its
    rows into ``data_csv``; the figure's numbers."""
    from benchlang.report.figures import kind_of, labels
    from benchlang.report.figures.render import Palette, draw

    fmt = format_of(out)
    kind = kind_of(name)
    inputs = _inputs(store, plan_hash, experiment)
    data = kind.build(inputs, metric)
    picture = draw(data, kind.draw, Palette(labels(inputs)), fmt, style)
    _write(Path(out), picture)
    if data_csv is not None:
        write_csv(data, data_csv)
    return data


def _write(path: Path, content: bytes) -> None:
    try:
        path.write_bytes(content)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror}") from None


def write_csv(data: FigureData, path: str | Path) -> None:
    """The figure's rows as CSV: a header of its columns, empty cells where no number is."""

    def cell(v: object) -> object:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return ""
        return v

    try:
        with Path(path).open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(data.columns)
            w.writerows([cell(v) for v in row] for row in data.rows)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror}") from None
