"""Each series' change points kept in the history beside its points, updated by every add in
the add's own transaction, so that ``history changes`` reads them instead of recomputing.

What is kept per series: the change points found on it at the default level (table
``stored_changes``) and a copy of the series in commit order (table ``series_copies``, in rows
of ``series_copy.CHUNK`` points, so that an add rewrites the last row only; the layout is
history.series_copy's). An add appends the
new point to that copy when it is the series' newest (else it reads the series back from the
points) and runs the full detection (stats.changepoints) on it: the stored answer is always the
one a recomputation from the points gives, never an approximation of it
(tests/test_history_incremental.py checks it after every add, on SQLite and PostgreSQL). What
the add saves is reading and ordering the points of every series; the detection itself is not
made incremental, because its noise model and dispersion are estimated over the whole series
(stats._changepoint_scan), so a new point moves every test statistic a little.

An add that appends a point to a series also keeps the answer it replaces (table
``stored_before``): the change points of the series without its newest run, which the gate
judges the newest run against (history.gate), so that ``history check`` need not find them
again. Storing every series anew finds that answer too; a point older than its series' newest
drops it (the gate then finds it: rare, and it costs no add a second search).

Which copies are current is one number: the meta row ``stored_through_3`` holds the ``seq`` of the
newest run every stored answer includes. An add that finds it one below its own run's extends
the copies; any other value (a run written by a benchlang without this bookkeeping, an old
history) makes the add store every series anew from the points, once. ``history changes`` uses
the stored answers only while ``stored_through_2`` is the newest run's ``seq``, checked in the
same statement that reads them (one snapshot, one round trip).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from benchlang.history import series_copy
from benchlang.history.db import History
from benchlang.history.points import Point, Run
from benchlang.history.series import Series, read_series
from benchlang.history.verdicts import Change, Possible, SeriesChanges, changes

ALPHA, CONFIDENCE = 0.05, 95.0  # what is stored: history changes' defaults
_TABLES = (
    """CREATE TABLE IF NOT EXISTS stored_changes (
        metric TEXT NOT NULL, configuration TEXT NOT NULL, host_class TEXT NOT NULL,
        points BIGINT NOT NULL, alpha DOUBLE PRECISION NOT NULL,
        confidence DOUBLE PRECISION NOT NULL, found TEXT NOT NULL,
        PRIMARY KEY (metric, configuration, host_class))""",
    """CREATE TABLE IF NOT EXISTS series_copies (
        metric TEXT NOT NULL, configuration TEXT NOT NULL, host_class TEXT NOT NULL,
        chunk BIGINT NOT NULL, points BIGINT NOT NULL, header TEXT NOT NULL,
        numbers {blob} NOT NULL, texts {blob} NOT NULL,
        PRIMARY KEY (metric, configuration, host_class, chunk))""",
    """CREATE TABLE IF NOT EXISTS stored_before (
        metric TEXT NOT NULL, configuration TEXT NOT NULL, host_class TEXT NOT NULL,
        points BIGINT NOT NULL, found TEXT NOT NULL,
        PRIMARY KEY (metric, configuration, host_class))""",
    "DROP TABLE IF EXISTS stored_series",  # the copy as text, before series_copies
    "CREATE INDEX IF NOT EXISTS points_series ON points (metric, configuration, host_class)",
    "CREATE INDEX IF NOT EXISTS runs_seq ON runs (seq)",
)
_KEY = "metric, configuration, host_class"
_WHERE = "metric = ? AND configuration = ? AND host_class = ?"
STAMP = "stored_through_3"
"""meta: the seq of the newest run every stored answer includes; "_3": ``stored_before`` is
kept beside them, and the answers hold the possible change in the last runs (since "_2"). One
stored by an earlier benchlang ("stored_through", "stored_through_2") is not current: read, it
is recomputed; the next add stores every series anew, once."""
_CURRENT = (
    f"(SELECT value FROM meta WHERE key = '{STAMP}') = "
    "(SELECT CAST(MAX(seq) {} AS TEXT) FROM runs)"
)
_PUT_ROW = (
    f"INSERT INTO series_copies ({_KEY}, chunk, points, header, numbers, texts) "
    f"VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT ({_KEY}, chunk) DO UPDATE SET "
    "points = excluded.points, header = excluded.header, numbers = excluded.numbers, "
    "texts = excluded.texts"
)
_PUT_FOUND = (
    f"INSERT INTO stored_changes ({_KEY}, points, alpha, confidence, found) "
    f"VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT ({_KEY}) DO UPDATE SET "
    "points = excluded.points, alpha = excluded.alpha, confidence = excluded.confidence, "
    "found = excluded.found"
)
_KEEP_BEFORE = (
    f"INSERT INTO stored_before ({_KEY}, points, found) SELECT {_KEY}, points, found "
    f"FROM stored_changes WHERE {_WHERE} ON CONFLICT ({_KEY}) DO UPDATE SET "
    "points = excluded.points, found = excluded.found"
)
_PUT_BEFORE = (
    f"INSERT INTO stored_before ({_KEY}, points, found) VALUES (?, ?, ?, ?, ?) "
    f"ON CONFLICT ({_KEY}) DO UPDATE SET points = excluded.points, found = excluded.found"
)
_PUT_STAMP = (
    f"INSERT INTO meta (key, value) VALUES ('{STAMP}', "
    "(SELECT CAST(MAX(seq) AS TEXT) FROM runs)) ON CONFLICT (key) DO UPDATE SET "
    "value = excluded.value"
)


def _found_json(found: SeriesChanges) -> str:
    """The change points and the possible change with their numbers as Python's json writes
    them (nan included: this column is read back by benchlang only, never shown)."""
    return json.dumps(
        {
            "method": found.method,
            "changes": [attrs.asdict(c) for c in found.changes],
            "spread": [attrs.asdict(c) for c in found.spread],
            "note": found.note,
            "possible": None if found.possible is None else attrs.asdict(found.possible),
        }
    )


def _found(series: Series, text: str) -> SeriesChanges:
    d = json.loads(text)
    possible = d.get("possible")
    return SeriesChanges(
        series,
        tuple(Change(**c) for c in d["changes"]),
        d["method"],
        tuple(Change(**c) for c in d["spread"]),
        d.get("note"),
        None if possible is None else Possible(**possible),
    )


def _grouped(rows: Sequence[tuple[Any, ...]]) -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
    out: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for row in rows:
        out.setdefault(tuple(row[:3]), []).append(row[3:])
    return out


def _copies_kept(h: History) -> bool:
    """Whether the history has the copies' tables: known without a round trip when its meta
    had the stamp at opening (it is written with them; the tables are never dropped)."""
    return STAMP in h.meta or h.has_table("series_copies")


def _current_copies(h: History) -> dict[tuple[Any, ...], list[series_copy.Row]] | None:
    """Every series' copy when the copies include every run but the one being added (its
    points written, its copies not yet); None otherwise or when no copy exists yet."""
    if not _copies_kept(h):
        return None
    rows = h.query(
        f"SELECT {_KEY}, points, header, numbers, texts FROM series_copies "
        f"WHERE {_CURRENT.format('- 1')} ORDER BY {_KEY}, chunk",
        binary=True,
    )
    return {k: [_row(r) for r in g] for k, g in _grouped(rows).items()} or None


def _row(r: Sequence[Any]) -> series_copy.Row:
    return (int(r[0]), r[1], bytes(r[2]), bytes(r[3]))


def _put(
    h: History,
    series: Series,
    first: int,
    rows: Sequence[series_copy.Row],
    *,
    before: Literal["kept", "found", "dropped"],
) -> None:
    """Write ``series``' answer, and the copy's rows from row ``first`` on (earlier ones
    stay), as the history's stored state for its key; and the answer without its newest
    point: the one it replaces (``before="kept"``: the stored series and one newer point),
    ``"found"`` on the series, or ``"dropped"`` (the gate finds it)."""
    found = changes(series, alpha=ALPHA, confidence=CONFIDENCE)
    key = series.key
    n = len(series)
    if before == "kept":
        h.execute(_KEEP_BEFORE, key)
    elif before == "found" and n >= 2:
        previous = changes(series.head(n - 1), alpha=ALPHA, confidence=CONFIDENCE)
        h.execute(_PUT_BEFORE, (*key, n - 1, _found_json(previous)))
    else:
        h.execute(f"DELETE FROM stored_before WHERE {_WHERE}", key)
    if first == 0:
        h.execute(f"DELETE FROM series_copies WHERE {_WHERE}", key)
    h.executemany(_PUT_ROW, [(*key, first + c, *row) for c, row in enumerate(rows)])
    h.execute(_PUT_FOUND, (*key, len(series), ALPHA, CONFIDENCE, _found_json(found)))


def _store_all(h: History) -> None:
    """Every series' answer and copy anew from the points (the copies were not current)."""
    blob = "BYTEA" if h.postgres else "BLOB"
    for statement in _TABLES:
        h.execute(statement.format(blob=blob))
    h.execute("DELETE FROM series_copies")
    h.execute("DELETE FROM stored_changes")
    h.execute("DELETE FROM stored_before")
    for series in read_series(h):
        _put(h, series, 0, series_copy.rows_of(series), before="found")
    h.execute(_PUT_STAMP)


