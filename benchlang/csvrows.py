"""Reading CSV files of numbers for people: clear errors, never a traceback.

One reader for every command that takes numbers from a CSV (``analyze --data``, ``profile``,
``stopping-eval``, ``import``): the same header detection, the same column selection (a name,
or a 1-based number), the same spelling of a missing value and the same error messages.
It sits just above ``benchlang.errors`` so that any layer may use it.
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchlang.errors import UserError

#: Cells that mean "no sample here" (a gap in condition data, a failed trial).
MISSING = frozenset({"", "nan", "na", "null"})


def parse_number(cell: str) -> float | None:
    """The number a cell holds (NaN for a missing value), or None when it is not a number."""
    text = cell.strip()
    if text.lower() in MISSING:
        return math.nan
    try:
        return float(text)
    except ValueError:
        return None


@attrs.frozen
class Table:
    """A CSV file's cells: column names (from the header, else "1", "2", ...) and data rows."""

    path: Path
    names: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    has_header: bool

    def index(self, column: str) -> int:
        """The position of a column given by name or by 1-based number."""
        if column in self.names:
            return self.names.index(column)
        if column.isdigit() and 1 <= int(column) <= len(self.names):
            return int(column) - 1
        raise UserError(f"{self.path}: no column {column!r}", f"columns: {', '.join(self.names)}")

    def is_numeric(self, index: int) -> bool:
        """Every cell of the column is a number or missing, and at least one is a number."""
        cells = [r[index] if index < len(r) else "" for r in self.rows]
        numbers = [parse_number(c) for c in cells]
        return all(v is not None for v in numbers) and any(
            v is not None and not math.isnan(v) for v in numbers
        )

    def numeric_names(self) -> list[str]:
        """Names of the numeric columns, in file order."""
        return [n for i, n in enumerate(self.names) if self.is_numeric(i)]

    def numbers(self, column: str, *, allow_missing: bool = True) -> np.ndarray:
        """A column's values as floats; missing cells are NaN, or an error unless allowed."""
        index = self.index(column)
        first = 2 if self.has_header else 1
        values = []
        for line, row in enumerate(self.rows, start=first):
            cell = row[index] if index < len(row) else ""
            value = parse_number(cell)
            if value is None:
                raise UserError(f"{self.path}:{line}: column {column!r}: not a number: {cell!r}")
            if not allow_missing and not math.isfinite(value):
                raise UserError(
                    f"{self.path}:{line}: column {column!r} holds {cell.strip() or 'an empty cell'!r}",
                    "every sample must be a finite number here",
                )
            values.append(value)
        return np.array(values, dtype=float)

    def column(self, column: str | None, *, allow_missing: bool = True) -> tuple[np.ndarray, str]:
        """The chosen column, or the only numeric one when ``column`` is None; and its name."""
        if column is None:
            numeric = self.numeric_names()
            if len(numeric) != 1:
                raise UserError(
                    f"{self.path} has {len(numeric)} numeric columns ({', '.join(numeric) or 'none'})",
                    "choose one with --column NAME",
                )
            column = numeric[0]
        name = self.names[self.index(column)]
        return self.numbers(column, allow_missing=allow_missing), name


def _read_cells(path: Path) -> list[list[str]]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            return [r for r in csv.reader(f) if any(c.strip() for c in r)]
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as err:
        raise UserError(f"{path} is not a readable CSV file: {err}") from None


def read_table(path: str | Path, *, header: bool | None = None) -> Table:
    """A CSV file as a Table; ``header`` None detects it (a first row that is not all numbers).

    Blank lines are skipped; a file without data rows is an error.
    """
    path = Path(path)
    cells = _read_cells(path)
    if header is None:
        header = bool(cells) and any(parse_number(c) is None for c in cells[0])
    rows = cells[1:] if header else cells
    if not rows:
        raise UserError(f"{path} has no data rows")
    width = max(len(r) for r in cells)
    names = [c.strip() for c in cells[0]] if header else [str(i + 1) for i in range(width)]
    return Table(path, tuple(names), tuple(tuple(r) for r in rows), header)


