"""The lease lifecycle end to end with the allocating test pool (benchlang.testing.pool):
``benchlang run`` acquires before the first trial, stores the lease, releases it at the end,
on SIGINT and on failure; a SIGKILLed run's lease is listed and released by ``benchlang
hosts``; ``--resume`` attaches to it; the lease deadline; secrets reach no store, plan,
record, bundle or log; analyze, record, results and bundle never open the backend."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import sqlite3
from pathlib import Path

import pytest

from benchlang.backends.registry import backend_kinds
from benchlang.testing import conformance
from benchlang.testing.pool import PoolBackend, ledger
from tests.conftest import cli_here

TOKEN = "tok-5c1e-secret-9b"

SPEC = """benchlang 1
experiment pooled {{
  seed 3
  hosts pool {{ count 2 ledger "ledger.json" token from env "POOL_TOKEN" {extra} }}
  factor k in [1, 2]
  benchmark b {{
    run "env; {slow}echo v={{k}}"
    measure v from stdout regex "v=([0-9]+)"
  }}
  metric v {{ measure mean }}
  kpi v {{ percentile 50 confidence 75% }}
  design {{ runs {runs} order fixed }}
}}
"""


@pytest.fixture(scope="module")
def pool_env(tmp_path_factory) -> dict[str, str]:
    """An environment where ``hosts pool`` resolves in benchlang subprocesses."""
    root = tmp_path_factory.mktemp("pool-entrypoint")
    info = root / "benchlang_pool_tests-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: benchlang-pool-tests\nVersion: 0\n"
    )
    (info / "entry_points.txt").write_text(
        "[benchlang.backends]\npool = benchlang.testing.pool:PoolBackend\n"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200", "POOL_TOKEN": TOKEN}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(root)) if p)
    return env


@pytest.fixture(scope="module", autouse=True)
def registered():
    """``hosts pool`` resolves in this process too (the CLI runs here: ``bl``)."""
    kinds = backend_kinds()
    kinds["pool"] = PoolBackend
    yield
    del kinds["pool"]


def write(where: Path, *, runs: int = 2, slow: str = "", extra: str = "") -> Path:
    spec = where / "p.bench"
    spec.write_text(SPEC.format(runs=runs, slow=slow, extra=extra))
    return spec


def bl(env: dict[str, str], *args: object, cwd: Path | None = None) -> tuple[int, str, str]:
    """The CLI in this process with exactly ``env``; the process boundary (SIGINT, SIGKILL)
    is tested through ``conformance``'s subprocesses, which find the pool by ``pool_env``."""
    return cli_here(args, cwd=cwd, environ=env)


def lease_rows(store: Path) -> list[tuple]:
    db = sqlite3.connect(store)
    try:
        return list(db.execute("SELECT id, kind, lease, acquired, released FROM leases"))
    finally:
        db.close()


def test_a_run_acquires_stores_and_releases_its_lease_and_keeps_no_secret(pool_env, tmp_path):
    spec = write(tmp_path, extra="price 36")
    store = tmp_path / "p.sqlite"
    status, out, err = bl(pool_env, "run", spec, "--store", store, cwd=tmp_path)
    assert status == 0, err
    assert ledger(tmp_path / "ledger.json") == {}, "released with the provider"
    ((lease_id, kind, text, acquired, released),) = lease_rows(store)
    lease = json.loads(text)
    assert kind == "pool" and released is not None and released >= acquired
    assert lease["hosts"] == {"node0": "127.0.0.2", "node1": "127.0.0.3"}
    db = sqlite3.connect(store)
    first = db.execute("SELECT min(started) FROM trials").fetchone()[0]
    facts = dict(db.execute("SELECT host, facts FROM hosts").fetchall())
    db.close()
    assert acquired < first, "the lease is stored before any trial runs"
    assert json.loads(facts["node0"])["address"] == "127.0.0.2"

    status, listed, _ = bl(pool_env, "hosts", "list", store)
    assert status == 0 and lease_id[:12] in listed and "released" in listed
    assert "node0=127.0.0.2" in listed and "36/h" in listed
    status, shown, _ = bl(pool_env, "hosts", "list", store, "--json")
    (row,) = json.loads(shown)["leases"]
    assert row["cost"] == pytest.approx(36 * (released - acquired) / 3600, abs=1e-5)
    # analyze, record and results never open the backend: from_settings would fail here
    offline = {k: v for k, v in pool_env.items() if k != "POOL_TOKEN"}
    texts = [out, err, listed]
    for args in (
        ("record", spec, "--store", store),
        ("analyze", spec, "--store", store),
        ("analyze", "--store", store),
        ("results", store, "--format", "json"),
        ("bundle", store, spec, "-o", tmp_path / "p.bundle"),
    ):
        status, shown, complaint = bl(offline, *args, cwd=tmp_path)
        assert status == 0, (args, complaint)
        texts += [shown, complaint]
    assert "host node0 (127.0.0.2)" in texts[3], "the record shows the logical -> physical map"
    spent = f"{round(36 * (released - acquired) / 3600, 6):.4g}"
    assert (
        f"lease {lease_id[:12]} (pool): node0=127.0.0.2, node1=127.0.0.3; 36/h, cost {spent}"
        in texts[3]
    ), texts[3]
    texts += bl(pool_env, "plan", spec, cwd=tmp_path)[1:]
    for text in texts:
        assert TOKEN not in text
    assert TOKEN.encode() not in store.read_bytes(), "a trial printing env must not store it"
    assert TOKEN.encode() not in gzip.decompress((tmp_path / "p.bundle").read_bytes())
    assert 'token from env "POOL_TOKEN"' in spec.read_text()


