"""The store: one SQLite file (WAL) holding plans, trials, measures and run metadata.

Each finished trial is written in its own transaction, committed before the next trial
starts. With WAL and synchronous=NORMAL a committed trial survives the process being
killed at any instant; an operating-system crash may roll back the last few commits,
and ``--resume`` then runs exactly those trials again. Schema: docs/store.md.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sqlite3
import sys
import time
import urllib.parse
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchlang.errors import UserError
from benchlang.run import bulk_trials, measure_blocks, trial_blocks
from benchlang.run.bulk_trials import TrialColumns
from benchlang.run.leases import LEASES_SCHEMA, LeaseRows

SCHEMA_VERSION = 5
TAIL_BYTES = 8192

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plans (
    plan_hash TEXT PRIMARY KEY,
    experiment TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    spec_path TEXT,
    spec_text TEXT,
    seed INTEGER NOT NULL,
    plan_json TEXT NOT NULL,
    created REAL NOT NULL,
    run_started REAL
);
CREATE TABLE IF NOT EXISTS trials (
    plan_hash TEXT NOT NULL,
    trial INTEGER NOT NULL,
    series INTEGER NOT NULL,
    round INTEGER NOT NULL,
    position INTEGER NOT NULL,
    host TEXT NOT NULL,
    configuration INTEGER NOT NULL,
    label TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    levels TEXT NOT NULL,
    order_kind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    reason TEXT,
    exit_status INTEGER,
    timed_out INTEGER NOT NULL DEFAULT 0,
    started REAL,
    ended REAL,
    attempts INTEGER NOT NULL DEFAULT 1,
    stdout_tail BLOB,
    stderr_tail BLOB,
    phase TEXT NOT NULL DEFAULT 'measured' CHECK (phase IN ('measured', 'warmup', 'cooldown')),
    PRIMARY KEY (plan_hash, trial)
);
CREATE TABLE IF NOT EXISTS measures (
    plan_hash TEXT NOT NULL,
    trial INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (plan_hash, trial, name)
);
CREATE TABLE IF NOT EXISTS series_values (
    plan_hash TEXT NOT NULL,
    trial INTEGER NOT NULL,
    name TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (plan_hash, trial, name)
);
CREATE TABLE IF NOT EXISTS rounds (
    plan_hash TEXT NOT NULL,
    round INTEGER NOT NULL,
    host TEXT NOT NULL,
    order_kind TEXT NOT NULL,
    permutation TEXT NOT NULL,
    started REAL,
    ended REAL,
    reset_status TEXT,
    PRIMARY KEY (plan_hash, round)
);
CREATE TABLE IF NOT EXISTS hosts (
    plan_hash TEXT NOT NULL,
    host TEXT NOT NULL,
    facts TEXT NOT NULL,
    recorded REAL NOT NULL,
    PRIMARY KEY (plan_hash, host)
);
CREATE TABLE IF NOT EXISTS stops (
    plan_hash TEXT NOT NULL,
    series INTEGER NOT NULL,
    configuration INTEGER NOT NULL,
    after_trials INTEGER NOT NULL,
    action TEXT NOT NULL,
    rule TEXT NOT NULL,
    detected_class TEXT,
    reason TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (plan_hash, series, configuration)
);
CREATE INDEX IF NOT EXISTS trials_failed ON trials(plan_hash, trial) WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS trials_with_reason ON trials(plan_hash, trial) WHERE reason IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
    plan_hash TEXT NOT NULL,
    at REAL NOT NULL,
    host TEXT,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
"""


@attrs.frozen
class TrialRecord:
    """One finished trial as it goes into the store."""

    trial: int
    series: int
    round: int
    position: int
    host: str
    configuration: int
    label: str
    benchmark: str
    levels: Mapping[str, Any]
    order_kind: str
    status: str
    reason: str | None
    exit_status: int | None
    timed_out: bool
    started: float
    ended: float
    attempts: int
    stdout_tail: bytes
    stderr_tail: bytes
    measures: Mapping[str, float]
    series_values: Mapping[str, np.ndarray]
    phase: str = "measured"


