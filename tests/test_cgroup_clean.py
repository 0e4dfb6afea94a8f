"""Cgroups a SIGKILLed run leaves behind are removed by the next run and by
``benchlang system clean``, which say so on stderr. The stale cgroups are made as a run makes
them (the local session's cgroup, benchlang.backends.launcher.TrialCgroup, with a trial's
process still in it; a trial's limits, benchlang.backends.cgroups.TrialLimits) by a process
that is then killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchlang.backends import cgroups
from benchlang.backends.launcher import TrialCgroup
from benchlang.cli import main

pytestmark = pytest.mark.xdist_group("cgroup-clean")  # its killed runs must not race

KILLED_RUN = textwrap.dedent(
    """
    import subprocess, sys, time
    from benchlang.backends.cgroups import TrialLimits, LimitError
    from benchlang.backends.launcher import TrialCgroup

    session = TrialCgroup.create()
    if isinstance(session, str):
        print("SKIP " + session, flush=True)
        sys.exit(0)
    trial = subprocess.Popen(["sleep", "300"], start_new_session=True)
    (session.path / "cgroup.procs").write_text(str(trial.pid))
    print(session.path, trial.pid, flush=True)
    limits = TrialLimits(memory=64 << 20)
    try:
        limits.create()
        print(limits.dirs[0], flush=True)
    except LimitError as err:
        print("NOLIMITS " + str(err), flush=True)
    time.sleep(300)
    """
)


def killed_run() -> tuple[list[Path], int]:
    """The cgroups a run left when it was killed with SIGKILL, and its trial's pid."""
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN], stdout=subprocess.PIPE, text=True
    )
    first = process.stdout.readline().split()
    if not first or first[0] == "SKIP":
        process.kill()
        process.wait()
        pytest.skip(f"no cgroup v2 directory a run can make here: {' '.join(first[1:])}")
    second = process.stdout.readline().strip()
    process.send_signal(signal.SIGKILL)
    process.wait()
    made = [Path(first[0])] + ([] if second.startswith("NOLIMITS") else [Path(second)])
    assert all(path.is_dir() for path in made)
    return made, int(first[1])


def gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z"):
            return True  # killed, not yet reaped by its new parent
        time.sleep(0.05)
    return False


def test_system_clean_removes_what_a_killed_run_left_and_says_so(capsys):
    made, trial = killed_run()
    present = [path for path in made if path.exists()]  # a parallel test's run may clean first
    assert main(["system", "clean"]) == 0
    err = capsys.readouterr().err
    assert present and "benchlang: removed " in err, err
    assert all(str(path) in err for path in present), err
    assert not any(path.exists() for path in made)
    assert gone(trial)  # the killed run's trial was still running in its cgroup
    assert main(["system", "clean"]) == 0
    again = capsys.readouterr().err
    assert not any(str(path) in again for path in made), again


def test_the_next_run_removes_them_and_says_so(capsys):
    made, _ = killed_run()
    present = made[0].exists()  # a parallel test's run may have cleaned it first
    session = TrialCgroup.create()  # what the next local run does first
    assert not isinstance(session, str)
    try:
        err = capsys.readouterr().err
        assert not present or str(made[0]) in err, err
        assert not made[0].exists()
    finally:
        session.close()
    assert main(["system", "clean"]) == 0  # the limits' cgroup, in another hierarchy
    assert not any(path.exists() for path in made)


def test_a_live_run_and_other_names_are_kept(tmp_path):
    parent = tmp_path / "cgroup"
    for name in (f"benchlang-{os.getpid()}-1", "benchlang-x-1", "other-999999999-1"):
        (parent / name).mkdir(parents=True)
    assert cgroups.owner_of("benchlang-agent-12") == 12
    assert cgroups.owner_of("benchlang-12-t3") == 12
    assert cgroups.owner_of("benchlang-12-x") is None
    assert cgroups._remove_stale(parent, say=False) == []
    assert sorted(p.name for p in parent.iterdir()) == sorted(
        [f"benchlang-{os.getpid()}-1", "benchlang-x-1", "other-999999999-1"]
    )