def test_a_literal_for_a_secret_setting_is_a_positioned_error(tmp_path):
    spec = tmp_path / "s.bench"
    spec.write_text(
        'benchlang 1\nexperiment s {\n  hosts pool { count 1 ledger "l.json" token "abc" }\n'
        '  benchmark b { run "true" }\n}\n'
    )
    from benchlang.app.spec import compile_spec
    from benchlang.lang.diagnostics import SpecError

    with pytest.raises(SpecError) as err:
        compile_spec(spec)
    text = str(err.value)
    assert "s.bench:3:46: error: hosts pool: 'token' is a secret" in text
    assert 'token from env "POOL_TOKEN"' in text and "^" in text


def test_a_missing_environment_variable_is_an_error_before_anything_runs(pool_env, tmp_path):
    spec = write(tmp_path)
    env = {k: v for k, v in pool_env.items() if k != "POOL_TOKEN"}
    status, _, err = bl(env, "run", spec, "--store", tmp_path / "x.sqlite", cwd=tmp_path)
    assert status == 2 and "POOL_TOKEN, which is not set" in err
    assert ledger(tmp_path / "ledger.json") == {}


def test_sigint_releases_the_lease_at_once(pool_env, tmp_path):
    spec = write(tmp_path, runs=4, slow="[ $BENCHLANG_TRIAL -ge 1 ] && sleep 300; ")
    status, took = conformance.interrupted_run_releases(spec, tmp_path / "p.sqlite", pool_env)
    assert status == 130 and took < 60
    assert ledger(tmp_path / "ledger.json") == {}


def test_a_killed_run_leaves_its_lease_for_hosts_list_and_hosts_release(pool_env, tmp_path):
    spec = write(tmp_path, runs=4, slow="[ $BENCHLANG_TRIAL -ge 1 ] && sleep 300; ")
    store = tmp_path / "p.sqlite"
    held = conformance.killed_run_leaves_a_lease(spec, store, pool_env)
    assert list(ledger(tmp_path / "ledger.json")) == held
    status, listed, _ = bl(pool_env, "hosts", "list", store)
    assert status == 0 and held[0][:12] in listed and "held" in listed
    status, out, err = bl(pool_env, "hosts", "release", store)
    assert status == 0, err
    assert f"released lease {held[0]}" in out
    assert ledger(tmp_path / "ledger.json") == {}
    assert all(row[4] is not None for row in lease_rows(store))
    status, out, _ = bl(pool_env, "hosts", "release", store)
    assert status == 0 and "no lease is held" in out


def test_resume_attaches_to_the_lease_a_killed_run_left(pool_env, tmp_path):
    spec = write(tmp_path, runs=3, slow="[ $BENCHLANG_TRIAL -ge 1 ] && [ ! -e go ] && sleep 300; ")
    store = tmp_path / "p.sqlite"
    held = conformance.killed_run_leaves_a_lease(spec, store, pool_env)
    (tmp_path / "go").write_text("")
    status, _, err = bl(pool_env, "run", spec, "--store", store, "--resume", cwd=tmp_path)
    assert status == 0, err
    rows = lease_rows(store)
    assert [r[0] for r in rows] == held, "the resumed run used the stored lease"
    assert rows[0][4] is not None and ledger(tmp_path / "ledger.json") == {}


def run_in_process(tmp_path: Path, backend: PoolBackend, runs: int, sleep: float, reset: str = ""):
    """A plan on ``backend`` through the real executor; returns (summary, store events)."""
    from benchlang.lang.check import load
    from benchlang.plan.compile import compile_plan
    from benchlang.run.executor import Executor
    from benchlang.run.progress import Progress
    from benchlang.run.store import Store

    spec = tmp_path / "d.bench"
    spec.write_text(
        f"benchlang 1\nexperiment d {{\n  factor k in [1, 2]\n{reset}"
        f'  benchmark b {{ run "sleep {sleep}; echo v={{k}}" measure v from stdout regex "v=([0-9]+)" }}\n'
        f"  design {{ runs {runs} order fixed }}\n}}\n"
    )
    experiment = load(spec)
    plan = compile_plan(experiment, backend.hosts())
    with Store(tmp_path / "d.sqlite", create=True) as store:
        store.add_plan(plan.hash, "d", experiment.spec_hash, plan.seed, plan.json_text())
        summary = asyncio.run(
            Executor(experiment, plan, backend, store, Progress(plan.n_trials, quiet=True)).run()
        )
        events = [message for _at, _host, _kind, message in store.events(plan.hash)]
        leases = store.leases()
    return summary, events, leases


