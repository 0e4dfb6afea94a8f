"""The local backend on real subprocesses: exit status, output, env, cwd, rusage, timeouts."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from benchlang.backends.base import Command
from benchlang.backends.local import LocalBackend, LocalSession, argv_for


@pytest.fixture
def session(tmp_path):
    s = LocalSession("local", tmp_path)
    yield s
    asyncio.run(s.close())


def gone(pid: int, within: float = 30.0) -> bool:
    """The process no longer exists (or is a zombie waiting for init to reap it)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def test_direct_exec_and_shell_fallback():
    assert argv_for("true") == ["true"]
    assert argv_for("echo 'a b' c") == ["echo", "a b", "c"]
    assert argv_for("echo $HOME") == ["/bin/sh", "-c", "echo $HOME"]
    assert argv_for("a | b") == ["/bin/sh", "-c", "a | b"]
    assert argv_for("echo 'unterminated") == ["/bin/sh", "-c", "echo 'unterminated"]


def test_failing_command_keeps_output_and_status(session):
    run = session.run_blocking(Command("echo to-out; echo to-err >&2; exit 3"))
    assert run.exit_status == 3
    assert not run.ok and not run.timed_out
    assert run.stdout == b"to-out\n"
    assert run.stderr == b"to-err\n"


def test_killed_by_signal_is_negative(session):
    run = session.run_blocking(Command("kill -TERM $$"))
    assert run.exit_status == -15


def test_missing_executable(session):
    run = session.run_blocking(Command("no-such-program-benchlang-test --x"))
    assert run.exit_status == 127
    assert b"no-such-program-benchlang-test" in run.stderr


def test_env_and_working_directory(session, tmp_path):
    (tmp_path / "sub").mkdir()
    run = session.run_blocking(Command('echo "$BENCH_X"; pwd', env={"BENCH_X": "v 1"}, cwd="sub"))
    assert run.stdout.decode().splitlines() == ["v 1", str(tmp_path / "sub")]
    direct = session.run_blocking(Command("pwd", cwd="sub"))
    assert direct.stdout.decode().strip() == str(tmp_path / "sub")


def test_stdin_is_empty(session):
    run = session.run_blocking(Command("cat"))
    assert run.exit_status == 0 and run.stdout == b""


def test_consecutive_commands_do_not_mix_output(session):
    first = session.run_blocking(Command("printf 'long output line\\n'"))
    second = session.run_blocking(Command("printf x"))
    assert first.stdout == b"long output line\n"
    assert second.stdout == b"x"


def test_rusage_builtins(session):
    sleep = session.run_blocking(Command("sleep 0.2"))
    assert 0.19 <= sleep.wall_time < 20.0  # the upper bound only rules out nonsense under load
    assert sleep.rusage["wall_time"] == sleep.wall_time
    assert sleep.rusage["user_time"] < 0.15
    burn = session.run_blocking(Command("python3 -c 'x = sum(i*i for i in range(3_000_000))'"))
    assert burn.rusage["user_time"] > 0.05
    assert burn.rusage["cpu_time"] == pytest.approx(
        burn.rusage["user_time"] + burn.rusage["sys_time"]
    )
    if session._launcher.path is None:  # no build: unavailable, with why (docs/measures.md)
        assert "max_rss" in burn.unavailable
    else:
        assert burn.rusage["max_rss"] > 1000  # KiB
    assert burn.rusage["minor_faults"] > 0
    assert set(burn.rusage) >= {
        "wall_time",
        "user_time",
        "sys_time",
        "cpu_time",
        "minor_faults",
        "major_faults",
    }
    assert burn.ended >= burn.started


def test_timeout_kills_the_whole_process_group(session, tmp_path):
    """A grandchild in the trial's process group dies with it."""
    started = time.monotonic()
    run = session.run_blocking(
        Command("sleep 60 & echo $! > grandchild.pid; echo started; wait", cwd=".", timeout=5)
    )
    elapsed = time.monotonic() - started
    assert run.timed_out and not run.ok
    assert run.exit_status == -9
    assert elapsed < 30  # killed at the timeout, long before the sleep would end
    assert run.stdout == b"started\n"
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    assert gone(grandchild), f"grandchild {grandchild} survived the timeout"


def test_timeout_of_a_direct_exec(session):
    run = session.run_blocking(Command("sleep 60", timeout=0.2))
    assert run.timed_out and run.wall_time < 30


def test_no_timeout_when_fast(session):
    run = session.run_blocking(Command("true", timeout=5))
    assert run.ok and not run.timed_out


def test_backend_protocol():
    LocalBackend.check_settings({})
    backend = LocalBackend.from_settings({}, Path.cwd())
    assert backend.hosts() == ("local",)

    async def go():
        s = await backend.open("local")
        try:
            run = await s.execute(Command("echo hi"))
            facts = await s.facts()
            return run, facts
        finally:
            await s.close()

    run, facts = asyncio.run(go())
    assert run.stdout == b"hi\n"
    assert facts["cores"] == str(os.cpu_count())
    assert "kernel" in facts


def test_a_command_no_process_can_receive_fails_cleanly(session):
    run = session.run_blocking(Command("echo a\x00b"))
    assert run.exit_status == 127 and b"embedded null byte" in run.stderr
