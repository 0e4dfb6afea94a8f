"""A two-node Slurm cluster (two slurmd on this machine, nodes HOST-0 and HOST-1): one node per
logical host, so the host-balanced and fully balanced A/B layouts pin each host batch to its
node as they do over SSH (docs/ab-designs.md, Bakshy & Frachtenberg §4); a node that fails
mid-trial leaves the job (``--no-kill``), its host stops with the scheduler's reason and its
rounds go to the other node, as for a dead SSH host. Node features are hardware factor levels
(``factor rack from hosts "slurm_features"``, docs/hardware-factors.md) read with ``scontrol show
node`` before anything is allocated."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from benchlang.testing.slurm import SlurmCluster, slurm_missing

SKIP = slurm_missing()
SPEC = """benchlang 1
experiment slurmab {{
  seed 3
  hosts slurm {{ nodes 2 time 10m }}
  reset "echo {{version}} $SLURMD_NODENAME >> resets.log"
  benchmark b {{
    run "echo node=$SLURMD_NODENAME host=$BENCHLANG_HOST"
  }}
  design {{
    versions {{ control "A" treatment "B" }}
    layout {layout} {{ hosts 2 requests 2 repetitions 1 }}
    requests ["r1", "r2", "r3", "r4"]
  }}
}}
"""


@pytest.fixture(scope="module")
def two_nodes():
    if SKIP:
        pytest.skip(SKIP)
    cluster = SlurmCluster(nodes=2).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def run_spec(cluster: SlurmCluster, directory: Path, text: str) -> subprocess.CompletedProcess:
    (directory / "ab.bench").write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "benchlang", "run", "ab.bench", "--store", "ab.sqlite", "-q"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SLURM_CONF": str(cluster.conf)},
    )


def run_layout(cluster: SlurmCluster, directory: Path, layout: str) -> dict:
    done = run_spec(cluster, directory, SPEC.format(layout=layout))
    assert done.returncode == 0, done.stdout + done.stderr
    db = sqlite3.connect(directory / "ab.sqlite")
    try:
        (lease,) = [json.loads(text) for (text,) in db.execute("SELECT lease FROM leases")]
        trials = db.execute(
            "SELECT round, host, levels, status, stdout_tail FROM trials ORDER BY trial"
        ).fetchall()
    finally:
        db.close()
    return {"lease": lease, "trials": trials, "resets": (directory / "resets.log").read_text()}


@pytest.mark.parametrize("layout", ["host_balanced", "fully_balanced"])
def test_each_host_batch_runs_on_its_own_node(two_nodes, tmp_path, layout):
    result = run_layout(two_nodes, tmp_path, layout)
    nodes = result["lease"]["hosts"]
    assert sorted(nodes) == ["node0", "node1"] and sorted(nodes.values()) == list(two_nodes.nodes)
    rounds: dict[int, set] = defaultdict(set)
    versions: dict[str, set] = defaultdict(set)
    pairs: dict[tuple[str, str], set] = defaultdict(set)
    for round_, host, levels, status, out in result["trials"]:
        levels = json.loads(levels)
        said = dict(word.split("=") for word in out.decode().split())
        assert status == "ok" and said == {"node": nodes[host], "host": host}
        rounds[round_].add((host, levels["version"]))
        versions[host].add(levels["version"])
        pairs[(host, levels["request"])].add(levels["version"])
    assert len(rounds) == 4 and all(len(batch) == 1 for batch in rounds.values())
    assert versions == {"node0": {"control", "treatment"}, "node1": {"control", "treatment"}}
    both = [pair for pair, seen in pairs.items() if len(seen) == 2]
    assert both == ([] if layout == "host_balanced" else list(pairs))
    resets = [line.split() for line in result["resets"].splitlines()]
    assert sorted(resets) == sorted([v, n] for v in "AB" for n in two_nodes.nodes)
    assert two_nodes.jobs() == []


def test_a_failed_node_leaves_the_job_and_its_rounds_go_to_the_other_node(two_nodes, tmp_path):
    lost = two_nodes.nodes[1]
    text = f"""benchlang 1
