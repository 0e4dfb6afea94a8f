"""``replicate --sandbox``: the whole rerun (``benchlang run`` and every command it spawns)
under bubblewrap, built to hold against a stranger's bundle (docs/replicate.md).

Wrapping the child ``benchlang run`` rather than each command puts one boundary around all
that a bundle makes happen on this machine: setup, resets, hooks, the benchmark, the files
its measures read, and benchlang's own parsing of the spec. bubblewrap is a tool to build a
sandbox, not a policy: its README ("Sandbox security", "Limitations") leaves the policy to
the caller and names TIOCSTI (CVE-2017-5226: ``--new-session``) and every mounted socket as
the usual holes; Flatpak's run setup (``common/flatpak-run.c``) builds its root from the
runtime's directories with usr-merged symlinks rather than from ``/``. Here:

* its own user, PID, IPC, UTS and cgroup namespaces, ``--cap-drop ALL`` (as root bwrap
  otherwise keeps every capability: github.com/containers/bubblewrap/issues/561), ``--new-session`` (no controlling
  terminal: TIOCSTI fails on every kernel), ``--die-with-parent``;
* a root built from what a trial needs, read-only: /usr with the /bin, /lib*, /sbin links,
  a short list of /etc files, the CPU and DMI parts of /sys (the host state a replication
  compares), the running Python's own directories; no /run, /var, $HOME or
  $XDG_RUNTIME_DIR, so no host socket is there to ``connect()`` to;
* a private /tmp, fresh /dev and /proc (of the new PID namespace: no host process to see,
  signal or enter through /proc/PID/root); writable only the bundle's and the store's
  directories;
* ``--clearenv`` and a short allowlist of variables (no agent or bus address);
* no network (a new network namespace: loopback only, and no abstract unix socket of the
  host) unless the hosts are reached over it (``network``), which the caller says.

If this machine cannot make those namespaces, :func:`bwrap` refuses: nothing runs weaker.
Commands on remote hosts (``hosts ssh``) run outside any sandbox of this machine.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import benchlang
from benchlang.errors import UserError

NAMESPACES = (
    "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
)  # fmt: skip
CONFINED = (*NAMESPACES, "--cap-drop", "ALL", "--new-session", "--die-with-parent")
MERGED = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Top-level directories that are links into /usr on a usr-merged system (as Flatpak lists)."""
ETC = (
    "passwd", "group", "nsswitch.conf", "hosts", "host.conf", "gai.conf", "services",
    "protocols", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
    "alternatives", "os-release", "debian_version", "locale.alias", "mime.types",
    "ssl", "ca-certificates", "ca-certificates.conf", "pki", "crypto-policies",
)  # fmt: skip
"""The files of /etc programs read to start (names, libraries, links, time, certificates);
not shadow, sudoers, ssh keys, the machine id or credentials of any service."""
NETWORK_ETC = ("resolv.conf", "ssh/ssh_config", "ssh/ssh_config.d")
SYS = ("/sys/devices/system/cpu", "/sys/class/dmi/id", "/sys/fs/cgroup")
"""Read-only: the host state a replication measures and compares (report.machine)."""
KEPT = ("LANG", "LC_ALL", "TERM", "TZ", "USER", "LOGNAME", "PYTHONHASHSEED")
"""Variables passed in, when set; all others (SSH_AUTH_SOCK, GPG_AGENT_INFO,
DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR, DOCKER_HOST, tokens) are not."""


def bwrap() -> str:
    """bwrap's path, once it has made a sandbox with every namespace here; else a one-line
    refusal (never a fall-back to a weaker sandbox or none)."""
    found = shutil.which("bwrap")
    if found is None:
        raise UserError(
            "--sandbox: bwrap (bubblewrap) is not installed, so the rerun cannot be sandboxed; "
            "nothing was run",
            "install it (Debian: apt-get install bubblewrap), or rerun without --sandbox",
        )
    probe = [found, *CONFINED, "--unshare-net", *_system_root(network=False), "--", "true"]
    done = subprocess.run(probe, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"it exited with status {done.returncode}"])[-1]
        raise UserError(
            f"--sandbox: bwrap cannot make a sandbox here ({why}); nothing was run",
            "it needs user, PID, IPC, UTS and cgroup namespaces (a container may forbid them; "
            "sysctl user.max_user_namespaces > 0)",
        )
    return found