def read_numeric_column(
    path: str | Path,
    column: str | None = None,
    *,
    header: bool | None = None,
    allow_missing: bool = True,
) -> tuple[np.ndarray, str]:
    """One numeric column of a CSV file (by name, 1-based number, or the only numeric one)."""
    return read_table(path, header=header).column(column, allow_missing=allow_missing)


def numbers_of(cells: Iterable[str], where: str) -> np.ndarray:
    """Cells already picked from rows (e.g. of ``read_rows``) as floats, missing as NaN."""
    values = []
    for cell in cells:
        value = parse_number(cell)
        if value is None:
            raise UserError(f"{where}: not a number: {cell!r}")
        values.append(value)
    return np.array(values, dtype=float)


def read_header(path: str | Path) -> list[str]:
    """The column names of a CSV file with a header (its first non-blank row)."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            for row in csv.reader(f):
                if any(c.strip() for c in row):
                    return [c.strip() for c in row]
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as err:
        raise UserError(f"{path} is not a readable CSV file: {err}") from None
    raise UserError(f"{path} has no data rows")


def read_columns(
    path: str | Path, numeric: Collection[str], text: Collection[str]
) -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """Chosen columns of a CSV file with a header, whole: ``numeric`` ones as float arrays
    (missing cells NaN), ``text`` ones as arrays of str; and the header's names.

    A well-formed file is read by numpy's C parser, one pass per column (a million rows in
    about a second); any cell that parser refuses (a missing value, a stray quote, a short
    row) sends the file through the careful reader, whose error names the line and column.
    A name not in the header is a UserError listing the columns.
    """
    path = Path(path)
    names = read_header(path)
    for name in (*numeric, *text):
        if name not in names:
            raise UserError(f"{path} has no column {name!r}", f"columns: {', '.join(names)}")
    try:
        with warnings.catch_warnings():  # numpy's "input contained no data": said in one line
            warnings.simplefilter("ignore", UserWarning)
            return tuple(names), _read_columns_fast(path, names, numeric, text)
    except ValueError:
        pass
    table = read_table(path, header=True)
    columns = {name: table.numbers(name) for name in numeric}
    for name in text:
        i = table.index(name)
        columns[name] = np.array([r[i].strip() if i < len(r) else "" for r in table.rows], str)
    return tuple(names), columns


def _read_columns_fast(
    path: Path, names: list[str], numeric: Collection[str], text: Collection[str]
) -> dict[str, np.ndarray]:
    """numpy's parser on a plain file (ValueError for anything it cannot take as it is)."""
    options: dict[str, Any] = {
        "delimiter": ",",
        "skiprows": 1,
        "comments": None,
        "encoding": "utf-8-sig",
        "quotechar": '"',
    }
    columns: dict[str, np.ndarray] = {}
    try:
        if numeric:
            wanted = tuple(names.index(name) for name in numeric)
            values = np.loadtxt(path, usecols=wanted, dtype=float, ndmin=2, **options)
            columns.update({name: values[:, i].copy() for i, name in enumerate(numeric)})
            del values
        for name in text:  # as str objects, then one cast: 40% less than dtype=str's pass
            cells = np.loadtxt(path, usecols=names.index(name), dtype=object, ndmin=1, **options)
            columns[name] = np.char.strip(cells.astype(str))
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(str(err)) from None
    if any(v.size == 0 for v in columns.values()):
        raise ValueError("no data rows")
    return columns


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows of a CSV file with a header, as dicts; UserError when unreadable or empty."""
    table = read_table(path, header=True)
    return [
        {name: row[i] if i < len(row) else "" for i, name in enumerate(table.names)}
        for row in table.rows
    ]
