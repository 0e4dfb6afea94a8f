"""SSH hosts as written in ``nodes`` and their host keys: parsing ``[user@]host[:port]``,
reading known_hosts, and the client of ``insecure_accept_new_host_keys`` (docs/ssh.md)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import attrs

from benchlang.backends.base import SettingError

log = logging.getLogger("benchlang.ssh")

_NODE = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:@\s\[\]]+))(?::(?P<port>\d+))?$"
)


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


def host_key_client(known_hosts_path: str, node: Node):
    """A client that trusts keys already in known_hosts, refuses changed ones, and records new
    ones loudly: the behaviour of ``insecure_accept_new_host_keys true``."""
    import asyncssh

    class Client(asyncssh.SSHClient):
        def validate_host_public_key(
            self, host: str, addr: str, port: int, key: asyncssh.SSHKey
        ) -> bool:
            path = Path(known_hosts_path)
            trusted = known_keys(path, host, addr, port)
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


def known_keys(path: Path, host: str, addr: str, port: int) -> list[Any]:
    import asyncssh

    if not path.exists():
        return []
    try:
        trusted, _ca, _revoked, *_ = asyncssh.read_known_hosts(str(path)).match(host, addr, port)
    except (OSError, ValueError, asyncssh.Error):
        return []
    return list(trusted)
