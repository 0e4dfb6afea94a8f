"""The history under hostile conditions (docs/history.md "Where a history lives"): two first
writers at once create one schema and both add theirs; a PostgreSQL server stopped mid-write
(``pg_ctl stop -m immediate``) gives one line and exit 2, and after a restart the history holds
nothing of that write. Real servers (benchlang.testing.postgres) and real CLI processes; each
race is made deterministic by a lock the test holds: the writers block on it, the test sees
them wait (``pg_stat_activity``), then lets them go or stops the server."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchlang.app.history.runs import list_history
from benchlang.testing.postgres import (
    _as_server_user,
    _bin,
    fresh_database,
    postgres_missing,
    postgres_server,
)
from tests.test_history import make_store

pytestmark = pytest.mark.xdist_group("testbed-postgresql-hostile")  # one server (pytest -n)


@pytest.fixture(scope="module")
def server():
    """The server's URL and what restarting it takes (data directory, port, sockets)."""
    why = postgres_missing()
    if why:
        pytest.skip(why)
    import psycopg

    with postgres_server() as url:
        with psycopg.connect(url, autocommit=True) as db:
            names = ("data_directory", "port", "unix_socket_directories")
            settings = {n: db.execute(f"SHOW {n}").fetchone()[0] for n in names}
        yield url, settings


def _pg_ctl(settings: dict, *argv: str) -> None:
    data = settings["data_directory"]
    cmd = [str(_bin() / "pg_ctl"), "-D", data, *argv]
    subprocess.run(_as_server_user(cmd), capture_output=True, timeout=60, check=True)


def stop_now(settings: dict) -> None:
    """The server gone at once: clients cut, no shutdown checkpoint (crash recovery at start)."""
    _pg_ctl(settings, "-m", "immediate", "stop")


def start(settings: dict) -> None:
    options = (
        f"-p {settings['port']} -k {settings['unix_socket_directories']} "
        "-c listen_addresses=127.0.0.1 -c fsync=off"
    )
    log = str(Path(settings["data_directory"]).parent / "server.log")
    _pg_ctl(settings, "-o", options, "-l", log, "-w", "start")


def benchlang(*argv: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "benchlang", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(url: str, sql: str, procs: list[subprocess.Popen], n: int = 1) -> None:
    """Until ``sql`` counts ``n`` (the writers blocked where the test wants them); fails if a
    writer ended first."""
    import psycopg

    deadline = time.monotonic() + 20
    with psycopg.connect(url, autocommit=True) as db:
        while db.execute(sql).fetchone()[0] < n:
            for p in procs:
                assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the writers never blocked on the test's lock"
            time.sleep(0.05)


def waiting(app: str, written: bool = False) -> str:
    """Backends of ``app`` waiting on a lock; ``written``: having written in their transaction
    (a transaction id is assigned at its first write)."""
    xid = " AND backend_xid IS NOT NULL" if written else ""
    return (
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
        f"'{app}' AND wait_event_type = 'Lock'{xid}"
    )


def test_two_first_writers_on_postgresql(server, tmp_path):
    import psycopg

    url, _ = server
    history = fresh_database(url, "first_writers")
    stores = [make_store(tmp_path, i) for i in (0, 1)]
    with psycopg.connect(history) as hold:  # a table named meta, being created: both block
        hold.execute("CREATE TABLE meta (key TEXT)")
        target = f"{history}?application_name=first_writer"
        procs = [benchlang("history", "add", str(s), "--history", target, "--no-commit")
                 for s in stores]  # fmt: skip
        wait_until(history, waiting("first_writer"), procs, n=2)
        hold.rollback()  # both go at once
    done = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], done
    assert all("Traceback" not in err for _, err in done)
    with psycopg.connect(history, autocommit=True) as db:
        assert db.execute("SELECT key, value FROM meta WHERE key = 'schema_version'").fetchall()
        assert db.execute("SELECT count(*), count(DISTINCT seq) FROM runs").fetchone() == (2, 2)
    assert sum(s["points"] for s in list_history(history)["series"]) == 4


def _open_files(pid: int) -> set[str]:
    fds = Path(f"/proc/{pid}/fd")
    try:
        return {str(f.readlink()) for f in fds.iterdir()}
    except OSError:
        return set()


def test_two_first_writers_on_sqlite(tmp_path):
    import sqlite3

    history = tmp_path / "history.sqlite"
    stores = [make_store(tmp_path, i) for i in (0, 1)]
    hold = sqlite3.connect(history, isolation_level=None)
    hold.execute("PRAGMA journal_mode=WAL")
    hold.execute("BEGIN IMMEDIATE")  # the write lock: both writers read, then wait for it
    hold.execute("CREATE TABLE meta (key TEXT)")
    procs = [benchlang("history", "add", str(s), "--history", str(history), "--no-commit")
             for s in stores]  # fmt: skip
    wal, deadline = f"{history}-wal", time.monotonic() + 20
    while not all(wal in _open_files(p.pid) for p in procs):  # both have read the history
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.05)
    time.sleep(0.3)
    hold.execute("ROLLBACK")
    hold.close()
    done = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], done
    assert sum(s["points"] for s in list_history(str(history))["series"]) == 4


def _csv(path: Path, days: range) -> Path:
    rows = ["time,commit,throughput,latency"]
    rows += [f"{1_700_000_000 + 3600 * d},{d:040x},{100 + d % 3},{5.0 + 0.1 * (d % 2)}"
             for d in days]  # fmt: skip
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("command", ["import", "add"])
def test_a_server_stopped_mid_write(server, tmp_path, command):
    """The write has inserted its runs and points and waits to store its change points (the
    test holds ``stored_changes``) when the server stops: one line, exit 2, and after the
    restart nothing of it; run again, it is added whole."""
    import psycopg

    url, settings = server
    history = fresh_database(url, f"stopped_{command}")
    if command == "import":
        first, second = (
            _csv(tmp_path / "a.csv", range(10)),
            _csv(tmp_path / "b.csv", range(10, 210)),
        )
        before, after = 10, 210
    else:
        first, second = make_store(tmp_path, 0), make_store(tmp_path, 1)
        before, after = 1, 2
    more = ["--no-commit"] if command == "add" else ["--experiment", "otava"]
    subprocess.run([sys.executable, "-m", "benchlang", "history", command, str(first),
                    "--history", history, *more], check=True, capture_output=True)  # fmt: skip
    kept = list_history(history)
    assert len(kept["runs"]) == before
    secret = history.replace("bench@", "bench:s3cret@") + "?application_name=stopped"
    hold = psycopg.connect(history)
    hold.execute("LOCK TABLE stored_changes IN ACCESS EXCLUSIVE MODE")
    proc = benchlang("history", command, str(second), "--history", secret, *more)
    stopped = False
    try:
        wait_until(history, waiting("stopped", written=True), [proc])
        stop_now(settings)
        stopped = True
    finally:
        out, err = proc.communicate(timeout=30)
        hold.close()
        if stopped:
            start(settings)
    lines = err.strip().splitlines()
    assert proc.returncode == 2, (out, err)
    assert "Traceback" not in err and "s3cret" not in err and "bench@" not in err
    assert len(lines) <= 2 and all(x.startswith("  hint: ") for x in lines[1:]), err
    where = history.rpartition("@")[2]
    assert lines[0].startswith(
        f"benchlang: error: cannot reach the PostgreSQL history at {where}: "
    )
    assert list_history(history) == kept  # the same runs and series, point for point
    again = subprocess.run([sys.executable, "-m", "benchlang", "history", command, str(second),
                            "--history", history, *more], capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert len(list_history(history)["runs"]) == after
