"""The store is never corrupted, never shared by two writers, never changed by a reader, and
never a traceback: read-only opening, 0600 files, the writer lock, --resume refusals, a full
disk and a read-only store. Real SQLite files; the CLI in this process, but for two runs on
one store, which are two processes (``test_two_runs_on_one_store_never_run_the_same_trials``)."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from benchlang.app.store_migrate import migrate_store
from benchlang.errors import UserError
from benchlang.run.store import SCHEMA_VERSION, StopRecord, Store, StoreBusy, TrialRecord
from tests.store_versions import downgrade

SPEC = """benchlang 1
experiment small {
  seed 3
  factor k in [1, 2]
  benchmark b {
    run "FILL; echo v={k}"
    measure v from stdout regex "v=([0-9]+)"
  }
  design { runs 3 order fixed }
}
"""


def write_spec(where: Path, fill: str = "true") -> Path:
    spec = where / "small.bench"
    spec.write_text(SPEC.replace("FILL", fill))
    return spec


def record(trial: int, status: str = "ok") -> TrialRecord:
    return TrialRecord(
        trial=trial,
        series=0,
        round=trial,
        position=0,
        host="local",
        configuration=0,
        label="b[k=1]",
        benchmark="b",
        levels={"k": 1},
        order_kind="fixed",
        status=status,
        reason=None,
        exit_status=0,
        timed_out=False,
        started=1.0,
        ended=2.0,
        attempts=1,
        stdout_tail=b"",
        stderr_tail=b"",
        measures={"wall_time": 0.1},
        series_values={"s": np.arange(3.0)},
    )


def snapshot(directory: Path, *, lock: bool = True) -> dict[str, bytes]:
    """Every file's bytes; ``lock=False`` leaves out writer lock files (they name their
    last holder)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if lock or not p.name.endswith(".lock")
    }


def trials(store: Path) -> list[int]:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return sorted(t for (t,) in db.execute("SELECT trial FROM trials"))
    finally:
        db.close()