class NoExtend(PoolBackend):
    capabilities = frozenset()


def test_no_round_starts_that_cannot_finish_before_the_lease_ends(tmp_path):
    from benchlang.backends.base import Secret

    backend = NoExtend(tmp_path / "l.json", 1, Secret("T", TOKEN), duration=2.0)
    summary, events, leases = run_in_process(tmp_path, backend, runs=4, sleep=0.6)
    assert any("before a round estimated at" in e for e in events), events
    assert summary.ran == 2, "the first round ran; the next could not finish before expiry"
    assert leases[0].released is not None and ledger(tmp_path / "l.json") == {}


def test_the_lease_is_extended_when_the_backend_can(tmp_path):
    from benchlang.backends.base import Secret

    backend = PoolBackend(tmp_path / "l.json", 1, Secret("T", TOKEN), duration=2.0)
    summary, _events, leases = run_in_process(tmp_path, backend, runs=4, sleep=0.6)
    assert summary.ran == 8
    (stored,) = leases
    assert stored.lease.expires > stored.acquired + 2.0, "extended, and the store updated"


@pytest.mark.parametrize("action", ["reboot", "power_cycle", "reimage"])
def test_reset_asks_the_provider_for_the_declared_action_before_every_round(tmp_path, action):
    from benchlang.backends.base import Secret

    backend = PoolBackend(tmp_path / "l.json", 1, Secret("T", TOKEN))
    summary, _events, _leases = run_in_process(tmp_path, backend, 3, 0, f"  reset {action}\n")
    assert summary.ran == 6
    log = (tmp_path / "l.json.power").read_text().splitlines()
    assert log == [f"node0 {action}"] * 3, "one provider action per round, none run as a command"


@pytest.mark.parametrize(
    ("kind", "action", "error"),
    [
        ("local", "power_cycle", "hosts local cannot power_cycle between rounds"),
        ("local", "reboot", "hosts local cannot reboot or reconnect between rounds"),
        ("ssh", "reimage", "hosts ssh cannot reimage between rounds"),
    ],
)
def test_a_reset_the_backend_cannot_do_is_a_positioned_error(
    tmp_path, cli_in_process, kind, action, error
):
    spec = tmp_path / "r.bench"
    hosts = 'hosts ssh { nodes ["a"] }\n  ' if kind == "ssh" else ""
    spec.write_text(
        f'benchlang 1\nexperiment r {{\n  {hosts}reset {action}\n  benchmark b {{ run "true" }}\n}}\n'
    )
    status, _, err = cli_in_process(["check", spec])
    assert status == 2 and f"{error}" in err and "Traceback" not in err, err
    if kind == "ssh":
        assert "hosts ssh can reset reboot" in err


def test_hosts_sweep_finds_tagged_machines_whose_store_is_lost(pool_env, tmp_path):
    spec = write(tmp_path, runs=4, slow="[ $BENCHLANG_TRIAL -ge 1 ] && sleep 300; ")
    kept = tmp_path / "kept.sqlite"
    lost = tmp_path / "lost.sqlite"
    held = conformance.killed_run_leaves_a_lease(spec, kept, pool_env)
    orphan = conformance.killed_run_leaves_a_lease(spec, lost, pool_env)
    lost.unlink()  # the store of the second run is gone: only the tag finds its machines
    status, out, _ = bl(pool_env, "hosts", "sweep", spec, "--keep", kept, "--dry-run")
    assert status == 0 and f"found allocation {orphan[0]}" in out and held[0] not in out
    assert set(ledger(tmp_path / "ledger.json")) == {held[0], orphan[0]}
    status, out, _ = bl(pool_env, "hosts", "sweep", spec, "--keep", kept)
    assert status == 0 and f"destroyed allocation {orphan[0]}" in out
    assert list(ledger(tmp_path / "ledger.json")) == held
    assert bl(pool_env, "hosts", "release", kept)[0] == 0
    assert ledger(tmp_path / "ledger.json") == {}


def test_hosts_sweep_refuses_a_backend_without_tags(tmp_path, cli_in_process):
    spec = tmp_path / "l.bench"
    spec.write_text('benchlang 1\nexperiment l {\n  benchmark b { run "true" }\n}\n')
    status, _, err = cli_in_process(["hosts", "sweep", spec])
    assert status == 2 and "hosts local cannot find its machines by tag" in err
