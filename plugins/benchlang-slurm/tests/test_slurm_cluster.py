"""hosts slurm through benchlang's executor on a real one-node Slurm cluster (munged,
slurmctld, slurmd started for the session): a spec end to end, a job step cancelled with
scancel mid-trial (reported by name, retried), a node failing under a trial (HostDown with the
scheduler's reason). The CLI-level runs (SIGINT, SIGKILL + hosts release, --resume) and the
conformance kit are in test_slurm_runs.py."""

from __future__ import annotations

import asyncio
import io
import threading
import time
from pathlib import Path

from benchlang.app.plan import build_plan
from benchlang.run.executor import Executor
from benchlang.run.progress import Progress
from benchlang.run.store import Store

FAST_RETRY = {"retries": 2, "backoff": 0.05, "reconnect_timeout": 10.0}


def write_spec(directory: Path, body: str, hosts: str = "nodes 1 time 10m") -> Path:
    path = directory / "slurm.bench"
    path.write_text(
        f"benchlang 1\nexperiment slurmtest {{\n  hosts slurm {{ {hosts} }}\n{body}\n}}\n"
    )
    return path


def prepare(spec: Path, **options):
    experiment, backend, plan = build_plan(str(spec))
    store = Store(spec.parent / "results.sqlite", create=True)
    store.add_plan(
        plan.hash,
        experiment.name,
        experiment.spec_hash,
        plan.seed,
        plan.json_text(),
        str(spec),
        spec.read_text(),
    )
    progress = Progress(plan.n_trials, stream=io.StringIO())  # what the user would see
    executor = Executor(experiment, plan, backend, store, progress, **options)
    return plan, store, executor


def run(store, plan, executor):
    """The run (the executor acquires the allocation and releases it) and its lease."""
    summary = asyncio.run(executor.run())
    (stored,) = store.leases(plan.hash)
    assert stored.released is not None, "the run must release its allocation"
    return stored.lease, summary


def steps(cluster) -> list[tuple[str, str]]:
    """(step id, name) of the cluster's running job steps."""
    out = cluster.run("squeue", "-s", "-h", "-o", "%i %j").stdout
    return [tuple(line.split(None, 1)) for line in out.splitlines() if line.strip()]


def when(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def in_thread(action) -> threading.Thread:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


def test_a_spec_runs_end_to_end_as_job_steps(idle_cluster, tmp_path):
    spec = write_spec(
        tmp_path,
        """  factor n in [1, 2]
  benchmark b {
    run "echo value {n}; seq {n} > out.txt; echo step=$SLURM_JOB_ID.$SLURM_STEP_ID"
    measure v from stdout regex "value ([0-9]+)"
    measure ys series from file "out.txt" lines
  }
  design { runs 3 series 1 }""",
        hosts='nodes 1 time 10m constraint "benchlang" exclusive true',
    )
    plan, store, executor = prepare(spec)
    lease, summary = run(store, plan, executor)
    with store:
        rows = store.db.execute(
            "SELECT trial, status, stdout_tail FROM trials WHERE plan_hash = ?", (plan.hash,)
        ).fetchall()
        measures = dict(
            store.db.execute(
                "SELECT trial || ':' || name, value FROM measures WHERE plan_hash = ?",
                (plan.hash,),
            ).fetchall()
        )
        series = store.series_values(plan.hash, "ys")
        facts = store.host_facts(plan.hash)["node0"]
    assert summary.failed == 0 and len(rows) == plan.n_trials == 6
    assert all(status == "ok" for _t, status, _out in rows)
    job = lease.handle["job"]
    step_ids = {out.decode().split("step=")[1].strip() for _t, _s, out in rows}
    assert len(step_ids) == 6 and all(s.startswith(f"{job}.") for s in step_ids)
    for trial, _status, out in rows:
        n = int(out.decode().split()[1])
        assert measures[f"{trial}:v"] == n and list(series[trial]) == list(range(1, n + 1))
        assert measures[f"{trial}:wall_time"] > 0 and f"{trial}:user_time" in measures
    assert lease.hosts == {"node0": idle_cluster.node} and lease.id.endswith(f":{job}")
    assert facts["slurm_node"] == facts["hostname"] == idle_cluster.node
    assert "benchlang" in facts["slurm_features"].split(",")
    assert facts["slurm_version"] and facts["slurm_proctrack"] == "proctrack/linuxproc"
    assert int(facts["slurm_cpus_allocated"]) == int(facts["slurm_cpus"])  # exclusive
    assert facts["kernel"] and facts["cpu_model"]
    assert idle_cluster.jobs() == []


def test_a_step_cancelled_by_scancel_is_reported_by_name_and_retried(idle_cluster, tmp_path):
    """``scancel --signal=TERM`` and a command that ignores SIGTERM: only the agent dies, so
    the step ends without an answer. A plain ``scancel`` (SIGKILL) reaches the step's
    processes deepest first (Slurm 22.05 proctrack/linuxproc/kill_tree.c): under load the
    shell ran on after its ``sleep`` was killed, printed the value and exited 0, and the
    agent answered before its own SIGKILL (1 of 10 loaded runs of this directory; 1 of 50
    alone): a trial that really ended, with nothing to retry."""
    spec = write_spec(
        tmp_path,
        """  factor n in [1, 2]
  benchmark b {
    run "if [ ! -e first ]; then trap '' TERM; touch first; sleep 600; fi; echo value {n}"
    measure v from stdout regex "value ([0-9]+)"
  }
  design { runs 1 series 1 order fixed }""",
    )
    plan, store, executor = prepare(spec, **FAST_RETRY)
    cancelled: list[str] = []

    def cancel_the_sleeping_step():
        when(lambda: (tmp_path / "first").exists())
        step = next(i for i, name in steps(idle_cluster) if name.endswith("-trial0"))
        cancelled.append(step)
        idle_cluster.run("scancel", "--signal=TERM", step)

    watcher = in_thread(cancel_the_sleeping_step)
    _lease, summary = run(store, plan, executor)
    watcher.join(5)
    with store:
        rows = store.db.execute(
            "SELECT trial, status, attempts FROM trials WHERE plan_hash = ? ORDER BY trial",
            (plan.hash,),
        ).fetchall()
        retries = [m for _at, _h, kind, m in store.events(plan.hash) if kind == "retry"]
    assert summary.failed == 0 and summary.hosts_down == ()
    assert rows == [(0, "ok", 2), (1, "ok", 1)]
    assert len(retries) == 1 and cancelled
    assert f"job step {cancelled[0]} (benchlang-node0-trial0)" in retries[0]
    assert "CANCELLED" in retries[0]
    shown = executor.progress.stream.getvalue()
    assert f"host node0: {retries[0]}; trying again" in shown


def test_a_failed_node_stops_its_host_with_the_schedulers_reason(idle_cluster, tmp_path):
    spec = write_spec(
        tmp_path,
        """  benchmark b { run "touch started; sleep 600" }
  design { runs 1 series 1 }""",
    )
    plan, store, executor = prepare(spec, **FAST_RETRY)

    def fail_the_node():
        when(lambda: (tmp_path / "started").exists())
        idle_cluster.run(
            "scontrol",
            "update",
            f"nodename={idle_cluster.node}",
            "state=down",
            "reason=benchlang test: fan failure",
        )

    watcher = in_thread(fail_the_node)
    lease, summary = run(store, plan, executor)
    watcher.join(5)
    assert len(summary.hosts_down) == 1
    host, message = summary.hosts_down[0]
    assert host == "node0" and f"job {lease.handle['job']} is NODE_FAIL" in message
    assert idle_cluster.jobs() == []