experiment slurmfail {{
  hosts slurm {{ nodes 2 time 10m }}
  factor k in [1, 2, 3, 4]
  benchmark b {{
    run "if [ $SLURMD_NODENAME = {lost} ] && [ ! -e failed ]; then touch failed; sleep 600; fi; echo node=$SLURMD_NODENAME k={{k}}"
  }}
  design {{ runs 2 series 1 }}
}}
"""

    def fail_the_node():
        deadline = time.monotonic() + 120
        while not (tmp_path / "failed").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        two_nodes.run("scontrol", "update", f"nodename={lost}", "state=down", "reason=fan failure")

    watcher = threading.Thread(target=fail_the_node, daemon=True)
    watcher.start()
    try:
        done = run_spec(two_nodes, tmp_path, text)
    finally:
        watcher.join(5)
        two_nodes.run("scontrol", "update", f"nodename={lost}", "state=resume")
    db = sqlite3.connect(tmp_path / "ab.sqlite")
    try:
        trials = db.execute("SELECT host, status, stdout_tail FROM trials").fetchall()
        events = db.execute("SELECT host, kind, message FROM events").fetchall()
        (lease,) = [json.loads(text) for (text,) in db.execute("SELECT lease FROM leases")]
    finally:
        db.close()
    down = next(host for host, node in lease["hosts"].items() if node == lost)
    message = f"host {down} stopped: "
    assert done.returncode == 0, done.stderr
    assert message in done.stderr and f"node {lost} left job" in done.stderr
    reason = done.stderr.split(message, 1)[1]  # srun's word, and the node's reason if still DOWN
    assert f"Node failure on {lost}" in reason or "fan failure" in reason
    assert len(trials) == 8 and all(status == "ok" for _h, status, _o in trials)
    assert all(host != down for host, _s, _o in trials)  # its rounds ran on the other node
    assert all(out.decode().startswith(f"node={two_nodes.nodes[0]} ") for _h, _s, out in trials)
    assert any(kind == "reassigned" and host == down for host, kind, _m in events)
    assert two_nodes.jobs() == []


def test_node_features_are_hardware_factor_levels(two_nodes, tmp_path):
    first, second = two_nodes.nodes
    text = f"""benchlang 1
experiment slurmhw {{
  hosts slurm {{ nodelist ["{first}", "{second}"] time 10m }}
  hosts where cores >= 1 and memory >= 1MB
  factor rack from hosts "slurm_features"
  benchmark b {{ run "echo node=$SLURMD_NODENAME" }}
  design {{ runs 1 series 1 }}
}}
"""
    done = run_spec(two_nodes, tmp_path, text)
    assert done.returncode == 0, done.stdout + done.stderr
    db = sqlite3.connect(tmp_path / "ab.sqlite")
    try:
        trials = db.execute("SELECT host, levels, stdout_tail FROM trials").fetchall()
        (plan,) = [json.loads(text) for (text,) in db.execute("SELECT plan_json FROM plans")]
    finally:
        db.close()
    assert sorted(plan["inventory"]["hosts"]) == sorted(two_nodes.nodes)
    assert len(trials) == 2 and {host for host, _l, _o in trials} == {first, second}
    for host, levels, out in trials:
        assert out.decode().split() == [f"node={host}"]
        assert json.loads(levels)["rack"] == ",".join(two_nodes.features(host))
    (tmp_path / "n.bench").write_text(text.replace(f'nodelist ["{first}", "{second}"]', "nodes 2"))
    status = subprocess.run(
        [sys.executable, "-m", "benchlang", "plan", "n.bench"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SLURM_CONF": str(two_nodes.conf)},
    )
    assert status.returncode == 2 and "Traceback" not in status.stderr
    assert "need the nodes named" in status.stderr and "nodelist" in status.stderr
