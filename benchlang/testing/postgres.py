"""A throwaway PostgreSQL server for tests: ``initdb`` and ``pg_ctl`` from Debian's
``postgresql`` package, run as the unprivileged ``postgres`` user when we are root (the server
refuses to run as root), on a free port with a socket directory of its own, stopped at the end.
Test support (docs/testing.md): no benchlang run uses it."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchlang.testing.sshd import free_port


def _bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def postgres_missing() -> str | None:
    """Why no throwaway server can start here, or None."""
    if _bin() is None:
        return "PostgreSQL's initdb is not installed (Debian: apt-get install postgresql)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to become the postgres user"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "the psycopg driver is not installed (pip install 'psycopg[binary]')"
    return None


def _as_server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@contextmanager
def postgres_server() -> Iterator[str]:
    """A running server; yields the URL of its ``postgres`` database (user ``bench``, trust
    authentication on 127.0.0.1 only)."""
    bindir = _bin()
    assert bindir is not None
    root = Path(tempfile.mkdtemp(prefix="benchlang-pg-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, sockets, port = root / "data", root / "sockets", free_port()
    run = lambda argv: subprocess.run(  # noqa: E731
        _as_server_user(argv), capture_output=True, text=True, timeout=120, check=True
    )
    run(["mkdir", str(sockets)])
    run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "bench", "--no-sync"])
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    log = str(root / "server.log")
    run([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", log, "-w", "start"])
    try:
        yield f"postgresql://bench@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
            check=False,
        )
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(server_url: str, name: str) -> str:
    """A new empty database on the server; its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}"')
        db.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"
