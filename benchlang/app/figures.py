"""``benchlang figure`` and the notebook's figures: the papers' figures of a stored run, listed,
or exported one, several or all at once as SVG, PDF or PNG with the numbers behind them as CSV
(docs/figures.md). Every figure of a command is built and drawn before a file is written.

The figures are built from the same inputs as the HTML report (``app.report.report_inputs``)
and drawn by the same functions (``report.figures``): one drawing path.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchlang import model
from benchlang.errors import UserError
from benchlang.report.atomic import write_atomic
from benchlang.report.figures.render import FORMATS, NOTES
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
        store: str | Path | Sequence[str | Path],
        plan_hash: str | None = None,
        experiment: model.Experiment | None = None,
        *,
        names: Mapping[str, str] | None = None,
        notes: str = "below",
    ) -> None:
        """``store``: one store, or several of one experiment (a campaign's sessions: a figure
        that would pool them does not apply, ``report.figures.sessions``). ``names`` renames configurations or levels in every figure (``--label``,
        ``report.figures.relabel``); ``notes`` "below" draws each figure's notes under it,
        "none" leaves them to the caption in the file's metadata (``--notes``)."""
        if notes not in NOTES:
            raise UserError(f"no notes placement {notes!r}", hint="--notes below or none")
        self.store, self.plan_hash, self.experiment = store, plan_hash, experiment
        self.names = dict(names or {})
        self.notes = notes
        self._inputs: Any = None

    def named(self, names: Mapping[str, str] | None, notes: str = "below") -> FigureSource:
        """This store's figures with other names and notes placement, sharing what was read
        and analysed (a notebook's ``figure(name, labels=..., notes=...)``)."""
        other = FigureSource(self.store, self.plan_hash, self.experiment, names=names, notes=notes)
        other._inputs = self._inputs
        if self._inputs is None:  # read once, shared from now on by both
            other._inputs = self._inputs = self.inputs
        return other

    def _renamed(self, built: Sequence[FigureData]) -> list[FigureData]:
        """The figures with ``names`` applied; a name that renames nothing is an error."""
        from benchlang.report.figures import labels
        from benchlang.report.figures.relabel import check_names, relabelled

        if not self.names:
            return list(built)
        known = labels(self.inputs)
        levels = [v for *_, lv in self.inputs.data.configurations() for v in lv.values()]
        check_names(self.names, known, levels)
        return [relabelled(data, self.names) for data in built]

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
        from benchlang.report.figures.sessions import applicable

        return [
            Listed(kind.name, kind.line, data is not None, reason)
            for kind, data, reason in applicable(self.inputs, metric)
        ]

    def data(self, name: str, metric: str | None = None) -> FigureData:
        """The numbers of figure ``name`` (``NotApplicable``, a UserError, says why it
        cannot be)."""
        from benchlang.report.figures import kind_of
        from benchlang.report.figures.sessions import build

        return self._renamed([build(kind_of(name), self.inputs, metric)])[0]

    def picture(self, data: FigureData, fmt: str, style: str | None = None) -> Picture:
        """Figure ``data`` drawn as ``fmt`` ("svg", "pdf" or "png"), with what matplotlib said
        while drawing it. A style of the user's that matplotlib cannot draw with (a size too
        large for a PNG, ``text.usetex`` without LaTeX) is a UserError naming it, not a
        traceback; without one, a failure is benchlang's and is raised as it is."""
        from benchlang.report.figures import kind_of, labels
        from benchlang.report.figures.render import STYLES, Palette, draw, matplotlib_said

        palette = Palette([self.names.get(label, label) for label in labels(self.inputs)])
        with matplotlib_said() as said:
            try:
                content = draw(data, kind_of(data.name).draw, palette, fmt, style, self.notes)
            except UserError:
                raise
            except Exception as err:
                if style is None or style in STYLES:
                    raise
                raise UserError(
                    f"matplotlib cannot draw {data.name} with style {style}: {err}",
                    hint="leave out --style, or fix the style (figure.figsize, savefig.dpi and "
                    "text.usetex are the usual causes)",
                ) from None
        return Picture(content, tuple(said))

    def export(
        self,
        name: str,
        out: str | Path,
        *,
        data_csv: str | Path | None = None,
        style: str | None = None,
        metric: str | None = None,
    ) -> Written:
        """Draw figure ``name`` into ``out`` (format by suffix) and, when asked, its rows into
        ``data_csv``: both made before either file is written."""
        fmt = format_of(out)
        data = self.data(name, metric)
        drawn = self.picture(data, fmt, style)
        files = [(Path(out), drawn.content)]
        if data_csv is not None:
            files.append((Path(data_csv), csv_text(data).encode("utf-8")))
        write_files(files)
        return Written(Path(out), data, drawn.said)

    def select(
        self, names: Sequence[str] | None, metric: str | None = None
    ) -> tuple[list[FigureData], dict[str, str]]:
        """The numbers of figures ``names`` in the order asked (None: every one that applies,
        in the report's order) and the reason of each figure that does not apply and was not
        named. A named figure that does not apply, or nothing to draw, is a UserError with the
        reasons."""
        if names is not None:
            return self._renamed(self._named(names, metric)), {}
        listed = self._applicable(metric)
        built = self._renamed([data for data, _reason in listed.values() if data is not None])
        skipped = {name: r or "" for name, (d, r) in listed.items() if d is None}
        if not built:
            reasons = list(dict.fromkeys(skipped.values()))
            more = f"; and {len(reasons) - 3} more reasons" if len(reasons) > 3 else ""
            raise UserError(
                f"no figure applies to this store: {'; '.join(reasons[:3])}{more}",
                hint="benchlang figure STORE --list says why each does not",
            )
        return built, skipped

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
        ``data_dir/NAME.csv`` when asked. Every figure is built and drawn before a directory is
        made or a file written: one that does not apply or cannot be drawn stops the command
        with nothing written; a file that cannot be written says which were."""
        if fmt not in FORMATS:
            raise UserError(f"no format {fmt!r}", hint="--format svg, pdf or png")
        built, skipped = self.select(names, metric)
        folders = [Path(directory)] + ([Path(data_dir)] if data_dir is not None else [])
        for folder in folders:
            if folder.exists() and not folder.is_dir():
                raise UserError(
                    f"{folder} is a file, and several figures are written into a directory",
                    hint="-o DIR (and --data DIR) name a directory, made if it does not exist",
                )
        drawn = [self.picture(data, fmt, style) for data in built]
        for folder in folders:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise UserError(f"cannot make directory {folder}: {err.strerror}") from None
        files, written = [], []
        for data, picture in zip(built, drawn, strict=True):
            path = Path(directory) / f"{data.name}.{fmt}"
            files.append((path, picture.content))
            if data_dir is not None:
                files.append((Path(data_dir) / f"{data.name}.csv", csv_text(data).encode()))
            written.append(Written(path, data, picture.said))
        write_files(files)
        return Exported(tuple(written), skipped)

    def _applicable(self, metric: str | None) -> dict[str, tuple[FigureData | None, str | None]]:
        from benchlang.report.figures.sessions import applicable

        return {kind.name: (data, reason) for kind, data, reason in applicable(self.inputs, metric)}

    def _named(self, names: Sequence[str], metric: str | None) -> list[FigureData]:
        from benchlang.report.figures import NotApplicable, kind_of
        from benchlang.report.figures.sessions import build

        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise UserError(f"figure named twice: {', '.join(twice)}", hint="name each figure once")
        kinds = [kind_of(name) for name in names]  # an unknown name: at once
        built, refused = [], []
        for kind in kinds:
            try:
                built.append(build(kind, self.inputs, metric))
            except NotApplicable as err:
                refused.append(f"{kind.name}: {err.message}")
        if refused:
            raise UserError(
                "not drawn, as these figures do not apply to this store: " + "; ".join(refused),
                hint="benchlang figure STORE --list names those that apply (--all draws them)",
            )
        return built


@attrs.frozen
class Picture:
    """A figure drawn: its bytes and what matplotlib warned or logged while drawing it (a font
    the user's style names that is not installed, a layout it could not apply), said as notes
    rather than reaching the user as a library's warning."""

    content: bytes
    said: tuple[str, ...] = ()


@attrs.frozen
class Written:
    """One figure written (``path`` None: its numbers only, nothing drawn), its numbers,
    and what matplotlib said drawing it."""

    path: Path | None
    data: FigureData
    said: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        path = None if self.path is None else str(self.path)
        return {"path": path, **self.data.to_dict(), "warnings": list(self.said)}


@attrs.frozen
class Exported:
    """What ``FigureSource.export_many`` wrote, per figure in the order asked (``--all``: the
    report's), and the reason of each figure ``--all`` skipped."""

    written: tuple[Written, ...]
    skipped: dict[str, str]


def names_of(pairs: Sequence[str], path: str | None = None) -> dict[str, str]:
    """The names of ``--labels FILE`` then of the ``--label CONFIG=TEXT`` pairs (which win)."""
    from benchlang.report.figures.relabel import parse_pairs, read_labels

    return {**(read_labels(path) if path else {}), **parse_pairs(pairs)}


def listed_text(listed: list[Listed]) -> str:
    """The figures as ``benchlang figure --list`` prints them: those that apply, one line
    each, then those that do not, each with its reason."""
    width = max(len(f.name) for f in listed)
    lines = [f"{f.name:<{width}}  {f.line}" for f in listed if f.applies]
    skipped = [f"{f.name:<{width}}  {f.reason}" for f in listed if not f.applies]
    if skipped:
        lines += ["", "not applicable to this store:", *skipped]
    return "\n".join(lines) + "\n"


def format_of(path: str | Path) -> str:
    """The format a file's suffix asks for; any other suffix is an error, not a guess."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise UserError(
            f"cannot tell the format of {path}: name it .svg, .pdf or .png",
            hint="e.g. -o cdf.pdf (fonts embedded as TrueType, as ACM and IEEE require)",
        )
    return suffix


def write_files(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write each (path, content) in turn; one that cannot be written is a UserError that
    says which were written before it, so nothing is half-written silently."""
    done: list[str] = []
    for path, content in files:
        try:
            write_atomic(path, content)
        except OSError as err:
            before = f"written before it: {', '.join(done)}" if done else "nothing written"
            raise UserError(f"cannot write {path}: {err.strerror} ({before})") from None
        done.append(str(path))


def csv_text(data: FigureData) -> str:
    """The figure's rows as CSV: a header of its columns, empty cells where no number is."""

    def cell(v: object) -> object:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return ""
        return v

    out = io.StringIO(newline="")
    w = csv.writer(out)
    w.writerow(data.columns)
    w.writerows([cell(v) for v in row] for row in data.rows)
    return out.getvalue()


def write_csv(data: FigureData, path: str | Path) -> None:
    """The figure's rows as CSV into ``path`` (``csv_text``)."""
    write_files([(Path(path), csv_text(data).encode("utf-8"))])
