"""One writer per store: the lock file beside it, and write failures said for people."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sqlite3
import sys
import time
from pathlib import Path

from benchlang.errors import UserError


class StoreWriteError(UserError):
    """Writing to the store failed (disk full, read-only file system, I/O error). Every trial
    committed before is intact; ``benchlang run`` exits 1 and ``--resume`` continues."""


class StoreBusy(UserError):
    """Another process is writing to this store (one writer per store)."""


WRITE_PROBLEMS = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_READONLY": "it is read-only",
    "SQLITE_READONLY_DBMOVED": "it was moved or deleted while open",
    "SQLITE_IOERR": "disk I/O error",
    "SQLITE_CANTOPEN": "it cannot be opened for writing",
    "SQLITE_BUSY": "another program holds a write lock on it",
}


def describe_sqlite(err: sqlite3.Error) -> str:
    name = getattr(err, "sqlite_errorname", "") or ""
    for prefix, text in WRITE_PROBLEMS.items():
        if name == prefix or name.startswith(prefix + "_"):
            return text
    return str(err)


def describe_os(err: OSError) -> str:
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


class WriterLock:
    """An exclusive, non-blocking ``flock`` on ``<store>.lock``, holding the owner's pid, host
    and start time so that a refused writer can name it. The kernel releases it when the
    owner exits, however it exits (SIGKILL included)."""

    def __init__(self, store: Path) -> None:
        self.path = lock_path(store)
        for _ in range(100):
            fd = self._acquire(store)
            if self._current(fd):
                break
            os.close(fd)  # a clean close removed the file after we opened it: lock the new one
        else:
            raise StoreBusy(f"{store}: its lock file keeps being replaced", "try again")
        self.fd = fd
        self._describe(fd)

    def _current(self, fd: int) -> bool:
        """Whether the locked file is still the one at ``self.path``: a writer that closes
        cleanly unlinks it while holding the lock, so a file opened before that unlink
        guards nothing and must not count as the lock (the flock-and-unlink pattern)."""
        try:
            return os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except OSError:
            return False

    def _acquire(self, store: Path) -> int:
        self.created = False
        try:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                self.created = True
            except FileExistsError:
                fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as err:
            raise StoreWriteError(
                f"cannot write to the store {store}: cannot create {self.path.name}: {describe_os(err)}",
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
                f"cannot lock the store {store}: {describe_os(err)}",
                "give a --store on a local file system",
            ) from None
        return fd

    @staticmethod
    def _describe(fd: int) -> None:
        owner = {
            "pid": os.getpid(),
            "host": os.uname().nodename,
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
        """Unlock and remove the lock file, still holding the lock so that no other writer
        can hold it at once (``_current``); a killed writer leaves the file, which the
        next writer reuses. ``discard`` is kept for callers of older versions."""
        if self.fd >= 0 and self._current(self.fd):
            with contextlib.suppress(OSError):
                self.path.unlink()
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # closing the last descriptor releases the flock
            self.fd = -1