def store_changes(h: History, run: Run, points: Sequence[Point]) -> None:
    """After ``run``'s points were written (in the same transaction): each of their series'
    change points, found on the stored copy with the new point appended (only the copy's
    last row is rewritten), or on the series read back from the points when the point is
    not the series' newest; every series stored anew when the copies were not current."""
    copies = _current_copies(h)
    if copies is None:
        _store_all(h)
        return
    for p in points:
        kept = copies.get(p.key)
        if kept is not None and series_copy.last_date(kept) <= run.date:
            rows, first = series_copy.appended(kept, run, p)
            _put(h, series_copy.series_of(p.key, rows), first, rows[first:], before="kept")
        else:
            series = read_series(h, p.key)[0]
            _put(h, series, 0, series_copy.rows_of(series), before="dropped")
    h.execute(_PUT_STAMP)


def stored_changes(h: History, alpha: float, confidence: float) -> list[SeriesChanges] | None:
    """Every series' stored change points when they include the history's newest run and were
    found at ``alpha`` and ``confidence``; None otherwise (recompute)."""
    if (alpha, confidence) != (ALPHA, CONFIDENCE) or not _copies_kept(h):
        return None
    rows = h.query(
        "SELECT s.metric, s.configuration, s.host_class, s.points, s.header, s.numbers, "
        "s.texts, c.points, c.alpha, c.confidence, c.found FROM series_copies s JOIN "
        "stored_changes c ON c.metric = s.metric AND c.configuration = s.configuration "
        f"AND c.host_class = s.host_class WHERE {_CURRENT.format('')} "
        "ORDER BY s.metric, s.configuration, s.host_class, s.chunk",
        binary=True,
    )
    if not rows:
        return None
    out = []
    for key, group in _grouped(rows).items():
        total, a, c, text = group[0][4:]
        if (float(a), float(c)) != (alpha, confidence):
            return None
        series = series_copy.series_of(key, [_row(r[:4]) for r in group])
        if len(series) != int(total):
            return None
        out.append(_found(series, text))
    return out


def stored_before(
    h: History, alpha: float, confidence: float
) -> dict[tuple[str, str, str], tuple[int, tuple[Change, ...]]]:
    """Per series, the change points of the series without its newest run and how many points
    that was, where the history keeps them current and found at ``alpha`` and ``confidence``
    (else none: the gate finds them). A reader checks the count against the series it read
    (an add committed between two reads makes it differ)."""
    kept = STAMP in h.meta or h.has_table("stored_before")
    if (alpha, confidence) != (ALPHA, CONFIDENCE) or not kept:
        return {}
    rows = h.query(f"SELECT {_KEY}, points, found FROM stored_before WHERE {_CURRENT.format('')}")
    return {
        (str(m), str(c), str(k)): (
            int(n),
            tuple(Change(**x) for x in json.loads(text)["changes"]),
        )
        for m, c, k, n, text in rows
    }
