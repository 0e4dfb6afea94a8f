"""Each series' change points kept in the history beside its points, updated by every add in
the add's own transaction, so that ``history changes`` reads them instead of recomputing.

What is kept per series: the change points found on it at the default level (table
``stored_changes``) and a copy of the series in commit order (table ``stored_series``: its
values and intervals packed, its commits, dates and run keys, in rows of ``CHUNK`` points, so
that an add rewrites the last row only). An add appends the new point to that copy when it is the series'
newest (else it reads the series back from the points) and runs the full detection
(stats.changepoints) on it: the stored answer is always the one a recomputation from the
points gives, never an approximation of it (tests/test_history_incremental.py checks it after
every add, on SQLite and PostgreSQL). What the add saves is reading and ordering the points
of every series; the detection itself is not made incremental, because its noise model and
dispersion are estimated over the whole series (stats._changepoint_scan), so a new point
moves every test statistic a little. A copy is used only when its point count is the
series' (a history written by a benchlang without this table is recomputed, not misread).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

import attrs
import numpy as np

from benchlang.history.db import History
from benchlang.history.points import Point, Run
from benchlang.history.series import Series, read_series
from benchlang.history.verdicts import Change, SeriesChanges, changes

ALPHA, CONFIDENCE = 0.05, 95.0  # what is stored: history changes' defaults
_TABLES = (
    """CREATE TABLE IF NOT EXISTS stored_changes (
        metric TEXT NOT NULL, configuration TEXT NOT NULL, host_class TEXT NOT NULL,
        points BIGINT NOT NULL, alpha DOUBLE PRECISION NOT NULL,
        confidence DOUBLE PRECISION NOT NULL, found TEXT NOT NULL,
        PRIMARY KEY (metric, configuration, host_class))""",
    """CREATE TABLE IF NOT EXISTS stored_series (
        metric TEXT NOT NULL, configuration TEXT NOT NULL, host_class TEXT NOT NULL,
        chunk BIGINT NOT NULL, points BIGINT NOT NULL, series TEXT NOT NULL,
        PRIMARY KEY (metric, configuration, host_class, chunk))""",
)
CHUNK = 1000  # points a row of the copy holds: an add rewrites the last row only
_INDEX = "CREATE INDEX IF NOT EXISTS points_series ON points (metric, configuration, host_class)"
_SEP, _PART = "\n", "\x1e"
_WHERE = "metric = ? AND configuration = ? AND host_class = ?"


def _pack(s: Series, start: int, end: int) -> str:
    """Points [start, end) of the series as one text: a JSON header, then their numbers
    (base64 of little-endian doubles) and each text column newline-joined, separated by
    ``_PART`` (no JSON over the long parts: encoding them was most of an add's cost)."""
    cut = slice(start, end)
    arrays = np.stack(
        [s.values[cut], s.lower[cut], s.upper[cut], np.asarray(s.trials[cut], dtype=np.float64)]
    )
    header = json.dumps({"unit": s.unit, "better": s.better, "percentile": s.percentile})
    return _PART.join(
        [
            header,
            base64.b64encode(arrays.astype("<f8").tobytes()).decode("ascii"),
            _SEP.join(c or "" for c in s.commits[cut]),
            _SEP.join(s.dates[cut]),
            _SEP.join(s.run_keys[cut]),
            _SEP.join(s.independence[cut]),
        ]
    )


def _unpack(key: Sequence[str], chunks: Sequence[tuple[int, str]]) -> Series:
    """The series from its rows (points, text), in chunk order."""
    numbers, commits, dates, run_keys, independence = [], [], [], [], []
    for n, text in chunks:
        header, packed, c, d, r, i = text.split(_PART)
        numbers.append(np.frombuffer(base64.b64decode(packed), dtype="<f8").reshape(4, n))
        commits += c.split(_SEP)
        dates += d.split(_SEP)
        run_keys += r.split(_SEP)
        independence += i.split(_SEP)
    arrays = np.concatenate(numbers, axis=1)
    h = json.loads(header)
    return Series(
        key[0],
        key[1],
        key[2],
        h["unit"],
        h["better"],
        float(h["percentile"]),
        tuple([c or None for c in commits]),
        tuple(dates),
        tuple(run_keys),
        arrays[0].copy(),
        arrays[1].copy(),
        arrays[2].copy(),
        tuple(arrays[3].astype(np.int64).tolist()),
        tuple(independence),
    )


def _found_json(found: SeriesChanges) -> str:
    """The change points with their numbers as Python's json writes them (nan included: this
    column is read back by benchlang only, never shown)."""
    return json.dumps(
        {
            "method": found.method,
            "changes": [attrs.asdict(c) for c in found.changes],
            "spread": [attrs.asdict(c) for c in found.spread],
            "note": found.note,
        }
    )


def _found(series: Series, text: str) -> SeriesChanges:
    d = json.loads(text)
    return SeriesChanges(
        series,
        tuple(Change(**c) for c in d["changes"]),
        d["method"],
        tuple(Change(**c) for c in d["spread"]),
        d.get("note"),
    )


def _count(h: History, key: Sequence[str]) -> int:
    return int(h.query(f"SELECT COUNT(*) FROM points WHERE {_WHERE}", key)[0][0])


def _copy(h: History, key: Sequence[str]) -> Series | None:
    rows = h.query(f"SELECT points, series FROM stored_series WHERE {_WHERE} ORDER BY chunk", key)
    return _unpack(key, [(int(n), text) for n, text in rows]) if rows else None


def store_changes(h: History, run: Run, points: Sequence[Point]) -> None:
    """After ``run``'s points were written (in the same transaction): each of their series'
    change points, found on the stored copy with the new point appended (only the copy's
    last row is rewritten), or on the series read back from the points."""
    for statement in (*_TABLES, _INDEX):
        h.execute(statement)
    for p in points:
        key = p.key
        kept = _copy(h, key)
        series, first = None, 0
        fits = kept is not None and _count(h, key) == len(kept) + 1
        if fits and kept.dates[-1] <= run.date:  # the copy is current, the new point newest
            series, first = kept.appended(run, p), len(kept) // CHUNK
        if series is None:
            series = read_series(h, key)[0]
        found = changes(series, alpha=ALPHA, confidence=CONFIDENCE)
        h.execute(f"DELETE FROM stored_series WHERE {_WHERE} AND chunk >= ?", (*key, first))
        h.executemany(
            "INSERT INTO stored_series (metric, configuration, host_class, chunk, points, "
            "series) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (*key, c, min(len(series), (c + 1) * CHUNK) - c * CHUNK,
                 _pack(series, c * CHUNK, (c + 1) * CHUNK))
                for c in range(first, (len(series) - 1) // CHUNK + 1)
            ],
        )  # fmt: skip
        h.execute(f"DELETE FROM stored_changes WHERE {_WHERE}", key)
        h.execute(
            "INSERT INTO stored_changes (metric, configuration, host_class, points, alpha, "
            "confidence, found) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (*key, len(series), ALPHA, CONFIDENCE, _found_json(found)),
        )


def stored_changes(h: History, alpha: float, confidence: float) -> list[SeriesChanges] | None:
    """Every series' stored change points when each is current (its point count is the
    series') and found at ``alpha`` and ``confidence``; None otherwise (recompute)."""
    if (alpha, confidence) != (ALPHA, CONFIDENCE) or not h.has_table("stored_changes"):
        return None
    counts = h.query(
        "SELECT metric, configuration, host_class, COUNT(*) FROM points "
        "GROUP BY metric, configuration, host_class"
    )
    rows = h.query(
        "SELECT metric, configuration, host_class, points, alpha, confidence, found "
        "FROM stored_changes"
    )
    current = {r[:3]: int(r[3]) for r in counts}
    kept = {r[:3]: r for r in rows}
    if set(current) != set(kept):
        return None
    out = []
    for key, row in kept.items():
        if int(row[3]) != current[key] or (float(row[4]), float(row[5])) != (alpha, confidence):
            return None
        series = _copy(h, key)
        if series is None or len(series) != current[key]:
            return None
        out.append(_found(series, row[6]))
    return out