def sandboxed(
    command: Sequence[str],
    writable: Sequence[Path],
    *,
    network: bool,
    readable: Sequence[Path] | None = None,
) -> list[str]:
    """``command`` under bwrap (see the module): read-only the system's programs and
    ``readable`` (default: the running Python's directories, for a child ``benchlang``),
    writable only ``writable``; no network unless ``network``."""
    argv = [bwrap(), *CONFINED]
    if not network:
        argv.append("--unshare-net")
    argv += _system_root(network)
    home = os.environ.get("HOME")
    code = _python_code() if readable is None else [str(Path(p).resolve()) for p in readable]
    for path in dict.fromkeys(code):
        argv += ["--ro-bind", path, path]
    if home and Path(home).is_absolute():
        argv += ["--dir", home]  # an empty, read-only home: none of the user's files
    for path in dict.fromkeys(str(Path(p).resolve()) for p in writable):
        if home and Path(home).resolve().is_relative_to(path):
            raise UserError(
                f"--sandbox: {path} would be writable in the sandbox, and it holds your home; "
                "nothing was run",
                "give the workdir and the --store a directory of their own",
            )
        argv += ["--bind", path, path]
    argv += ["--remount-ro", "/", "--clearenv", "--setenv", "PATH", _path(code)]
    if home:
        argv += ["--setenv", "HOME", home]
    for name in KEPT:
        if name in os.environ:
            argv += ["--setenv", name, os.environ[name]]
    return [*argv, "--", *command]


def _system_root(network: bool) -> list[str]:
    """The read-only system a trial runs on, and fresh /proc, /dev and /tmp."""
    argv = ["--ro-bind", "/usr", "/usr"]
    for top in MERGED:
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for name in ETC + (NETWORK_ETC if network else ()):
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in SYS:
        argv += ["--ro-bind-try", path, path]
    return [*argv, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def _python_code() -> list[str]:
    """What the child ``python -m benchlang`` needs to start: the interpreter and its
    prefixes, the import path (plugins, a checkout, a virtual environment), benchlang's own
    directory; never a directory that holds the home or ``/``."""
    places = [
        Path(sys.executable).resolve().parent, Path(sys.prefix), Path(sys.base_prefix),
        Path(sys.exec_prefix), Path(benchlang.__file__).resolve().parents[1],
        *(Path(p) for p in sys.path if p), *_plugin_code(),
    ]  # fmt: skip
    home = Path(os.environ.get("HOME") or "/nonexistent").resolve()
    found = []
    for place in places:
        resolved = place.resolve()
        if resolved.is_dir() and resolved != Path("/") and not home.is_relative_to(resolved):
            found.append(str(resolved))
    return list(dict.fromkeys(found))


def _plugin_code() -> list[Path]:
    """The directories of the installed plugins' packages (an editable install may map them
    through an import hook rather than the import path), found without importing them."""
    from benchlang.app.publish.bundle import PLUGIN_GROUPS
    from benchlang.entrypoints import entry_points_of

    found = []
    for top in {ep.module.split(".")[0] for g in PLUGIN_GROUPS for ep in entry_points_of(g)}:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            found += [Path(p).parent for p in spec.submodule_search_locations]
        elif spec is not None and spec.origin and os.path.isabs(spec.origin):
            found.append(Path(spec.origin).parent)
    return found


def _path(code: Sequence[str]) -> str:
    """PATH inside: the interpreter's directory, then the host's entries that exist inside
    (pyenv-style shims under the home do not)."""
    inside = [str(Path(sys.executable).parent)] if sys.executable else []
    roots = ["/usr", *MERGED, *code]
    for entry in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        if entry and any(entry == r or entry.startswith(r.rstrip("/") + "/") for r in roots):
            inside.append(entry)
    return os.pathsep.join(dict.fromkeys(inside))
