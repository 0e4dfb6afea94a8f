"""Each series' change points kept in the history beside its points, updated by every add in
the add's own transaction, so that ``history changes`` reads them instead of recomputing.

What is kept per series (table ``change_points``): the series itself in commit order (its
values and intervals packed, its commits, dates and run keys) and the change points found on
it at the default level. An add appends the new point to that copy when it is the series'
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
_TABLE = """CREATE TABLE IF NOT EXISTS change_points (
    metric TEXT NOT NULL, configuration TEXT NOT NULL, host_class TEXT NOT NULL,
    points BIGINT NOT NULL, alpha DOUBLE PRECISION NOT NULL,
    confidence DOUBLE PRECISION NOT NULL, series TEXT NOT NULL, found TEXT NOT NULL,
    PRIMARY KEY (metric, configuration, host_class))"""
_INDEX = "CREATE INDEX IF NOT EXISTS points_series ON points (metric, configuration, host_class)"
_SEP, _PART = "\n", "\x1e"


def _pack(s: Series) -> str:
    """The series as one text: a JSON header, then its numbers (base64 of little-endian
    doubles) and each text column newline-joined, separated by ``_PART`` (no JSON over the
    long parts: encoding them was most of an add's cost at 10,000 points)."""
    arrays = np.stack([s.values, s.lower, s.upper, np.asarray(s.trials, dtype=np.float64)])
    header = json.dumps({"unit": s.unit, "better": s.better, "percentile": s.percentile})
    return _PART.join(
        [
            header,
            base64.b64encode(arrays.astype("<f8").tobytes()).decode("ascii"),
            _SEP.join(c or "" for c in s.commits),
            _SEP.join(s.dates),
            _SEP.join(s.run_keys),
            _SEP.join(s.independence),
        ]
    )


def _unpack(key: Sequence[str], n: int, text: str) -> Series:
    header, numbers, commits, dates, run_keys, independence = text.split(_PART)
    d = json.loads(header)
    arrays = np.frombuffer(base64.b64decode(numbers), dtype="<f8").reshape(4, n)
    return Series(
        key[0],
        key[1],
        key[2],
        d["unit"],
        d["better"],
        float(d["percentile"]),
        tuple([c or None for c in commits.split(_SEP)]),
        tuple(dates.split(_SEP)),
        tuple(run_keys.split(_SEP)),
        arrays[0].copy(),
        arrays[1].copy(),
        arrays[2].copy(),
        tuple(arrays[3].astype(np.int64).tolist()),
        tuple(independence.split(_SEP)),
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
    where = "metric = ? AND configuration = ? AND host_class = ?"
    return int(h.query(f"SELECT COUNT(*) FROM points WHERE {where}", key)[0][0])


def store_changes(h: History, run: Run, points: Sequence[Point]) -> None:
    """After ``run``'s points were written (in the same transaction): each of their series'
    change points, found on the stored copy with the new point appended."""
    h.execute(_TABLE)
    h.execute(_INDEX)
    where = "metric = ? AND configuration = ? AND host_class = ?"
    for p in points:
        key = p.key
        rows = h.query(f"SELECT points, series FROM change_points WHERE {where}", key)
        series = None
        if rows and _count(h, key) == int(rows[0][0]) + 1:
            kept = _unpack(key, int(rows[0][0]), rows[0][1])
            if not kept.dates or kept.dates[-1] <= run.date:  # the new point is the newest
                series = kept.appended(run, p)
        if series is None:
            series = read_series(h, key)[0]
        found = changes(series, alpha=ALPHA, confidence=CONFIDENCE)
        h.execute(f"DELETE FROM change_points WHERE {where}", key)
        h.execute(
            "INSERT INTO change_points (metric, configuration, host_class, points, alpha, "
            "confidence, series, found) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*key, len(series), ALPHA, CONFIDENCE, _pack(series), _found_json(found)),
        )


def stored_changes(h: History, alpha: float, confidence: float) -> list[SeriesChanges] | None:
    """Every series' stored change points when each is current (its point count is the
    series') and found at ``alpha`` and ``confidence``; None otherwise (recompute)."""
    if (alpha, confidence) != (ALPHA, CONFIDENCE) or not h.has_table("change_points"):
        return None
    counts = h.query(
        "SELECT metric, configuration, host_class, COUNT(*) FROM points "
        "GROUP BY metric, configuration, host_class"
    )
    rows = h.query(
        "SELECT metric, configuration, host_class, points, alpha, confidence, series, found "
        "FROM change_points"
    )
    current = {r[:3]: int(r[3]) for r in counts}
    kept = {r[:3]: r for r in rows}
    if set(current) != set(kept):
        return None
    out = []
    for key, row in kept.items():
        if int(row[3]) != current[key] or (float(row[4]), float(row[5])) != (alpha, confidence):
            return None
        out.append(_found(_unpack(key, int(row[3]), row[6]), row[7]))
    return out
