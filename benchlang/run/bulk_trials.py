"""Many trials written at once (an import of another tool's results): one ``executemany``
per table, and their columnar blocks encoded from the columns in hand instead of read back
from the rows (docs/store.md). A run writes trial by trial (``Store.record_trial``); an import
of a million rows would spend minutes in a million transactions and in reading its own rows
back to fold them.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from itertools import repeat

import attrs
import numpy as np

from benchlang.run import measure_blocks, trial_blocks
from benchlang.run import row_keys as keys
from benchlang.run.row_keys import end_columns

BULK_TRIALS = 1 << 16
"""Trials written in one transaction (and one block) by ``Store.record_trial_columns``."""


@attrs.frozen
class TrialColumns:
    """Finished trials of one host and benchmark as columns, in the store's terms: one array
    per ``trials`` column; ``labels`` and ``levels`` (JSON) per configuration index;
    ``measures`` one float array each, NaN where a trial has none."""

    trial: np.ndarray
    series: np.ndarray
    round: np.ndarray
    position: np.ndarray
    configuration: np.ndarray
    order_kind: np.ndarray
    status: np.ndarray
    reason: np.ndarray
    exit_status: np.ndarray
    measures: Mapping[str, np.ndarray]
    host: str
    benchmark: str
    labels: tuple[str, ...]
    levels: tuple[str, ...]
    started: float
    ended: float
    phase: str = "measured"

    def __len__(self) -> int:
        return int(self.trial.size)

    def part(self, rows: slice | np.ndarray) -> TrialColumns:
        """The same trials' subset (a slice or a boolean mask)."""
        return attrs.evolve(
            self,
            **{
                name: getattr(self, name)[rows]
                for name in (
                    "trial",
                    "series",
                    "round",
                    "position",
                    "configuration",
                    "order_kind",
                    "status",
                    "reason",
                    "exit_status",
                )
            },
            measures={k: v[rows] for k, v in self.measures.items()},
        )


def first_seen(values: np.ndarray) -> tuple[list, np.ndarray]:
    """Distinct values in order of first appearance, and each value's code (as the fold's
    dictionary coding numbers them). An object array (of str) is coded through a dict in
    one pass: sorting a million Python strings, as ``np.unique`` does, costs a second (a
    fixed-width str array sorts in C, twice as fast as the dict)."""
    if values.dtype.kind == "O":
        items = values.tolist()
        seen = dict.fromkeys(items)
        codes = {value: code for code, value in enumerate(seen)}
        return list(seen), np.fromiter(map(codes.__getitem__, items), np.int64, len(items))
    distinct, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return distinct[order].tolist(), rank[inverse.ravel()]


def literal(value: object) -> str | None:
    """``value`` as an SQL literal SQLite reads back exactly (an integer, NULL, a text, a
    float as an integer over a power of two below 2**53: both exact doubles, so is their
    quotient), or None for what has none here (a time of day has one). A column that is one value for a whole part is written so,
    instead of bound in every row (``executemany`` costs about 90 ns a bound value)."""
    if value is None:
        return "NULL"
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, str) and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, (float, np.floating)) and np.isfinite(value):
        numerator, denominator = float(value).as_integer_ratio()
        if abs(numerator) < 2**53 and denominator < 2**53:
            return f"({numerator} / {denominator}.0)"
    return None


PACKED_ROWS = 256
"""Rows from which ``insert_columns`` sends its columns as one JSON array of integers."""

CODED_MAX = 64
"""Distinct values at most of a text (or object) column sent as codes, decoded by a CASE."""


def insert_columns(db: sqlite3.Connection, table: str, n: int, columns: list) -> None:
    """Insert ``n`` rows into ``table``, zipped from ``columns`` (one per table column, in
    order: an array of ``n``, or a scalar for every row). A column holding one value is
    written as its ``literal``; the others go, where they are integers or a few distinct
    values, as one JSON array of integers (``_insert_packed``), else in one ``executemany``
    that binds them row by row."""
    sql: list[str | None] = []
    arrays: dict[int, np.ndarray] = {}
    scalars: dict[int, object] = {}
    for i, column in enumerate(columns):
        if isinstance(column, np.ndarray):
            first = column[0] if column.size else None
            if (
                column.size
                and column.dtype.kind in "iuOUS"
                and (column == first).all()
                and literal(first) is not None
            ):
                column = first.item() if isinstance(first, np.generic) else first
            else:
                arrays[i] = column
                sql.append(None)
                continue
        text = literal(column)
        if text is None:
            scalars[i] = column
        sql.append(text)
    if arrays and n >= PACKED_ROWS and _insert_packed(db, table, sql, arrays, scalars):
        return
    bound = [
        arrays[i].tolist() if i in arrays else [scalars[i]] * n for i in sorted({*arrays, *scalars})
    ]
    row = "(" + ",".join("?" if text is None else text for text in sql) + ")"
    if not bound:
        db.executemany(f"INSERT INTO {table} VALUES {row}", repeat((), n))
        return
    _insert_rows(db, table, row, bound, n)


