"""hosts slurm through ``benchlang run`` and the backend conformance kit, on the real one-node
cluster: every check of benchlang.testing.conformance (a node set DOWN is the host going
down), SIGINT releasing the allocation, and a SIGKILLed run whose holder job is cancelled by
``benchlang hosts release`` or attached to by ``run --resume``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from benchlang_slurm import SlurmBackend

from benchlang.testing import conformance


def cli(*args: str | Path, timeout: float = 180.0) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )
    return done.returncode, done.stdout, done.stderr


def write_spec(directory: Path, trials: int, command: str = "sleep 0.1; echo x") -> Path:
    path = directory / "slurm.bench"
    path.write_text(
        "benchlang 1\nexperiment slurmruns {\n  hosts slurm { nodes 1 time 10m }\n"
        f'  benchmark b {{ run "{command}" }}\n  design {{ runs {trials} series 1 }}\n}}\n'
    )
    return path


def leases(store: Path) -> list[tuple[str, str, float | None]]:
    db = sqlite3.connect(store)
    try:
        return [
            (lease_id, str(sqlite3_json(text)["handle"]["job"]), released)
            for lease_id, text, released in db.execute(
                "SELECT id, lease, released FROM leases ORDER BY acquired"
            )
        ]
    finally:
        db.close()


def sqlite3_json(text: str) -> dict:
    import json

    return json.loads(text)


def ok_trials(store: Path) -> int:
    db = sqlite3.connect(store)
    try:
        return int(db.execute("SELECT count(*) FROM trials WHERE status = 'ok'").fetchone()[0])
    finally:
        db.close()


def until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


@pytest.fixture
def case(idle_cluster, tmp_path):
    async def down(_backend, lease, host):
        idle_cluster.run(
            "scontrol",
            "update",
            f"nodename={lease.hosts[host]}",
            "state=down",
            "reason=conformance: host down",
        )

    return conformance.Case(
        make=lambda: SlurmBackend.from_settings({"time": 600.0}, tmp_path),
        down=down,
        timeout=60.0,
    )


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.names())
def test_the_slurm_backend_passes_the_conformance_kit(case, check, idle_cluster):
    conformance.run(check, case)
    assert idle_cluster.jobs() == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_releases_the_allocation(idle_cluster, tmp_path, signum):
    spec = write_spec(tmp_path, 40)
    status, _took = conformance.interrupted_run_releases(
        spec, tmp_path / "s.sqlite", timeout=120, signum=signum
    )
    assert status == 128 + signum and idle_cluster.jobs() == []


def test_a_killed_run_is_released_by_hosts_release_then_resumed(idle_cluster, tmp_path):
    spec, store = write_spec(tmp_path, 4), tmp_path / "s.sqlite"
    (held,) = conformance.killed_run_leaves_a_lease(spec, store, timeout=120)
    (job,) = idle_cluster.jobs()
    assert held.endswith(f":{job}")
    status, out, _err = cli("hosts", "list", store)
    assert status == 0 and "held" in out and f"node0={idle_cluster.node}" in out
    status, out, err = cli("hosts", "release", store)
    assert status == 0, err
    assert f"released lease {held} (slurm)" in out
    until(lambda: idle_cluster.jobs() == [])
    status, _out, err = cli("run", spec, "--store", store, "--resume", "-q")
    assert status == 0, err
    assert ok_trials(store) == 4
    first, second = leases(store)
    assert first[1] == job and second[1] != job and second[2] is not None
    assert idle_cluster.jobs() == []


def test_resume_attaches_to_the_allocation_a_killed_run_left(idle_cluster, tmp_path):
    spec, store = write_spec(tmp_path, 4), tmp_path / "s.sqlite"
    (held,) = conformance.killed_run_leaves_a_lease(spec, store, timeout=120)
    (job,) = idle_cluster.jobs()
    status, _out, err = cli("run", spec, "--store", store, "--resume")  # not -q: its notes
    assert status == 0, err
    assert ok_trials(store) == 4
    found = leases(store)
    assert len(found) == 1, f"the resume did not attach to {held}: {err}"  # err says why
    ((lease_id, lease_job, released),) = found
    assert lease_id == held and lease_job == job and released is not None
    assert idle_cluster.jobs() == []


def step_ids(cluster, job: str) -> list[str]:
    listed = cluster.run("squeue", "--noheader", "--steps", f"--jobs={job}", "--format=%i")
    return listed.stdout.split()


def test_a_run_killed_while_srun_launches_a_step_leaves_no_step_behind(idle_cluster, tmp_path):
    """The run's process group is SIGKILLed while srun is between creating trial 1's step and
    launching it (held there by srun's prolog, which runs in that gap: srun(1) --prolog,
    SLURM_PROLOG). srun, in a session of its own, survives and launches the step, which then
    ends by itself: killed with the run, srun would leave a step only slurmctld knows, that
    no scancel ends, and the resume could not attach (session.py ``Step.start``)."""
    spec, store = write_spec(tmp_path, 4), tmp_path / "s.sqlite"
    held, go, prolog = tmp_path / "held", tmp_path / "go", tmp_path / "prolog.sh"
    prolog.write_text(
        "#!/bin/sh\n"
        f'[ "$SLURM_JOB_NAME" = benchlang-node0-trial1 ] && [ ! -e {held} ] || exit 0\n'
        f'echo "$SLURM_STEP_ID" > {held}\n'
        f"for _ in $(seq 1200); do [ -e {go} ] && exit 0; sleep 0.05; done\n"
    )
    prolog.chmod(0o755)
    run = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store), "-q"],
        env={**os.environ, "SLURM_PROLOG": str(prolog)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        until(lambda: held.exists() or run.poll() is not None, timeout=120)
        assert held.exists(), run.communicate()[1]
        (job,) = idle_cluster.jobs()
        step = f"{job}.{held.read_text().strip()}"
        assert step in step_ids(idle_cluster, job)
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    finally:
        go.touch()
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    until(lambda: step not in step_ids(idle_cluster, job))
    status, _out, err = cli("run", spec, "--store", store, "--resume")
    assert status == 0, err
    assert ok_trials(store) == 4
    ((_lease, lease_job, released),) = leases(store)
    assert lease_job == job and released is not None
    assert idle_cluster.jobs() == []
