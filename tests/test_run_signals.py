"""Ctrl-C and SIGTERM during ``benchlang run``, with real subprocesses and real signals: the
running trials' process groups are killed, finished trials stay committed, the printed resume
command continues the same plan, and nothing is left running. Bounds are generous (10 s): the
time from signal to exit is measured by benchmarks/chaos_store.py, not asserted here."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from benchlang.backends.local import LocalSession, ThreadedLocalSession

GATE = 3

GATED = """benchlang 1
experiment gated {{
  seed 4
  {hosts}
  factor k in [1, 2]
  benchmark b {{
    run "echo $BENCHLANG_TRIAL >> ran.txt; if [ $BENCHLANG_TRIAL -ge {gate} ] && [ ! -e go ]; then sleep 300 & echo $! > blocked-$BENCHLANG_TRIAL.pid; wait; fi; echo v={{k}}"
    measure v from stdout regex "v=([0-9]+)"
  }}
  design {{ runs 4 order fixed }}
}}
"""


def write_spec(where: Path, hosts: str = "") -> Path:
    spec = where / "g.bench"
    spec.write_text(GATED.format(hosts=hosts, gate=GATE))
    return spec


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"}


def start_run(where: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "benchlang", "run", "g.bench", "--store", "g.sqlite", *extra],
        cwd=where,
        env=environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_for(condition, within: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def blocked_pids(where: Path) -> list[int]:
    return [int(p.read_text()) for p in where.glob("blocked-*.pid") if p.read_text().strip()]


def alive(pid: int) -> bool:
    """Running, not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Live processes in the process group ``pgid`` (read from /proc, as ps does)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def ps_lines(marker: str, where: Path) -> list[str]:
    """Live processes started in ``where`` (their working directory) whose command line holds
    ``marker``: this run's leftovers only, not those of another suite running on the machine."""
    out = subprocess.run(["ps", "-eo", "pid,pgid,stat,args"], capture_output=True, text=True)
    found = []
    for line in out.stdout.splitlines():
        if marker not in line or "ps -eo" in line:
            continue
        with contextlib.suppress(OSError, ValueError):
            if Path(os.readlink(f"/proc/{int(line.split()[0])}/cwd")) == where.resolve():
                found.append(line)
    return found


def trials_in(store: Path) -> list[int]:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return sorted(t for (t,) in db.execute("SELECT trial FROM trials"))
    finally:
        db.close()


def cleanup(where: Path) -> None:
    (where / "go").touch()
    for pid in blocked_pids(where):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def resume_from(err: str) -> list[str]:
    """The resume command the run printed, as argv for this interpreter."""
    line = next(x for x in err.splitlines() if "continue with: " in x)
    words = shlex.split(line.split("continue with: ", 1)[1])
    assert words[:2] == ["benchlang", "run"]
    return [sys.executable, "-m", "benchlang", *words[1:]]


@pytest.mark.parametrize(
    ("signum", "status", "hosts"),
    [
        (signal.SIGINT, 130, ""),
        (signal.SIGTERM, 143, ""),
        (signal.SIGINT, 130, "hosts local { slots 2 }"),
    ],
    ids=["sigint", "sigterm", "sigint-2-slots"],
)
def test_a_signal_kills_the_running_trials_and_the_printed_command_resumes(
    tmp_path, signum, status, hosts
):
    write_spec(tmp_path, hosts)
    slots = 2 if hosts else 1
    proc = start_run(tmp_path, "--seed", "21", "--quiet")
    try:
        wait_for(lambda: len(blocked_pids(tmp_path)) >= slots, what="the blocked trials")
        pids = blocked_pids(tmp_path)
        groups = {os.getpgid(pid) for pid in pids}
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=10)
        err = err.decode()
        assert proc.returncode == status, err
        assert "Traceback" not in err
        # nothing left: neither the blocked sleeps nor anything else in their groups
        wait_for(lambda: not any(alive(pid) for pid in pids), within=10, what="trials to die")
        assert all(group_members(g) == [] for g in groups)
        assert ps_lines("sleep 300", tmp_path) == []
        done = trials_in(tmp_path / "g.sqlite")
        assert set(done) <= set(range(GATE + slots - 1)) and set(range(GATE)) - set(done) == set()
        assert f"interrupted by {signal.Signals(signum).name}" in err
        command = resume_from(err)
        assert "--seed" in command and "21" in command and "--resume" in command
    finally:
        proc.kill() if proc.poll() is None else None
        cleanup(tmp_path)
    resumed = subprocess.run(
        command, cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    assert trials_in(tmp_path / "g.sqlite") == list(range(8))
    ran = Counter(int(x) for x in (tmp_path / "ran.txt").read_text().split())
    assert set(ran) == set(range(8))
    assert all(n == 1 for t, n in ran.items() if t < GATE), "a committed trial ran again"


def test_a_second_sigint_while_stopping_leaves_nothing_running(tmp_path):
    write_spec(tmp_path, "hosts local { slots 2 }")
    proc = start_run(tmp_path, "--quiet")
    try:
        wait_for(lambda: len(blocked_pids(tmp_path)) >= 2, what="the blocked trials")
        pids = blocked_pids(tmp_path)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=10)
        err = err.decode()
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "continue with: " in err
        wait_for(lambda: not any(alive(pid) for pid in pids), within=10, what="trials to die")
        assert ps_lines("sleep 300", tmp_path) == []
    finally:
        proc.kill() if proc.poll() is None else None
        cleanup(tmp_path)


