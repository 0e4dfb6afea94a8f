"""One SSH host's session: a persistent asyncssh connection and the worker agent on it
(see ssh.py for the backend and docs/ssh.md)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from benchlang.backends.agent_protocol import AGENT_SOURCE, agent_execution, exec_request
from benchlang.backends.base import Command, Execution, HostDown
from benchlang.backends.ssh_hosts import Node, host_key_client, known_keys

log = logging.getLogger("benchlang.ssh")

KEEPALIVE_INTERVAL = 5.0
KEEPALIVE_COUNT = 3
ANSWER_GRACE = 30.0


class SshSettings(Protocol):
    """What a session reads of its backend (``hosts ssh`` settings; SshBackend has them)."""

    connect_timeout: float
    config: str | None
    port: int | None
    user: str | None
    identity: tuple[str, ...]
    accept_new: bool
    known_hosts: Any
    python: str
    workdir: str
    declared: Any

    @property
    def known_hosts_path(self) -> str: ...


class SshSession:
    """One host: a persistent SSH connection and the agent running on it."""

    def __init__(self, backend: SshSettings, node: Node) -> None:
        self.backend = backend
        self.node = node
        self.host = node.name
        self.conn: Any = None
        self.process: Any = None
        self.workdir = ""
        self._unread: asyncio.Task | None = None

    def _options(self) -> dict[str, Any]:
        b, n = self.backend, self.node
        options: dict[str, Any] = {
            "connect_timeout": b.connect_timeout,
            "keepalive_interval": KEEPALIVE_INTERVAL,
            "keepalive_count_max": KEEPALIVE_COUNT,
        }
        if b.config:
            options["config"] = [b.config]
        port = n.port or b.port
        if port:
            options["port"] = port
        if n.user or b.user:
            options["username"] = n.user or b.user
        if b.identity:
            options["client_keys"] = list(b.identity)
        if b.accept_new:
            options["known_hosts"] = ([], [], [])
            options["client_factory"] = host_key_client(b.known_hosts_path, n)
        elif b.known_hosts:
            options["known_hosts"] = b.known_hosts
        return options

    def _key_message(self, err: Exception) -> str:
        b, n = self.backend, self.node
        port = n.port or b.port or 22
        path = Path(b.known_hosts_path)
        pattern = n.address if port == 22 else f"[{n.address}]:{port}"
        if known_keys(path, n.address, n.address, port):
            return (
                f"HOST KEY CHANGED: the key {n.name} presented does not match the one in {path} "
                f"({err}); if the host was reinstalled on purpose, remove the old key with "
                f"ssh-keygen -R '{pattern}' -f {path} and add the new one after checking its fingerprint"
            )
        return (
            f"unknown host key: {path} has no key for {pattern} ({err}); check the host's fingerprint, then "
            f"add it with ssh-keyscan -p {port} {n.address} >> {path} (or set known_hosts in hosts ssh)"
        )

    async def connect(self) -> None:
        import asyncssh

        try:
            self.conn = await asyncssh.connect(self.node.address, **self._options())
        except asyncssh.HostKeyNotVerifiable as err:
            raise HostDown(self.host, self._key_message(err)) from None
        except asyncssh.PermissionDenied as err:
            raise HostDown(
                self.host, f"authentication refused ({err.reason}); check user and identity"
            ) from None
        except (TimeoutError, OSError, asyncssh.Error) as err:
            raise HostDown(self.host, f"cannot connect: {_reason(err)}") from None
        try:
            await self._start_agent()
        except BaseException:
            self.conn.abort()
            self.conn = None
            raise

    async def _start_agent(self) -> None:
        import asyncssh

        command = f"exec {shlex.quote(self.backend.python)} -u -c {shlex.quote(AGENT_SOURCE)} {shlex.quote(self.backend.workdir)}"
        try:
            self.process = await self.conn.create_process(command, encoding=None)
            hello = await asyncio.wait_for(
                self.process.stdout.readline(), self.backend.connect_timeout
            )
        except (TimeoutError, OSError, asyncssh.Error) as err:
            raise HostDown(self.host, f"cannot start the benchlang agent: {_reason(err)}") from None
        header = json.loads(hello) if hello.startswith(b"{") else {}
        if "agent" not in header:
            stderr = b""
            with contextlib.suppress(asyncio.TimeoutError, asyncssh.Error, OSError):
                stderr = await asyncio.wait_for(self.process.stderr.read(4096), 2.0)
            detail = (
                header.get("fatal")
                or (stderr or hello).decode(errors="replace").strip()[-300:]
                or "no answer"
            )
            raise HostDown(
                self.host, f"cannot start the benchlang agent with {self.backend.python}: {detail}"
            )
        self.workdir = header["workdir"]

    async def _request(
        self, request: Mapping[str, Any], deadline: float | None
    ) -> tuple[dict[str, Any], bytes]:
        """Send one request; return the answer header and its payload, raising HostDown when the
        connection is lost or the agent does not answer by ``deadline`` (plus a grace period)."""
        import asyncssh

        if self._unread is not None:
            await self._unread
        if self.process is None:
            raise HostDown(self.host, "not connected")
        stdout = self.process.stdout
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            if deadline is None:
                line = await stdout.readline()
            else:
                try:
                    line = await asyncio.wait_for(stdout.readline(), deadline)
                except TimeoutError:
                    self.process.stdin.write(b'{"op": "kill"}\n')
                    line = await asyncio.wait_for(stdout.readline(), ANSWER_GRACE)
            if not line.endswith(b"\n"):
                raise HostDown(self.host, "connection lost (the agent stopped answering)")
            header = json.loads(line)
            size = (
                int(header.get("data", 0)) + int(header.get("out", 0)) + int(header.get("err", 0))
            )
            payload = await stdout.readexactly(size) if size else b""
        except TimeoutError:
            self._drop()
            raise HostDown(
                self.host, f"no answer {ANSWER_GRACE:g}s after the command's time limit"
            ) from None
        except (OSError, asyncssh.Error, asyncio.IncompleteReadError) as err:
            self._drop()
            raise HostDown(self.host, f"connection lost: {_reason(err)}") from None
        except asyncio.CancelledError:
            self._abandon()
            raise
        return header, payload

    def _abandon(self) -> None:
        """The request was cancelled (Ctrl-C, SIGTERM): the agent kills the command's group,
        and its answer is read and dropped before the next request (else the connection)."""
        import asyncssh

        process = self.process
        if process is None:
            return
        try:
            process.stdin.write(b'{"op": "kill"}\n')
        except (OSError, asyncssh.Error):
            self._drop()
            return

        async def drain() -> None:
            try:
                line = await asyncio.wait_for(process.stdout.readline(), ANSWER_GRACE)
                header = json.loads(line)
                size = sum(int(header.get(k, 0)) for k in ("data", "out", "err"))
                if size:
                    await asyncio.wait_for(process.stdout.readexactly(size), ANSWER_GRACE)
            except (Exception, asyncio.CancelledError):
                self._drop()
            finally:
                self._unread = None

        self._unread = asyncio.ensure_future(drain())

    def _drop(self) -> None:
        if self.conn is not None:
            self.conn.abort()
        self.conn = self.process = None

    async def execute(self, command: Command) -> Execution:
        started = time.time()
        header, payload = await self._request(
            exec_request(command), None if command.timeout is None else command.timeout + 5.0
        )
        return agent_execution(header, payload, started, time.time())

    async def read_file(self, path: str, cwd: str | None = None) -> bytes:
        header, payload = await self._request({"op": "read", "path": path, "cwd": cwd}, 60.0)
        if "errno" in header:
            raise OSError(header["errno"], f"{header['error']} (on {self.host}: {header['path']})")
        return payload

    async def facts(self) -> dict[str, str]:
        _header, payload = await self._request({"op": "facts"}, 60.0)
        facts = {**json.loads(payload), **self.backend.declared.get(self.host, {})}
        facts["workdir"] = self.workdir
        return facts

    async def sync(self, directory: str) -> None:
        """Copy a local directory into the host's workdir (SFTP), as ``workdir/<name>``."""
        import asyncssh

        target = f"{self.workdir}/{Path(directory).name}"
        try:
            async with self.conn.start_sftp_client() as sftp:
                await sftp.put(directory, self.workdir, recurse=True, preserve=True)
        except (OSError, asyncssh.Error) as err:
            raise HostDown(
                self.host, f"cannot sync {directory} to {target}: {_reason(err)}"
            ) from None

    async def reconnect(self, timeout: float) -> None:
        """Drop the connection and connect again, retrying until ``timeout`` seconds have passed
        (a host rebooting refuses connections for a while)."""
        self._drop()
        deadline = time.monotonic() + timeout
        delay = 0.2
        while True:
            try:
                await self.connect()
                return
            except HostDown as err:
                left = deadline - time.monotonic()
                if left <= 0 or "host key" in err.message.lower():
                    raise HostDown(
                        self.host, f"did not come back within {timeout:g}s: {err.message}"
                    ) from None
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, 2.0)

    async def close(self) -> None:
        import asyncssh

        if self.process is not None:
            with contextlib.suppress(OSError, asyncssh.Error):
                self.process.stdin.write_eof()
        if self.conn is not None:
            self.conn.close()
            with contextlib.suppress(asyncio.TimeoutError, OSError):
                await asyncio.wait_for(self.conn.wait_closed(), 5.0)
        self.conn = self.process = None


def _reason(err: BaseException) -> str:
    if isinstance(err, asyncio.TimeoutError):
        return "timed out"
    text = getattr(err, "reason", None) or getattr(err, "strerror", None) or str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
