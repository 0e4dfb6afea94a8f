"""The SSH backend: ``hosts ssh { nodes [...] ... }`` runs trials on remote hosts over one
persistent asyncssh connection per host.

On that connection the session starts the worker agent (benchlang/backends/ssh_agent.py, a
stdlib-only python3 program) once, on one channel, and sends it every command: no SSH
handshake and no channel per trial. The agent spawns each command in its own session and
process group, kills the group on timeout, and measures wall time and rusage on the host with
``wait4``. Host keys are checked against known_hosts; ``~/.ssh/config`` is honoured through
asyncssh's ``config`` handling. See docs/ssh.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

from benchlang.backends.base import (
    Command,
    Execution,
    FixedHosts,
    HostDown,
    SettingError,
    check_facts_setting,
    read_declared_facts,
)
from benchlang.backends.local import argv_for

log = logging.getLogger("benchlang.ssh")

AGENT_SOURCE = (Path(__file__).with_name("ssh_agent.py")).read_text(encoding="utf-8")
KEEPALIVE_INTERVAL = 5.0
KEEPALIVE_COUNT = 3
ANSWER_GRACE = 30.0
_NODE = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:@\s\[\]]+))(?::(?P<port>\d+))?$"
)
_KEYS = {
    "nodes",
    "user",
    "port",
    "identity",
    "known_hosts",
    "workdir",
    "concurrency",
    "sync",
    "insecure_accept_new_host_keys",
    "connect_timeout",
    "python",
    "config",
    "facts",
}


@attrs.frozen
class Node:
    """One host as written in ``nodes``: ``[user@]host[:port]`` (``[v6addr]:port`` too)."""

    name: str
    address: str
    port: int | None
    user: str | None


def parse_node(text: str) -> Node:
    m = _NODE.match(text.strip())
    if m is None:
        raise SettingError(
            "nodes", f"'{text}' is not a host", "write host, user@host, host:port or [ipv6]:port"
        )
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        raise SettingError("nodes", f"'{text}': port {port} is outside 1-65535")
    return Node(text.strip(), m["v6"] or m["host"], port, m["user"])


def nodes_from_text(text: str) -> tuple[str, ...]:
    """One node per line; blank lines and ``#`` comments are skipped."""
    return tuple(
        line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()
    )


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(value) if isinstance(value, str) else None


def _paths(key: str, value: Any) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else value
    if (
        not isinstance(items, tuple)
        or not items
        or not all(isinstance(v, str) and v for v in items)
    ):
        raise SettingError(key, f"{key} takes a path in double quotes or a list of them")
    return items


def exec_request(command: Command) -> dict[str, Any]:
    """The agent's ``exec`` request for a command (ssh_agent.py)."""
    return {
        "op": "exec",
        "argv": argv_for(command.text),
        "env": dict(command.env),
        "cwd": command.cwd,
        "timeout": command.timeout,
        **({} if command.aslr is None else {"aslr": command.aslr}),
    }


def agent_execution(
    header: Mapping[str, Any], payload: bytes, started: float, ended: float
) -> Execution:
    """The Execution an agent's ``exec`` answer describes (ssh_agent.py; also used by
    backends that start the agent elsewhere, e.g. in a Slurm job step)."""
    out = int(header["out"])
    wall = float(header["wall"])
    return Execution(
        exit_status=int(header["status"]),
        timed_out=bool(header["timed_out"]),
        started=started,
        ended=max(ended, started + wall),
        wall_time=wall,
        stdout=payload[:out],
        stderr=payload[out:],
        rusage={k: float(v) for k, v in header["rusage"].items()},
        stdout_truncated=bool(header.get("out_truncated", False)),
        stderr_truncated=bool(header.get("err_truncated", False)),
        stdout_size=header.get("out_size"),
        stderr_size=header.get("err_size"),
        unavailable=dict(header.get("unavailable", {})),
        left_running=int(header.get("left_running", 0)),
    )


