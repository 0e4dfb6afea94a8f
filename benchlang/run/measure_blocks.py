"""The store's columnar copy of the ``measures`` rows: per plan and measure, blocks of trial
numbers (int64, stored in the narrowest integer type that holds them) and values (float64) as
little-endian BLOBs (docs/store.md, schemas 4 and 6).

``measure_rows`` (``measures`` before schema 6) stays the record (one row per trial and
measure, written in the trial's own transaction); the blocks are a copy for reading a million values at once, where Python's
sqlite3 builds a tuple per row (about 1 µs each) and SQLite's text form of a REAL does not
round-trip. A writer folds the rows above the *watermark* (``meta.measures_folded``, a
``measure_rows`` rowid) into new blocks inside the transaction of the trial that brought the
unfolded rows to ``FOLD_ROWS``, and all of them when it opens the store; a reader takes the
blocks plus the rows above the watermark, in one read transaction. Triggers drop every block
and reset the watermark when any program updates or deletes a ``measure_rows`` row, or inserts
one below the watermark, so a block never outlives the rows it copies.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence

import numpy as np

FOLD_ROWS = 4096
"""Unfolded ``measures`` rows at which a writer folds them into blocks (with that trial)."""

MAX_BLOCK = 1 << 20
"""Values per block at most (an upgrade of a big store folds it in several)."""


def invalidation_triggers(table: str, blocks: str, key: str) -> list[str]:
    """Triggers that delete every block of ``blocks`` and reset the watermark ``meta.key``
    when any program updates or deletes a row of ``table``, or inserts one at or below the
    watermark: a block never outlives the rows it copies."""
    return [
        f"""CREATE TRIGGER IF NOT EXISTS {table}_{name} AFTER {event} ON {table} {when}
BEGIN
    DELETE FROM {blocks};
    UPDATE meta SET value = '0' WHERE key = '{key}';
END"""
        for name, event, when in (
            ("updated", "UPDATE", ""),
            ("deleted", "DELETE", ""),
            (
                "inserted_below",
                "INSERT",
                f"WHEN NEW.rowid <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{key}')",
            ),
        )
    ]


BLOCKS_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS measure_blocks (
    plan_hash TEXT NOT NULL,
    name TEXT NOT NULL,
    first_row INTEGER NOT NULL,
    last_row INTEGER NOT NULL,
    trials BLOB NOT NULL,
    "values" BLOB NOT NULL,
    PRIMARY KEY (plan_hash, name, first_row)
)""",
    "INSERT OR IGNORE INTO meta(key, value) VALUES ('measures_folded', '0')",
    *invalidation_triggers("measure_rows", "measure_blocks", "measures_folded"),
]


def watermark(db: sqlite3.Connection, key: str = "measures_folded") -> int:
    """The last rowid copied into blocks (of ``measures``, or the table ``key`` names)."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def narrow(numbers: np.ndarray) -> np.ndarray:
    """Integers in the narrowest little-endian type that holds them (1, 2, 4 or 8 bytes):
    schema 6's blocks store trial numbers and codes so, their width told by their length."""
    low, high = (int(numbers.min()), int(numbers.max())) if numbers.size else (0, 0)
    for dtype in ("<i1", "<i2", "<i4"):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return numbers.astype(dtype)
    return numbers.astype("<i8")


def is_run(numbers: np.ndarray) -> bool:
    """Whether ``numbers`` are consecutive (more than 8 of them): a block then stores only the
    first, as 8 bytes (fewer bytes than numbers tells a run from a narrowed column)."""
    return numbers.size > 8 and bool(
        numbers[-1] - numbers[0] == numbers.size - 1 and (np.diff(numbers) == 1).all()
    )


def pack_trials(numbers: np.ndarray) -> bytes:
    """Trial numbers as a block stores them: a run's first number, or ``narrow``'s bytes."""
    if is_run(numbers):
        return np.int64(numbers[0]).astype("<i8").tobytes()
    return narrow(numbers).tobytes()


