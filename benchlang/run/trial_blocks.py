"""The store's columnar copy of the trial rows a reader needs for a trial table (docs/
store.md, schemas 5 to 7): per plan, blocks of the integer columns and of codes into a small
dictionary of the text columns, like ``measure_blocks`` for the measures; each column in the
narrowest integer type that holds it, or as its first number when consecutive (the count and a
byte per column before the data say which).

``trial_rows`` stays the record. Schema 7 stores it by its key ``(plan, trial)``, without a
rowid, so a trial no block holds yet is listed in ``trial_pending`` (a trigger adds every
inserted row); a writer folds the pending trials with the measures (``Store._fold``) and
empties the list; a reader decodes the blocks, adds the pending rows and keeps, for a trial
written twice, the later row. Triggers drop every block (and list every row) when any program
changes or deletes a trial row.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

import attrs
import numpy as np

from benchlang.run.measure_blocks import is_run, narrow

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
    block INTEGER NOT NULL,
    numbers BLOB NOT NULL,
    codes BLOB NOT NULL,
    dictionary TEXT NOT NULL,
    PRIMARY KEY (plan_hash, block)
)""",
    """CREATE TABLE IF NOT EXISTS trial_pending (
    plan INTEGER NOT NULL,
    trial INTEGER NOT NULL,
    PRIMARY KEY (plan, trial)
) WITHOUT ROWID""",
    """CREATE TRIGGER IF NOT EXISTS trial_rows_pending AFTER INSERT ON trial_rows
BEGIN
    INSERT OR IGNORE INTO trial_pending VALUES (NEW.plan, NEW.trial);
END""",
    *(
        f"""CREATE TRIGGER IF NOT EXISTS trial_rows_{name} AFTER {event} ON trial_rows
WHEN EXISTS (SELECT 1 FROM trial_blocks)
BEGIN
    DELETE FROM trial_blocks;
    INSERT OR IGNORE INTO trial_pending SELECT plan, trial FROM trial_rows;
END"""
        for name, event in (("updated", "UPDATE"), ("deleted", "DELETE"))
    ),
]
"""Schema 7's blocks: numbered in the order they were written (a later block's copy of a
trial is the later one), every trial row in a block or in ``trial_pending``. An update or a
delete of a row by any program drops the blocks and lists every row again (the next fold
copies them all), so a block never outlives the rows it copies."""

PENDING_TRIGGER = "trial_rows_pending"
"""The trigger that lists an inserted row (a bulk write, which writes its own block, holds it
off)."""


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


def insert_block(db: sqlite3.Connection, plan_hash: str, part: Part) -> None:
    """Store ``part`` as the plan's next block (after every block written before)."""
    (block,) = db.execute("SELECT coalesce(max(block), 0) + 1 FROM trial_blocks").fetchone()
    db.execute(
        "INSERT INTO trial_blocks VALUES (?,?,?,?,?)",
        (plan_hash, block, _pack(part.numbers), _pack(part.codes), json.dumps(part.dictionary)),
    )


CONSTANT = 0x80
"""A column's width byte for one value repeated (schema 7): stored once, as 8 bytes."""


def _is_constant(row: np.ndarray) -> bool:
    return row.size > 8 and bool((row == row[0]).all())


def _pack(columns: np.ndarray) -> bytes:
    """Rows of integers as one BLOB: the count (8 bytes), a byte per row giving its width (0: a
    run of consecutive integers, stored as its first; ``CONSTANT``: one value repeated, stored
    once), then each row narrowed."""
    widths, packed = bytearray(), []
    for row in (np.asarray(row, dtype=np.int64) for row in columns):
        if _is_constant(row) or is_run(row):
            widths.append(CONSTANT if _is_constant(row) else 0)
            packed.append(np.asarray(row[:1], dtype="<i8"))
        else:
            packed.append(narrow(row))
            widths.append(packed[-1].itemsize)
    count = np.int64(len(columns[0]) if len(columns) else 0).astype("<i8").tobytes()
    return count + bytes(widths) + b"".join(p.tobytes() for p in packed)


def _unpack(data: bytes, rows: int) -> np.ndarray:
    """``_pack``'s rows as a (rows, n) int64 array."""
    n = int(np.frombuffer(data, dtype="<i8", count=1)[0])
    widths = list(data[8 : 8 + rows])
    out = np.empty((rows, n), dtype=np.int64)
    at = 8 + rows
    for i, width in enumerate(widths):
        if width in (0, CONSTANT):
            first = int(np.frombuffer(data, dtype="<i8", count=1, offset=at)[0])
            out[i] = first if width else np.arange(n, dtype=np.int64) + first
            at += 8
        else:
            out[i] = np.frombuffer(data, dtype=f"<i{width}", count=n, offset=at)
            at += width * n
    return out


_PENDING_ROWS = (
    "FROM trial_pending q JOIN trial_rows t ON t.plan = q.plan AND t.trial = q.trial "
    "LEFT JOIN kinds k ON k.id = t.kind"
)


FOLD_CHUNK = 1 << 16
"""Pending rows a fold reads at once (a block's rows at most): Python's tuples of a million
rows took a migration to 1.3 GB."""


def fold(db: sqlite3.Connection) -> None:
    """Copy every pending trial row into blocks (one per plan, at most ``FOLD_CHUNK`` rows
    each, in trial order) and empty the list; inside the caller's transaction (a writer's)."""
    after = (-(2**63), -(2**63))
    while True:
        rows = db.execute(
            f"SELECT q.plan, q.trial, p.plan_hash, {_COLUMNS} {_PENDING_ROWS} "
            "LEFT JOIN plans p ON p.id = t.plan WHERE (q.plan, q.trial) > (?, ?) "
            "ORDER BY q.plan, q.trial LIMIT ?",
            (*after, FOLD_CHUNK),
        ).fetchall()
        if not rows:
            break
        plans: dict[str, list] = {}
        for row in rows:
            if row[2] is None or row[7] is None:
                raise sqlite3.IntegrityError(
                    f"trial {row[1]} of plan {row[0]} names no plan or kind"
                )
            plans.setdefault(row[2], []).append(row[3:])
        for plan_hash, mine in plans.items():
            insert_block(db, plan_hash, encode(mine))
        after = rows[-1][:2]
    db.execute("DELETE FROM trial_pending")


def count_pending(db: sqlite3.Connection) -> int:
    """Trial rows no block holds yet."""
    return int(db.execute("SELECT count(*) FROM trial_pending").fetchone()[0])


def read_parts(db: sqlite3.Connection, plan_hash: str) -> list[Part]:
    """The plan's blocks and its pending rows, in write order. Call inside a read
    transaction."""
    parts = []
    for numbers, codes, dictionary in db.execute(
        "SELECT numbers, codes, dictionary FROM trial_blocks WHERE plan_hash = ? ORDER BY block",
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
        f"SELECT {_COLUMNS} {_PENDING_ROWS} "
        "WHERE q.plan = (SELECT id FROM plans WHERE plan_hash = ?) ORDER BY q.trial",
        (plan_hash,),
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
