"""hosts libcloud with Libcloud's real EC2 driver against moto's EC2 server (an AWS emulator
maintained by others, started here on a free local port): the whole lease lifecycle of a run
(instances created with the lease tag, the lease stored and listed by ``benchlang hosts list``,
terminated at the end), and after a SIGKILL of a run its instances terminated by ``benchlang
hosts sweep``. moto's instances are not machines, so every trial fails with "cannot reach
node0 over SSH".

Two adjustments to moto, both on the test's side: its EC2 answers carry the namespace
``http://ec2.amazonaws.com/doc/2016-11-15`` where EC2 itself (the EC2 API reference's
examples) and Libcloud's parser (``libcloud.compute.drivers.ec2.NAMESPACE``) have a trailing
``/``, so the answers' namespace is given its slash; and its instances' public addresses are
loopback ones, so that no connection leaves this machine (their SSH port is closed, or holds a
listener that never answers for the run that is killed).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("moto") is None, reason="moto is not installed (the test extra)"
)
"""moto is found, not imported, at collection: its 0.25 s import is paid by the worker that
runs the test, in the fixture."""

NAMESPACE = b'xmlns="http://ec2.amazonaws.com/doc/2016-11-15"'
TAG = "benchlang-lease"


class SlashedNamespace:
    """WSGI middleware: moto's EC2 namespace with EC2's trailing slash (module docstring)."""

    def __init__(self, app) -> None:
        self.app = app

    def __call__(self, environ, start_response):
        kept: dict = {}

        def keep(status, headers, exc_info=None):
            kept.update(status=status, headers=headers)

        body = b"".join(self.app(environ, keep)).replace(NAMESPACE, NAMESPACE[:-1] + b'/"')
        headers = [(k, v) for k, v in kept["headers"] if k.lower() != "content-length"]
        start_response(kept["status"], [*headers, ("Content-Length", str(len(body)))])
        return [body]


@pytest.fixture(scope="module")
def ec2():
    """moto's EC2 on 127.0.0.1:<free port>; instances get the addresses 127.0.0.11, ..."""
    from moto.ec2.models import elastic_network_interfaces as eni
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    addresses = (f"127.0.0.{i}" for i in range(11, 250))
    original = eni.random_public_ip
    eni.random_public_ip = lambda: next(addresses)
    app = SlashedNamespace(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        eni.random_public_ip = original


def driver(port: int):
    from libcloud.compute.providers import get_driver

    return get_driver("ec2")(
        "AKIDMOTO", "moto-secret", secure=False, host="127.0.0.1", port=port, signature_version="4"
    )


def instances(port: int) -> dict[str, tuple[str, dict]]:
    """Every instance moto knows: id -> (state, tags)."""
    return {
        n.id: (str(n.state), dict(n.extra.get("tags") or {})) for n in driver(port).list_nodes()
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SPEC = """benchlang 1
experiment on_ec2 {{
  seed 9
  hosts libcloud {{
    provider "ec2"
    key from env "BENCH_AWS_KEY"  secret from env "BENCH_AWS_SECRET"
    driver {{ host "127.0.0.1"  port {api}  secure false  region "us-east-1"  signature_version "4" }}
    size "t2.micro"  image "{image}"  count 2
    tags ["team=perf"]
    wait 60s
    port {ssh}  known_hosts "{known_hosts}"  connect_timeout {connect}s
  }}
  benchmark b {{
    run "echo v=1"
    measure v from stdout regex "v=([0-9]+)"
  }}
  design {{ runs 2 order fixed }}
}}
"""


class Tarpit:
    """A listener on every loopback address that accepts SSH connections and never answers
    (so a run stays in its connect until killed), counting what it accepted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._held.append(conn)
            self.accepted += 1

    def __enter__(self) -> Tarpit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        for conn in self._held:
            conn.close()


def write_spec(tmp_path: Path, api: int, image: str, ssh: int, connect: int, name: str) -> Path:
    spec = tmp_path / f"{name}.bench"
    spec.write_text(
        SPEC.format(api=api, image=image, ssh=ssh, known_hosts=tmp_path / "kh", connect=connect)
    )
    return spec


def env() -> dict[str, str]:
    return {
        **os.environ,
        "BENCH_AWS_KEY": "AKIDMOTO",
        "BENCH_AWS_SECRET": "moto-secret-4f1e",
        "COLUMNS": "200",
    }


def benchlang(*args: str) -> subprocess.CompletedProcess:
    """The CLI in this process, with ``env()``; only the run that is SIGKILLed is a process of
    its own (the kill is the point)."""
    from benchlang.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env().items():
            patch.setenv(key, value)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(args))
    return subprocess.CompletedProcess(
        args, status, out.getvalue().encode(), err.getvalue().encode()
    )


def leases(store: Path) -> list[tuple[dict, str | None]]:
    if not store.exists():
        return []
    db = sqlite3.connect(store)
    try:
        rows = db.execute("SELECT lease, released FROM leases").fetchall()
    except sqlite3.OperationalError:
        rows = []
    db.close()
    return [(json.loads(text), released) for text, released in rows]


def test_the_lease_lifecycle_on_moto_ec2(ec2, tmp_path):
    log: list[str] = []
    image = driver(ec2).list_images(ex_filters={"name": "ubuntu/images/*"})[0].id
    before = set(instances(ec2))

    # 1. a run: two instances created with the lease tag, every trial fails, all terminated
    spec = write_spec(tmp_path, ec2, image, free_port(), 5, "run")
    store = tmp_path / "run.sqlite"
    done = benchlang("run", str(spec), "--store", str(store))
    out = done.stdout.decode() + done.stderr.decode()
    ((lease, released),) = leases(store)
    made = {i: v for i, v in instances(ec2).items() if i not in before}
    log.append(f"run exit {done.returncode}; lease {lease['id']} hosts {lease['hosts']}")
    log += [f"  {line.strip()}" for line in out.splitlines() if "cannot reach" in line][:2]
    log += [f"  instance {i}: {state}, tags {tags}" for i, (state, tags) in made.items()]
    assert done.returncode != 0
    assert "cannot reach node0 over SSH" in out, out
    assert len(made) == 2 and released is not None
    assert all(
        tags == {"Name": tags["Name"], "team": "perf", TAG: lease["id"]}
        for _, tags in made.values()
    )
    assert all(state == "terminated" for state, _ in made.values())
    assert sorted(lease["handle"]["node_ids"].split(",")) == sorted(made)
    assert "moto-secret-4f1e" not in out and b"moto-secret-4f1e" not in store.read_bytes()
    assert "moto-secret-4f1e" not in spec.read_text()

    # 2. a run SIGKILLed once its lease is stored (its SSH never answers): the lease stays held
    with Tarpit() as tarpit:
        spec = write_spec(tmp_path, ec2, image, tarpit.port, 120, "killed")
        store = tmp_path / "killed.sqlite"
        seen = set(instances(ec2))
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store), "-q"],
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            end = time.monotonic() + 60
            while not leases(store) and proc.poll() is None and time.monotonic() < end:
                time.sleep(0.1)
            alive = proc.poll() is None
            os.killpg(proc.pid, signal.SIGKILL)
            killed_err = proc.communicate(timeout=30)[1].decode()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        held_connections = tarpit.accepted
    assert alive, killed_err
    ((held, released),) = leases(store)
    running = {i: v for i, v in instances(ec2).items() if i not in seen}
    log.append(f"killed run: lease {held['id']} held (released {released})")
    log += [f"  instance {i}: {state}, tags {tags}" for i, (state, tags) in running.items()]
    why = f"tarpit held {held_connections} connections; the run said: {killed_err!r}"
    assert released is None and len(running) == 2, why
    assert all(
        state == "running" and tags[TAG] == held["id"] for state, tags in running.values()
    ), f"{running}; {why}"

    listed = benchlang("hosts", "list", str(store), "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    (row,) = json.loads(listed.stdout)["leases"]
    log.append(f"hosts list: {row['id']} {row['state']} {row['hosts']}")
    assert row["id"] == held["id"] and row["hosts"] == held["hosts"]

    # 3. the store is taken as lost: sweep finds the instances by their tag and terminates them
    dry = benchlang("hosts", "sweep", str(spec), "--dry-run")
    swept = benchlang("hosts", "sweep", str(spec))
    again = benchlang("hosts", "sweep", str(spec))
    log.append("hosts sweep: " + swept.stdout.decode().strip().replace("\n", "; "))
    log.append("hosts sweep again: " + again.stdout.decode().strip())
    assert dry.returncode == swept.returncode == again.returncode == 0, swept.stderr.decode()
    assert dry.stdout.decode().count(f"of lease {held['id']}") == 2
    assert swept.stdout.decode().count("destroyed node i-") == 2
    assert "no machine carries a benchlang lease tag" in again.stdout.decode()
    assert all(instances(ec2)[i][0] == "terminated" for i in running)
    print("\n".join(["moto EC2 lifecycle:", *log]))
