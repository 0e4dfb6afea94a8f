"""The numbers behind a figure: one frozen table per figure, the same for the HTML report,
``benchlang figure`` (its drawing and its ``--data`` CSV) and ``--json``.

Each of the papers' figures (docs/figures.md) is two halves: this table, built by the pure
functions of ``stats.figure_*`` (one module per paper, TriScale's three by concern) from results the
statistics already computed, and one drawing function in ``report.figures``. Rows are long
format (one row per drawn element: a point, a bound, a bar), so the CSV holds exactly what
is drawn; ``notes`` says what a figure leaves out and why, or what it cannot claim (a
descriptive-only result), and the drawing says it too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

NAN = float("nan")
MAX_POINTS = 2000
"""Samples of a raw series drawn per configuration; beyond it, evenly spaced (the figure and its
``notes`` say so; the statistics use every value)."""


def spaced(n: int, most: int = MAX_POINTS) -> np.ndarray:
    """At most ``most`` evenly spaced indices of ``n`` items, the first and last kept."""
    if n <= most:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, most)).astype(np.int64))


def _plain(value: Any) -> Any:
    """A JSON-safe cell: numpy scalars as Python numbers, NaN and infinities as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _tuples(rows: Iterable[Iterable[Any]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(map(tuple, rows))


def _grouped(notes: Sequence[str]) -> tuple[str, ...]:
    return grouped(notes)  # defined below, with the other helpers


@attrs.frozen
class FigureData:
    """The rows one figure draws, with the caption that states what they are.

    ``caption`` says what is drawn, the statistic and its confidence and cites the paper's
    figure; ``meta`` holds the scalars the drawing needs (units, a threshold line).
    """

    name: str
    paper: str
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...] = attrs.field(converter=_tuples)
    notes: tuple[str, ...] = attrs.field(default=(), converter=_grouped)
    meta: Mapping[str, Any] = attrs.field(factory=dict)

    def column(self, name: str, part: str | None = None) -> np.ndarray:
        """One column as an array, only the rows whose ``part`` is ``part`` when given."""
        i = self.columns.index(name)
        if part is None:
            return np.array([r[i] for r in self.rows], dtype=object)
        j = self.columns.index("part")
        return np.array([r[i] for r in self.rows if r[j] == part], dtype=object)

    def where(self, **equal: Any) -> list[dict[str, Any]]:
        """Rows as dicts, those whose named columns equal the given values."""
        out = []
        for row in self.rows:
            d = dict(zip(self.columns, row, strict=True))
            if all(d[k] == v for k, v in equal.items()):
                out.append(d)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "paper": self.paper,
            "caption": self.caption,
            "columns": list(self.columns),
            "rows": [[_plain(v) for v in row] for row in self.rows],
            "notes": list(self.notes),
            "meta": {k: _plain(v) for k, v in self.meta.items()},
        }


def ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The finite values sorted, and the fraction of values at or below each."""
    x = np.sort(np.asarray(values, dtype=float).ravel())
    x = x[np.isfinite(x)]
    return x, np.arange(1, x.size + 1) / max(1, x.size)


def labelled(
    labels: Sequence[str], parts: Sequence[Sequence[tuple[Any, ...]]]
) -> list[tuple[Any, ...]]:
    """Prefix each configuration's rows with its label (long-format rows of many groups)."""
    return [(label, *row) for label, rows in zip(labels, parts, strict=True) for row in rows]


def grouped(notes: Sequence[str]) -> tuple[str, ...]:
    """Notes of the form "CONFIGURATION: text" with the same text said once, naming all of
    them ("text: a, b, c"), so fourteen configurations do not repeat one sentence."""
    by_text: dict[str, list[str]] = {}
    plain: list[str] = []
    for note in notes:
        label, sep, text = note.partition(": ")
        if sep and label.endswith("]"):
            by_text.setdefault(text, []).append(label)
        else:
            plain.append(note)
    said = [
        f"{labels[0]}: {text}" if len(labels) == 1 else f"{text}: {', '.join(labels)}"
        for text, labels in by_text.items()
    ]
    return tuple(said + plain)
