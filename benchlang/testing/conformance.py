"""The backend conformance kit: the checks every backend (built-in or plugin) must pass.

A plugin's own tests run it against a backend built the way a spec would build it::

    import pytest
    from benchlang.testing import conformance

    @pytest.fixture
    def case(tmp_path):
        return conformance.Case(make=lambda: MyBackend.from_settings({...}, tmp_path),
                                secrets=("the-token-value",))

    @pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.names())
    def test_conformance(case, check):
        conformance.run(check, case)

Each check is an ``async`` function of a :class:`Case`; ``run`` runs one in a fresh event loop
and releases whatever it acquired even when it fails. What they verify (docs/plugins.md#kit):
the declarations (protocol 2, known capabilities, secret settings), the lifecycle (acquire ->
open every logical host -> execute -> release, release idempotent, the lease a JSON round
trip naming every logical host, a fresh backend attaching to a stored lease), facts (strings),
exit statuses and signals, a timeout killing the command's whole process group, a cancelled
command (Ctrl-C) leaving nothing running, HostDown on a host the lease does not hold, and
that no secret value shows in a lease, the backend's repr or the facts, and the machine
block's limits for each capability the backend states (conformance_limits.py: pinning seen
from inside the trial, memory and CPU-time limits failing a trial with the reason, the memory
peak stored). The run-level checks
(``benchlang run`` releasing on SIGINT, a SIGKILLed run's lease released by ``benchlang hosts
release``) are in :func:`interrupted_run_releases` and :func:`killed_run_leaves_a_lease`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchlang.backends.base import (
    CAPABILITIES,
    PROTOCOL_VERSION,
    Command,
    HostDown,
    Lease,
    acquire_lease,
    attach_lease,
    capabilities_of,
    protocol_of,
    release_lease,
)
from benchlang.testing.conformance_limits import LIMIT_CHECKS, Skip

__all__ = [
    "CHECKS",
    "Case",
    "Skip",
    "interrupted_run_releases",
    "killed_run_leaves_a_lease",
    "names",
    "run",
]


@attrs.define
class Case:
    """How to build the backend under test, and what it must keep secret.

    ``make`` returns a new backend each call (as ``from_settings`` would); ``secrets`` are
    values that must appear nowhere; ``timeout`` bounds each step (seconds); ``down``
    (backend, lease, host) makes a host stop answering.
    """

    make: Callable[[], Any]
    secrets: Sequence[str] = ()
    timeout: float = 120.0
    down: Callable[[Any, Lease, str], Awaitable[None]] | None = None
    """Makes one host stop answering (kill its sshd, power it off); None: cannot here."""
    acquired: list[tuple[Any, Lease]] = attrs.field(factory=list)

    async def acquire(self, backend: Any | None = None) -> tuple[Any, Lease]:
        backend = backend or self.make()
        lease = await asyncio.wait_for(acquire_lease(backend), self.timeout)
        self.acquired.append((backend, lease))
        return backend, lease


Check = Callable[[Case], Awaitable[None]]


def run(check: Check, case: Case) -> None:
    """Run one check; every lease it acquired is released afterwards, pass or fail. Under
    pytest a :class:`Skip` becomes a skip with its reason."""

    async def body() -> None:
        try:
            await check(case)
        finally:
            for backend, lease in case.acquired:
                await release_lease(backend, lease)
            case.acquired.clear()

    try:
        asyncio.run(body())
    except Skip as why:
        import pytest

        pytest.skip(str(why))


async def _session(backend: Any, host: str) -> Any:
    return await backend.open(host)


async def _run(session: Any, text: str, timeout: float | None = None) -> Any:
    return await session.execute(Command(text, {}, None, timeout))


async def declarations(case: Case) -> None:
    """protocol 2, capabilities among the known ones (``power_cycle`` and ``reimage`` done
    by ``power``), secret settings a frozenset of names."""
    backend = case.make()
    assert protocol_of(backend) == PROTOCOL_VERSION, f"protocol {protocol_of(backend)}"
    unknown = capabilities_of(backend) - CAPABILITIES
    assert not unknown, f"unknown capabilities {sorted(unknown)}"
    if capabilities_of(backend) & {"power_cycle", "reimage"}:
        assert callable(getattr(backend, "power", None)), "power_cycle/reimage need power()"
    secret = getattr(type(backend), "secret_settings", None)
    assert isinstance(secret, frozenset), "secret_settings must be a frozenset of setting keys"
    hosts = backend.hosts()
    assert hosts and len(set(hosts)) == len(hosts), f"logical hosts {hosts!r}"
    assert backend.hosts() == hosts, "hosts() must not change (it is in the plan hash)"


async def lifecycle(case: Case) -> None:
    """acquire -> every logical host opens and runs a command -> release, twice."""
    backend, lease = await case.acquire()
    assert set(lease.hosts) == set(backend.hosts()), "the lease must map every logical host"
    assert Lease.from_json(lease.to_json()) == lease, "the lease must survive JSON"
    for host in backend.hosts():
        session = await _session(backend, host)
        try:
            execution = await _run(session, "echo conformance")
            assert execution.exit_status == 0 and b"conformance" in execution.stdout, execution
        finally:
            await session.close()
    await release_lease(backend, lease)
    await release_lease(backend, lease)  # idempotent


async def attach(case: Case) -> None:
    """A fresh backend (``run --resume`` in a new process) attaches to a stored lease."""
    _first, lease = await case.acquire()
    stored = Lease.from_json(lease.to_json())
    later = case.make()
    await asyncio.wait_for(attach_lease(later, stored), case.timeout)
    session = await _session(later, later.hosts()[0])
    try:
        assert (await _run(session, "true")).exit_status == 0
    finally:
        await session.close()


async def facts(case: Case) -> None:
    """Facts map strings to strings (they are stored as JSON and shown in the record)."""
    backend, _lease = await case.acquire()
    session = await _session(backend, backend.hosts()[0])
    try:
        found = await session.facts()
    finally:
        await session.close()
    assert isinstance(found, dict) and found, "facts must be a non-empty dict"
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()), found


async def exit_statuses(case: Case) -> None:
    """The exit code as is; minus the signal number for a command killed by a signal."""
    backend, _lease = await case.acquire()
    session = await _session(backend, backend.hosts()[0])
    try:
        assert (await _run(session, "sh -c 'exit 3'")).exit_status == 3
        killed = await _run(session, "kill -TERM $$")
        assert killed.exit_status == -signal.SIGTERM, killed.exit_status
    finally:
        await session.close()


def _marker() -> str:
    return f"sleep 3{uuid.uuid4().int % 10**6:06d}"


async def _left(session: Any, mark: str) -> bool:
    """Whether a process whose command line holds ``mark`` still runs on the host."""
    pattern = mark[:-1] + f"[{mark[-1]}]"  # does not match the pgrep itself
    for _ in range(50):
        if (await _run(session, f"pgrep -f '{pattern}'")).exit_status != 0:
            return False
        await asyncio.sleep(0.1)
    return True


async def timeout_kills_the_group(case: Case) -> None:
    """A timed-out command is killed with every process it started (its process group)."""
    backend, _lease = await case.acquire()
    session = await _session(backend, backend.hosts()[0])
    mark = _marker()
    try:
        t0 = time.monotonic()
        execution = await _run(session, f"{mark} & {mark}", timeout=1.0)
        assert execution.timed_out and not execution.ok, execution
        assert time.monotonic() - t0 < 60, "the timeout did not end the command"
        assert not await _left(session, mark), "the timed-out command left processes running"
    finally:
        await session.close()


async def cancel_kills(case: Case) -> None:
    """A command cancelled (Ctrl-C, SIGTERM: the executor cancels its task) is killed."""
    backend, _lease = await case.acquire()
    session = await _session(backend, backend.hosts()[0])
    mark = _marker()
    try:
        task = asyncio.ensure_future(_run(session, f"{mark} & {mark}"))
        await asyncio.sleep(1.0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert not await _left(session, mark), "a cancelled command left processes running"
    finally:
        await session.close()


async def host_down(case: Case) -> None:
    """A host that stops answering (``Case.down`` takes it down) raises HostDown: on the
    session that was open, or on a new ``open`` (the executor then moves its rounds)."""
    if case.down is None:
        raise Skip("Case.down is not given: this backend's hosts cannot be taken down here")
    backend, lease = await case.acquire()
    host = backend.hosts()[0]
    session = await _session(backend, host)
    try:
        assert (await _run(session, "true")).ok
        await case.down(backend, lease, host)
        try:
            await asyncio.wait_for(_run(session, "true"), case.timeout)
        except HostDown:
            return
    finally:
        with contextlib.suppress(HostDown, OSError):
            await session.close()
    try:
        other = await asyncio.wait_for(backend.open(host), case.timeout)
    except (HostDown, OSError):
        return
    await other.close()
    raise AssertionError(f"{host} was taken down, yet it still opens and runs commands")


async def secrets(case: Case) -> None:
    """No secret value in the lease, the backend's repr or str, or any host's facts."""
    backend, lease = await case.acquire()
    texts = [lease.to_json(), repr(backend), str(backend), repr(vars(backend))]
    session = await _session(backend, backend.hosts()[0])
    try:
        texts.append(repr(await session.facts()))
    finally:
        await session.close()
    for value in case.secrets:
        for text in texts:
            assert value not in text, "a secret value leaked into a lease, repr or facts"


CHECKS: tuple[Check, ...] = (
    declarations,
    lifecycle,
    attach,
    facts,
    exit_statuses,
    timeout_kills_the_group,
    cancel_kills,
    host_down,
    secrets,
    *LIMIT_CHECKS,
)


def names() -> list[str]:
    return [c.__name__ for c in CHECKS]


# -- run-level checks: benchlang run in a subprocess ----------------------------------------


def _leases(store: Path) -> list[tuple[str, float | None]]:
    if not store.exists():
        return []
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return list(db.execute("SELECT id, released FROM leases"))
        finally:
            db.close()
    except sqlite3.Error:
        return []


def _trials(store: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return int(db.execute("SELECT count(*) FROM trials").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def _start(spec: Path, store: Path, env: dict[str, str] | None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store), "-q"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _wait_running(proc: subprocess.Popen, store: Path, trials: int, timeout: float) -> None:
    """Until the lease is stored and ``trials`` trials are committed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            _out, err = proc.communicate()
            raise AssertionError(f"the run ended early ({proc.returncode}): {err.decode()}")
        if _leases(store) and _trials(store) >= trials:
            return
        time.sleep(0.1)
    raise AssertionError("the run did not store its lease and trials in time")


