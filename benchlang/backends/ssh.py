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

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from benchlang.backends.agent_protocol import AGENT_SOURCE, agent_execution, exec_request
from benchlang.backends.base import (
    FixedHosts,
    SettingError,
    check_facts_setting,
    read_declared_facts,
)
from benchlang.backends.ssh_hosts import Node, nodes_from_text, parse_node
from benchlang.backends.ssh_session import SshSession
from benchlang.lang.outside import check_readable

__all__ = [
    "AGENT_SOURCE",
    "Node",
    "SshBackend",
    "SshSession",
    "agent_execution",
    "exec_request",
    "nodes_from_text",
    "parse_node",
]

log = logging.getLogger("benchlang.ssh")

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


class SshBackend(FixedHosts):
    """``hosts ssh { nodes [...] }``: remote hosts over SSH, one persistent connection each."""

    kind: ClassVar[str] = "ssh"
    supports_reboot: ClassVar[bool] = True
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"reboot", "aslr", "pin", "memory", "cpu_time"}
    )

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
                check_readable(path)
                names = nodes_from_text(path.read_text(encoding="utf-8"))
            except OSError as err:
                raise SettingError(
                    "nodes", f"cannot read the nodes file {path}: {err.strerror or err}"
                ) from None
            if not names:
                raise SettingError("nodes", f"the nodes file {path} lists no host")
            try:
                cls.check_settings({**settings, "nodes": names})
            except SettingError:  # its message would quote the file: it may not be a host list
                raise SettingError(
                    "nodes", f"the nodes file {path} holds a line that is not a host name"
                ) from None
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
