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
LOCK_KEY = 0x62656E63686C6831  # "benchlh1": the PostgreSQL history's advisory lock
"""Every PostgreSQL write, schema creation and migration included, first takes this
transaction-level advisory lock (``pg_advisory_xact_lock``; PostgreSQL docs, 13.3.5 "Advisory
Locks", explicit-locking.html#ADVISORY-LOCKS, and 9.27.10 "Advisory Lock Functions"): two first
writers then create one schema, the second finding it made. ``CREATE TABLE IF NOT EXISTS`` alone
does not serialise them (both pass the check, one fails on the catalog's unique index). The
wait is bounded by ``lock_timeout``, as for any lock."""


def is_postgres(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def _redacted(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def _where(url: str) -> str:
    """HOST:PORT/DATABASE of a PostgreSQL URL: what an error names, without user or password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:
        return _redacted(url)
    database = parts.get("dbname") or parts.get("user") or ""
    return f"{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}/{database}"


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
        self.where = _where(self.target)
        try:
            db = psycopg.connect(self.target, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise self._unreachable(
                exc, "is the server running, and the URL's host, port, database and user right?"
            ) from None
        return db

    def _unreachable(self, exc: BaseException, hint: str) -> UserError:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return UserError(f"cannot reach the PostgreSQL history at {self.where}: {first}", hint)

    def _lost(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the PostgreSQL connection lost (the server stopped or gone)."""
        if not self.postgres:
            return False
        import psycopg

        return isinstance(exc, psycopg.OperationalError) and (self._db.broken or self._db.closed)

    @contextmanager
    def _reaching(
        self, hint: str = "nothing of this change was written: run it again once the server is back"
    ) -> Iterator[None]:
        """A lost connection as one line naming the server, not the driver's traceback."""
        try:
            yield
        except Exception as exc:
            if self._lost(exc):
                raise self._unreachable(exc, hint) from None
            raise

    def _check_schema(self, create: bool) -> None:
        self.meta = self._read_meta()
        if "schema_version" not in self.meta:
            self._create(create)
        self._ready = True
        version = int(self.meta["schema_version"])
        if version > SCHEMA_VERSION:
            raise UserError(
                f"history {self.name} has schema {version}; this benchlang reads schema "
                f"{SCHEMA_VERSION}",
                "upgrade benchlang (pip install -U benchlang) to read it",
            )
        if version < SCHEMA_VERSION:
            self._migrate()

    def _read_meta(self) -> dict[str, str]:
        """The meta table ({} when there is none), read without an error that would abort a
        PostgreSQL transaction."""
        if not self.has_table("meta"):
            return {}
        try:
            return dict(self.query("SELECT key, value FROM meta"))
        except UserError:
            raise
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(f"{self.name} is not a benchlang history ({first})") from None

    def _create(self, create: bool) -> None:
        """A new history's tables, in one transaction under the write lock: a first writer
        that waited for another finds the schema made and creates nothing."""
        if not create:
            if self._has_other_tables():
                raise UserError(f"{self.name} is not a benchlang history (it has other tables)")
            raise UserError(f"history {self.name} is empty", "benchlang history add STORE")
        with self.write():
            self.meta = self._read_meta()
            if "schema_version" in self.meta:
                return
            if self._has_other_tables():
                raise UserError(f"{self.name} is not a benchlang history (it has other tables)")
            for statement in _TABLES:
                self.execute(statement)
            self.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
            )
        self.meta = {"schema_version": str(SCHEMA_VERSION)}

    def _migrate(self) -> None:
        """Bring a history of an older schema to this one, in one transaction under the write
        lock (its version read again under it: another writer may have migrated it)."""
        with self.write():
            version = int(self._read_meta()["schema_version"])
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
        """Read from the catalog under the statement's snapshot: ``to_regclass`` can answer
        from a cache made before a writer we waited for committed the table."""
        if self.postgres:
            sql = (
                "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() "
                "AND tablename = ?"
            )
            return bool(self.query(sql, (name,)))
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        try:
            return bool(self.query(sql, (name,)))
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.name} is not a benchlang history ({exc})") from None

    def _rollback(self) -> None:
        """End the transaction unwritten; nothing to end on a lost connection (the server
        rolls an unfinished transaction back)."""
        if self.postgres:
            if not (self._db.broken or self._db.closed):
                self._db.execute("ROLLBACK")
        elif self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self._reaching():
            self._db.execute(self._sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if self.postgres:
            with self._reaching(), self._db.cursor() as cur:
                cur.executemany(self._sql(sql), rows)
        else:
            self._db.executemany(sql, rows)

    def batch(self) -> AbstractContextManager[Any]:
        """Statements sent together: on PostgreSQL a pipeline (psycopg's pipeline mode), so
        writes whose results are not read cost no round trip each, and a query sends what
        was queued before it; on SQLite (in process) nothing to batch."""
        return self._pipeline() if self.postgres else nullcontext()

    @contextmanager
    def _pipeline(self) -> Iterator[None]:
        with self._reaching(), self._db.pipeline():
            yield

    def query(
        self, sql: str, params: Sequence[Any] = (), *, binary: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows; ``binary``: PostgreSQL sends them in binary format (bytea as its bytes,
        not twice as many hex digits)."""
        fmt = {"binary": True} if self.postgres and binary else {}
        with self._reaching("a read writes nothing"):
            cur = self._db.execute(self._sql(sql), tuple(params), **fmt)
            return [tuple(r) for r in cur.fetchall()]

    @contextmanager
    def write(self) -> Iterator[History]:
        """One transaction holding the history's write lock: committed whole or not at all.
        A second writer waits ``timeout`` seconds, then is refused in one line. The lock: on
        SQLite ``BEGIN IMMEDIATE`` (the database's write lock), on PostgreSQL the advisory lock
        ``LOCK_KEY`` (and ``runs`` locked as by benchlang before it). A connection lost on the
        way is the one-line "cannot reach" error; the server rolls back what it had."""
        busy = UserError(
            f"history {self.name} is being written by another benchlang; try again",
            "two writers at once: each add is one transaction, nothing was written",
        )
        try:
            if self.postgres:
                lock = "; LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE" if self._ready else ""
                timeout = int(self.timeout * 1000)
                with self._reaching():
                    self._db.execute(
                        f"BEGIN; SET LOCAL lock_timeout = '{timeout}ms'; "
                        f"SELECT pg_advisory_xact_lock({LOCK_KEY}){lock}"
                    )
            else:
                self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            raise busy from None
        except UserError:
            raise
        except Exception as exc:
            self._rollback()
            if type(exc).__name__ == "LockNotAvailable":
                raise busy from None
            raise
        try:
            yield self
        except BaseException:
            self._rollback()
            raise
        with self._reaching(
            "the change was written whole or not at all: run it again (what is there already "
            "is not added twice)"
        ):
            self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
