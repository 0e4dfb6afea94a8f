"""Throwaway OpenSSH servers on loopback, for tests and benchmarks only (not used by benchlang runs).

Each server is Debian's ``/usr/sbin/sshd -D -e -f <config>`` with its own generated host key,
accepting one generated client key; every server is a distinct host ``127.0.0.1:PORT``. The
testbed writes a known_hosts file that trusts exactly these host keys.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
SFTP_SERVERS = (
    "/usr/lib/openssh/sftp-server",
    "/usr/libexec/openssh/sftp-server",
    "/usr/libexec/sftp-server",
)


def sshd_missing() -> str | None:
    """Why no testbed can start here, or None."""
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is not installed (Debian: apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not installed (Debian: apt-get install openssh-client)"
    return None


def free_port(addresses: tuple[str, ...] = ("127.0.0.1",)) -> int:
    """A port free on every one of ``addresses`` (loopback: 127.0.0.N all reach this host)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind((addresses[0], 0))
            port = s.getsockname()[1]
        try:
            for address in addresses[1:]:
                with socket.socket() as s:
                    s.bind((address, port))
        except OSError:
            continue
        return port
    raise RuntimeError(f"no port is free on all of {addresses}")


def keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(path)], check=True
    )
    return Path(f"{path}.pub").read_text().strip()


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (read from /proc), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class Sshd:
    """One sshd listening on address:port (127.0.0.1 and a free port unless given)."""

    def __init__(
        self,
        root: Path,
        client_pub: str,
        index: int,
        address: str = "127.0.0.1",
        port: int | None = None,
    ) -> None:
        self.address = address
        self.dir = root / f"sshd{index}"
        self.dir.mkdir(parents=True)
        self.host_key = self.dir / "host_ed25519"
        self.host_pub = keygen(self.host_key)
        (self.dir / "authorized_keys").write_text(client_pub + "\n")
        self.port = port or free_port()
        self.name = f"{address}:{self.port}"
        sftp = next((p for p in SFTP_SERVERS if os.access(p, os.X_OK)), "internal-sftp")
        self.config = self.dir / "sshd_config"
        self.config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    f"ListenAddress {address}",
                    f"HostKey {self.host_key}",
                    f"PidFile {self.dir / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
                    "StrictModes no",
                    "UsePAM no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "PermitRootLogin prohibit-password",
                    "LogLevel ERROR",
                    "MaxStartups 200:30:400",
                    "MaxSessions 50",
                    "SetEnv SHLVL=1",
                    f"Subsystem sftp {sftp}",
                    "",
                ]
            )
        )
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.dir / "sshd.log").open("ab"),
        )
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"sshd on port {self.port} exited: {(self.dir / 'sshd.log').read_text()[-500:]}"
                )
            try:
                socket.create_connection((self.address, self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"sshd on port {self.port} did not start listening")

    def kill(self) -> None:
        """Kill the listener and every session it runs: the host is gone."""
        if self.proc is None:
            return
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None


class Testbed:
    """``n`` sshd servers, one client key and a known_hosts file trusting their host keys."""

    def __init__(self, root: str | Path, n: int, addresses: tuple[str, ...] | None = None) -> None:
        """``n`` servers on 127.0.0.1, each on a port of its own; with ``addresses``, one
        server per address, all on one port (the hosts a cloud test driver hands out)."""
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.identity = self.root / "client_ed25519"
        client_pub = keygen(self.identity)
        if addresses:
            port = free_port(addresses)
            self.servers = [
                Sshd(self.root, client_pub, i, a, port) for i, a in enumerate(addresses)
            ]
        else:
            self.servers = [Sshd(self.root, client_pub, i) for i in range(n)]
        self.known_hosts = self.root / "known_hosts"
        self.known_hosts.write_text(
            "".join(f"[{s.address}]:{s.port} {s.host_pub}\n" for s in self.servers)
        )
        for server in self.servers:
            server.start()

    @property
    def nodes(self) -> list[str]:
        return [s.name for s in self.servers]

    def ssh_argv(self, server: Sshd) -> list[str]:
        """The OpenSSH client command line that reaches ``server`` (no command yet)."""
        return [
            "ssh",
            "-F",
            "/dev/null",
            "-p",
            str(server.port),
            "-i",
            str(self.identity),
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
            server.address,
        ]

    def close(self) -> None:
        for server in self.servers:
            server.kill()
