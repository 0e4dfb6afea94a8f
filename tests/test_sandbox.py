"""The sandbox of ``replicate --sandbox`` (docs/replicate.md): each escape a
security review found has a test here. A script runs inside the command ``app.publish.sandbox``
wraps and reports what it could do (JSON on stdout); the test holds the host side (a process
to kill, a listening unix socket under ``$HOME/.cache``, a pty, agent variables) and checks
that nothing crossed. As root (as CI runs) and as ``nobody`` where the machine allows."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import termios
import tty
from pathlib import Path

import pytest

from benchlang.app.publish.sandbox import bwrap, sandboxed
from benchlang.errors import UserError


def why_no_sandbox() -> str | None:
    """Why this machine cannot make the sandbox at all (then ``--sandbox`` refuses, and the
    escapes cannot be tried), or None."""
    if shutil.which("bwrap") is None:
        return "bubblewrap not installed"
    try:
        bwrap()
    except UserError as err:
        return f"this machine forbids the sandbox's namespaces: {err.message}"
    return None


NO_SANDBOX = why_no_sandbox()
pytestmark = pytest.mark.skipif(NO_SANDBOX is not None, reason=str(NO_SANDBOX))

SYSTEM_PYTHON = "/usr/bin/python3"
NOBODY = 65534

OBSERVE = r"""
import json, os, signal, socket, sys
token, marker, home, abstract = sys.argv[1:5]
token = token[::-1]  # reversed in argv: this script and bwrap do not carry it
seen = {}
pids = [p for p in os.listdir("/proc") if p.isdigit()]
seen["processes"] = len(pids)
def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return b""
host = [p for p in pids if token.encode() in cmdline(p)]
seen["host_process_visible"] = bool(host)
def attempt(name, action):
    try:
        action()
        seen[name] = "ok"
    except OSError as err:
        seen[name] = type(err).__name__
for pid in host:
    attempt("proc_root_write", lambda: open(f"/proc/{pid}/root{marker}", "w").write("out"))
    attempt("kill", lambda: os.kill(int(pid), signal.SIGKILL))
def connect(address):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(2)
        s.connect(address)
attempt("home_socket", lambda: connect(os.path.join(home, ".cache", "agent.sock")))
attempt("abstract_socket", lambda: connect("\0" + abstract))
attempt("write_home", lambda: open(os.path.join(home, "written"), "w").write("x"))
attempt("write_etc", lambda: open("/etc/benchlang-escape", "w").write("x"))
attempt("write_cwd", lambda: open("written-inside", "w").write("x"))
status = open("/proc/self/status").read()
seen["cap_eff"] = status.split("CapEff:")[1].split()[0]
seen["interfaces"] = [l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]]
seen["paths"] = {p: os.path.exists(p) for p in ("/run", "/var/run", home)}
seen["environment"] = sorted(os.environ)
print(json.dumps(seen))
"""

AGENT_VARIABLES = {
    "SSH_AUTH_SOCK": "/run/user/0/ssh-agent.sock",
    "GPG_AGENT_INFO": "/run/user/0/gnupg/S.gpg-agent:0:1",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus",
    "XDG_RUNTIME_DIR": "/run/user/0",
    "DOCKER_HOST": "unix:///run/docker.sock",
    "AWS_SECRET_ACCESS_KEY": "not-for-a-stranger",
}


def as_user(user: int | None) -> list[str]:
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user else []


def start_victim(token: str, owner: int | None = None) -> subprocess.Popen:
    """A host process (of ``owner``, that the sandboxed user could kill outside)."""
    python = SYSTEM_PYTHON if owner else sys.executable
    return subprocess.Popen(
        [*as_user(owner), python, "-c", "import time; time.sleep(120)", token],
        start_new_session=True,
    )


@contextlib.contextmanager
def host_side(owner: int | None = None):
    """What a bundle must not reach: a process of the host (its command line carries a
    token), a home outside /tmp with a listening socket under .cache, an abstract socket."""
    token = f"benchlang-victim-{os.getpid()}-{os.urandom(4).hex()}"
    home = Path(tempfile.mkdtemp(prefix="bl-home-", dir="/var/tmp"))
    (home / ".cache").mkdir()
    work = home / "bundle"
    work.mkdir()
    if owner is not None:
        for path in (home, home / ".cache", work):
            os.chown(path, owner, owner)
    victim = start_victim(token, owner)
    agent = socket.socket(socket.AF_UNIX)
    agent.bind(str(home / ".cache" / "agent.sock"))
    os.chmod(home / ".cache" / "agent.sock", 0o777)
    agent.listen(4)
    abstract = f"benchlang-abstract-{os.urandom(8).hex()}"
    bus = socket.socket(socket.AF_UNIX)
    bus.bind("\0" + abstract)
    bus.listen(4)
    try:
        yield {"token": token, "home": home, "work": work, "victim": victim, "abstract": abstract}
    finally:
        victim.kill()
        victim.wait()
        agent.close()
        bus.close()
        shutil.rmtree(home, ignore_errors=True)


def observe(side: dict, python: str = sys.executable, user: int | None = None, **kw) -> dict:
    marker = side["home"] / "escaped-through-proc-root"
    script = side["work"] / "observe.py"
    script.write_text(OBSERVE)
    command = [python, str(script), side["token"][::-1], str(marker), str(side["home"]),
               side["abstract"]]  # fmt: skip
    argv = sandboxed(command, [side["work"]], network=False, **kw)
    prefix = as_user(user)
    env = {**os.environ, **AGENT_VARIABLES, "HOME": str(side["home"])}
    done = subprocess.run(prefix + argv, cwd=side["work"], capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout)
    seen["marker_written"] = marker.exists()
    seen["victim_alive"] = side["victim"].poll() is None
    return seen


@pytest.fixture(scope="module")
def as_root() -> dict:
    if os.geteuid() != 0:
        pytest.skip("the root case needs root (CI runs as root)")
    with host_side() as side:
        return observe(side)


def can_run_as_nobody() -> str | None:
    """Why the unprivileged case cannot run here, or None."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to become nobody"
    probe = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "bwrap",
         "--unshare-user", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib64", "/lib64",
         "--symlink", "usr/lib", "/lib", "--", "/usr/bin/true"],
        capture_output=True, text=True,
    )  # fmt: skip
    if probe.returncode != 0:
        return f"this machine gives nobody no user namespace ({probe.stderr.strip()})"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"no {SYSTEM_PYTHON} for nobody to run"
    return None


