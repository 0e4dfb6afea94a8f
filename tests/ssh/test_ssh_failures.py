"""Host failures on real sshd servers: timeouts kill the remote process group, a killed host's
rounds move to healthy hosts (or wait for --resume when an A/B layout pins them), dropped connections are retried, resets
that reconnect work, and repeated timeouts stop a host."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

FAST_RETRY = {"retries": 1, "backoff": 0.05, "reconnect_timeout": 0.5}
KILL_PARENT_SSHD = "kill -9 $(awk '{{print $4}}' /proc/$PPID/stat)"


def _rows(store, plan):
    return store.db.execute(
        "SELECT trial, host, status, reason, attempts, timed_out FROM trials WHERE plan_hash = ? ORDER BY trial",
        (plan.hash,),
    ).fetchall()


def _live_processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def test_hanging_trial_is_killed_with_its_process_group(harness, sshd1, tmp_path):
    marker = "987.654321"
    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "w")}
  factor mode in ["hang", "quick"]
  benchmark b {{
    run "if [ {{mode}} = hang ]; then sleep {marker} & sleep {marker}; fi; echo done"
    timeout 1s
  }}
  design {{ runs 1 series 1 order fixed }}
""")
    t0 = time.monotonic()
    plan, store, summary = harness.run(spec)
    elapsed = time.monotonic() - t0
    with store:
        rows = _rows(store, plan)
        by_status = {r[2]: r for r in rows}
        assert len(rows) == 2 and set(by_status) == {"ok", "failed"}
        assert by_status["failed"][5] == 1 and "timed out" in by_status["failed"][3]
        assert summary.hosts_down == ()
    assert elapsed < 8.0
    deadline = time.monotonic() + 3.0
    while _live_processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _live_processes_with(marker) == [], "a process of the timed-out trial survived"


def _kill_when(store, plan, host: str, after: int, server) -> asyncio.Task:
    async def killer() -> None:
        while (
            store.db.execute(
                "SELECT COUNT(*) FROM trials WHERE plan_hash = ? AND host = ?", (plan.hash, host)
            ).fetchone()[0]
            < after
        ):
            await asyncio.sleep(0.01)
        server.kill()

    return asyncio.get_running_loop().create_task(killer())


def _run_killing(executor, store, plan, host: str, after: int, server):
    """Run the plan, killing ``server`` once ``host`` has stored ``after`` trials."""

    async def main():
        killer = _kill_when(store, plan, host, after, server)
        summary = await executor.run()
        await killer
        return summary

    return asyncio.run(main())


def _killing_spec(harness, bed, tmp_path):
    return harness.spec(f"""
  seed 11
  {harness.hosts(bed, tmp_path / "w")}
  timeout 10s
  factor n in [1, 2]
  benchmark b {{ run "sleep 0.1; echo {{n}}" }}
  design {{ runs 12 series 1 order random }}
""")


@pytest.mark.slow
def test_host_killed_mid_run_its_rounds_move_to_healthy_hosts(harness, fresh_sshd3, tmp_path):
    spec = _killing_spec(harness, fresh_sshd3, tmp_path)
    victim = fresh_sshd3.nodes[0]
    plan, store, executor = harness.prepare(spec, **FAST_RETRY)

    with store:
        summary = _run_killing(executor, store, plan, victim, 2, fresh_sshd3.servers[0])
        rows = _rows(store, plan)
        assert [r[0] for r in rows] == list(range(plan.n_trials)), "a trial was lost or repeated"
        assert all(r[2] == "ok" for r in rows)
        assert [h for h, _ in summary.hosts_down] == [victim]
        on_victim = sum(r[1] == victim for r in rows)
        assert 2 <= on_victim < int((plan.trial_host == 0).sum())
        assert (
            store.db.execute("SELECT COUNT(*) FROM trials WHERE host != ?", (victim,)).fetchone()[0]
            == plan.n_trials - on_victim
        )
        kinds = [(e[1], e[2]) for e in store.events(plan.hash) if e[2] != "retry"]
        assert kinds == [(victim, "host_down"), (victim, "reassigned")]
        reassigned = next(e[3] for e in store.events(plan.hash) if e[2] == "reassigned")
        assert (
            f"of {victim} reassigned to {fresh_sshd3.nodes[1]}, {fresh_sshd3.nodes[2]}"
            in reassigned
        )