def interrupted_run_releases(
    spec: Path,
    store: Path,
    env: dict[str, str] | None = None,
    timeout: float = 300.0,
    signum: int = signal.SIGINT,
) -> tuple[int, float]:
    """``benchlang run SPEC`` (a spec with slow trials) gets ``signum`` (SIGINT: Ctrl-C, or
    SIGTERM) once its lease is stored and a trial committed: it must exit 128 + signum (130,
    143) with its lease marked released. Returns (exit status, seconds from the signal to
    exit)."""
    proc = _start(spec, store, env)
    try:
        _wait_running(proc, store, 1, timeout)
        t0 = time.monotonic()
        proc.send_signal(signum)
        proc.communicate(timeout=timeout)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    held = [lid for lid, released in _leases(store) if released is None]
    assert proc.returncode == 128 + signum, f"exit status {proc.returncode}"
    assert not held, f"leases left held after {signal.Signals(signum).name}: {held}"
    return proc.returncode, took


def killed_run_leaves_a_lease(
    spec: Path, store: Path, env: dict[str, str] | None = None, timeout: float = 300.0
) -> list[str]:
    """``benchlang run SPEC`` is SIGKILLed once its lease is stored: the lease stays held
    (what ``benchlang hosts list`` must show and ``hosts release`` clear). Returns the held
    lease ids."""
    proc = _start(spec, store, env)
    try:
        _wait_running(proc, store, 1, timeout)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    held = [lid for lid, released in _leases(store) if released is None]
    assert held, "a SIGKILLed run must leave its lease held in the store"
    return held