@pytest.fixture(scope="module")
def as_nobody() -> dict:
    why = can_run_as_nobody()
    if why:
        pytest.skip(why)
    with host_side(owner=NOBODY) as side:
        return observe(side, SYSTEM_PYTHON, NOBODY, readable=())


CASES = ["as_root", "as_nobody"]


@pytest.mark.parametrize("who", CASES)
def test_host_processes_are_neither_seen_nor_killed(who, request):
    seen = request.getfixturevalue(who)
    assert not seen["host_process_visible"] and "kill" not in seen, seen
    assert seen["victim_alive"]
    assert seen["processes"] <= 3, seen  # bwrap's init, the script (and its parent)


@pytest.mark.parametrize("who", CASES)
def test_nothing_is_written_to_the_host_through_proc_root(who, request):
    seen = request.getfixturevalue(who)
    assert "proc_root_write" not in seen and not seen["marker_written"], seen


@pytest.mark.parametrize("who", CASES)
def test_a_unix_socket_under_home_cache_is_not_there(who, request):
    seen = request.getfixturevalue(who)
    assert seen["home_socket"] == "FileNotFoundError", seen
    assert seen["abstract_socket"] in ("ConnectionRefusedError", "FileNotFoundError"), seen
    assert not seen["paths"]["/run"] and not seen["paths"]["/var/run"], seen


@pytest.mark.parametrize("who", CASES)
def test_no_capability_is_left(who, request):
    assert int(request.getfixturevalue(who)["cap_eff"], 16) == 0


@pytest.mark.parametrize("who", CASES)
def test_no_network_but_loopback(who, request):
    assert request.getfixturevalue(who)["interfaces"] in ([], ["lo"])


@pytest.mark.parametrize("who", CASES)
def test_agent_variables_are_not_passed(who, request):
    """Only the allowlist's variables; ``LC_CTYPE`` appears where the caller has no locale,
    set by the probe's own Python (PEP 538's C-locale coercion), not passed in."""
    environment = set(request.getfixturevalue(who)["environment"])
    assert not environment & set(AGENT_VARIABLES), environment
    assert environment <= {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER",
                           "LOGNAME", "PWD", "PYTHONHASHSEED", "TMPDIR"}  # fmt: skip