@pytest.mark.slow
def test_a_host_killed_mid_run_leaves_its_rounds_to_its_equal_host(harness, fresh_sshd3, tmp_path):
    """``design { redundancy 2 }`` (DataMill §4.2): the killed host's rounds go to its equal
    host, never to a host of other hardware levels; no trial is lost or repeated."""
    a, b, c = fresh_sshd3.nodes
    facts = {a: {"cpu_model": "Xeon"}, b: {"cpu_model": "EPYC"}, c: {"cpu_model": "Xeon"}}
    (tmp_path / "facts.json").write_text(json.dumps(facts))
    declared = f'facts from file "{tmp_path / "facts.json"}"'
    spec = harness.spec(f"""
  seed 11
  {harness.hosts(fresh_sshd3, tmp_path / "w", extra=declared)}
  timeout 10s
  factor cpu from hosts "cpu_model"
  factor n in [1, 2]
  benchmark b {{ run "sleep 0.1; echo {{n}}" }}
  design {{ runs 8 redundancy 2 }}
""")
    plan, store, executor = harness.prepare(spec, **FAST_RETRY)
    assert plan.hosts == (a, c) and plan.host_groups == ((a, c),)

    with store:
        summary = _run_killing(executor, store, plan, a, 3, fresh_sshd3.servers[0])
        rows = _rows(store, plan)
        assert [r[0] for r in rows] == list(range(plan.n_trials)), "a trial was lost or repeated"
        assert all(r[2] == "ok" for r in rows) and [h for h, _ in summary.hosts_down] == [a]
        assert {r[1] for r in rows} == {a, c}, "no trial ran on the EPYC host"
        assert 3 <= sum(r[1] == a for r in rows) < plan.n_trials // 2
        table = store.trial_table(plan.hash)
        assert {lv["cpu"] for lv in table.levels} == {"Xeon"}
        reassigned = [e[3] for e in store.events(plan.hash) if e[2] == "reassigned"]
        assert len(reassigned) == 1 and reassigned[0].endswith(f"of {a} reassigned to {c}")


@pytest.mark.slow
def test_a_layout_host_that_dies_keeps_its_batches_and_resume_runs_them_there(
    harness, fresh_sshd3, tmp_path
):
    """An A/B layout pins host batches to hosts (Bakshy & Frachtenberg §4): a dead host's
    trials are not moved but left unrun, and --resume runs them on that host once it is back."""
    spec = harness.spec(f"""
  seed 5
  {harness.hosts(fresh_sshd3, tmp_path / "w")}
  timeout 10s
  reset "echo {{version}} >> resets-$BENCHLANG_HOST"
  benchmark b {{ run "sleep 0.05; echo {{version}} {{request}}" }}
  design {{
    versions {{ control "v1" treatment "v2" }}
    layout fully_balanced {{ hosts 3 requests 6 repetitions 2 warmup 1 }}
    requests [1, 2, 3, 4, 5, 6]
  }}
""")
    victim = fresh_sshd3.nodes[0]
    plan, store, executor = harness.prepare(spec, pin_hosts=True, **FAST_RETRY)

    planned_host = [plan.hosts[h] for h in plan.trial_host.tolist()]
    with store:
        summary = _run_killing(executor, store, plan, victim, 2, fresh_sshd3.servers[0])
        rows = _rows(store, plan)
        assert all(r[2] == "ok" for r in rows) and summary.failed == 0
        assert [r[1] for r in rows] == [planned_host[r[0]] for r in rows], "pinned trials moved"
        ran_on_victim = sum(r[1] == victim for r in rows)
        assert 2 <= ran_on_victim < planned_host.count(victim)
        assert len(rows) == plan.n_trials - (planned_host.count(victim) - ran_on_victim)
        assert [e[2] for e in store.events(plan.hash) if e[2] != "retry"] == ["host_down", "unrun"]
        missing = plan.n_trials - len(rows)
    fresh_sshd3.servers[0].start()
    plan, store, executor = harness.prepare(spec, pin_hosts=True, **FAST_RETRY)
    with store:
        summary = asyncio.run(executor.run())
        rows = _rows(store, plan)
        assert summary.hosts_down == () and summary.ran == missing
        assert [r[0] for r in rows] == list(range(plan.n_trials))
        assert [r[1] for r in rows] == planned_host and all(r[2] == "ok" for r in rows)
        phases = [
            p
            for (p,) in store.db.execute(
                "SELECT phase FROM trials WHERE plan_hash = ? ORDER BY trial", (plan.hash,)
            )
        ]
        assert phases == [plan.phase(t) for t in range(plan.n_trials)]


