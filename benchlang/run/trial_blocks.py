"""The store's columnar copy of the trial rows a reader needs for a trial table (docs/
store.md, schemas 5 and 6): per plan, blocks of the integer columns and of codes into a small
dictionary of the text columns, like ``measure_blocks`` for the measures; each column in the
narrowest integer type that holds it, or as its first number when consecutive (schema 6: the
count and a byte per column before the data say which).

``trial_rows`` stays the record. A writer folds the rows above ``meta.trials_folded`` with the
measures (``Store._fold_blocks``); a reader decodes the blocks, adds the rows above the
watermark and keeps, for a trial written twice, the later row. The same triggers as the
measures' drop the blocks when any program changes or deletes a trial row.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

import attrs
import numpy as np

from benchlang.run.measure_blocks import (
    MAX_BLOCK,
    invalidation_triggers,
    is_run,
    narrow,
    watermark,
)

NUMBERS = ("trial", "series", "round", "position", "configuration")
CODED = ("host", "order_kind", "status", "phase", "configuration")
"""Text columns kept as codes; "configuration" codes a (configuration, label, benchmark,
levels) tuple."""

_COLUMNS = (
    "t.trial, t.series, t.round, t.position, k.configuration, k.host, k.order_kind, t.status, "
    "k.phase, k.label, k.benchmark, k.levels"
)

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS trial_blocks (
    plan_hash TEXT NOT NULL,
    first_row INTEGER NOT NULL,
    last_row INTEGER NOT NULL,
    numbers BLOB NOT NULL,
    codes BLOB NOT NULL,
    dictionary TEXT NOT NULL,
    PRIMARY KEY (plan_hash, first_row)
)""",
    "INSERT OR IGNORE INTO meta(key, value) VALUES ('trials_folded', '0')",
    *invalidation_triggers("trial_rows", "trial_blocks", "trials_folded"),
]


@attrs.frozen
class Part:
    """Some trials of a plan: ``numbers`` (5, n) int64 in ``NUMBERS`` order, ``codes`` (5, n)
    into ``dictionary`` (one list per ``CODED`` column)."""

    numbers: np.ndarray
    codes: np.ndarray
    dictionary: tuple[list, ...]


def encode(rows: Sequence[Sequence]) -> Part:
    """Rows of ``_COLUMNS`` as a part."""
    columns = list(zip(*rows, strict=True))
    numbers = np.array(columns[:5], dtype=np.int64).reshape(5, len(rows))
    texts = [*columns[5:9], list(zip(columns[4], *columns[9:], strict=True))]
    dictionary, codes = [], []
    for values in texts:
        seen: dict = {}
        codes.append([seen.setdefault(v, len(seen)) for v in values])
        dictionary.append([list(v) if isinstance(v, tuple) else v for v in seen])
    return Part(numbers, np.array(codes, dtype=np.int32).reshape(5, len(rows)), tuple(dictionary))


def insert_block(
    db: sqlite3.Connection, plan_hash: str, first_row: int, last_row: int, part: Part
) -> None:
    """Store ``part`` as the block of the ``trials`` rows ``first_row`` to ``last_row``."""
    db.execute(
        "INSERT INTO trial_blocks VALUES (?,?,?,?,?,?)",
        (
            plan_hash,
            first_row,
            last_row,
            _pack(part.numbers),
            _pack(part.codes),
            json.dumps(part.dictionary),
        ),
    )


def _pack(columns: np.ndarray) -> bytes:
    """Rows of integers as one BLOB: the count (8 bytes), a byte per row giving its width (0: a
    run of consecutive integers, stored as its first), then each row narrowed."""
    rows = [np.asarray(row, dtype=np.int64) for row in columns]
    packed = [np.asarray(row[:1], dtype="<i8") if is_run(row) else narrow(row) for row in rows]
    widths = bytes(0 if is_run(row) else p.itemsize for row, p in zip(rows, packed, strict=True))
    count = np.int64(rows[0].size if rows else 0).astype("<i8").tobytes()
    return count + widths + b"".join(p.tobytes() for p in packed)