@pytest.mark.parametrize("who", CASES)
def test_only_the_bundle_is_writable(who, request):
    seen = request.getfixturevalue(who)
    assert seen["write_cwd"] == "ok", seen
    assert seen["write_home"] != "ok" and seen["write_etc"] != "ok", seen


@pytest.mark.parametrize("user", [None, NOBODY], ids=["as_root", "as_nobody"])
def test_tiocsti_cannot_type_into_the_terminal(user):
    """CVE-2017-5226: a sandboxed process whose stdin is the controlling terminal pushes a
    byte into its input queue. With --new-session the sandbox has no controlling terminal and
    the ioctl fails on every kernel (dev.tty.legacy_tiocsti 0 or 1)."""
    if user is not None and (why := can_run_as_nobody()):
        pytest.skip(why)
    with host_side(owner=user) as side:
        typed, queued = _tiocsti(side["work"], user)
    assert typed.startswith("refused"), typed
    assert queued == b""


def _tiocsti(where: Path, user: int | None) -> tuple[str, bytes]:
    script = where / "type.py"
    script.write_text(
        "import fcntl, termios\n"
        "try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('typed')\n"
        "except OSError as err:\n    print('refused', err.errno)\n"
    )
    master, slave = pty.openpty()
    tty.setraw(slave)  # a byte typed is readable at once, no newline needed

    def controlling_terminal():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    python, readable = (SYSTEM_PYTHON, ()) if user else (sys.executable, None)
    try:
        done = subprocess.run(
            as_user(user) + sandboxed([python, str(script)], [where], network=False,
                                      readable=readable),
            stdin=slave, capture_output=True, text=True, timeout=60,
            start_new_session=True, preexec_fn=controlling_terminal,
        )  # fmt: skip
        os.set_blocking(slave, False)
        try:
            queued = os.read(slave, 64)
        except BlockingIOError:
            queued = b""
    finally:
        os.close(master)
        os.close(slave)
    return done.stdout + done.stderr, queued


def test_a_machine_without_namespaces_is_refused_not_run_weaker(tmp_path):
    """Inside a sandbox that forbids further user namespaces (bwrap --disable-userns, as a
    container may), ``bwrap()`` refuses in one line before anything runs."""
    if os.geteuid() != 0:
        pytest.skip("making the outer namespace needs root here")
    script = (
        "from benchlang.app.publish.sandbox import bwrap\n"
        "from benchlang.errors import UserError\n"
        "try:\n    bwrap()\nexcept UserError as err:\n    print('refused:', err.message)\n"
        "else:\n    print('ran')\n"
    )
    outer = ["bwrap", "--unshare-user", "--disable-userns", "--dev-bind", "/", "/",
             "--", sys.executable, "-c", script]  # fmt: skip
    done = subprocess.run(outer, capture_output=True, text=True, timeout=60)
    if "disable-userns" in done.stderr:
        pytest.skip(f"this bwrap cannot disable user namespaces: {done.stderr.strip()}")
    assert done.stdout.startswith("refused: --sandbox: bwrap cannot make"), (
        done.stdout + done.stderr
    )
    assert "nothing was run" in done.stdout


def test_a_writable_directory_that_holds_the_home_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    for writable in (tmp_path, tmp_path / "me", Path("/")):
        with pytest.raises(UserError, match="holds your home"):
            sandboxed(["true"], [writable], network=False)


def test_sandboxed_refuses_when_bwrap_is_missing(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UserError, match="not installed"):
        sandboxed(["true"], [], network=False)


def test_the_victim_helper_can_be_killed_from_outside():
    """The host side is real: outside the sandbox the same script sees and kills the victim
    (so the tests above pass because of the sandbox, not of the helper)."""
    with host_side() as side:
        script = side["work"] / "observe.py"
        script.write_text(OBSERVE)
        done = subprocess.run(
            [sys.executable, str(script), side["token"][::-1], str(side["home"] / "m"),
             str(side["home"]), side["abstract"]],
            cwd=side["work"], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        seen = json.loads(done.stdout)
        assert seen["host_process_visible"] and seen["home_socket"] == "ok"
        assert seen["abstract_socket"] == "ok"
        side["victim"].wait(timeout=10)
        assert side["victim"].returncode == -signal.SIGKILL
