"""``replicate --sandbox``: the whole rerun (``benchlang run`` and every command it spawns)
under bubblewrap.

Wrapping the child ``benchlang run`` rather than each command puts one boundary around all
that a stranger's bundle makes happen on this machine: setup, resets, hooks, the benchmark,
the files its measures read, and benchlang's own parsing of the spec. The file system is
read-only (``--ro-bind / /``) but for the bundle's directory and the replication store's
(``--bind``), ``/tmp`` is private and empty (``--tmpfs``), ``/dev`` and ``/proc`` are fresh,
and the network is cut (``--unshare-net``: a new network namespace, with only a loopback of
its own) unless the hosts are reached over it. Commands on remote hosts (``hosts ssh``)
run outside any sandbox of this machine: only the local side is confined.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import benchlang
from benchlang.errors import UserError

PROBE = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "true")


def bwrap() -> str:
    """bwrap's path, once it has shown it can make a sandbox here; else a refusal (never a
    silent fall-back to running unsandboxed)."""
    found = shutil.which("bwrap")
    if found is None:
        raise UserError(
            "--sandbox: bwrap (bubblewrap) is not installed, so the rerun cannot be sandboxed; "
            "nothing was run",
            "install it (Debian: apt-get install bubblewrap), or rerun without --sandbox",
        )
    done = subprocess.run([found, *PROBE], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"it exited with status {done.returncode}"])[-1]
        raise UserError(
            f"--sandbox: bwrap cannot make a sandbox here ({why}); nothing was run",
            "bwrap needs user namespaces (sysctl kernel.unprivileged_userns_clone=1) or root",
        )
    return found


def sandboxed(command: Sequence[str], writable: Sequence[Path], *, network: bool) -> list[str]:
    """``command`` under bwrap: everything read-only but ``writable``; no network unless
    ``network``; dies with its parent."""
    argv = [bwrap(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in _code_under_tmp():
        argv += ["--ro-bind", path, path]
    for path in dict.fromkeys(str(Path(p).resolve()) for p in writable):
        argv += ["--bind", path, path]
    if not network:
        argv.append("--unshare-net")
    argv += ["--unshare-ipc", "--die-with-parent", "--"]
    return argv + list(command)


def _code_under_tmp() -> list[str]:
    """What the child's Python imports from under ``/tmp`` (a checkout installed there, its
    plugins, a virtual environment), bound read-only over the private ``/tmp`` so that the
    sandboxed ``benchlang run`` still finds its own code."""
    tmp = Path("/tmp").resolve()
    places = [Path(benchlang.__file__).resolve().parents[1], Path(sys.prefix), *map(Path, sys.path)]
    found = []
    for place in places:
        resolved = place.resolve()
        if resolved.is_dir() and resolved.is_relative_to(tmp) and resolved != tmp:
            found.append(str(resolved))
    return list(dict.fromkeys(found))
