"""hosts cloudlab against a local portal (conftest.py: XML-RPC over TLS, the portal's calls,
loopback sshd nodes; each of its rules cites the real client or server it imitates): settings,
the certificate checks both ways, both answer shapes (JSON in ``value`` or in ``output``), the
portal's failure codes (in ``value``), statuses that end in failure or are busy, the
conformance kit, extend (granted and refused), and a spec run end to end (start -> ready ->
manifests -> trials over SSH with a portal reboot between rounds -> terminate), SIGINT and
SIGKILL + benchlang hosts release."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from benchlang_cloudlab import CloudLabBackend, manifest_nodes
from benchlang_cloudlab.local_portal import PASSPHRASE, Pki
from benchlang_cloudlab.portal import Answer, PortalError

from benchlang.backends.base import HostDown, Secret, SettingError
from benchlang.testing import conformance, sshd


def settings(portal, **extra) -> dict:
    return {
        "portal": portal.url,
        "certificate": str(portal.root / "cloudlab.pem"),
        "passphrase": Secret("CLOUDLAB_PASSPHRASE", PASSPHRASE),
        "ca": str(portal.root / "portal-ca.pem"),
        "project": "bench",
        "profile": "small-lan",
        "hardware": "d430",
        "count": 2,
        "poll": 0.05,
        "identity": str(portal.bed.identity),
        "known_hosts": str(portal.bed.known_hosts),
        **extra,
    }


@pytest.mark.parametrize(
    ("bad", "key"),
    [
        ({"project": None}, None),
        ({"count": 0}, "count"),
        ({"bindings": ("x",)}, "bindings"),
        ({"gpu": 1}, "gpu"),
        ({"duration": -1}, "duration"),
    ],
)
def test_bad_settings_name_their_key(portal, bad, key):
    given = {k: v for k, v in {**settings(portal), **bad}.items() if v is not None}
    with pytest.raises(SettingError) as err:
        CloudLabBackend.check_settings(given)
    assert err.value.key == key


def test_a_portal_with_an_untrusted_certificate_is_refused_and_nothing_starts(portal, tmp_path):
    other = Pki(tmp_path, "rogue")  # the portal's certificate is not signed by this CA
    backend = CloudLabBackend.from_settings(settings(portal, ca=str(other.ca)), tmp_path)
    before = len(portal.calls)
    with pytest.raises(HostDown, match="certificate is not trusted"):
        asyncio.run(backend.acquire(None))
    assert len(portal.calls) == before and portal.experiments == {}


def test_a_wrong_passphrase_says_so(portal, tmp_path):
    given = settings(portal, passphrase=Secret("P", "wrong"))
    backend = CloudLabBackend.from_settings(given, tmp_path)
    with pytest.raises(HostDown, match="wrong passphrase"):
        asyncio.run(backend.acquire(None))


@pytest.fixture(params=["output", "value"])
def shaped(portal, request):
    """The portal answering JSON in ``output`` (emulabserver.py.in) or in ``value``
    (portal-tools API.md, fabfed): the plugin must read both."""
    portal.shape = request.param
    yield portal
    portal.shape = "output"


def test_acquire_starts_the_profile_and_maps_the_manifest_nodes(shaped, tmp_path):
    portal = shaped
    given = settings(portal, refspec="refs/heads/main", site="urn:publicid:IDN+utah+authority+cm")
    backend = CloudLabBackend.from_settings({**given, "duration": 7200.0}, tmp_path)
    lease = asyncio.run(backend.acquire(None))
    try:
        (_name, args), *_ = [c for c in portal.calls if c[0] == "startExperiment"][-1:]
        assert args["profile"] == "bench,small-lan" and args["proj"] == "bench"
        assert json.loads(args["bindings"]) == {"nodeCount": "2", "phystype": "d430"}
        assert args["duration"] == 2 and args["refspec"] == "refs/heads/main"
        assert args["aggregate"] == "urn:publicid:IDN+utah+authority+cm"
        ports = [portal.bed.servers[i].port for i in range(2)]
        assert dict(lease.hosts) == {f"node{i}": f"127.0.0.1:{p}" for i, p in enumerate(ports)}
        assert lease.resources[0]["hardware"] == "d430"
        assert "UBUNTU22-64-STD" in lease.resources[0]["image"]
        assert lease.expires is not None and lease.expires > 7000 + __import__("time").time()
        experiment = lease.handle["experiment"]
        before = portal.experiments[experiment]["expires"]
        extended = asyncio.run(backend.extend(lease, lease.expires + 1800))
        assert portal.experiments[experiment]["expires"] == before + 3600
        assert extended.expires >= lease.expires + 3600 - 1
    finally:
        asyncio.run(backend.release(lease))
    assert portal.experiments == {}
    asyncio.run(backend.release(lease))  # the portal no longer knows it: released


def test_power_cycle_and_reimage_go_through_the_portal_and_the_node_comes_back(portal, tmp_path):
    from benchlang.backends.base import Command

    backend = CloudLabBackend.from_settings(settings(portal), tmp_path)
    lease = asyncio.run(backend.acquire(None))

    async def cycle() -> list[int]:
        session = await backend.open("node1")
        statuses = []
        try:
            for action in ("power_cycle", "reimage"):
                await backend.power("node1", action)
                await session.reconnect(60.0)
                statuses.append((await session.execute(Command("true"))).exit_status)
        finally:
            await session.close()
        return statuses

    try:
        before = len(portal.calls)
        assert asyncio.run(cycle()) == [0, 0]
        calls = [(m, a) for m, a in portal.calls[before:] if m in ("reboot", "reload")]
        experiment = lease.handle["experiment"]
        assert calls == [
            ("reboot", {"experiment": experiment, "nodes": "node1", "power": 1}),
            ("reload", {"experiment": experiment, "nodes": "node1"}),
        ]
    finally:
        asyncio.run(backend.release(lease))


def test_an_experiment_that_fails_says_why_and_is_terminated(portal, tmp_path):
    backend = CloudLabBackend.from_settings(settings(portal, count=3), tmp_path)
    with pytest.raises(HostDown, match=r"is failed: Insufficient resources: 3 nodes wanted"):
        asyncio.run(backend.acquire(None))
    assert portal.experiments == {}, "the failed experiment was terminated"
    statuses = [c for c in portal.calls if c[0] == "experimentStatus"]
    assert statuses and all(c[1].get("asjson") == 1 for c in statuses)


def test_a_busy_portal_is_asked_again(portal, tmp_path):
    portal.busy = 2
    backend = CloudLabBackend.from_settings(settings(portal), tmp_path)
    lease = asyncio.run(backend.acquire(None))
    asyncio.run(backend.release(lease))
    assert portal.busy == 0 and portal.experiments == {}


def test_failure_codes_come_from_the_answer_value(portal, tmp_path):
    backend = CloudLabBackend.from_settings(settings(portal), tmp_path)
    with pytest.raises(PortalError) as err:
        backend.portal.call("terminateExperiment", experiment="bench,nosuch")
    assert err.value.code == 12 and "No such instance bench,nosuch" in err.value.message
    assert "***" not in err.value.message
    with pytest.raises(PortalError) as err:
        backend.portal.call("experimentStatus")
    assert err.value.code == 1 and "Must supply 'experiment'" in err.value.message


def test_answers_hold_json_in_value_or_output():
    assert Answer(0, '{"status": "ready"}', "").json() == {"status": "ready"}
    assert Answer(0, 0, '{"status": "ready"}').json() == {"status": "ready"}
    assert Answer(0, {"status": "ready"}, "").json() == {"status": "ready"}
    with pytest.raises(PortalError, match="holds no JSON"):
        Answer(0, 0, "Status: ready\n").json("experimentStatus")


def test_an_extension_the_portal_refuses_says_so(portal, tmp_path):
    backend = CloudLabBackend.from_settings(settings(portal), tmp_path)
    lease = asyncio.run(backend.acquire(None))
    portal.max_extension = 0
    try:
        with pytest.raises(HostDown, match=r"refused to extend .* administrator must approve"):
            asyncio.run(backend.extend(lease, lease.expires + 1800))
    finally:
        portal.max_extension = 24 * 7
        asyncio.run(backend.release(lease))


def test_reimage_on_a_portal_without_reload_says_so(portal, tmp_path):
    backend = CloudLabBackend.from_settings(settings(portal), tmp_path)
    lease = asyncio.run(backend.acquire(None))
    portal.methods.discard("reload")
    try:
        with pytest.raises(HostDown, match="no reload method, so reset reimage cannot run"):
            asyncio.run(backend.power("node0", "reimage"))
    finally:
        portal.methods.add("reload")
        asyncio.run(backend.release(lease))


def test_the_login_of_the_given_user_is_taken():
    rspec = (
        '<rspec xmlns="http://www.geni.net/resources/rspec/3"><node client_id="node0"><services>'
        '<login hostname="h" port="22" username="alice"/>'
        '<login hostname="h" port="22" username="bob"/></services></node></rspec>'
    )
    assert manifest_nodes({"urn": rspec})[0]["username"] == "alice"
    assert manifest_nodes({"urn": rspec}, "bob")[0]["username"] == "bob"


def test_manifest_nodes_come_in_client_id_order():
    rspec = (
        '<rspec xmlns="http://www.geni.net/resources/rspec/3">'
        '<node client_id="node10"><services><login hostname="b" port="22"/></services></node>'
        '<node client_id="node2"><services><login hostname="a" port="2222"/></services></node>'
        "</rspec>"
    )
    nodes = manifest_nodes({"urn": rspec})
    assert [(n["client_id"], n["hostname"], n["port"]) for n in nodes] == [
        ("node2", "a", "2222"),
        ("node10", "b", "22"),
    ]


@pytest.fixture
def cloudlab_case(portal, tmp_path):
    async def down(backend, lease, host):
        port = int(lease.hosts[host].rsplit(":", 1)[1])
        next(s for s in portal.bed.servers if s.port == port).kill()

    yield conformance.Case(
        make=lambda: CloudLabBackend.from_settings(settings(portal), tmp_path),
        secrets=(PASSPHRASE,),
        down=down,
        timeout=60.0,
    )
    assert portal.experiments == {}, "every experiment was terminated"
    for server in portal.bed.servers:
        if server.proc is None:
            server.start()


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.names())
def test_the_cloudlab_backend_conforms(cloudlab_case, check):
    conformance.run(check, cloudlab_case)


SPEC = """benchlang 1
experiment cl {{
  seed 2
  hosts cloudlab {{
    portal "{url}"  certificate from file "{cert}"  passphrase from env "CLOUDLAB_PASSPHRASE"
    ca "{ca}"  project "bench"  profile "small-lan"  hardware "d430"  count 2
    duration 2h  poll 0.05s
    identity "{identity}"  known_hosts "{known_hosts}"  workdir "{workdir}"
  }}
  reset reboot
  factor k in [1, 2]
  benchmark b {{
    run "{slow}echo v={{k}}"
    measure v from stdout regex "v=([0-9]+)"
  }}
  design {{ runs {runs} order fixed }}
}}
"""


def write_spec(portal, tmp_path, runs: int = 2, slow: str = ""):
    spec = tmp_path / "cl.bench"
    spec.write_text(
        SPEC.format(
            url=portal.url,
            cert=portal.root / "cloudlab.pem",
            ca=portal.root / "portal-ca.pem",
            identity=portal.bed.identity,
            known_hosts=portal.bed.known_hosts,
            workdir=tmp_path / "remote",
            runs=runs,
            slow=slow,
        )
    )
    return spec


def env() -> dict[str, str]:
    return {**os.environ, "CLOUDLAB_PASSPHRASE": PASSPHRASE, "COLUMNS": "200"}


def test_a_spec_runs_end_to_end_on_a_portal_experiment(portal, tmp_path):
    spec = write_spec(portal, tmp_path)
    store = tmp_path / "cl.sqlite"
    reboots = sum(1 for c in portal.calls if c[0] == "reboot")
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store)],
        env=env(),
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert portal.experiments == {}, "terminated at the end of the run"
    db = sqlite3.connect(store)
    ((text, released),) = db.execute("SELECT lease, released FROM leases")
    facts = {h: json.loads(f) for h, f in db.execute("SELECT host, facts FROM hosts")}
    n_rounds = db.execute("SELECT count(*) FROM rounds WHERE reset_status = 'ok'").fetchone()[0]
    db.close()
    lease = json.loads(text)
    assert released is not None and lease["handle"]["experiment"].startswith("bench,bl-")
    assert facts["node0"]["address"] == lease["hosts"]["node0"]
    assert sum(1 for c in portal.calls if c[0] == "reboot") - reboots == n_rounds == 2
    out = done.stdout.decode() + done.stderr.decode()
    assert PASSPHRASE not in out and PASSPHRASE.encode() not in store.read_bytes()


def test_sigint_terminates_the_experiment(portal, tmp_path):
    spec = write_spec(portal, tmp_path, runs=4, slow="[ $BENCHLANG_TRIAL -ge 1 ] && sleep 300; ")
    status, _took = conformance.interrupted_run_releases(spec, tmp_path / "i.sqlite", env())
    assert status == 130 and portal.experiments == {}


def test_sigkill_leaves_the_experiment_for_hosts_release(portal, tmp_path):
    spec = write_spec(portal, tmp_path, runs=4, slow="[ $BENCHLANG_TRIAL -ge 1 ] && sleep 300; ")
    store = tmp_path / "k.sqlite"
    conformance.killed_run_leaves_a_lease(spec, store, env())
    assert len(portal.experiments) == 1, "the killed run's experiment is still running"
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "hosts", "release", str(store)],
        env=env(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert portal.experiments == {}


pytestmark = pytest.mark.skipif(bool(sshd.sshd_missing()), reason=str(sshd.sshd_missing()))