def widen(data: bytes, n: int) -> np.ndarray:
    """``n`` integers ``pack_trials`` stored in ``data``, as int64."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if len(data) < n:
        return np.arange(n, dtype=np.int64) + int(np.frombuffer(data, dtype="<i8")[0])
    return np.frombuffer(data, dtype=f"<i{len(data) // n}").astype(np.int64)


def insert_block(
    db: sqlite3.Connection,
    plan_hash: str,
    name: str,
    first_row: int,
    last_row: int,
    trials: Sequence[int] | np.ndarray,
    values: Sequence[float] | np.ndarray,
) -> None:
    """Store one measure's values as the block of the ``measures`` rows ``first_row`` to
    ``last_row`` (NaN for a NULL value)."""
    db.execute(
        "INSERT INTO measure_blocks VALUES (?,?,?,?,?,?)",
        (
            plan_hash,
            name,
            first_row,
            last_row,
            pack_trials(np.asarray(trials, dtype=np.int64)),
            np.asarray(values, dtype="<f8").tobytes(),
        ),
    )


def fold(db: sqlite3.Connection) -> int:
    """Copy every ``measures`` row above the watermark into blocks (one per plan and measure,
    at most ``MAX_BLOCK`` values each) and move the watermark; inside the caller's
    transaction. Returns the new watermark."""
    start = watermark(db)
    last = start
    while True:
        rows = db.execute(
            "SELECT m.rowid, p.plan_hash, n.name, m.trial, m.value FROM measure_rows m "
            "LEFT JOIN plans p ON p.id = m.plan LEFT JOIN measure_names n ON n.id = m.name "
            "WHERE m.rowid > ? ORDER BY m.rowid LIMIT ?",
            (last, MAX_BLOCK),
        ).fetchall()
        if not rows:
            break
        groups: dict[tuple[str, str], list[tuple[int, int, float]]] = {}
        for rowid, plan_hash, name, trial, value in rows:
            if plan_hash is None or name is None:
                raise sqlite3.IntegrityError(f"measure row {rowid} names no plan or measure")
            groups.setdefault((plan_hash, name), []).append(
                (rowid, trial, np.nan if value is None else value)
            )
        for (plan_hash, name), items in groups.items():
            rowid, trial, value = zip(*items, strict=True)
            insert_block(db, plan_hash, name, rowid[0], rowid[-1], trial, value)
        last = rows[-1][0]
    if last != start:
        db.execute("UPDATE meta SET value = ? WHERE key = 'measures_folded'", (str(last),))
    return last


def read_columns(
    db: sqlite3.Connection,
    plan_hash: str,
    trial: np.ndarray,
    wanted: Collection[str] | None = None,
) -> dict[str, np.ndarray]:
    """Each measure of the plan (or each ``wanted`` one) as a float column aligned with the
    sorted ``trial`` numbers (nan where a trial has none): the blocks, then the rows above
    the watermark (a rowid range: ``+plan_hash`` keeps SQLite from scanning the plan's
    index instead), later copies of a (trial, measure) winning. Call inside a read
    transaction, so that blocks, watermark and rows are one snapshot."""
    above = watermark(db)
    chosen = "" if wanted is None else f" AND name IN ({', '.join('?' * len(wanted))})"
    names = () if wanted is None else tuple(wanted)
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {name: [] for name in names}
    for name, trials, values in db.execute(
        f'SELECT name, trials, "values" FROM measure_blocks WHERE plan_hash = ?{chosen} '
        "ORDER BY first_row",
        (plan_hash, *names),
    ):
        parts.setdefault(name, []).append(
            (widen(trials, len(values) // 8), np.frombuffer(values, dtype="<f8"))
        )
    tail: dict[str, list[tuple[int, float]]] = {}
    chosen = "" if wanted is None else f" AND n.name IN ({', '.join('?' * len(wanted))})"
    for t, name, value in db.execute(
        "SELECT m.trial, n.name, m.value FROM measure_rows m "
        "JOIN measure_names n ON n.id = m.name "
        "WHERE m.rowid > ? AND +m.plan = (SELECT id FROM plans WHERE plan_hash = ?)"
        f"{chosen} ORDER BY m.rowid",
        (above, plan_hash, *names),
    ):
        tail.setdefault(name, []).append((t, np.nan if value is None else value))
    for name, items in tail.items():
        t, v = zip(*items, strict=True)
        parts.setdefault(name, []).append(
            (np.asarray(t, dtype=np.int64), np.asarray(v, dtype=float))
        )
    return {name: _aligned(trial, parts[name]) for name in sorted(parts)}


def _aligned(trial: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The values of ``parts`` (in write order) placed at their trials' positions in
    ``trial``; where a trial appears twice, the later value."""
    column = np.full(trial.size, np.nan)
    if not parts or trial.size == 0:
        return column
    t = np.concatenate([p[0] for p in parts])
    v = np.concatenate([p[1] for p in parts])
    if t.size == trial.size and np.array_equal(t, trial):  # every trial once, in order
        return v
    at = np.searchsorted(trial, t)
    known = (at < trial.size) & (trial[np.minimum(at, trial.size - 1)] == t)
    at, v = at[known], v[known]
    filled = np.zeros(trial.size, dtype=bool)
    filled[at] = True
    if np.count_nonzero(filled) != at.size:  # a value written again after it was copied
        last = np.full(trial.size, -1, dtype=np.int64)
        np.maximum.at(last, at, np.arange(at.size))
        at = np.flatnonzero(last >= 0)
        v = v[last[at]]
    column[at] = v
    return column
