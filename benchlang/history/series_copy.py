"""The copy of a series a history keeps beside its points (history.stored): rows of ``CHUNK``
points, each one text, so that an add rewrites the last row only and a read decodes no more
than it uses.

A row is a JSON header (unit, better, percentile), then the points' numbers (base64 of
little-endian doubles: values, lower, upper, trials) and each text column newline-joined
(commits, dates, run keys, independence verdicts), separated by ``_PART``: no JSON over the
long parts (encoding them was most of an add's cost). A series built from rows decodes every
row's numbers and leaves its text columns as the rows' texts, split on first use of a row
(:class:`Column`): change points need a few commits, the text of ``history changes`` none.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence

import numpy as np

from benchlang.history.points import Point, Run
from benchlang.history.series import Series

CHUNK = 1000  # points a row holds: an add rewrites the last row only
_SEP, _PART = "\n", "\x1e"

Row = tuple[int, str]  # (points, text)


class Column(Sequence):
    """One text column of a series' copy: each row's newline-joined text, split into a tuple
    the first time one of its points is read; equal to any sequence with the same items."""

    def __init__(self, texts: Sequence[str], sizes: Sequence[int], none: bool = False) -> None:
        self._texts = list(texts)
        self._starts = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        self._none = none
        self._rows: dict[int, tuple] = {}

    def _row(self, r: int) -> tuple:
        got = self._rows.get(r)
        if got is None:
            items = self._texts[r].split(_SEP)
            got = self._rows[r] = tuple(x or None for x in items) if self._none else tuple(items)
        return got

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return tuple(self)[i]
        n = len(self)
        i = i + n if i < 0 else i
        if not 0 <= i < n:
            raise IndexError("series column index out of range")
        r = int(np.searchsorted(self._starts, i, side="right")) - 1
        return self._row(r)[i - int(self._starts[r])]

    def __iter__(self) -> Iterator:
        for r in range(len(self._texts)):
            yield from self._row(r)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Column({len(self)} items)"


def pack(s: Series, start: int, end: int) -> str:
    """Points [start, end) of the series as one row's text."""
    cut = slice(start, end)
    trials = np.asarray(s.trials[cut], dtype=np.float64)
    arrays = np.stack([s.values[cut], s.lower[cut], s.upper[cut], trials])
    return _join(
        _header(s.unit, s.better, s.percentile),
        arrays,
        [
            _SEP.join(c or "" for c in s.commits[cut]),
            _SEP.join(s.dates[cut]),
            _SEP.join(s.run_keys[cut]),
            _SEP.join(s.independence[cut]),
        ],
    )


def rows_of(s: Series, first: int = 0) -> list[tuple[int, int, str]]:
    """(chunk, points, text) of every row from row ``first`` on."""
    last = (len(s) - 1) // CHUNK
    return [
        (c, min(len(s), (c + 1) * CHUNK) - c * CHUNK, pack(s, c * CHUNK, (c + 1) * CHUNK))
        for c in range(first, last + 1)
    ]


def _header(unit: str | None, better: str, percentile: float) -> str:
    return json.dumps({"unit": unit, "better": better, "percentile": percentile})


def _join(header: str, arrays: np.ndarray, texts: list[str]) -> str:
    numbers = base64.b64encode(arrays.astype("<f8").tobytes()).decode("ascii")
    return _PART.join([header, numbers, *texts])


def last_date(rows: Sequence[Row]) -> str:
    """The date of the copy's newest point (its last row's last date)."""
    return rows[-1][1].split(_PART)[3].rpartition(_SEP)[2]


def appended(rows: Sequence[Row], run: Run, p: Point) -> tuple[list[Row], int]:
    """The rows with ``run``'s point after the newest, and the index of the first row that
    changed: the last one, refilled, or a new one when the last holds ``CHUNK`` points. The
    header becomes the point's, as :meth:`Series.appended` does."""
    header = _header(p.unit, p.better, p.percentile)
    numbers = np.array([[p.value], [p.lower], [p.upper], [float(p.trials)]])
    items = [p_ or "" for p_ in (run.commit, run.date, run.run_key, p.independence)]
    n, text = rows[-1]
    if n >= CHUNK:
        return [*rows, (1, _join(header, numbers, items))], len(rows)
    parts = text.split(_PART)
    old = np.frombuffer(base64.b64decode(parts[1]), dtype="<f8").reshape(4, n)
    texts = [a + _SEP + b for a, b in zip(parts[2:], items, strict=True)]
    row = (n + 1, _join(header, np.concatenate([old, numbers], axis=1), texts))
    return [*rows[:-1], row], len(rows) - 1


def series_of(key: Sequence[str], rows: Sequence[Row]) -> Series:
    """The series from its rows, in chunk order: numbers decoded, text columns left to
    :class:`Column`."""
    sizes = [n for n, _ in rows]
    split = [text.split(_PART) for _, text in rows]
    numbers = np.concatenate(
        [
            np.frombuffer(base64.b64decode(parts[1]), dtype="<f8").reshape(4, n)
            for n, parts in zip(sizes, split, strict=True)
        ],
        axis=1,
    )
    h = json.loads(split[-1][0])
    return Series(
        key[0],
        key[1],
        key[2],
        h["unit"],
        h["better"],
        float(h["percentile"]),
        Column([p[2] for p in split], sizes, none=True),
        Column([p[3] for p in split], sizes),
        Column([p[4] for p in split], sizes),
        numbers[0].copy(),
        numbers[1].copy(),
        numbers[2].copy(),
        tuple(numbers[3].astype(np.int64).tolist()),
        Column([p[5] for p in split], sizes),
    )
