"""A/B layouts on a two-node Slurm cluster (two slurmd on this machine, nodes HOST-0 and
HOST-1): one node per logical host, so the host-balanced and fully balanced layouts pin each
host batch to its node as they do over SSH (docs/ab-designs.md, Bakshy & Frachtenberg §4)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
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


def run_layout(cluster: SlurmCluster, directory: Path, layout: str) -> dict:
    spec = directory / "ab.bench"
    spec.write_text(SPEC.format(layout=layout))
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", "ab.sqlite", "-q"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SLURM_CONF": str(cluster.conf)},
    )
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
