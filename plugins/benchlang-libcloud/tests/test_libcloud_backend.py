"""hosts libcloud with Libcloud's own Dummy driver, whose nodes get the addresses 127.0.0.N,
each served by a real sshd started on that address: settings, the cost guard, the conformance
kit, and a spec run end to end (allocate -> trials over SSH -> destroy)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from benchlang_libcloud import LibcloudBackend

from benchlang.backends.base import Secret, SettingError
from benchlang.testing import conformance, sshd

ADDRESSES = ("127.0.0.3", "127.0.0.4")  # the Dummy driver starts with 2 nodes: ours are 3 and 4
KEY = "0"  # the Dummy driver's credentials: its starting nodes
pytestmark = pytest.mark.skipif(bool(sshd.sshd_missing()), reason=str(sshd.sshd_missing()))


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    testbed = sshd.Testbed(tmp_path_factory.mktemp("cloud-sshd"), 2, addresses=ADDRESSES)
    yield testbed
    testbed.close()


def settings(bed, **extra) -> dict:
    return {
        "provider": "dummy",
        "key": Secret("DUMMY_KEY", KEY),
        "size": "Small",
        "image": "Ubuntu 9.10",
        "count": 2,
        "port": bed.servers[0].port,
        "identity": str(bed.identity),
        "known_hosts": str(bed.known_hosts),
        **extra,
    }


@pytest.mark.parametrize(
    ("bad", "key"),
    [
        ({"provider": None}, None),
        ({"count": 0}, "count"),
        ({"budget": 5}, "budget"),
        ({"tags": ("nokey",)}, "tags"),
        ({"flavour": "x"}, "flavour"),
        ({"port": 0}, "port"),
    ],
)
def test_bad_settings_name_their_key(bed, bad, key):
    given = {k: v for k, v in {**settings(bed), **bad}.items() if v is not None}
    with pytest.raises(SettingError) as err:
        LibcloudBackend.check_settings(given)
    assert err.value.key == key


def test_the_budget_refuses_a_run_before_creating_anything(bed, tmp_path):
    backend = LibcloudBackend.from_settings(settings(bed, budget=5, duration=3600.0), tmp_path)
    before = [n.id for n in backend.driver.list_nodes()]
    with pytest.raises(SettingError, match=r"cost about 8.00 .*over the budget of 5"):
        asyncio.run(backend.acquire(None))
    assert [n.id for n in backend.driver.list_nodes()] == before


def test_an_option_the_driver_does_not_take_is_refused_and_nothing_is_left(bed, tmp_path):
    backend = LibcloudBackend.from_settings(settings(bed, tags=("team=perf",)), tmp_path)
    before = [n.id for n in backend.driver.list_nodes()]
    with pytest.raises(SettingError, match="takes no ex_metadata"):
        asyncio.run(backend.acquire(None))
    assert [n.id for n in backend.driver.list_nodes()] == before


@pytest.fixture
def cloud_case(bed, tmp_path):
    """Backends sharing one Dummy driver (the provider): attach sees the nodes acquire made."""
    first = LibcloudBackend.from_settings(settings(bed), tmp_path)
    driver = first.driver

    def make() -> LibcloudBackend:
        backend = LibcloudBackend.from_settings(settings(bed), tmp_path)
        backend._driver = driver
        return backend

    async def down(backend, lease, host):
        bed.servers[ADDRESSES.index(lease.hosts[host])].kill()

    yield conformance.Case(make=make, secrets=(), down=down, timeout=60.0)
    assert [n.id for n in driver.list_nodes()] == ["1", "2"], "every node was destroyed"
    for server in bed.servers:
        if server.proc is None:
            server.start()


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.names())
def test_the_libcloud_backend_conforms(cloud_case, check):
    conformance.run(check, cloud_case)


def test_a_lease_maps_logical_hosts_to_the_dummy_addresses(bed, tmp_path):
    backend = LibcloudBackend.from_settings(settings(bed), tmp_path)
    lease = asyncio.run(backend.acquire(None))
    try:
        assert dict(lease.hosts) == dict(zip(("node0", "node1"), ADDRESSES, strict=True))
        assert [r["node_id"] for r in lease.resources] == ["3", "4"]
        assert lease.resources[0]["size"] == "Small" and lease.price_per_hour is not None
    finally:
        asyncio.run(backend.release(lease))
    assert [n.id for n in backend.driver.list_nodes()] == ["1", "2"]


SPEC = """benchlang 1
experiment cloudy {{
  seed 5
  hosts libcloud {{
    provider "dummy"  key from env "DUMMY_KEY"
    size "Small"  image "Ubuntu 9.10"  count 2
    port {port}  identity "{identity}"  known_hosts "{known_hosts}"  workdir "{workdir}"
    duration 1h  budget 10
  }}
  factor k in [1, 2]
  benchmark b {{
    run "echo v={{k}}"
    measure v from stdout regex "v=([0-9]+)"
  }}
  design {{ runs 2 order fixed }}
}}
"""


def test_a_spec_runs_end_to_end_on_dummy_nodes(bed, tmp_path):
    spec = tmp_path / "cloud.bench"
    spec.write_text(
        SPEC.format(
            port=bed.servers[0].port,
            identity=bed.identity,
            known_hosts=bed.known_hosts,
            workdir=tmp_path / "remote",
        )
    )
    store = tmp_path / "cloud.sqlite"
    env = {**os.environ, "DUMMY_KEY": KEY, "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store)],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    db = sqlite3.connect(store)
    ((lease_text, released),) = db.execute("SELECT lease, released FROM leases")
    facts = {h: json.loads(f) for h, f in db.execute("SELECT host, facts FROM hosts")}
    hosts = dict(db.execute("SELECT host, count(*) FROM trials GROUP BY host").fetchall())
    db.close()
    lease = json.loads(lease_text)
    assert released is not None
    assert lease["hosts"] == {"node0": "127.0.0.3", "node1": "127.0.0.4"}
    assert lease["price_per_hour"] == 8.0 and lease["expires"] is not None
    assert facts["node0"]["address"] == "127.0.0.3" and hosts == {"node0": 2, "node1": 2}
    assert "host node0 (127.0.0.3)" in done.stdout.decode()


def test_sweep_destroys_the_nodes_of_leases_no_store_holds(bed, tmp_path):
    from libcloud.compute.drivers.dummy import DummyNodeDriver

    class TaggingDummy(DummyNodeDriver):
        """The Dummy driver, keeping the tags create_node is given (as EC2 does)."""

        def create_node(self, name, size, image, ex_metadata=None):
            node = super().create_node(name, size, image)
            node.extra["tags"] = dict(ex_metadata or {})
            return node

    driver = TaggingDummy(KEY)
    backends = [LibcloudBackend.from_settings(settings(bed), tmp_path) for _ in range(2)]
    for backend in backends:
        backend._driver = driver
    kept = asyncio.run(backends[0].acquire(None))
    lost = asyncio.run(backends[1].acquire(None))
    assert {n.extra["tags"]["benchlang-lease"] for n in driver.list_nodes()[2:]} == {
        kept.id,
        lost.id,
    }
    found = asyncio.run(backends[0].sweep(frozenset({kept.id}), destroy=False))
    assert len(found) == 2 and all(lost.id in line for line in found)
    asyncio.run(backends[0].sweep(frozenset({kept.id})))
    left = [n.extra.get("tags", {}).get("benchlang-lease") for n in driver.list_nodes()]
    assert left == [None, None, kept.id, kept.id]
    asyncio.run(backends[0].release(kept))
    assert [n.id for n in driver.list_nodes()] == ["1", "2"]