STATEMENT_VALUES = 999
"""Values one statement of ``_insert_rows`` binds at most (SQLite's smallest default limit)."""


def _insert_rows(db: sqlite3.Connection, table: str, row: str, bound: list[list], n: int) -> None:
    """``n`` rows of ``row`` (an SQL tuple, ``?`` where a value of ``bound``'s columns goes)
    in statements of ``VALUES row, row, ...``, each listing as many rows as STATEMENT_VALUES
    allows: ``executemany`` of one row a statement spent most of its time stepping and
    resetting the statement (a 10k-row measure: 5.1 ms against 1.7; a million: 0.54 s
    against 0.18). The rows go in the same order, their values bound the same way."""
    width = len(bound)
    flat: list = [None] * (width * n)
    for i, column in enumerate(bound):
        flat[i::width] = column
    rows = max(1, STATEMENT_VALUES // width)
    whole, rest = divmod(n, rows)
    step = rows * width
    if whole:
        sql = f"INSERT INTO {table} VALUES {','.join([row] * rows)}"
        db.executemany(sql, (flat[k : k + step] for k in range(0, whole * step, step)))
    if rest:
        db.execute(f"INSERT INTO {table} VALUES {','.join([row] * rest)}", flat[whole * step :])


def _codes(column: np.ndarray) -> tuple[np.ndarray, int, Callable[[str], str]] | None:
    """``column`` as integers in ``[0, radix)`` and the SQL that turns one back into its
    value (an integer: the code plus the least; a text or other value: a CASE over its
    ``literal``s); None for what has no such form (floats, many distinct texts)."""
    if column.dtype.kind in "iu":
        low, high = int(column.min()), int(column.max())
        if high - low >= 2**62:
            return None
        return column.astype(np.int64) - low, high - low + 1, lambda code: f"({code} + {low})"
    if column.dtype.kind not in "OUS":
        return None
    values, codes = first_seen(column)
    if len(values) > CODED_MAX:
        return None
    texts = [literal(v) for v in values]
    if any(t is None for t in texts):
        return None
    whens = " ".join(f"WHEN {c} THEN {t}" for c, t in enumerate(texts))
    return codes, len(values), lambda code: f"(CASE {code} {whens} END)"


def _insert_packed(
    db: sqlite3.Connection,
    table: str,
    sql: list[str | None],
    arrays: dict[int, np.ndarray],
    scalars: dict[int, object],
) -> bool:
    """``insert_columns``' rows as one ``INSERT ... SELECT`` over ``json_each`` of one JSON
    array: each row's array columns packed into one integer (mixed radix, below 2**62), taken
    apart by integer division in SQL; a column of consecutive integers is the array's index
    plus its first. Binding a value costs ``executemany`` about 90 ns and a row's tuple more;
    SQLite parses the array in C (a million trial rows: 0.6 CPU s against 1.3). False, having
    written nothing, when a column has no integer form."""
    parts: dict[int, str] = {}
    coded: dict[int, tuple[np.ndarray, int, Callable[[str], str]]] = {}
    radix = 1
    for i, column in arrays.items():
        if column.dtype.kind in "iu" and measure_blocks.is_run(column):
            parts[i] = f"(key + {int(column[0])})"
            continue
        found = _codes(column)
        if found is None:
            return False
        coded[i] = found
        radix *= found[1]
        if radix >= 2**62:
            return False
    packed = np.zeros(len(next(iter(arrays.values()))), dtype=np.int64)
    below = 1
    for i in sorted(coded, reverse=True):
        codes, size, decode = coded[i]
        packed += codes * below
        parts[i] = decode(f"(value / {below} % {size})")
        below *= size
    places = [
        text if text is not None else f":c{i}" if i in scalars else parts[i]
        for i, text in enumerate(sql)
    ]
    params = {f"c{i}": value for i, value in scalars.items()}
    params["packed"] = "[" + ",".join(map(str, packed.tolist())) + "]"
    db.execute(f"INSERT INTO {table} SELECT {','.join(places)} FROM json_each(:packed)", params)
    return True


@contextlib.contextmanager
def _insert_checks_suspended(db: sqlite3.Connection) -> Iterator[None]:
    """Without the triggers that list each inserted trial row as pending and watch for
    measure rows inserted below the blocks' watermark (a row each): inside the writer's
    transaction no other program can insert, the trials written here get their block at once
    and their measure rows are above the watermark. Dropped and made again in the same
    transaction, so no reader ever sees the store without them (a rollback restores them)."""
    found = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?)",
        (trial_blocks.PENDING_TRIGGER, "measure_rows_inserted_below"),
    ).fetchall()
    for name, _ in found:
        db.execute(f"DROP TRIGGER {name}")
    yield
    for _, sql in found:
        db.execute(sql)