class SshBackend(FixedHosts):
    """``hosts ssh { nodes [...] }``: remote hosts over SSH, one persistent connection each."""

    kind: ClassVar[str] = "ssh"
    supports_reboot: ClassVar[bool] = True
    capabilities: ClassVar[frozenset[str]] = frozenset({"reboot", "aslr"})

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key in settings:
            if key not in _KEYS:
                raise SettingError(
                    key,
                    f"unknown setting '{key}'",
                    f"hosts ssh accepts: {', '.join(sorted(_KEYS))}",
                )
        if "nodes" not in settings:
            raise SettingError(
                None,
                "hosts ssh needs 'nodes'",
                'write nodes ["host1", "host2"] or nodes from file "hosts.txt"',
            )
        nodes = settings["nodes"]
        if isinstance(nodes, Mapping):
            if not isinstance(nodes.get("file"), str):
                raise SettingError("nodes", "nodes from file takes a file name")
        else:
            for node in _paths("nodes", nodes):
                parse_node(node)
            if len(set(_paths("nodes", nodes))) != len(_paths("nodes", nodes)):
                raise SettingError(
                    "nodes",
                    "a node is listed twice",
                    "give each host once; to use one machine twice, use two ports",
                )
        for key in ("user", "known_hosts", "workdir", "python", "config"):
            if key in settings and not (isinstance(settings[key], str) and settings[key]):
                raise SettingError(key, f"{key} takes a non-empty string in double quotes")
        for key in ("identity", "sync"):
            if key in settings:
                _paths(key, settings[key])
        if "port" in settings:
            port = settings["port"]
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise SettingError("port", f"port must be a whole number in 1-65535, got {port!r}")
        if "concurrency" in settings:
            value = settings["concurrency"]
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SettingError(
                    "concurrency",
                    f"concurrency must be a whole number of at least 1, got {value!r}",
                )
            if value > 1:
                raise SettingError(
                    "concurrency",
                    f"concurrency {value} is not supported: each host runs one trial at a time",
                    "trials sharing a host disturb each other's measurements; add hosts instead",
                )
        if (
            "insecure_accept_new_host_keys" in settings
            and _flag(settings["insecure_accept_new_host_keys"]) is None
        ):
            raise SettingError(
                "insecure_accept_new_host_keys", "insecure_accept_new_host_keys takes true or false"
            )
        if "facts" in settings:
            check_facts_setting(settings["facts"])
        if "connect_timeout" in settings:
            value = settings["connect_timeout"]
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise SettingError(
                    "connect_timeout", "connect_timeout takes a duration such as 10s"
                )

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> SshBackend:
        cls.check_settings(settings)
        nodes = settings["nodes"]
        if isinstance(nodes, Mapping):
            path = Path(nodes["file"])
            try:
                names = nodes_from_text(path.read_text(encoding="utf-8"))
            except OSError as err:
                raise SettingError(
                    "nodes", f"cannot read the nodes file {path}: {err.strerror or err}"
                ) from None
            if not names:
                raise SettingError("nodes", f"the nodes file {path} lists no host")
            cls.check_settings({**settings, "nodes": names})
        else:
            names = _paths("nodes", nodes)

        def local_path(p: str) -> str:
            return str((spec_dir / os.path.expanduser(p)).resolve())

        sync = (
            tuple(local_path(p) for p in _paths("sync", settings["sync"]))
            if "sync" in settings
            else ()
        )
        for directory in sync:
            if not Path(directory).is_dir():
                raise SettingError("sync", f"sync: {directory} is not a directory")
        backend = cls(
            nodes=tuple(parse_node(n) for n in names),
            user=settings.get("user"),
            port=settings.get("port"),
            identity=tuple(local_path(p) for p in _paths("identity", settings["identity"]))
            if "identity" in settings
            else (),
            known_hosts=local_path(settings["known_hosts"]) if "known_hosts" in settings else None,
            workdir=settings.get("workdir", "benchlang"),
            sync=sync,
            accept_new=bool(_flag(settings.get("insecure_accept_new_host_keys", False))),
            connect_timeout=float(settings.get("connect_timeout", 15.0)),
            python=settings.get("python", "python3"),
            config=local_path(settings["config"]) if "config" in settings else None,
        )
        if "facts" in settings:
            backend.declared = read_declared_facts(Path(settings["facts"]["file"]), backend.hosts())
        return backend

    def __init__(
        self,
        nodes: tuple[Node, ...],
        *,
        user: str | None = None,
        port: int | None = None,
        identity: tuple[str, ...] = (),
        known_hosts: str | None = None,
        workdir: str = "benchlang",
        sync: tuple[str, ...] = (),
        accept_new: bool = False,
        connect_timeout: float = 15.0,
        python: str = "python3",
        config: str | None = None,
    ) -> None:
        self.nodes = {n.name: n for n in nodes}
        self.declared: dict[str, dict[str, str]] = {}
        """Facts given in ``facts from file``, per host, over the ones the agent reads."""
        self.config = config
        self.user, self.port, self.identity = user, port, identity
        self.known_hosts, self.workdir, self.sync = known_hosts, workdir, sync
        self.accept_new, self.connect_timeout, self.python = accept_new, connect_timeout, python
        if accept_new:
            log.warning(
                "hosts ssh: insecure_accept_new_host_keys is on: unknown host keys are trusted on first "
                "use and written to %s; a changed key is still refused. Use this only on throwaway testbeds.",
                self.known_hosts_path,
            )

    @property
    def known_hosts_path(self) -> str:
        return self.known_hosts or os.path.expanduser("~/.ssh/known_hosts")

    def hosts(self) -> tuple[str, ...]:
        return tuple(self.nodes)

    async def open(self, host: str) -> SshSession:
        session = SshSession(self, self.nodes[host])
        await session.connect()
        try:
            for directory in self.sync:
                await session.sync(directory)
        except BaseException:
            await session.close()
            raise
        return session


