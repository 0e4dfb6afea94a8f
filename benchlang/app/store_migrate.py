"""``benchlang store migrate STORE``: rewrite a store of an earlier schema as the current one
(docs/store.md#migrating). A new file is written beside the store, compared with it (the same
trials and values), then swapped in with one ``rename``; the original is kept beside it as
``STORE.v<N>.bak``. At every instant ``STORE`` is the whole old store or the whole new one; a
killed migration leaves the old store as it was (and a ``STORE.migrating`` file the next
migration replaces). The store's lock is held throughout: no run writes to it meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import urllib.parse
from pathlib import Path

import attrs

from benchlang.errors import UserError
from benchlang.run.store import SCHEMA_VERSION
from benchlang.run.store.locks import WriterLock
from benchlang.run.store.migrate import copy, schema_of


@attrs.frozen
class Migrated:
    """The outcome: the store, its schema before and now, what was copied and compared
    (None when the store already had the current schema), where the original is kept and
    both files' sizes."""

    store: Path
    before: int
    after: int
    trials: int | None = None
    measures: int | None = None
    backup: Path | None = None
    bytes_before: int = 0
    bytes_after: int = 0


def _sidecars(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")]


def _settle(path: Path) -> int:
    """Fold the old store's write-ahead log into the file and return its schema version: the
    file alone is then the whole store (its backup is the file; a log left beside the name
    would be read with the new store). Refused while a reader holds an older snapshot."""
    uri = "file:" + urllib.parse.quote(str(path.resolve()))
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)
    except sqlite3.Error as err:
        raise UserError(f"cannot open {path}: {err}") from None
    try:
        version = schema_of(db, path)
        if version >= SCHEMA_VERSION:
            return version
        try:
            busy, _log, _done = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as err:
            raise UserError(f"cannot migrate {path}: {err}") from None
        if busy:
            raise UserError(
                f"cannot migrate {path}: a reader holds it open", "try again when it is done"
            )
        return version
    finally:
        db.close()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def migrate_store(path: str | Path) -> Migrated:
    """Migrate the store at ``path`` to the current schema (nothing when it has it already)."""
    store = Path(path)
    if not store.is_file():
        raise UserError(f"no store at {store}")
    lock = WriterLock(store)
    try:
        version = _settle(store)
        if version == SCHEMA_VERSION:
            return Migrated(store, version, version, bytes_before=store.stat().st_size)
        if version > SCHEMA_VERSION:
            raise UserError(
                f"{store} has store schema {version}; this benchlang reads schema {SCHEMA_VERSION}"
            )
        backup = store.with_name(f"{store.name}.v{version}.bak")
        if backup.exists():
            raise UserError(
                f"cannot migrate {store}: {backup.name} exists beside it",
                "move it away (it is the copy a migration keeps of the original)",
            )
        target = store.with_name(store.name + ".migrating")
        for leftover in _sidecars(target):
            leftover.unlink(missing_ok=True)
        try:
            copied = copy(store, target)
            _fsync(target)
        except BaseException:
            for leftover in _sidecars(target):
                with contextlib.suppress(OSError):
                    leftover.unlink()
            raise
        finally:
            target.with_name(target.name + ".lock").unlink(missing_ok=True)
        try:
            os.link(store, backup)
        except OSError:
            shutil.copy2(store, backup)
        before = store.stat()
        os.chmod(target, stat.S_IMODE(before.st_mode))
        os.replace(target, store)
        _fsync(store.parent)
        return Migrated(
            store,
            version,
            SCHEMA_VERSION,
            copied.trials,
            copied.measures,
            backup,
            before.st_size,
            store.stat().st_size,
        )
    finally:
        lock.release()
