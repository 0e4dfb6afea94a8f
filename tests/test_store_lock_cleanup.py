"""A clean close removes the store's lock file without ever letting two
writers hold the lock: a writer that opened the file before it was unlinked does not count it
as the lock (docs/store.md#one-writer-per-store)."""

from __future__ import annotations

import fcntl
import os

import pytest

from benchlang.run.store.core import Store
from benchlang.run.store.locks import StoreBusy, WriterLock, lock_path


def test_a_clean_close_removes_the_lock_and_the_wal_files(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}")
        assert lock_path(path).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]


def test_a_lock_file_unlinked_under_a_waiting_writer_is_not_the_lock(tmp_path):
    store = tmp_path / "s.sqlite"
    first = WriterLock(store)
    stale = os.open(lock_path(store), os.O_RDWR)  # a second writer between open and flock
    first.release()  # a clean close: unlinked while still locked, then unlocked
    assert not lock_path(store).exists()
    fcntl.flock(stale, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the old file's lock is free now ...
    third = WriterLock(store)  # ... and a new writer locks the new file
    probe = WriterLock.__new__(WriterLock)
    probe.path = lock_path(store)
    assert not probe._current(stale)  # so the old file must not count as the lock
    with pytest.raises(StoreBusy):
        WriterLock(store)  # the one writer is the third
    os.close(stale)
    third.release()
    assert not lock_path(store).exists()