@attrs.frozen
class StoredPlan:
    plan_hash: str
    experiment: str
    spec_hash: str
    spec_path: str | None
    spec_text: str | None
    seed: int
    plan_json: str
    run_started: float | None


@attrs.frozen
class StopRecord:
    """A stopping rule ended a configuration's trials in a series (docs/stopping.md)."""

    series: int
    configuration: int
    after_trials: int
    action: str
    rule: str
    detected_class: str | None
    reason: str


@attrs.frozen
class TrialTable:
    """Trials of one plan, column-wise, with scalar measures as float arrays (nan = missing)."""

    trial: np.ndarray
    series: np.ndarray
    round: np.ndarray
    position: np.ndarray
    host: np.ndarray
    configuration: np.ndarray
    label: np.ndarray
    benchmark: np.ndarray
    levels: tuple[dict[str, Any], ...]
    order_kind: np.ndarray
    ok: np.ndarray
    reason: np.ndarray
    measures: dict[str, np.ndarray]
    phase: np.ndarray

    def __len__(self) -> int:
        return int(self.trial.size)

    @property
    def measured(self) -> np.ndarray:
        """Trials that count in analyses (not an A/B layout's warm-up or cool-down)."""
        return self.phase == "measured"

    def select(self, mask: np.ndarray) -> TrialTable:
        """The trials where ``mask`` is true, every column alike."""
        picked = np.flatnonzero(mask)
        columns = {f.name: getattr(self, f.name) for f in attrs.fields(TrialTable)}
        out = {k: v[picked] for k, v in columns.items() if isinstance(v, np.ndarray)}
        out["levels"] = tuple(self.levels[i] for i in picked.tolist())
        out["measures"] = {k: v[picked] for k, v in self.measures.items()}
        return TrialTable(**out)


def tail(data: bytes, limit: int = TAIL_BYTES) -> bytes:
    return data[-limit:] if len(data) > limit else data


class StoreWriteError(UserError):
    """Writing to the store failed (disk full, read-only file system, I/O error). Every trial
    committed before is intact; ``benchlang run`` exits 1 and ``--resume`` continues."""


class StoreBusy(UserError):
    """Another process is writing to this store (one writer per store)."""


_WRITE_PROBLEMS = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_READONLY": "it is read-only",
    "SQLITE_READONLY_DBMOVED": "it was moved or deleted while open",
    "SQLITE_IOERR": "disk I/O error",
    "SQLITE_CANTOPEN": "it cannot be opened for writing",
    "SQLITE_BUSY": "another program holds a write lock on it",
}


def _describe_sqlite(err: sqlite3.Error) -> str:
    name = getattr(err, "sqlite_errorname", "") or ""
    for prefix, text in _WRITE_PROBLEMS.items():
        if name == prefix or name.startswith(prefix + "_"):
            return text
    return str(err)


def _describe_os(err: OSError) -> str:
    if err.errno == errno.ENOSPC:
        return "the disk is full"
    if err.errno == errno.EROFS:
        return "the file system is read-only"
    return err.strerror or str(err)