def test_a_signal_during_setup_stops_the_setup(tmp_path):
    (tmp_path / "s.bench").write_text(
        textwrap.dedent(
            """\
            benchlang 1
            experiment slowsetup {
              setup "sleep 300 & echo $! > setup.pid; wait"
              benchmark b { run "true" }
              design { runs 2 }
            }
            """
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "run", "s.bench", "--quiet"],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pid_file = tmp_path / "setup.pid"
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), what="the setup")
        pid = int(pid_file.read_text())
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=10)
        assert proc.returncode == 143, err.decode()
        wait_for(lambda: not alive(pid), within=10, what="the setup to die")
        assert "host local stopped" not in err.decode(), (
            "an interrupted setup is not a host failure"
        )
    finally:
        proc.kill() if proc.poll() is None else None
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_signal_before_the_trials_start_exits_cleanly(tmp_path):
    """SIGTERM while the spec is still being loaded: no traceback, the signal's status."""
    write_spec(tmp_path)
    proc = start_run(tmp_path, "--quiet")
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode in (143, -signal.SIGTERM)
    assert "Traceback" not in err.decode()
    cleanup(tmp_path)


CANCEL_SCRIPT = """
import asyncio, os, sys, time
from pathlib import Path
from benchlang.backends.base import Command
from benchlang.backends.local import {session}

async def main():
    session = {session}("local", Path.cwd())
    task = asyncio.ensure_future(
        session.execute(Command("sleep 300 & echo $! > child.pid; wait", timeout=None))
    )
    while not (Path("child.pid").exists() and Path("child.pid").read_text().strip()):
        await asyncio.sleep(0.02)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print("cancelled", flush=True)
    await session.close()

asyncio.run(main())
"""


@pytest.mark.parametrize("session", [LocalSession, ThreadedLocalSession], ids=lambda c: c.__name__)
def test_local_execute_kills_the_process_group_on_cancellation(tmp_path, session):
    """The HostSession contract (docs/plugins.md): a cancelled execute kills its command's
    process group before re-raising. Driven in a child interpreter, bounded: a session whose
    execute blocks the event loop cannot be cancelled and is reported as such."""
    script = CANCEL_SCRIPT.format(session=session.__name__)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=15,
        )
        outcome = done.stdout.strip() or done.stderr.strip()[-500:]
    except subprocess.TimeoutExpired as err:
        # "cancelled" printed: the task was cancelled but its command kept running (and the
        # interpreter waited for it); nothing printed: execute blocked the event loop
        outcome = (err.stdout or b"").decode().strip() or "execute blocked the event loop"
    pid_file = tmp_path / "child.pid"
    assert pid_file.exists(), f"the command never started: {outcome}"
    pid = int(pid_file.read_text())
    try:
        deadline = time.monotonic() + 5
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        left = alive(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert outcome == "cancelled", outcome
    assert not left, "the cancelled command's process group was left running"