def _unpack(data: bytes, rows: int) -> np.ndarray:
    """``_pack``'s rows as a (rows, n) int64 array."""
    n = int(np.frombuffer(data, dtype="<i8", count=1)[0])
    widths = list(data[8 : 8 + rows])
    out = np.empty((rows, n), dtype=np.int64)
    at = 8 + rows
    for i, width in enumerate(widths):
        if width == 0:
            out[i] = np.arange(n, dtype=np.int64) + int(
                np.frombuffer(data, dtype="<i8", count=1, offset=at)[0]
            )
            at += 8
        else:
            out[i] = np.frombuffer(data, dtype=f"<i{width}", count=n, offset=at)
            at += width * n
    return out


def fold(db: sqlite3.Connection) -> None:
    """Copy every ``trials`` row above the watermark into blocks (one per plan, at most
    ``MAX_BLOCK`` rows each) and move the watermark; inside the caller's transaction (of a
    writer, whose store has every column of schema 5)."""
    last = start = watermark(db, "trials_folded")
    while True:
        rows = db.execute(
            f"SELECT t.rowid, p.plan_hash, {_COLUMNS} FROM trial_rows t "
            "LEFT JOIN plans p ON p.id = t.plan LEFT JOIN kinds k ON k.id = t.kind "
            "WHERE t.rowid > ? ORDER BY t.rowid LIMIT ?",
            (last, MAX_BLOCK),
        ).fetchall()
        if not rows:
            break
        plans: dict[str, list] = {}
        for row in rows:
            if row[1] is None or row[6] is None:
                raise sqlite3.IntegrityError(f"trial row {row[0]} names no plan or kind")
            plans.setdefault(row[1], []).append(row)
        for plan_hash, mine in plans.items():
            insert_block(db, plan_hash, mine[0][0], mine[-1][0], encode([row[2:] for row in mine]))
        last = rows[-1][0]
    if last != start:
        db.execute("UPDATE meta SET value = ? WHERE key = 'trials_folded'", (str(last),))


def read_parts(db: sqlite3.Connection, plan_hash: str) -> list[Part]:
    """The plan's blocks and the rows above the watermark, in write order. Call inside a
    read transaction."""
    above = watermark(db, "trials_folded")
    parts = []
    for numbers, codes, dictionary in db.execute(
        "SELECT numbers, codes, dictionary FROM trial_blocks WHERE plan_hash = ? "
        "ORDER BY first_row",
        (plan_hash,),
    ):
        parts.append(
            Part(
                _unpack(numbers, 5),
                _unpack(codes, 5).astype(np.int32),
                tuple(json.loads(dictionary)),
            )
        )
    tail = db.execute(
        f"SELECT {_COLUMNS} FROM trial_rows t JOIN kinds k ON k.id = t.kind "
        "WHERE t.rowid > ? AND +t.plan = (SELECT id FROM plans WHERE plan_hash = ?) "
        "ORDER BY t.rowid",
        (above, plan_hash),
    ).fetchall()
    if tail:
        parts.append(encode(tail))
    return parts


def merge(parts: Iterable[Part]) -> tuple[np.ndarray, list[np.ndarray], list[list]]:
    """The parts as one set of columns in trial order, a trial written twice keeping its
    later row: (numbers (5, n), object columns per ``CODED`` name but configuration, the
    configuration tuples' codes with their tuples)."""
    parts = list(parts)
    merged: list[list] = [[] for _ in CODED]
    index: list[dict] = [{} for _ in CODED]
    numbers, codes = [], []
    for part in parts:
        remapped = np.empty_like(part.codes)
        for c, values in enumerate(part.dictionary):
            lut = np.empty(len(values), dtype=np.int32)
            for i, value in enumerate(values):
                key = tuple(value) if c == 4 else value
                if key not in index[c]:
                    index[c][key] = len(merged[c])
                    merged[c].append(value)
                lut[i] = index[c][key]
            remapped[c] = lut[part.codes[c]]
        numbers.append(part.numbers)
        codes.append(remapped)
    numbers_all = np.concatenate(numbers, axis=1) if numbers else np.zeros((5, 0), np.int64)
    codes_all = np.concatenate(codes, axis=1) if codes else np.zeros((5, 0), np.int32)
    if (np.diff(numbers_all[0]) > 0).all():  # written in trial order, once each
        return numbers_all, list(codes_all), merged
    order = np.argsort(numbers_all[0], kind="stable")
    trial = numbers_all[0, order]
    if trial.size and (np.diff(trial) == 0).any():  # a trial written again: the later row
        last = np.append(np.diff(trial) != 0, True)
        order = order[last]
    return numbers_all[:, order], [codes_all[c, order] for c in range(5)], merged
