"""The history database: one small DB-API adapter over SQLite (the default, a file) and
PostgreSQL (a team's shared history), so every query is written once.

A history keeps, per run, each series' KPI with its interval (docs/history.md); it is fed by
stores and never holds a trial. Writes happen in one transaction each: a failed or refused add
leaves nothing half-written.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from benchlang.errors import UserError

SCHEMA_VERSION = 2
"""1: runs and points; 2: acknowledged regressions (table ``acks``, history.acks)."""

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_key TEXT PRIMARY KEY, seq BIGINT NOT NULL, experiment TEXT NOT NULL,
        plan_hash TEXT, commit_sha TEXT, branch TEXT, date TEXT NOT NULL, source TEXT,
        facts TEXT NOT NULL, tags TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS points (
        run_key TEXT NOT NULL, metric TEXT NOT NULL, configuration TEXT NOT NULL,
        host_class TEXT NOT NULL, unit TEXT, better TEXT NOT NULL, percentile DOUBLE PRECISION,
        value DOUBLE PRECISION, lower DOUBLE PRECISION, upper DOUBLE PRECISION,
        interval_kind TEXT, series_kpis TEXT NOT NULL, variability DOUBLE PRECISION,
        trials BIGINT NOT NULL, independence TEXT NOT NULL, reasons TEXT NOT NULL,
        PRIMARY KEY (run_key, metric, configuration, host_class))""",
    """CREATE TABLE IF NOT EXISTS acks (
        change_id TEXT NOT NULL, metric TEXT NOT NULL, configuration TEXT NOT NULL,
        host_class TEXT NOT NULL, commit_before TEXT, commit_after TEXT, position BIGINT,
        reason TEXT NOT NULL, date TEXT NOT NULL,
        PRIMARY KEY (change_id, metric, configuration, host_class))""",
)
_MIGRATIONS = {1: _TABLES[3:]}
"""What takes a history of schema N to N + 1 (each ``CREATE ... IF NOT EXISTS``)."""


def is_postgres(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def _redacted(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


class History:
    """An open history: ``execute`` with ``?`` placeholders on either engine, ``write()`` for
    one transaction holding the history's write lock."""

    def __init__(self, target: str | Path, *, timeout: float = 30.0, create: bool = False):
        self.target = str(target)
        self.name = _redacted(self.target)
        self.postgres = is_postgres(self.target)
        self.timeout = timeout
        self._db = self._connect_postgres() if self.postgres else self._connect_sqlite(create)
        self._ready = False  # the tables exist (a PostgreSQL write then locks ``runs``)
        self.meta: dict[str, str] = {}  # the meta table as it was when opened
        self._check_schema(create)

    def _connect_sqlite(self, create: bool) -> Any:
        path = Path(self.target)
        if not path.exists() and not create:
            raise UserError(
                f"no history at {path}", "benchlang history add STORE creates one (--history H)"
            )
        try:
            db = sqlite3.connect(path, timeout=self.timeout, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{path} is not a benchlang history ({exc})") from None
        return db

    def _connect_postgres(self) -> Any:
        try:
            import psycopg
        except ImportError:
            raise UserError(
                "a PostgreSQL history needs the psycopg driver",
                'pip install "benchlang[history]"',
            ) from None
        try:
            db = psycopg.connect(self.target, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(
                f"cannot reach the PostgreSQL history {self.name}: {first}",
                "is the server running, and the URL's host, port, database and user right?",
            ) from None
        return db

    def _check_schema(self, create: bool) -> None:
        try:
            self.meta = dict(self.query("SELECT key, value FROM meta"))
        except Exception:  # no meta table: an empty database, or something else
            self._rollback_quietly()
        if "schema_version" in self.meta:
            self._ready = True
            version = int(self.meta["schema_version"])
            if version > SCHEMA_VERSION:
                raise UserError(
                    f"history {self.name} has schema {version}; this benchlang reads schema "
                    f"{SCHEMA_VERSION}",
                    "upgrade benchlang (pip install -U benchlang) to read it",
                )
            if version < SCHEMA_VERSION:
                self._migrate(version)
            return
        if self._has_other_tables():
            raise UserError(f"{self.name} is not a benchlang history (it has other tables)")
        if not create:
            raise UserError(f"history {self.name} is empty", "benchlang history add STORE")
        with self.write():
            for statement in _TABLES:
                self.execute(statement)
            self.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
            )
        self._ready = True

    def _migrate(self, version: int) -> None:
        """Bring a history of an older schema to this one, in one transaction."""
        with self.write():
            for v in range(version, SCHEMA_VERSION):
                for statement in _MIGRATIONS[v]:
                    self.execute(statement)
            self.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )
        self.meta["schema_version"] = str(SCHEMA_VERSION)

    def _has_other_tables(self) -> bool:
        """Tables that are not a history's: any in a SQLite file; in a PostgreSQL database
        (often shared with other tools) only ones named like the history's."""
        if self.postgres:
            sql = (
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_name IN ('runs', 'points')"
            )
        else:
            sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
        try:
            return bool(self.query(sql))
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.name} is not a benchlang history ({exc})") from None

    def has_table(self, name: str) -> bool:
        if self.postgres:
            return self.query("SELECT to_regclass(?)", (name,))[0][0] is not None
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return bool(self.query(sql, (name,)))

    def _rollback_quietly(self) -> None:
        if self.postgres:
            self._db.rollback()

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._db.execute(self._sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if self.postgres:
            with self._db.cursor() as cur:
                cur.executemany(self._sql(sql), rows)
        else:
            self._db.executemany(sql, rows)

    def batch(self) -> AbstractContextManager[Any]:
        """Statements sent together: on PostgreSQL a pipeline (psycopg's pipeline mode), so
        writes whose results are not read cost no round trip each, and a query sends what
        was queued before it; on SQLite (in process) nothing to batch."""
        return self._db.pipeline() if self.postgres else nullcontext()

    def query(self, sql: str, params: Sequence[Any] = (), *, binary: bool = False) -> list[tuple]:
        """The rows; ``binary``: PostgreSQL sends them in binary format (bytea as its bytes,
        not twice as many hex digits)."""
        fmt = {"binary": True} if self.postgres and binary else {}
        cur = self._db.execute(self._sql(sql), tuple(params), **fmt)
        return [tuple(r) for r in cur.fetchall()]

    @contextmanager
    def write(self) -> Iterator[History]:
        """One transaction holding the history's write lock: committed whole or not at all.
        A second writer waits ``timeout`` seconds, then is refused in one line."""
        busy = UserError(
            f"history {self.name} is being written by another benchlang; try again",
            "two writers at once: each add is one transaction, nothing was written",
        )
        try:
            if self.postgres:
                lock = "; LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE" if self._ready else ""
                timeout = int(self.timeout * 1000)
                self._db.execute(f"BEGIN; SET LOCAL lock_timeout = '{timeout}ms'{lock}")
            else:
                self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            raise busy from None
        except Exception as exc:
            self._db.execute("ROLLBACK")
            if type(exc).__name__ == "LockNotAvailable":
                raise busy from None
            raise
        try:
            yield self
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