@contextlib.contextmanager
def tmpfs(where: Path, size: str):
    """A small tmpfs mounted at ``where`` (root only); skips the test when mounting fails."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


# -- reading never changes a file ------------------------------------------------------


def test_results_on_an_unrelated_sqlite_file_changes_nothing(tmp_path, cli_in_process):
    other = tmp_path / "app.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    db.execute("INSERT INTO users(name) VALUES ('ada')")
    db.commit()
    db.close()
    before = snapshot(tmp_path)
    for command in (
        ["results", other],
        ["analyze", "--store", other],
        ["record", "--store", other],
    ):
        status, out, err = cli_in_process(command)
        assert status == 2, (command, out, err)
        assert f"{other} is not a benchlang store" in err and "Traceback" not in err
    assert snapshot(tmp_path) == before, "a read-only command changed or added a file"
    db = sqlite3.connect(f"file:{other}?mode=ro", uri=True)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [n for (n,) in db.execute("SELECT name FROM sqlite_master")] == ["users"]


def test_a_reader_refuses_empty_and_foreign_files_without_writing(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(UserError, match="is not a benchlang store: the file is empty"):
        Store(empty)
    with pytest.raises(UserError, match="is not a benchlang store: the file is empty"):
        Store(empty, write=True)
    assert empty.stat().st_size == 0
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite at all" * 64)
    with pytest.raises(UserError, match="is not a benchlang store"):
        Store(junk, create=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite", "junk.sqlite"]


def test_a_reader_cannot_write(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}")
    with Store(path) as store, pytest.raises(UserError, match="read-only"):
        store.record_trial("sha256:p", record(0))
    assert trials(path) == []


def test_a_schema_1_store_is_refused_unchanged_until_migrated(tmp_path):
    path = tmp_path / "old.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "exp", "sha256:s", 1, "{}")
        store.record_trial("sha256:p", record(1))
    downgrade(path, 1)
    before = path.read_bytes()
    for opening in ({}, {"write": True}):
        with pytest.raises(UserError, match="run `benchlang store migrate"):
            Store(path, **opening)
    assert path.read_bytes() == before, "a refused open changed the store"
    migrate_store(path)
    with Store(path, write=True) as store:
        store.record_trial("sha256:p", record(0))
        table = store.trial_table("sha256:p")
    assert table.trial.tolist() == [0, 1] and table.phase.tolist() == ["measured"] * 2
    version = (
        sqlite3.connect(path)
        .execute("SELECT value FROM meta WHERE key = 'schema_version'")
        .fetchone()[0]
    )
    assert int(version) == SCHEMA_VERSION


def test_a_store_on_read_only_media_can_be_read(tmp_path, cli_in_process):
    write_spec(tmp_path)
    status, _out, err = cli_in_process(
        ["run", "small.bench", "--store", "s.sqlite", "-q"], cwd=tmp_path
    )
    assert status == 0, err
    with tmpfs(tmp_path / "media", "4m") as media:
        (media / "s.sqlite").write_bytes((tmp_path / "s.sqlite").read_bytes())
        subprocess.run(["mount", "-o", "remount,ro", str(media)], check=True)
        status, out, err = cli_in_process(["results", media / "s.sqlite", "--json"])
        assert status == 0, err
        assert '"failures": 0' in out
        status, _out, err = cli_in_process(
            ["run", "small.bench", "--store", media / "s.sqlite", "--resume", "-q"], cwd=tmp_path
        )
        assert status == 1, err
        assert "read-only" in err and "Traceback" not in err
        assert len([line for line in err.splitlines() if line.startswith("benchlang: error")]) == 1


# -- permissions -------------------------------------------------------------------------


def test_a_new_store_and_its_wal_files_are_private(tmp_path):
    path = tmp_path / "s.sqlite"
    old = os.umask(0o022)
    try:
        with Store(path, create=True) as store:
            store.add_plan("sha256:p", "e", "sha256:s", 1, "{}")
            store.record_trial("sha256:p", record(0))
            modes = {
                p.name: stat.S_IMODE(p.stat().st_mode)
                for p in tmp_path.iterdir()
                if p.name.startswith("s.sqlite")
            }
    finally:
        os.umask(old)
    assert set(modes) >= {"s.sqlite", "s.sqlite-wal", "s.sqlite-shm", "s.sqlite.lock"}
    assert all(mode == 0o600 for mode in modes.values()), modes


# -- one writer ----------------------------------------------------------------------------


def test_a_second_writer_is_refused_with_the_owner_named(tmp_path, cli_in_process):
    write_spec(tmp_path)
    path = tmp_path / "small.sqlite"
    with Store(path, create=True) as held:
        with pytest.raises(StoreBusy) as info:
            Store(path, create=True)
        assert f"pid {os.getpid()} on host {socket.gethostname()} since" in info.value.message
        status, _out, err = cli_in_process(["run", "small.bench", "-q"], cwd=tmp_path)
        assert status == 2, err
        lines = err.strip().splitlines()
        assert lines[0].startswith(f"benchlang: error: {path.name} is in use by another writer")
        assert f"pid {os.getpid()}" in lines[0] and "Traceback" not in err
        assert held.plans() == []
    # the lock goes with its holder: the same run now succeeds
    status, _out, err = cli_in_process(["run", "small.bench", "-q"], cwd=tmp_path)
    assert status == 0, err
    assert trials(path) == list(range(6))


def test_two_runs_on_one_store_never_run_the_same_trials(tmp_path):
    write_spec(tmp_path, "echo $BENCHLANG_TRIAL >> ran.txt; while [ ! -e go ]; do sleep 0.02; done")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "benchlang", "run", "small.bench", "-q"]
    first = subprocess.Popen(argv, cwd=tmp_path, env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "ran.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        second = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=60)
        assert second.returncode == 2
        assert b"is in use by another writer: pid " + str(first.pid).encode() in second.stderr
    finally:
        (tmp_path / "go").touch()
        _out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err.decode()
    assert (tmp_path / "ran.txt").read_text().split() == [str(t) for t in range(6)]


# -- --resume refusals -----------------------------------------------------------------------


@pytest.mark.parametrize("case", ["missing", "empty", "foreign", "other-plan"])
def test_resume_refuses_a_store_that_holds_no_run_of_this_plan(tmp_path, cli_in_process, case):
    write_spec(tmp_path)
    store = tmp_path / "r.sqlite"
    if case == "empty":
        store.touch()
    elif case == "foreign":
        db = sqlite3.connect(store)
        db.execute("CREATE TABLE t (x)")
        db.commit()
        db.close()
    elif case == "other-plan":
        status, _out, err = cli_in_process(
            ["run", "small.bench", "--store", store, "--seed", "99", "-q"], cwd=tmp_path
        )
        assert status == 0, err
    before = snapshot(tmp_path, lock=False)
    status, _out, err = cli_in_process(
        ["run", "small.bench", "--store", store, "--resume", "-q"], cwd=tmp_path
    )
    assert status == 2, err
    assert "Traceback" not in err
    expected = {
        "missing": "no store at",
        "empty": "is empty: nothing to resume",
        "foreign": "is not a benchlang store",
        "other-plan": "holds no run of this plan",
    }[case]
    assert expected in err
    if case == "other-plan":
        assert "seed 99" in err and "--resume-or-start" in err
    assert snapshot(tmp_path, lock=False) == before, "a refused --resume changed the store"
    if case != "foreign":
        status, _out, err = cli_in_process(
            ["run", "small.bench", "--store", store, "--resume-or-start", "-q"], cwd=tmp_path
        )
        assert status == 0, err


# -- write errors ------------------------------------------------------------------------


def test_a_full_disk_is_one_line_and_resume_completes_the_run(tmp_path, cli_in_process):
    """Trial 2 fills the file system the store is on; its commit fails."""
    with tmpfs(tmp_path / "small", "1m") as disk:
        fill = f"if [ $BENCHLANG_TRIAL = 2 ] && [ ! -e {disk}/done ]; then cat /dev/zero > {disk}/fill 2>/dev/null; touch {disk}/done; fi"
        write_spec(tmp_path, fill)
        store = disk / "s.sqlite"
        status, _out, err = cli_in_process(["run", "small.bench", "--store", store], cwd=tmp_path)
        assert status == 1, err
        assert "Traceback" not in err and "no transaction" not in err
        assert f"benchlang: error: cannot write to the store {store}: the disk is full" in err
        assert "continue with: benchlang run small.bench --store" in err
        assert trials(store) == [0, 1]
        (disk / "fill").unlink()
        status, _out, err = cli_in_process(
            ["run", "small.bench", "--store", store, "--resume", "-q"], cwd=tmp_path
        )
        assert status == 0, err
        assert trials(store) == list(range(6))
        db = sqlite3.connect(store)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# -- one transaction per trial, with its stopping decision -----------------------------------


def test_a_stopping_decision_commits_with_its_trial_or_not_at_all(tmp_path):
    path = tmp_path / "s.sqlite"
    stop = StopRecord(0, 0, 2, "stop", "kpi_width", None, "narrow enough")
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}")
        store.record_trial("sha256:p", record(0))
        with pytest.raises(sqlite3.IntegrityError):
            store.record_trial("sha256:p", record(0), stop)  # the trial fails: no stop either
        assert store.stops("sha256:p") == []
        store.record_trial("sha256:p", record(1), stop)
        assert store.stops("sha256:p") == [(0, 0, 2, "stop", "kpi_width", None, "narrow enough")]
        assert store.finished_trials("sha256:p") == {0, 1}


def test_a_closed_writer_leaves_every_trial_in_the_file_though_a_reader_is_open(tmp_path):
    """The writer folds its log into the file when it closes (core.py, ``close``): SQLite
    keeps the log while a reader has the store open, and the file alone (copied without it)
    then lacked every trial since the last checkpoint, up to WAL_CHECKPOINT_PAGES pages."""
    path, copy = tmp_path / "s.sqlite", tmp_path / "copy.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}")
        store.record_trial("sha256:p", record(0))
    with Store(path) as reader:
        with Store(path, create=True) as writer:
            for t in range(1, 20):
                writer.record_trial("sha256:p", record(t))
        assert reader.db.execute("SELECT count(*) FROM trials").fetchone() == (20,)
        copy.write_bytes(path.read_bytes())
    assert trials(copy) == list(range(20))