def test_dropped_connection_is_retried_and_the_attempts_stored(harness, sshd1, tmp_path):
    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "w")}
  timeout 10s
  benchmark b {{ run "if [ ! -e dropped ]; then touch dropped; {KILL_PARENT_SSHD}; sleep 5; fi; echo fine" }}
  design {{ runs 3 series 1 }}
""")
    plan, store, summary = harness.run(spec, retries=2, backoff=0.05, reconnect_timeout=5.0)
    with store:
        rows = _rows(store, plan)
        assert [r[2] for r in rows] == ["ok"] * 3
        assert [r[4] for r in rows] == [2, 1, 1]
        assert summary.hosts_down == ()
        retries = [e for e in store.events(plan.hash) if e[2] == "retry"]
        assert (
            len(retries) == 1
            and retries[0][1] == sshd1.nodes[0]
            and "connection lost" in retries[0][3]
        )


def test_reset_that_drops_the_connection_reconnects(harness, sshd1, tmp_path):
    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "w")}
  timeout 10s
  reset "{KILL_PARENT_SSHD}; sleep 5" reconnect
  factor n in [1, 2]
  benchmark b {{ run "echo {{n}}" }}
  design {{ runs 3 series 1 }}
""")
    plan, store, summary = harness.run(spec)
    with store:
        assert [r[2] for r in _rows(store, plan)] == ["ok"] * plan.n_trials
        assert summary.hosts_down == ()
        resets = store.db.execute(
            "SELECT reset_status FROM rounds WHERE plan_hash = ?", (plan.hash,)
        ).fetchall()
        assert resets == [("ok",)] * 3


def test_repeated_timeouts_stop_the_host_and_move_its_rounds(harness, sshd3, tmp_path):
    slow = sshd3.nodes[0]
    spec = harness.spec(f"""
  seed 2
  {harness.hosts(sshd3, tmp_path / "w")}
  factor n in [1, 2]
  benchmark b {{
    run "if [ $BENCHLANG_HOST = {slow} ]; then sleep 30; fi; echo {{n}}"
    timeout 300ms
  }}
  design {{ runs 6 series 1 order fixed }}
""")
    plan, store, summary = harness.run(spec, max_consecutive_timeouts=2)
    with store:
        rows = _rows(store, plan)
        assert [r[0] for r in rows] == list(range(plan.n_trials))
        failed = [r for r in rows if r[2] == "failed"]
        assert len(failed) == 2 and all(r[1] == slow and r[5] == 1 for r in failed)
        assert all(r[1] != slow for r in rows if r[2] == "ok")
        assert summary.hosts_down == ((slow, "2 trials in a row timed out"),)


def test_the_agent_removes_scratch_directories_of_killed_agents(harness, sshd1, tmp_path):
    import subprocess
    import tempfile

    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = Path(tempfile.gettempdir()) / f"benchlang-agent-{gone.pid}-zz9test"
    stale.mkdir()
    (stale / "1.out").write_text("x")
    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "w")}
  benchmark b {{ run "true" }}
  design {{ runs 1 series 1 order fixed }}
""")
    _plan, store, summary = harness.run(spec)
    store.close()
    assert summary.failed == 0
    assert not stale.exists()
