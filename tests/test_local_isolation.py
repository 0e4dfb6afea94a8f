"""A runner that never lies, on real subprocesses: a trial leaves nothing running (background
and ``setsid`` children are killed and reaped when the command exits, or on timeout and
cancellation), its scratch files are its own, its measures describe the command alone
(max_rss against GNU time), a cut output says so, and without a C compiler max_rss is
reported unavailable rather than wrong."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from benchlang.backends import launcher as launcher_module
from benchlang.backends.base import Command
from benchlang.backends.launcher import ISOLATION_ENV, TrialCgroup
from benchlang.backends.local import OUTPUT_KEEP, LocalSession
from benchlang.backends.resident import ResidentLauncher, encode_request
from benchlang.native import CC_ENV

GNU_TIME = "/usr/bin/time"
CGROUP = isinstance(probe := TrialCgroup.create(), TrialCgroup)
if CGROUP:
    probe.close()


TAG = f"{os.getpid():07d}"
"""In every sleep's duration (``sleep 61.<TAG>01``), so that a test's look for its processes
does not find another worker's: the cgroup and pgroup forms of a test can run at the same time
under pytest -n, and a loaded CI run found a `sleep 72.01` alive after the launcher's kill had
waited for its own process group to end (most likely the other form's, running then)."""


def live(marker: str) -> list[int]:
    """Processes (not zombies) whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture(params=["cgroup", "pgroup"])
def isolation(request, monkeypatch):
    if request.param == "cgroup" and not CGROUP:
        pytest.skip(f"no writable cgroup v2 here: {probe}")
    if request.param == "pgroup":
        monkeypatch.setenv(ISOLATION_ENV, "pgroup")
    return request.param


@pytest.fixture
def session(tmp_path, isolation):
    s = LocalSession("local", tmp_path)
    yield s
    asyncio.run(s.close())


ORPHAN = """benchlang 1
experiment orphan {
  factor x in [1, 2]
  benchmark b {
    run "(sleep 0.817; echo v=999) & echo v={x}; sleep 0.5"
    measure v from stdout regex "v=([0-9]+)"
  }
  design { runs 3 order fixed }
}
"""


def test_the_orphan_spec_stores_its_own_values_and_leaves_nothing(tmp_path, cli_in_process):
    (tmp_path / "orphan.bench").write_text(ORPHAN)
    status, _out, err = cli_in_process(
        ["run", "orphan.bench", "--store", "s.sqlite", "--quiet"], cwd=tmp_path
    )
    assert status == 0, err
    db = sqlite3.connect(tmp_path / "s.sqlite")
    values = [
        v
        for (v,) in db.execute(
            "SELECT value FROM measures WHERE name = 'v' ORDER BY trial"
        ).fetchall()
    ]
    statuses = {s for (s,) in db.execute("SELECT status FROM trials")}
    left = db.execute("SELECT message FROM events WHERE kind = 'left_running'").fetchall()
    db.close()
    assert len(left) == 6 and "were killed when it ended" in left[0][0]
    assert values == [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]
    assert statuses == {"ok"}
    assert live("sleep 0.817") == [], "a trial's background child outlived benchlang"


def test_background_child_is_killed_when_the_command_exits(session):
    run = session.run_blocking(Command(f"sleep 61.{TAG}01 & echo v=1"))
    assert run.ok and run.stdout == b"v=1\n"
    assert run.left_running >= 1
    assert live(f"61.{TAG}01") == []


def test_setsid_child_is_killed_after_the_trial(session):
    run = session.run_blocking(Command(f"setsid -f sleep 62.{TAG}02; echo started"))
    assert run.ok and run.stdout == b"started\n"
    assert live(f"62.{TAG}02") == []


def test_setsid_child_is_killed_on_timeout(session):
    t0 = time.monotonic()
    run = session.run_blocking(
        Command(f"setsid sh -c 'sleep 63.{TAG}03' & sleep 63.{TAG}04; echo never", timeout=0.3)
    )
    assert run.timed_out and run.exit_status == -9 and run.stdout == b""
    assert time.monotonic() - t0 < 30
    assert live(f"63.{TAG}03") == [] and live(f"63.{TAG}04") == []


def test_cancelled_execute_kills_setsid_children(session, tmp_path):
    async def go():
        task = asyncio.ensure_future(
            session.execute(
                Command(f"setsid -f sleep 64.{TAG}05; echo $$ > started; sleep 64.{TAG}06", cwd=".")
            )
        )
        while not (tmp_path / "started").exists():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(go(), 30))
    assert live(f"64.{TAG}05") == [] and live(f"64.{TAG}06") == []


def test_each_trial_writes_its_own_scratch_files(session):
    first = session.run_blocking(Command("readlink /proc/self/fd/1"))
    second = session.run_blocking(Command("readlink /proc/self/fd/1"))
    assert first.stdout.strip() != second.stdout.strip()
    assert second.stdout.decode().strip() == second.stdout_path
    # The launcher deletes a trial's files once the next one has reported, before it takes
    # another request (the old launcher-less path: when the next one starts).
    session.run_blocking(Command("true"))
    assert not Path(first.stdout_path).exists(), "the previous trial's file is kept"


def test_facts_report_the_isolation(session, isolation):
    facts = asyncio.run(session.facts())
    assert facts["isolation"] == isolation
    if isolation == "cgroup":
        assert "cgroup v2" in facts["isolation_detail"]


def test_cut_output_says_so_and_keeps_the_whole_stream_on_disk(session):
    size = 3 * OUTPUT_KEEP
    run = session.run_blocking(Command(f"echo v=42; yes | head -c {size}"))
    assert run.ok
    assert run.stdout_truncated and not run.stderr_truncated
    assert run.stdout_size == size + len(b"v=42\n")
    assert len(run.stdout) == OUTPUT_KEEP and b"v=42" not in run.stdout
    assert Path(run.stdout_path).stat().st_size == run.stdout_size
    with open(run.stdout_path, "rb") as handle:
        assert handle.read(5) == b"v=42\n"
    small = session.run_blocking(Command("echo v=1"))
    assert not small.stdout_truncated and small.stdout_size == len(small.stdout) == 4


# -- max_rss against GNU time ---------------------------------------------------------------


def gnu_time_kib(argv: list[str], cwd: Path) -> int:
    done = subprocess.run(
        [GNU_TIME, "-f", "%M", *argv],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=True,
    )
    return int(done.stderr.decode().split()[-1])


def agree(ours: float, theirs: float) -> bool:
    """Within 5% or 512 KiB (the tolerance asked of the max_rss measure)."""
    return abs(ours - theirs) <= max(0.05 * theirs, 512)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """256 KiB of seeded, half-compressible data (words from a small vocabulary and noise):
    xz's dictionary still makes it the largest of the three (about 20 MiB, bzip2 8, gzip 2) in
    a third of the time 1 MiB took."""
    rng = random.Random(7)
    words = [bytes(rng.randrange(97, 123) for _ in range(rng.randrange(2, 9))) for _ in range(500)]
    chunks, size = [], 0
    while size < 256 * 1024:
        chunk = rng.choice(words) + (b" " if rng.random() < 0.9 else rng.randbytes(3))
        chunks.append(chunk)
        size += len(chunk)
    path = tmp_path_factory.mktemp("rss") / "data"
    path.write_bytes(b"".join(chunks))
    return path


@pytest.mark.skipif(shutil.which(GNU_TIME) is None, reason="GNU time (Debian package time)")
@pytest.mark.parametrize("tool", ["gzip", "bzip2", "xz"])
def test_max_rss_agrees_with_gnu_time(tool, data, tmp_path):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    argv = [tool, "-c", str(data)]
    session = LocalSession("local", tmp_path)
    try:
        ours = min(
            session.run_blocking(Command(f"{tool} -c {data}")).rusage["max_rss"] for _ in range(2)
        )
    finally:
        asyncio.run(session.close())
    theirs = min(gnu_time_kib(argv, data.parent) for _ in range(2))
    assert agree(ours, theirs), f"{tool}: benchlang {ours:.0f} KiB, GNU time {theirs} KiB"


ALLOCATE = r"""
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    size_t n = (size_t)atol(argv[1]) * 1024 * 1024;
    char *p = malloc(n);
    memset(p, 1, n);
    return p[n - 1] == 1 ? 0 : 1;
}
"""


@pytest.mark.skipif(shutil.which(GNU_TIME) is None, reason="GNU time (Debian package time)")
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("mib", [1, 64])
def test_max_rss_of_a_known_allocation(mib, tmp_path):
    (tmp_path / "alloc.c").write_text(ALLOCATE)
    subprocess.run(["cc", "-O1", "-o", "alloc", "alloc.c"], cwd=tmp_path, check=True)
    session = LocalSession("local", tmp_path)
    try:
        ours = session.run_blocking(Command(f"./alloc {mib}", cwd=".")).rusage["max_rss"]
    finally:
        asyncio.run(session.close())
    theirs = gnu_time_kib(["./alloc", str(mib)], tmp_path)
    assert agree(ours, theirs), f"{mib} MiB: benchlang {ours:.0f} KiB, GNU time {theirs} KiB"
    assert ours >= mib * 1024
    assert ours < mib * 1024 + 4096, "the launcher's own memory leaked into max_rss"


# -- without a C compiler ----------------------------------------------------------------------


@pytest.fixture
def no_compiler(tmp_path, monkeypatch):
    monkeypatch.setenv(CC_ENV, str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    launcher_module._find.cache_clear()
    yield
    launcher_module._find.cache_clear()


def test_without_a_compiler_max_rss_is_unavailable_with_the_reason(tmp_path, no_compiler):
    found = launcher_module.launcher()
    assert found.path is None and "no-such-cc" in found.reason
    session = LocalSession("local", tmp_path)
    try:
        run = session.run_blocking(Command(f"sleep 65.{TAG}07 & echo v=1"))
        facts = asyncio.run(session.facts())
    finally:
        asyncio.run(session.close())
    assert run.ok and run.stdout == b"v=1\n"
    assert "max_rss" not in run.rusage
    assert "no-such-cc" in run.unavailable["max_rss"]
    assert {"wall_time", "user_time", "sys_time", "cpu_time"} <= set(run.rusage)
    assert facts["launcher"].startswith("none")
    assert live(f"65.{TAG}07") == [], "the process group is killed without the launcher too"


@pytest.mark.skipif(not CGROUP, reason="no writable cgroup v2 here")
def test_without_a_compiler_the_cgroup_still_catches_setsid(tmp_path, no_compiler):
    session = LocalSession("local", tmp_path)
    try:
        run = session.run_blocking(Command(f"setsid -f sleep 66.{TAG}08; echo started"))
        timed = session.run_blocking(
            Command(f"setsid -f sleep 66.{TAG}09; sleep 66.{TAG}10", timeout=0.3)
        )
    finally:
        asyncio.run(session.close())
    assert run.ok and timed.timed_out
    assert live(f"66.{TAG}08") == [] and live(f"66.{TAG}09") == [] and live(f"66.{TAG}10") == []


def test_the_launcher_is_cached_under_its_source_hash(tmp_path, monkeypatch):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv(CC_ENV, "cc")  # a first-use build, not the one shipped in the package
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    launcher_module._find.cache_clear()
    try:
        found = launcher_module.launcher()
    finally:
        launcher_module._find.cache_clear()
    assert found.path is not None
    path = Path(found.path)
    assert path.parent == tmp_path / "cache" / "benchlang"
    assert [p.name for p in path.parent.iterdir()] == [path.name], "a temporary file was left"
    null = os.open(os.devnull, os.O_RDWR)
    scratch = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    resident = ResidentLauncher(found.path, null, scratch, None)
    try:
        resident.send(encode_request(["sh", "-c", "exit 3"], b"", None, None, "0"))
        report = resident.wait_report(60).split()
    finally:
        resident.close()
        os.close(null)
        os.close(scratch)
    assert report[:3] == [b"benchlang-launch", b"1", b"3"]


def test_scratch_directories_of_killed_runs_are_removed(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = tmp_path / f"benchlang-trials-{gone.pid}-abc123"
    live_run = tmp_path / f"benchlang-trials-{os.getppid()}-def456"
    other = tmp_path / "benchlang-trials-notapid"
    for path in (stale, live_run, other):
        path.mkdir()
        (path / "1.out").write_text("x")
    session = LocalSession("local", tmp_path)
    try:
        assert session.run_blocking(Command("true")).ok
        assert Path(session._scratch).parent == tmp_path
    finally:
        asyncio.run(session.close())
    assert not stale.exists()
    assert live_run.exists() and other.exists()


def test_kill_group_returns_once_nothing_of_the_group_runs():
    from benchlang.backends.launcher import kill_group

    leader = subprocess.Popen(
        ["sh", "-c", f"sleep 93.{TAG}41 & sleep 93.{TAG}42"], start_new_session=True
    )
    deadline = time.monotonic() + 10
    while not (live(f"93.{TAG}41") and live(f"93.{TAG}42")) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert live(f"93.{TAG}41") and live(f"93.{TAG}42")
    kill_group(leader.pid)
    assert live(f"93.{TAG}41") == [] and live(f"93.{TAG}42") == []
    assert leader.wait(10) == -9
    kill_group(leader.pid)  # a group that is gone: returns at once
