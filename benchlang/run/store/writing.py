"""Writing a store: one ``BEGIN IMMEDIATE`` transaction per trial, committed before the next
trial starts (docs/store.md), and the folding of rows into columnar blocks."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import numpy as np

from benchlang.errors import UserError
from benchlang.run import bulk_trials, measure_blocks, trial_blocks
from benchlang.run.bulk_trials import TrialColumns
from benchlang.run.row_keys import Keys, end_columns
from benchlang.run.store.locks import StoreWriteError, describe_sqlite
from benchlang.run.store.records import (
    StopRecord,
    TrialRecord,
    stored_plan,
    tail,
)
from benchlang.run.store.state import StoreState

ROUND_INSERT = "INSERT OR REPLACE INTO rounds VALUES (?,?,?,?,?,?,?,?)"


def round_values(
    plan_hash: str,
    round_index: int,
    host: str,
    order_kind: str,
    permutation: Iterable[int],
    started: float,
    ended: float | None,
    reset_status: str,
) -> tuple:
    """A ``rounds`` row: the round's host, order, permutation, times and reset status. The
    permutation's text is ``json.dumps``'s of a list of integers, without its encoder."""
    return (
        plan_hash,
        round_index,
        host,
        order_kind,
        "[" + ", ".join(map(str, map(int, permutation))) + "]",
        started,
        ended,
        reset_status,
    )


class _Transaction:
    """``StoreWriting._transaction``'s context: a class rather than a generator, as it wraps
    every trial's commit (benchmarks/bench_runner.py)."""

    __slots__ = ("db", "store")

    def __init__(self, store: StoreWriting, db: sqlite3.Connection) -> None:
        self.store = store
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as err:
            self.store._rollback()
            raise self.store._write_error(err) from None
        return self.db

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, _tb: object
    ) -> None:
        if kind is None:
            try:
                self.db.execute("COMMIT")
            except sqlite3.IntegrityError:
                self.store._rollback()
                raise
            except sqlite3.Error as failed:
                self.store._rollback()
                raise self.store._write_error(failed) from None
            return
        self.store._rollback()
        if isinstance(err, sqlite3.Error) and not isinstance(err, sqlite3.IntegrityError):
            raise self.store._write_error(err) from None