def _host_key_client(backend: SshBackend, node: Node):
    """A client that trusts keys already in known_hosts, refuses changed ones, and records new
    ones loudly: the behaviour of ``insecure_accept_new_host_keys true``."""
    import asyncssh

    class Client(asyncssh.SSHClient):
        def validate_host_public_key(
            self, host: str, addr: str, port: int, key: asyncssh.SSHKey
        ) -> bool:
            path = Path(backend.known_hosts_path)
            trusted = _known_keys(path, host, addr, port)
            if trusted:
                return any(k.public_data == key.public_data for k in trusted)
            pattern = host if port == 22 else f"[{host}]:{port}"
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(f"{pattern} {key.export_public_key().decode().strip()}\n")
            log.warning(
                "hosts ssh: INSECURE: trusted the unverified host key %s of %s and wrote it to %s",
                key.get_fingerprint(),
                node.name,
                path,
            )
            return True

    return Client


def _known_keys(path: Path, host: str, addr: str, port: int) -> list[Any]:
    import asyncssh

    if not path.exists():
        return []
    try:
        trusted, _ca, _revoked, *_ = asyncssh.read_known_hosts(str(path)).match(host, addr, port)
    except (OSError, ValueError, asyncssh.Error):
        return []
    return list(trusted)


class SshSession:
    """One host: a persistent SSH connection and the agent running on it."""

    def __init__(self, backend: SshBackend, node: Node) -> None:
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
            options["client_factory"] = _host_key_client(b, n)
        elif b.known_hosts:
            options["known_hosts"] = b.known_hosts
        return options

    def _key_message(self, err: Exception) -> str:
        b, n = self.backend, self.node
        port = n.port or b.port or 22
        path = Path(b.known_hosts_path)
        pattern = n.address if port == 22 else f"[{n.address}]:{port}"
        if _known_keys(path, n.address, n.address, port):
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