def _format_since(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def lock_path(path: str | Path) -> Path:
    """The sidecar file a writer holds an exclusive ``flock`` on (docs/store.md#one-writer)."""
    return Path(f"{path}.lock")


class _WriterLock:
    """An exclusive, non-blocking ``flock`` on ``<store>.lock``, holding the owner's pid, host
    and start time so that a refused writer can name it. The kernel releases it when the
    owner exits, however it exits (SIGKILL included)."""

    def __init__(self, store: Path) -> None:
        self.path = lock_path(store)
        self.created = False
        try:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                self.created = True
            except FileExistsError:
                fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as err:
            raise StoreWriteError(
                f"cannot write to the store {store}: cannot create {self.path.name}: {_describe_os(err)}",
                "give a --store on a writable file system",
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = self._owner(fd)
            os.close(fd)
            raise StoreBusy(
                f"{store} is in use by another writer: {owner}",
                "one benchlang run per store: wait for it to end, stop it, or give another --store",
            ) from None
        except OSError as err:
            os.close(fd)
            raise StoreWriteError(
                f"cannot lock the store {store}: {_describe_os(err)}",
                "give a --store on a local file system",
            ) from None
        self.fd = fd
        owner = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.time(),
            "command": " ".join(["benchlang", *sys.argv[1:2]]) if sys.argv else "benchlang",
        }
        data = json.dumps(owner).encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        except OSError:
            pass  # the lock holds without its description; a refused writer says so

    @staticmethod
    def _owner(fd: int) -> str:
        for _ in range(20):  # the owner writes its description right after locking
            try:
                info = json.loads(os.pread(fd, 4096, 0) or b"null")
            except (OSError, ValueError):
                info = None
            if isinstance(info, dict) and "pid" in info:
                return (
                    f"pid {info['pid']} on host {info.get('host', '?')}"
                    f" since {_format_since(float(info.get('since', 0)))}"
                    f" ({info.get('command', 'benchlang')})"
                )
            time.sleep(0.01)
        return "a process that did not say who it is"

    def release(self, *, discard: bool = False) -> None:
        """Unlock; ``discard`` also removes a lock file this writer created (it refused the
        file, so no store is left to guard)."""
        if discard and self.created:
            with contextlib.suppress(OSError):
                self.path.unlink()
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # closing the last descriptor releases the flock
            self.fd = -1


class Store(LeaseRows):
    """A benchlang results file. Use as a context manager.

    ``Store(path)`` opens an existing store **read-only** (``mode=ro``; ``immutable=1`` on
    read-only media): it never changes the file, creates no table, switches no journal mode
    and upgrades nothing. ``Store(path, create=True)`` opens it for writing, creating it (mode
    0600) when missing; ``write=True`` opens an existing store for writing. A writer holds an
    exclusive lock on ``<path>.lock`` until it is closed: one writer per store.
    """

    def __init__(self, path: str | Path, *, create: bool = False, write: bool = False) -> None:
        self.path = Path(path)
        self.writable = create or write
        self._lock: _WriterLock | None = None
        self.db: sqlite3.Connection | None = None
        self._schema = SCHEMA_VERSION
        self._unfolded = 0
        if self.path.is_dir():
            raise UserError(f"{self.path} is not a benchlang store: it is a directory")
        if not create and not self.path.exists():
            raise UserError(
                f"no store at {self.path}",
                "run an experiment first: benchlang run SPEC --store PATH",
            )
        if create and not self.path.parent.is_dir():
            raise UserError(f"cannot create the store {self.path}: no directory {self.path.parent}")
        self._created = False
        try:
            if self.writable:
                self._open_writer(create)
            else:
                self._open_reader()
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """Opening failed: close, and leave no empty file or lock behind that this call made."""
        if self.db is not None:
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
            self.db = None
        if self._created:
            with contextlib.suppress(OSError):
                if self.path.stat().st_size == 0:
                    self.path.unlink()
        if self._lock is not None:
            self._lock.release(discard=True)
            self._lock = None

    # -- opening ------------------------------------------------------------------------

    def _not_a_store(self, why: str) -> UserError:
        return UserError(f"{self.path} is not a benchlang store: {why}")

    def _inspect(self, db: sqlite3.Connection) -> int | None:
        """The file's schema version; None for an empty database. Reads only."""
        try:
            tables = {
                name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if not tables:
                return None
            row = None
            if "meta" in tables:
                row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as err:
            if getattr(err, "sqlite_errorname", "") == "SQLITE_CANTOPEN":
                raise
            raise self._not_a_store(str(err)) from None
        if row is None:
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise self._not_a_store(f"it holds other tables ({shown})")
        try:
            version = int(row[0])
        except ValueError:
            raise self._not_a_store(f"unreadable schema version {row[0]!r}") from None
        if version not in (1, 2, 3, 4, SCHEMA_VERSION):
            raise UserError(
                f"{self.path} has store schema {version}; this benchlang reads schema {SCHEMA_VERSION}"
            )
        return version

    def _open_reader(self) -> None:
        if self.path.stat().st_size == 0:
            raise self._not_a_store("the file is empty")
        base = "file:" + urllib.parse.quote(str(self.path.resolve()))
        try:
            self.db = sqlite3.connect(
                f"{base}?mode=ro", uri=True, isolation_level=None, timeout=30.0
            )
            version = self._inspect(self.db)
        except sqlite3.OperationalError as err:
            if getattr(err, "sqlite_errorname", "") != "SQLITE_CANTOPEN":
                raise self._not_a_store(str(err)) from None
            # Read-only media: a WAL file cannot get its shared-memory index; nothing can
            # change the file there, so it is read as immutable.
            if self.db is not None:
                self.db.close()
            self.db = sqlite3.connect(f"{base}?mode=ro&immutable=1", uri=True, isolation_level=None)
            try:
                version = self._inspect(self.db)
            except sqlite3.DatabaseError as err2:
                raise self._not_a_store(str(err2)) from None
        if version is None:
            raise self._not_a_store("it holds no table")
        self._schema = version

    def _open_writer(self, create: bool) -> None:
        self._lock = _WriterLock(self.path)
        created = False
        if not self.path.exists():
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except OSError as err:
                raise StoreWriteError(
                    f"cannot create the store {self.path}: {_describe_os(err)}"
                ) from None
            created = self._created = True
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            version = self._inspect(self.db)
        except sqlite3.DatabaseError as err:
            raise self._not_a_store(str(err)) from None
        if version is None and not (create or created):
            raise self._not_a_store(
                "the file is empty" if self.path.stat().st_size == 0 else "it holds no table"
            )
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.OperationalError as err:
            raise self._write_error(err) from None
        if version is None:
            with self._transaction() as db:
                for statement in [*_SCHEMA.split(";"), LEASES_SCHEMA]:
                    if statement.strip():
                        db.execute(statement)
                db.execute(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
                for statement in [*measure_blocks.BLOCKS_SCHEMA, *trial_blocks.SCHEMA]:
                    db.execute(statement)
        elif version < SCHEMA_VERSION:
            self._upgrade(version)
        self._index_exceptions()
        self._schema = SCHEMA_VERSION
        self._unfolded = self._count_unfolded()

    def _index_exceptions(self) -> None:
        """Partial indexes of the few failed trials and trials with a reason, so that reading
        them does not scan a million rows (stores made before them get them on first write)."""
        try:
            with self._transaction() as db:
                for statement in _SCHEMA.split(";"):
                    if "CREATE INDEX" in statement:
                        db.execute(statement)
        except sqlite3.Error as err:
            raise self._write_error(err) from None

    def _upgrade(self, version: int) -> None:
        """In place, in one transaction: schema 1 had no trial phase (every trial was
        measured), schemas 1 and 2 no leases (runs before backend protocol 2 allocated
        nothing), schemas 1 to 3 no measure blocks and 1 to 4 no trial blocks (filled by the
        first fold that follows)."""
        with self._transaction() as db:
            if version == 1:
                db.execute(
                    "ALTER TABLE trials ADD COLUMN phase TEXT NOT NULL DEFAULT 'measured' CHECK (phase IN ('measured', 'warmup', 'cooldown'))"
                )
            db.execute(LEASES_SCHEMA)
            for statement in [*measure_blocks.BLOCKS_SCHEMA, *trial_blocks.SCHEMA]:
                db.execute(statement)
            db.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )

    def _count_unfolded(self) -> int:
        """About how many measures or trials rows no block holds yet (rowids are dense: rows
        are only ever inserted)."""
        return max(
            0,
            *(
                int(self.db.execute(f"SELECT coalesce(max(rowid), 0) FROM {table}").fetchone()[0])
                - measure_blocks.watermark(self.db, key)
                for table, key in (("measures", "measures_folded"), ("trials", "trials_folded"))
            ),
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

    # -- writing ------------------------------------------------------------------------

    def _write_error(self, err: sqlite3.Error) -> StoreWriteError:
        return StoreWriteError(
            f"cannot write to the store {self.path}: {_describe_sqlite(err)}",
            "every trial committed before is intact",
        )

    def _rollback(self) -> None:
        if self.db is not None and self.db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT``; a write failure rolls back (when SQLite has
        not already) and becomes a StoreWriteError."""
        if not self.writable or self.db is None:
            raise UserError(f"{self.path} was opened read-only")
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            yield db
            db.execute("COMMIT")
        except sqlite3.IntegrityError:
            self._rollback()
            raise
        except sqlite3.Error as err:
            self._rollback()
            raise self._write_error(err) from None
        except BaseException:
            self._rollback()
            raise

    def _write(self, sql: str, params: Iterable[Any] = ()) -> None:
        with self._transaction() as db:
            db.execute(sql, tuple(params))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.db is not None:
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
            self.db = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

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
            (plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, time.time()),
        )

    def has_plan(self, plan_hash: str) -> bool:
        """Whether a run of this plan was ever started in this store."""
        row = self.db.execute("SELECT 1 FROM plans WHERE plan_hash = ?", (plan_hash,)).fetchone()
        return row is not None

    def mark_run_started(self, plan_hash: str) -> float:
        """The wall-clock origin of a run (kept across resumes, for series spread over a span)."""
        self._write(
            "UPDATE plans SET run_started = ? WHERE plan_hash = ? AND run_started IS NULL",
            (time.time(), plan_hash),
        )
        return float(
            self.db.execute(
                "SELECT run_started FROM plans WHERE plan_hash = ?", (plan_hash,)
            ).fetchone()[0]
        )

    def plans(self) -> list[StoredPlan]:
        rows = self.db.execute(
            "SELECT plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, run_started FROM plans ORDER BY created"
        ).fetchall()
        return [StoredPlan(*row) for row in rows]

    def plan(self, plan_hash: str | None = None) -> StoredPlan:
        """The named plan, or the only/latest one when none is named."""
        plans = self.plans()
        if not plans:
            raise UserError(f"{self.path} holds no experiment yet")
        if plan_hash is None:
            return plans[-1]
        for p in plans:
            if p.plan_hash.removeprefix("sha256:").startswith(plan_hash.removeprefix("sha256:")):
                return p
        raise UserError(
            f"{self.path} holds no plan {plan_hash}",
            f"plans here: {', '.join(p.plan_hash[:19] for p in plans)}; if the spec or its seed changed since the run, omit SPEC (latest plan) or pass --plan",
        )

    def finished_trials(self, plan_hash: str) -> set[int]:
        return {
            row[0]
            for row in self.db.execute("SELECT trial FROM trials WHERE plan_hash = ?", (plan_hash,))
        }

    def count_failed(self, plan_hash: str) -> int:
        """How many trials of the plan failed (every phase)."""
        return int(
            self.db.execute(
                "SELECT count(*) FROM trials WHERE plan_hash = ? AND status = 'failed'",
                (plan_hash,),
            ).fetchone()[0]
        )

    def record_trial(
        self, plan_hash: str, record: TrialRecord, stop: StopRecord | None = None
    ) -> None:
        """Write one trial with its measures and series, and the stopping decision it led to
        (if any), in a single committed transaction."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO trials VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    plan_hash,
                    record.trial,
                    record.series,
                    record.round,
                    record.position,
                    record.host,
                    record.configuration,
                    record.label,
                    record.benchmark,
                    json.dumps(dict(record.levels), sort_keys=True),
                    record.order_kind,
                    record.status,
                    record.reason,
                    record.exit_status,
                    int(record.timed_out),
                    record.started,
                    record.ended,
                    record.attempts,
                    tail(record.stdout_tail),
                    tail(record.stderr_tail),
                    record.phase,
                ),
            )
            if record.measures:
                db.executemany(
                    "INSERT INTO measures VALUES (?,?,?,?)",
                    [(plan_hash, record.trial, k, float(v)) for k, v in record.measures.items()],
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
            self._unfolded += 1
            if self._unfolded >= measure_blocks.FOLD_ROWS:
                self._fold(db)

    def record_trial_columns(self, plan_hash: str, trials: TrialColumns) -> None:
        """Write many finished trials (an import) in transactions of ``BULK_TRIALS`` each,
        with their measures and blocks (run/bulk_trials.py): Python's copies of one part's
        rows, not of the whole import, are in memory at once."""
        step = bulk_trials.BULK_TRIALS
        for start in range(0, len(trials), step):
            with self._transaction() as db:
                bulk_trials.write(
                    db, plan_hash, trials.part(slice(start, start + step)), self._fold
                )

    def record_round(
        self,
        plan_hash: str,
        round_index: int,
        host: str,
        order_kind: str,
        permutation: Iterable[int],
        started: float,
        ended: float | None,
        reset_status: str,
    ) -> None:
        self._write(
            "INSERT OR REPLACE INTO rounds VALUES (?,?,?,?,?,?,?,?)",
            (
                plan_hash,
                round_index,
                host,
                order_kind,
                json.dumps(list(permutation)),
                started,
                ended,
                reset_status,
            ),
        )

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

    def stops(self, plan_hash: str) -> list[tuple[int, int, int, str, str, str | None, str]]:
        """(series, configuration, after_trials, action, rule, detected_class, reason) per stop."""
        return self.db.execute(
            "SELECT series, configuration, after_trials, action, rule, detected_class, reason FROM stops WHERE plan_hash = ? ORDER BY series, configuration",
            (plan_hash,),
        ).fetchall()

    def events(self, plan_hash: str) -> list[tuple[float, str | None, str, str]]:
        return self.db.execute(
            "SELECT at, host, kind, message FROM events WHERE plan_hash = ? ORDER BY at",
            (plan_hash,),
        ).fetchall()

    def host_facts(self, plan_hash: str) -> dict[str, dict[str, str]]:
        rows = self.db.execute("SELECT host, facts FROM hosts WHERE plan_hash = ?", (plan_hash,))
        return {host: json.loads(facts) for host, facts in rows}

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction around several queries, so that they see one state of a
        store another process may be writing (WAL)."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def trial_table(self, plan_hash: str, measures: Collection[str] | None = None) -> TrialTable:
        """A plan's trials column by column, in trial order; every measure, or only those
        named in ``measures`` (each then a column, all nan where no trial has it); read in
        one snapshot of the store."""
        with self._snapshot():
            return self._trial_table(plan_hash, measures)

    def _trial_table(self, plan_hash: str, measures: Collection[str] | None) -> TrialTable:
        """The columns of ``trial_table``.

        Columnar, in two scans of the plan's rows: the distinct configurations (label,
        benchmark, levels) with the few-valued text columns (host, order, status, phase), then
        every integer column and those columns' codes as one ``group_concat`` string each,
        parsed by numpy; measures from their float64 blocks (``measure_blocks``; row by row
        in stores before schema 4); reasons through a partial index.
        """
        if self._schema >= 5:
            return self._trial_table_from_blocks(plan_hash, measures)
        coded = ("host", "order_kind", "status", "phase" if self._schema >= 2 else "'measured'")
        combos = self.db.execute(
            "SELECT DISTINCT configuration, label, benchmark, levels, "
            f"{', '.join(coded)} FROM trials WHERE plan_hash = ?",
            (plan_hash,),
        ).fetchall()
        configs = sorted({row[:4] for row in combos})
        if not configs or len({c[0] for c in configs}) != len(configs):
            return self._trial_table_by_rows(plan_hash, measures)
        distinct = [sorted({row[4 + i] for row in combos}) for i in range(len(coded))]
        cases, params = [], []
        for column, values in zip(coded, distinct, strict=True):
            cases.append(
                f"CASE {column}" + "".join(f" WHEN ? THEN {i}" for i in range(len(values))) + " END"
            )
            params += values
        numbers = ("trial", "series", "round", "position", "configuration", *cases)
        inner = ", ".join(f"{expr} AS c{i}" for i, expr in enumerate(numbers))
        outer = ", ".join(f"group_concat(c{i})" for i in range(len(numbers)))
        texts = self.db.execute(
            f"SELECT {outer} FROM (SELECT {inner} FROM trials WHERE plan_hash = ? ORDER BY trial)",
            (*params, plan_hash),
        ).fetchone()
        trial, series, round_, position, configuration, *codes = (
            np.fromstring(text, dtype=np.int64, sep=",") for text in texts
        )
        if any(column.size != trial.size for column in (series, *codes)):
            return self._trial_table_by_rows(plan_hash, measures)
        host, order_kind, status, phase = (
            np.asarray(values, dtype=object)[code]
            for values, code in zip(distinct, codes, strict=True)
        )
        which = np.searchsorted(np.array([c[0] for c in configs], dtype=np.int64), configuration)
        return self._decoded(
            plan_hash,
            measures,
            (trial, series, round_, position, configuration),
            (host, order_kind, status, phase),
            (configs, which),
        )

    def _trial_table_from_blocks(
        self, plan_hash: str, measures: Collection[str] | None
    ) -> TrialTable:
        """``trial_table`` from the trial and measure blocks (schema 5) and the rows no block
        holds yet."""
        numbers, codes, dictionary = trial_blocks.merge(trial_blocks.read_parts(self.db, plan_hash))
        texts = tuple(np.asarray(dictionary[c], dtype=object)[codes[c]] for c in range(4))
        return self._decoded(plan_hash, measures, numbers, texts, (dictionary[4], codes[4]))

    def _decoded(
        self,
        plan_hash: str,
        measures: Collection[str] | None,
        numbers: Sequence[np.ndarray],
        texts: Sequence[np.ndarray],
        configurations: tuple[Sequence[Sequence], np.ndarray],
    ) -> TrialTable:
        """A trial table from its integer columns (trial, series, round, position,
        configuration), its text columns (host, order, status, phase) and each trial's index
        into the distinct (configuration, label, benchmark, levels JSON) tuples."""
        trial, series, round_, position, configuration = numbers
        host, order_kind, status, phase = texts
        configs, which = configurations
        level_dicts = np.empty(len(configs), dtype=object)
        level_dicts[:] = [json.loads(c[3]) for c in configs]
        return TrialTable(
            trial=trial,
            series=series,
            round=round_,
            position=position,
            host=host,
            configuration=configuration,
            label=np.asarray([c[1] for c in configs], dtype=object)[which],
            benchmark=np.asarray([c[2] for c in configs], dtype=object)[which],
            levels=tuple(level_dicts[which].tolist()),
            order_kind=order_kind,
            ok=status == "ok",
            reason=self._reasons(plan_hash, trial),
            measures=self._measure_columns(plan_hash, trial, measures),
            phase=phase,
        )

    def _reasons(self, plan_hash: str, trial: np.ndarray) -> np.ndarray:
        reason = np.full(trial.size, None, dtype=object)
        for t, text in self.db.execute(
            "SELECT trial, reason FROM trials WHERE plan_hash = ? AND reason IS NOT NULL",
            (plan_hash,),
        ):
            reason[np.searchsorted(trial, t)] = text
        return reason

    def _measure_columns(
        self, plan_hash: str, trial: np.ndarray, wanted: Collection[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Each measure (or each ``wanted`` one) as a float column aligned with ``trial`` (nan
        where a trial has none): from the measure blocks, or in stores before schema 4 in one
        scan of the rows. Values travel as floats, never as text (SQLite's text form of a
        REAL does not round-trip), so that they stay exact."""
        if self._schema >= 4:
            return measure_blocks.read_columns(self.db, plan_hash, trial, wanted)
        return self._measure_rows(plan_hash, trial, wanted)

    def _measure_rows(
        self, plan_hash: str, trial: np.ndarray, wanted: Collection[str] | None = None
    ) -> dict[str, np.ndarray]:
        """``_measure_columns`` from the ``measures`` rows alone (the reference form)."""
        if wanted is None:
            names = sorted(
                r[0]
                for r in self.db.execute(
                    "SELECT DISTINCT name FROM measures WHERE plan_hash = ?", (plan_hash,)
                )
            )
        else:
            names = sorted(set(wanted))
        if not names or trial.size == 0:
            return {name: np.full(trial.size, np.nan) for name in names}
        code = "CASE name" + "".join(f" WHEN ? THEN {i}" for i in range(len(names))) + " END"
        chosen = "" if wanted is None else f" AND name IN ({', '.join('?' * len(names))})"
        rows = self.db.execute(
            f"SELECT trial, {code}, value FROM measures "
            f"WHERE plan_hash = ? AND value IS NOT NULL{chosen}",
            (*names, plan_hash, *(() if wanted is None else names)),
        )
        found = np.fromiter(
            rows, dtype=[("trial", np.int64), ("name", np.int64), ("value", np.float64)]
        )
        at = np.searchsorted(trial, found["trial"])
        known = (at < trial.size) & (trial[np.minimum(at, trial.size - 1)] == found["trial"])
        columns = np.full((len(names), trial.size), np.nan)
        columns[found["name"][known], at[known]] = found["value"][known]
        return dict(zip(names, columns, strict=True))

    def _trial_table_by_rows(
        self, plan_hash: str, measures: Collection[str] | None = None
    ) -> TrialTable:
        """The same table read a row at a time: for empty plans, and for stores where a
        configuration index names several labels (not written by benchlang's executor)."""
        rows = self.db.execute(
            "SELECT trial, series, round, position, host, configuration, label, benchmark, levels, order_kind, status, reason, "
            + ("phase" if self._schema >= 2 else "'measured'")
            + " FROM trials WHERE plan_hash = ? ORDER BY trial",
            (plan_hash,),
        ).fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [()] * 13
        trial = np.asarray(columns[0], dtype=np.int64)
        return TrialTable(
            trial=trial,
            series=np.asarray(columns[1], dtype=np.int64),
            round=np.asarray(columns[2], dtype=np.int64),
            position=np.asarray(columns[3], dtype=np.int64),
            host=np.asarray(columns[4], dtype=object),
            configuration=np.asarray(columns[5], dtype=np.int64),
            label=np.asarray(columns[6], dtype=object),
            benchmark=np.asarray(columns[7], dtype=object),
            levels=tuple(json.loads(x) for x in columns[8]),
            order_kind=np.asarray(columns[9], dtype=object),
            ok=np.asarray([s == "ok" for s in columns[10]], dtype=bool),
            reason=np.asarray(columns[11], dtype=object),
            measures=self._measure_columns(plan_hash, trial, measures),
            phase=np.asarray(columns[12], dtype=object),
        )

    def series_values(self, plan_hash: str, name: str) -> dict[int, np.ndarray]:
        rows = self.db.execute(
            "SELECT trial, data FROM series_values WHERE plan_hash = ? AND name = ?",
            (plan_hash, name),
        )
        return {t: np.frombuffer(data, dtype="<f8") for t, data in rows}

    def failed_trials(
        self, plan_hash: str
    ) -> Iterator[tuple[int, str, str, int | None, bytes, bytes]]:
        yield from self.db.execute(
            "SELECT trial, label, reason, exit_status, stdout_tail, stderr_tail FROM trials WHERE plan_hash = ? AND status = 'failed' ORDER BY trial",
            (plan_hash,),
        )