class StoreWriting(StoreState):
    """The writing methods of ``Store`` (mixed in; ``Store`` opens the connection)."""

    _keys: Keys

    def _count_unfolded(self) -> int:
        """About how many measures rows (rowids are dense: rows are only ever inserted) or
        trial rows no block holds yet."""
        db = self.connection
        above = int(db.execute("SELECT coalesce(max(rowid), 0) FROM measure_rows").fetchone()[0])
        return max(
            0,
            above - measure_blocks.watermark(db, "measures_folded"),
            trial_blocks.count_pending(db),
        )

    def _fold(self, db: sqlite3.Connection) -> None:
        measure_blocks.fold(db)
        trial_blocks.fold(db)
        self._unfolded = 0

    def fold_blocks(self) -> None:
        """Copy every trials and measures row no block holds yet into the blocks now (a
        writer otherwise does it with the trial that brings them to ``FOLD_ROWS``; also after
        rows were inserted by another program)."""
        with self._transaction() as db:
            self._fold(db)

    def _write_error(self, err: sqlite3.Error) -> StoreWriteError:
        return StoreWriteError(
            f"cannot write to the store {self.path}: {describe_sqlite(err)}",
            "every trial committed before is intact",
        )

    def _rollback(self) -> None:
        self._keys.forget()
        if self.db is not None and self.db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")

    def _transaction(self) -> _Transaction:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT``; a write failure rolls back (when SQLite has
        not already) and becomes a StoreWriteError."""
        if not self.writable or self.db is None:
            raise UserError(f"{self.path} was opened read-only")
        return _Transaction(self, self.db)

    def _write(self, sql: str, params: Iterable[Any] = ()) -> None:
        with self._transaction() as db:
            db.execute(sql, tuple(params))

    def set_meta(self, key: str, value: str) -> None:
        """One ``meta`` row written (or replaced) in a transaction of its own; ``schema_version``
        is the store's own and is refused."""
        if key == "schema_version":
            raise ValueError("schema_version is set by the store alone")
        self._write("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def add_plan(
        self,
        plan_hash: str,
        experiment: str,
        spec_hash: str,
        seed: int,
        plan_json: str,
        spec_path: str | None = None,
        spec_text: str | None = None,
    ) -> None:
        if not -(2**63) <= seed < 2**63:
            raise UserError(
                f"the seed {seed} does not fit the store (a 64-bit integer)",
                "use a seed below 2**63",
            )
        self._write(
            "INSERT OR IGNORE INTO plans(plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, created) VALUES (?,?,?,?,?,?,?,?)",
            (
                plan_hash,
                experiment,
                spec_hash,
                spec_path,
                spec_text,
                seed,
                stored_plan(plan_json),
                time.time(),
            ),
        )

    def mark_run_started(self, plan_hash: str) -> float:
        """The wall-clock origin of a run (kept across resumes, for series spread over a span)."""
        self._write(
            "UPDATE plans SET run_started = ? WHERE plan_hash = ? AND run_started IS NULL",
            (time.time(), plan_hash),
        )
        return float(
            self.connection.execute(
                "SELECT run_started FROM plans WHERE plan_hash = ?", (plan_hash,)
            ).fetchone()[0]
        )

    def record_trial(
        self,
        plan_hash: str,
        record: TrialRecord,
        stop: StopRecord | None = None,
        round_row: tuple | None = None,
    ) -> None:
        """Write one trial with its measures and series, the stopping decision it led to (if
        any) and, for a round's last trial, the round's row (``round_values``), in a single
        committed transaction: one commit per trial, none more for its round."""
        with self._transaction() as db:
            keys = self._keys
            plan = keys.plan(db, plan_hash)
            kind = (
                record.configuration,
                record.label,
                record.benchmark,
                json.dumps(dict(record.levels), sort_keys=True),
                record.host,
                record.order_kind,
                record.phase,
            )
            db.execute(
                "INSERT INTO trial_rows VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    plan,
                    record.trial,
                    record.series,
                    record.round,
                    record.position,
                    keys.kind(db, plan, kind),
                    record.status,
                    record.reason,
                    record.exit_status,
                    int(record.timed_out),
                    record.started,
                    *end_columns(record.started, record.ended),
                    record.attempts,
                ),
            )
            outputs = tail(record.stdout_tail), tail(record.stderr_tail)
            if outputs != (b"", b""):
                db.execute(
                    "INSERT INTO trial_outputs VALUES (?,?,?,?)", (plan, record.trial, *outputs)
                )
            if record.measures:
                db.executemany(
                    "INSERT INTO measure_rows VALUES (?,?,?,?)",
                    [
                        (plan, record.trial, keys.name(db, k), float(v))
                        for k, v in record.measures.items()
                    ],
                )
                self._unfolded += len(record.measures)
            if record.series_values:
                db.executemany(
                    "INSERT INTO series_values VALUES (?,?,?,?)",
                    [
                        (plan_hash, record.trial, k, np.asarray(v, dtype="<f8").tobytes())
                        for k, v in record.series_values.items()
                    ],
                )
            if stop is not None:
                db.execute(
                    "INSERT OR REPLACE INTO stops VALUES (?,?,?,?,?,?,?,?,?)",
                    (plan_hash, *attrs.astuple(stop), time.time()),
                )
            if round_row is not None:
                db.execute(ROUND_INSERT, round_row)
            self._unfolded += 1
            if self._unfolded >= measure_blocks.FOLD_ROWS:
                self._fold(db)

    def record_trial_columns(self, plan_hash: str, trials: TrialColumns) -> None:
        """Write many finished trials (an import) in one transaction, all or none, in parts
        of ``BULK_TRIALS`` with their measures and a block each (run/bulk_trials.py):
        Python's copies of one part's rows, not of the whole import, are in memory at once."""
        step = bulk_trials.BULK_TRIALS
        with self._transaction() as db:
            for start in range(0, len(trials), step):
                bulk_trials.write(
                    db, plan_hash, trials.part(slice(start, start + step)), self._fold
                )

    def record_round(self, *values: Any) -> None:
        """Write a round's row in a transaction of its own; ``values`` are ``round_values``'s
        arguments (a round whose last trial ran goes in with that trial: ``record_trial``)."""
        self._write(ROUND_INSERT, round_values(*values))

    def record_host(self, plan_hash: str, host: str, facts: Mapping[str, str]) -> None:
        self._write(
            "INSERT OR REPLACE INTO hosts VALUES (?,?,?,?)",
            (plan_hash, host, json.dumps(dict(facts), sort_keys=True), time.time()),
        )

    def record_event(
        self, plan_hash: str, kind: str, message: str, host: str | None = None
    ) -> None:
        self._write(
            "INSERT INTO events VALUES (?,?,?,?,?)", (plan_hash, time.time(), host, kind, message)
        )

    def record_stop(self, plan_hash: str, stop: StopRecord) -> None:
        """A stopping rule's decision on its own (a run commits it with its trial instead)."""
        self._write(
            "INSERT OR REPLACE INTO stops VALUES (?,?,?,?,?,?,?,?,?)",
            (plan_hash, *attrs.astuple(stop), time.time()),
        )
