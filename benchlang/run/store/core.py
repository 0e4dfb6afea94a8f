"""The store object: opening a file read-only or as its one writer, checking its schema (an
earlier one is refused with the command that migrates it), closing it (docs/store.md)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from pathlib import Path

from benchlang.errors import UserError
from benchlang.run import measure_blocks, trial_blocks
from benchlang.run.leases import LEASES_SCHEMA, LeaseRows
from benchlang.run.row_keys import Keys
from benchlang.run.store.locks import StoreWriteError, WriterLock, describe_os
from benchlang.run.store.reading import StoreReading
from benchlang.run.store.schema import SCHEMA, SCHEMA_VERSION, VIEWS
from benchlang.run.store.writing import StoreWriting

WAL_CHECKPOINT_PAGES = 8192
"""Pages (4 KiB) the write-ahead log grows to before a commit folds it into the file (SQLite's
default 1000). A checkpoint is almost all fsync (of 8192 pages: ~100 ms, 3 ms without it, on
this machine's ext4): a one-configuration trial adds ~9.5 pages, so the default paid ~20 ms
every ~105 trials (~0.2 ms a trial), this ~100 ms every ~860 (~0.1 ms: the log's bytes reaching
the disk). About 32 MiB of log (more while a reader holds an older snapshot), folded into the
file when the writer closes (``close``) and removed with the last connection; commits stay
durable against a killed process either way (docs/store.md)."""


class Store(StoreReading, StoreWriting, LeaseRows):
    """A benchlang results file. Use as a context manager.

    ``Store(path)`` opens an existing store **read-only** (``mode=ro``; ``immutable=1`` on
    read-only media): it never changes the file, creates no table, switches no journal mode
    and changes nothing. ``Store(path, create=True)`` opens it for writing, creating it (mode
    0600) when missing; ``write=True`` opens an existing store for writing. A writer holds an
    exclusive lock on ``<path>.lock`` until it is closed: one writer per store. A store of an
    earlier schema is refused either way: ``benchlang store migrate`` rewrites it.
    """

    def __init__(self, path: str | Path, *, create: bool = False, write: bool = False) -> None:
        self.path = Path(path)
        self.writable = create or write
        self._lock: WriterLock | None = None
        self.db: sqlite3.Connection | None = None
        self._schema = SCHEMA_VERSION
        self._unfolded = 0
        self._keys = Keys()
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
        if 1 <= version < SCHEMA_VERSION:
            raise UserError(
                f"{self.path} has store schema {version} (this benchlang reads schema "
                f"{SCHEMA_VERSION}): run `benchlang store migrate {self.path}`"
            )
        if version != SCHEMA_VERSION:
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
        self._lock = WriterLock(self.path)
        created = False
        if not self.path.exists():
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except OSError as err:
                raise StoreWriteError(
                    f"cannot create the store {self.path}: {describe_os(err)}"
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
            self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            self.db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.OperationalError as err:
            raise self._write_error(err) from None
        if version is None:
            with self._transaction() as db:
                for statement in [*SCHEMA.split(";"), LEASES_SCHEMA, *VIEWS]:
                    if statement.strip():
                        db.execute(statement)
                db.execute(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
                for statement in [*measure_blocks.BLOCKS_SCHEMA, *trial_blocks.SCHEMA]:
                    db.execute(statement)
        self._schema = SCHEMA_VERSION
        self._unfolded = self._count_unfolded()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """A writer first folds its log into the file (a passive checkpoint: it waits for no
        reader): SQLite removes the log only when the last connection closes, and a reader
        still open kept up to WAL_CHECKPOINT_PAGES pages of trials out of the file itself."""
        if self.db is not None:
            with contextlib.suppress(sqlite3.Error):
                if self.writable:
                    self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                self.db.close()
            self.db = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None
