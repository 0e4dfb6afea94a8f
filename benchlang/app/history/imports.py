"""``history import``: series from Apache Otava's CSV layout (docs/history.md "Series from
elsewhere"), as Otava's own files write them, in one transaction: a bad row writes nothing and
is named by its line and column."""

from __future__ import annotations

import csv
import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path

from benchlang.errors import UserError
from benchlang.history.db import History
from benchlang.history.points import Point, Run, run_key
from benchlang.history.series import add_runs
from benchlang.history.stored import store_changes

DATE_FORMATS = (
    "%Y.%m.%d %H:%M:%S %z",  # Otava's sample CSVs: 2024.01.01 3:00:00 +0100
    "%Y.%m.%d %H:%M:%S",
    "%Y.%m.%d %H:%M %z",
    "%Y.%m.%d %H:%M",
    "%Y.%m.%d",
    "%Y-%m-%d %H:%M:%S %z",  # Otava's output: 2024-01-01 02:00:00 +0000
    "%Y/%m/%d %H:%M:%S %z",
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d",
)
DATE_HINT = (
    "dates as Otava's CSVs write them (2024.01.01 3:00:00 +0100), ISO 8601 "
    "(2024-01-01T03:00:00+01:00) or Unix seconds (1704074400); without a zone, UTC"
)


def parse_date(text: str) -> str | None:
    """An ISO-8601 UTC date from the spellings Otava's CSVs use, or None."""
    cell = text.strip()
    when = None
    try:
        seconds = float(cell)
    except ValueError:
        seconds = math.nan
    if math.isfinite(seconds):
        when = dt.datetime.fromtimestamp(seconds, dt.UTC)
    if when is None:
        try:
            when = dt.datetime.fromisoformat(cell.replace("Z", "+00:00"))
        except ValueError:
            for fmt in DATE_FORMATS:
                try:
                    when = dt.datetime.strptime(cell, fmt)
                    break
                except ValueError:
                    continue
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).isoformat(timespec="seconds")


def _rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the data rows with their line numbers; comma, semicolon or tab
    separated (Otava reads both of its samples' separators), ``#`` lines skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"cannot read {path}: {err}") from None
    numbered = [(i, line) for i, line in enumerate(lines, 1) if line.strip()]
    numbered = [(i, line) for i, line in numbered if not line.lstrip().startswith("#")]
    if not numbered:
        raise UserError(f"{path} is empty")
    head = numbered[0][1]
    sep = max(",;\t", key=head.count)
    table = list(csv.reader([line for _, line in numbered], delimiter=sep))
    names = [n.strip() for n in table[0]]
    return names, [(i, row) for (i, _), row in zip(numbered[1:], table[1:], strict=True)]


def _number(cell: str) -> float | None:
    text = cell.strip()
    if text.lower() in ("", "nan", "na", "null"):
        return math.nan
    try:
        return float(text)
    except ValueError:
        return None


def _point(metric: str, name: str, value: float, better: str) -> Point:
    return Point(metric, name, "unknown", None, better, 50.0, value, math.nan, math.nan, "none",
                 (), math.nan, 1, "not tested")  # fmt: skip


def read_otava_csv(
    path: str | Path,
    *,
    experiment: str | None = None,
    time_column: str = "time",
    commit_column: str = "commit",
    higher_is_better: Sequence[str] = (),
) -> list[tuple[Run, list[Point]]]:
    """Every row as a run, each metric column a point without interval; the whole file read
    and checked before anything is written."""
    path = Path(path)
    names, rows = _rows(path)
    if time_column not in names:
        raise UserError(f"{path}: no column {time_column!r}", f"columns: {', '.join(names)}")
    t = names.index(time_column)
    c = names.index(commit_column) if commit_column in names else None
    b = names.index("branch") if "branch" in names else None  # Otava's multi-branch sample

    def cell(row: list[str], i: int) -> str:
        return row[i] if i < len(row) else ""

    def numeric(i: int) -> bool:
        cells = [cell(r, i).strip() for _, r in rows]
        filled = [x for x in cells if x and x.lower() not in ("nan", "na", "null")]
        return bool(filled) and sum(_number(x) is not None for x in filled) * 2 > len(filled)

    metrics = [n for i, n in enumerate(names) if i not in (t, c, b) and numeric(i)]
    if not metrics:
        raise UserError(f"{path}: no numeric metric column besides {time_column!r}")
    unknown = sorted(set(higher_is_better) - set(metrics))
    if unknown:
        raise UserError(f"--higher-is-better {', '.join(unknown)}: not a metric column of {path}")
    name = experiment or path.stem
    out = []
    for line, row in rows:
        date = parse_date(cell(row, t))
        if date is None:
            raise UserError(
                f"{path}:{line}: column {time_column!r}: {cell(row, t).strip()!r} is not a date",
                DATE_HINT,
            )
        points = []
        for m in metrics:
            value = _number(cell(row, names.index(m)))
            if value is None:
                raise UserError(
                    f"{path}:{line}: column {m!r}: {cell(row, names.index(m)).strip()!r} is not "
                    "a number",
                    "a metric's cells are numbers or empty (no value for that run)",
                )
            points.append(_point(m, name, value, "higher" if m in higher_is_better else "lower"))
        commit = (cell(row, c).strip() or None) if c is not None else None
        key = run_key(None, points, f"{name} {date} {commit}")
        branch = (cell(row, b).strip() or None) if b is not None else None
        out.append((Run(key, name, None, commit, branch, date, str(path), {}, {}), points))
    return out


def import_rows(h: History, read: Sequence[tuple[Run, list[Point]]]) -> list[bool]:
    """The rows into an open history, one transaction."""
    return add_runs(h, read, then=store_changes)
