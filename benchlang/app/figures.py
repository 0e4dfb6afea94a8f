"""``benchlang figure``: the papers' figures of a stored run, listed or exported one at a time
as SVG, PDF or PNG with the numbers behind them as CSV (docs/figures.md).

The figures are built from the same inputs as the HTML report (``app.report.report_inputs``)
and drawn by the same functions (``report.figures``): one drawing path.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


class FigureSource:
    """A store's figures with what they are built from gathered once: several figures in one
    command, or in a notebook, read the store, analyse it and import matplotlib once (a single
    export pays all three; docs/figures.md#cost)."""

    def __init__(
        self,
        store: str | Path,
        plan_hash: str | None = None,
        experiment: model.Experiment | None = None,
    ) -> None:
        self.store, self.plan_hash, self.experiment = store, plan_hash, experiment
        self._inputs: Any = None

    @property
    def inputs(self) -> Any:
        """``app.report.report_inputs`` of the store, built at first use."""
        if self._inputs is None:
            from benchlang.app.report import report_inputs

            self._inputs = report_inputs(
                self.store, self.plan_hash, self.experiment, with_headline=False
            )
        return self._inputs

    def listed(self, metric: str | None = None) -> list[Listed]:
        """Every figure benchlang draws, each saying whether it applies to this store."""
        from benchlang.report.figures import applicable

        return [
            Listed(kind.name, kind.line, data is not None, reason)
            for kind, data, reason in applicable(self.inputs, metric)
        ]

    def data(self, name: str, metric: str | None = None) -> FigureData:
        """The numbers of figure ``name`` (``NotApplicable``, a UserError, says why it
        cannot be)."""
        from benchlang.report.figures import kind_of

        return kind_of(name).build(self.inputs, metric)

    def picture(self, data: FigureData, fmt: str, style: str | None = None) -> bytes:
        """Figure ``data`` drawn as ``fmt`` ("svg", "pdf" or "png") bytes."""
        from benchlang.report.figures import kind_of, labels
        from benchlang.report.figures.render import Palette, draw

        return draw(data, kind_of(data.name).draw, Palette(labels(self.inputs)), fmt, style)

    def export(
        self,
        name: str,
        out: str | Path,
        *,
        data_csv: str | Path | None = None,
        style: str | None = None,
        metric: str | None = None,
    ) -> FigureData:
        """Draw figure ``name`` into ``out`` (format by suffix) and, when asked, its rows into
        ``data_csv``; the figure's numbers."""
        fmt = format_of(out)
        data = self.data(name, metric)
        _write(Path(out), self.picture(data, fmt, style))
        if data_csv is not None:
            write_csv(data, data_csv)
        return data

    def export_many(
        self,
        names: Sequence[str] | None,
        directory: str | Path,
        fmt: str,
        *,
        data_dir: str | Path | None = None,
        style: str | None = None,
        metric: str | None = None,
    ) -> Exported:
        """Figures ``names`` (None: every one that applies) as ``directory/NAME.fmt``, with
        ``data_dir/NAME.csv`` when asked. Every named figure is built before any is drawn:
        one that does not apply stops the command with its reason and nothing written."""
        if fmt not in FORMATS:
            raise UserError(f"no format {fmt!r}", hint="--format svg, pdf or png")
        if names is None:
            listed = self._applicable(metric)
            built = [data for data, _reason in listed.values() if data is not None]
            skipped = {name: r for name, (d, r) in listed.items() if d is None and r}
        else:
            built, skipped = self._named(names, metric), {}
        if not built:
            raise UserError("no figure applies to this store", hint="benchlang figure STORE --list")
        folders = [Path(directory)] + ([Path(data_dir)] if data_dir is not None else [])
        for folder in folders:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise UserError(f"cannot make directory {folder}: {err.strerror}") from None
        written = []
        for data in built:
            path = Path(directory) / f"{data.name}.{fmt}"
            _write(path, self.picture(data, fmt, style))
            if data_dir is not None:
                write_csv(data, Path(data_dir) / f"{data.name}.csv")
            written.append((path, data))
        return Exported(tuple(written), skipped)

    def _applicable(self, metric: str | None) -> dict[str, tuple[FigureData | None, str | None]]:
        from benchlang.report.figures import applicable

        return {kind.name: (data, reason) for kind, data, reason in applicable(self.inputs, metric)}

    def _named(self, names: Sequence[str], metric: str | None) -> list[FigureData]:
        from benchlang.report.figures import NotApplicable, kind_of

        kinds = [kind_of(name) for name in dict.fromkeys(names)]  # an unknown name: at once
        built, refused = [], []
        for kind in kinds:
            try:
                built.append(kind.build(self.inputs, metric))
            except NotApplicable as err:
                refused.append(f"{kind.name}: {err.message}")
        if refused:
            raise UserError(
                "not drawn, as these figures do not apply to this store: " + "; ".join(refused),
                hint="benchlang figure STORE --list names those that apply (--all draws them)",
            )
        return built


@attrs.frozen
class Exported:
    """What ``FigureSource.export_many`` wrote: (path, numbers) per figure, in the order asked
    (``--all``: the report's), and the reason of each figure ``--all`` skipped."""

    written: tuple[tuple[Path, FigureData], ...]
    skipped: dict[str, str]


def listed_text(listed: list[Listed]) -> str:
    """The figures as ``benchlang figure --list`` prints them: those that apply, one line
    each, then those that do not, each with its reason."""
    width = max(len(f.name) for f in listed)
    lines = [f"{f.name:<{width}}  {f.line}" for f in listed if f.applies]
    skipped = [f"{f.name:<{width}}  {f.reason}" for f in listed if not f.applies]
    if skipped:
        lines += ["", "not applicable to this store:", *skipped]
    return "\n".join(lines) + "\n"


def list_figures(
    store: str | Path,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    metric: str | None = None,
) -> list[Listed]:
    """Every figure benchlang draws, each saying whether it applies to this store."""
    return FigureSource(store, plan_hash, experiment).listed(metric)


def figure_data(
    store: str | Path,
    name: str,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    metric: str | None = None,
) -> FigureData:
    """The numbers of figure ``name`` (``NotApplicable``, a UserError, says why it cannot be)."""
    return FigureSource(store, plan_hash, experiment).data(name, metric)


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
    source = FigureSource(store, plan_hash, experiment)
    return source.export(name, out, data_csv=data_csv, style=style, metric=metric)


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