def _rowids(db: sqlite3.Connection, table: str) -> int:
    return int(db.execute(f"SELECT coalesce(max(rowid), 0) FROM {table}").fetchone()[0])


def write(
    db: sqlite3.Connection,
    plan_hash: str,
    trials: TrialColumns,
    fold: Callable[[sqlite3.Connection], None],
) -> None:
    """Insert ``trials`` (at most ``MAX_BLOCK``) with their measures and blocks, inside the
    caller's transaction. ``fold`` first folds what earlier writes left, so the new measure
    rows are the only ones above the watermark; should SQLite number them other than
    densely, they are folded by reading them back instead."""
    n = len(trials)
    if n == 0:
        return
    if n > measure_blocks.MAX_BLOCK:
        raise ValueError(f"{n} trials in one write (at most {measure_blocks.MAX_BLOCK})")
    fold(db)
    plan = keys.plan_id(db, plan_hash)
    if plan is None:
        raise sqlite3.IntegrityError(f"no plan {plan_hash} in the store")
    orders = first_seen(trials.order_kind)
    with _insert_checks_suspended(db):
        insert_columns(
            db,
            "trial_rows",
            n,
            [
                plan,
                trials.trial,
                trials.series,
                trials.round,
                trials.position,
                _kinds(db, plan, trials, orders),
                trials.status,
                trials.reason,
                trials.exit_status,
                0,
                trials.started,
                *end_columns(trials.started, trials.ended),
                1,
            ],
        )
        _insert_trial_block(db, plan_hash, trials, orders)
        measure_rows: dict[str, tuple[int, int, np.ndarray, np.ndarray]] = {}
        for name, values in trials.measures.items():
            has = np.isfinite(values)
            start = _rowids(db, "measure_rows") + 1
            insert_columns(
                db,
                "measure_rows",
                int(has.sum()),
                [plan, trials.trial[has], keys.name_id(db, name), values[has]],
            )
            measure_rows[name] = (
                start,
                _rowids(db, "measure_rows"),
                trials.trial[has],
                values[has],
            )
    dense = all(end - start + 1 == t.size for start, end, t, _ in measure_rows.values())
    if not dense:
        measure_blocks.fold(db)
        return
    for name, (start, end, trial, values) in measure_rows.items():
        if trial.size:
            measure_blocks.insert_block(db, plan_hash, name, start, end, trial, values)
    measures_last = max((end for _, end, _, _ in measure_rows.values()), default=None)
    if measures_last is not None:
        db.execute("UPDATE meta SET value = ? WHERE key = 'measures_folded'", (str(measures_last),))


def _kinds(
    db: sqlite3.Connection, plan: int, trials: TrialColumns, coded: tuple[list, np.ndarray]
) -> np.ndarray:
    """Each trial's ``kinds`` id: one per distinct (configuration, order) of the part, made
    in the pairs' sorted order (one integer a pair: ``np.unique`` of pairs as rows sorts
    them as bytes, ten times slower)."""
    orders, order_codes = coded
    pairs = trials.configuration.astype(np.int64) * len(orders) + order_codes
    distinct, inverse = np.unique(pairs, return_inverse=True)
    ids = np.array(
        [
            keys.kind_id(
                db,
                plan,
                (
                    c,
                    trials.labels[c],
                    trials.benchmark,
                    trials.levels[c],
                    trials.host,
                    orders[o],
                    trials.phase,
                ),
            )
            for c, o in zip(*(x.tolist() for x in divmod(distinct, len(orders))), strict=True)
        ],
        dtype=np.int64,
    )
    return ids[inverse.ravel()]


def _insert_trial_block(
    db: sqlite3.Connection,
    plan_hash: str,
    trials: TrialColumns,
    orders: tuple[list, np.ndarray],
) -> None:
    """The trials' block: numbers and codes as ``trial_blocks.fold`` would make them."""
    n = len(trials)
    configs, config_codes = first_seen(trials.configuration)
    coded = [
        ([trials.host], np.zeros(n, dtype=np.int64)),
        orders,
        first_seen(trials.status),
        ([trials.phase], np.zeros(n, dtype=np.int64)),
        (
            [[c, trials.labels[c], trials.benchmark, trials.levels[c]] for c in configs],
            config_codes,
        ),
    ]
    part = trial_blocks.Part(
        np.stack(
            [trials.trial, trials.series, trials.round, trials.position, trials.configuration]
        ),
        np.stack([codes for _, codes in coded]).astype(np.int32),
        tuple(dictionary for dictionary, _ in coded),
    )
    trial_blocks.insert_block(db, plan_hash, part)
