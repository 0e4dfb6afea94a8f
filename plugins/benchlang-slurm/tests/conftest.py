"""A real one-node Slurm cluster (benchlang/testing/slurm.py) for the plugin's tests, started
once per session; tests that need it skip, saying why, only where Slurm is not installed."""

from __future__ import annotations

import os
import time

import pytest

from benchlang.testing.slurm import SlurmCluster, slurm_missing

SKIP = slurm_missing()


@pytest.fixture(scope="session")
def cluster():
    if SKIP:
        pytest.skip(SKIP)
    cluster = SlurmCluster().start()
    before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        if before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = before
        cluster.stop()


@pytest.fixture
def idle_cluster(cluster):
    """The cluster with no job left by an earlier test and its node idle."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        jobs = cluster.jobs()
        if jobs:
            cluster.run("scancel", *jobs)
        state = cluster.run("sinfo", "-h", "-n", cluster.node, "-o", "%T").stdout.strip()
        if not jobs and state == "idle":
            return cluster
        if state.startswith(("down", "drain")):
            cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=resume")
        time.sleep(0.2)
    raise RuntimeError(f"node {cluster.node} not idle: {cluster.log('slurmctld')}")


def pytest_collection_modifyitems(items):
    """The cluster's tests in one xdist group: one worker starts it (``--dist loadgroup``)."""
    for item in items:
        if "cluster" in item.fixturenames or "idle_cluster" in item.fixturenames:
            item.add_marker(pytest.mark.xdist_group("testbed-slurm"))
