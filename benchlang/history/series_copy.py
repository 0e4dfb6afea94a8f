"""The copy of a series a history keeps beside its points (history.stored): rows of ``CHUNK``
points, so that an add rewrites the last row only and a read decodes no more than it uses.

A row is a JSON header (unit, better, percentile), the points' numbers (little-endian doubles:
values, lower, upper, trials; 32 bytes a point, no text encoding) and their text columns
(commits, dates, run keys, independence verdicts; newline-joined, then zlib level 1: hex
commits and ISO dates shrink to about a third). The bytes read are most of what a PostgreSQL
history spends on a copy (an add and ``history changes`` each read every row), so they are kept
few. A series built from rows decodes every row's numbers and leaves its text columns to
:class:`Column`, which inflates a row the first time one of its points is read: change points
need a few commits, the text of ``history changes`` none.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from benchlang.history.points import Point, Run
from benchlang.history.series import Series

CHUNK = 1000  # points a row holds: an add rewrites the last row only
_SEP, _PART = "\n", "\x1e"

Row = tuple[int, str, bytes, bytes]  # points, header, numbers, texts


class _Texts:
    """The rows' compressed text columns, each row inflated once, on first use."""

    def __init__(self, blobs: Sequence[bytes], sizes: Sequence[int]) -> None:
        self.blobs = list(blobs)
        self.starts = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        self._rows: dict[int, list[str]] = {}

    def row(self, r: int) -> list[str]:
        """Row ``r``'s four columns, each newline-joined."""
        got = self._rows.get(r)
        if got is None:
            got = self._rows[r] = zlib.decompress(self.blobs[r]).decode("utf-8").split(_PART)
        return got


class Column(Sequence[Any]):
    """One text column of a series' copy (``which``: 0 commits, 1 dates, 2 run keys, 3
    independence), split row by row on demand; equal to any sequence with the same items.
    Commits read "" back as None (a run without one)."""

    def __init__(self, texts: _Texts, which: int) -> None:
        self._texts = texts
        self._which = which
        self._rows: dict[int, tuple[Any, ...]] = {}

    def _row(self, r: int) -> tuple[Any, ...]:
        got = self._rows.get(r)
        if got is None:
            items = self._texts.row(r)[self._which].split(_SEP)
            got = tuple(x or None for x in items) if self._which == 0 else tuple(items)
            self._rows[r] = got
        return got

    def __len__(self) -> int:
        return int(self._texts.starts[-1])

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return tuple(self)[i]
        n = len(self)
        i = i + n if i < 0 else i
        if not 0 <= i < n:
            raise IndexError("series column index out of range")
        starts = self._texts.starts
        r = int(np.searchsorted(starts, i, side="right")) - 1
        return self._row(r)[i - int(starts[r])]

    def __iter__(self) -> Iterator[Any]:
        for r in range(len(self._texts.blobs)):
            yield from self._row(r)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Column({len(self)} items)"


def _texts(columns: Sequence[str]) -> bytes:
    return zlib.compress(_PART.join(columns).encode("utf-8"), 1)


def _numbers(arrays: np.ndarray) -> bytes:
    return np.ascontiguousarray(arrays, dtype="<f8").tobytes()


def _header(unit: str | None, better: str, percentile: float) -> str:
    return json.dumps({"unit": unit, "better": better, "percentile": percentile})


def pack(s: Series, start: int, end: int) -> Row:
    """Points [start, end) of the series as one row."""
    cut = slice(start, end)
    trials = np.asarray(s.trials[cut], dtype=np.float64)
    numbers = _numbers(np.stack([s.values[cut], s.lower[cut], s.upper[cut], trials]))
    texts = _texts(
        [
            _SEP.join(c or "" for c in s.commits[cut]),
            _SEP.join(s.dates[cut]),
            _SEP.join(s.run_keys[cut]),
            _SEP.join(s.independence[cut]),
        ]
    )
    return (trials.size, _header(s.unit, s.better, s.percentile), numbers, texts)


def rows_of(s: Series) -> list[Row]:
    """Every row of the series' copy."""
    return [pack(s, c * CHUNK, (c + 1) * CHUNK) for c in range((len(s) - 1) // CHUNK + 1)]


def last_date(rows: Sequence[Row]) -> str:
    """The date of the copy's newest point."""
    return _Texts([rows[-1][3]], [rows[-1][0]]).row(0)[1].rpartition(_SEP)[2]


def appended(rows: Sequence[Row], run: Run, p: Point) -> tuple[list[Row], int]:
    """The rows with ``run``'s point after the newest, and the index of the first row that
    changed: the last one, refilled, or a new one when the last holds ``CHUNK`` points. The
    header becomes the point's, as the newest point's metadata is the series'."""
    header = _header(p.unit, p.better, p.percentile)
    numbers = np.array([[p.value], [p.lower], [p.upper], [float(p.trials)]])
    items = [x or "" for x in (run.commit, run.date, run.run_key, p.independence)]
    n, _, old_numbers, old_texts = rows[-1]
    if n >= CHUNK:
        return [*rows, (1, header, _numbers(numbers), _texts(items))], len(rows)
    old = np.frombuffer(old_numbers, dtype="<f8").reshape(4, n)
    columns = zlib.decompress(old_texts).decode("utf-8").split(_PART)
    texts = _texts([a + _SEP + b for a, b in zip(columns, items, strict=True)])
    row = (n + 1, header, _numbers(np.concatenate([old, numbers], axis=1)), texts)
    return [*rows[:-1], row], len(rows) - 1


def series_of(key: Sequence[str], rows: Sequence[Row]) -> Series:
    """The series from its rows, in chunk order: numbers decoded, text columns left to
    :class:`Column`."""
    sizes = [int(r[0]) for r in rows]
    numbers = np.concatenate(
        [np.frombuffer(r[2], dtype="<f8").reshape(4, n) for n, r in zip(sizes, rows, strict=True)],
        axis=1,
    )
    h = json.loads(rows[-1][1])
    texts = _Texts([r[3] for r in rows], sizes)
    return Series(
        key[0],
        key[1],
        key[2],
        h["unit"],
        h["better"],
        float(h["percentile"]),
        Column(texts, 0),
        Column(texts, 1),
        Column(texts, 2),
        numbers[0].copy(),
        numbers[1].copy(),
        numbers[2].copy(),
        tuple(numbers[3].astype(np.int64).tolist()),
        Column(texts, 3),
    )
