"""Real specs on real sshd servers: one host, three hosts, sync, facts, files, host keys."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np


def _trials(store, plan):
    return store.db.execute(
        "SELECT trial, host, label, status, reason, attempts, stdout_tail FROM trials WHERE plan_hash = ? ORDER BY trial",
        (plan.hash,),
    ).fetchall()


def test_one_host_runs_every_trial_with_setup_sync_files_and_facts(harness, sshd1, tmp_path):
    bench_dir = tmp_path / "benchfiles"
    bench_dir.mkdir()
    (bench_dir / "work.sh").write_text('echo "value $1"\nprintf "1\\n2\\n$1\\n" > series.txt\n')
    workdir = tmp_path / "remote"
    spec = harness.spec(f"""
  seed 3
  timeout 10s
  {harness.hosts(sshd1, workdir, extra='sync "benchfiles"')}
  setup "echo ready > setup.txt"
  factor n in [1, 2, 3]
  benchmark b {{
    run "sh benchfiles/work.sh {{n}} && cat setup.txt"
    measure v from stdout regex "value ([0-9]+)"
    measure s series from file "series.txt" lines
    measure t = wall_time
    measure u = user_time
  }}
  design {{ runs 4 series 1 order random }}
""")
    plan, store, summary = harness.run(spec)
    with store:
        rows = _trials(store, plan)
        assert summary.failed == 0 and summary.hosts_down == ()
        assert len(rows) == plan.n_trials == 12
        assert {r[1] for r in rows} == {sshd1.nodes[0]}
        assert all(r[3] == "ok" and r[5] == 1 and r[6].endswith(b"ready\n") for r in rows)
        table = store.trial_table(plan.hash)
        levels = np.array([lv["n"] for lv in table.levels], dtype=float)
        np.testing.assert_array_equal(table.measures["v"], levels)
        assert np.all(table.measures["t"] > 0) and np.all(table.measures["t"] < 5)
        assert np.all(np.isfinite(table.measures["u"]))
        series = store.series_values(plan.hash, "s")
        for trial, n in zip(table.trial.tolist(), levels.tolist(), strict=True):
            np.testing.assert_array_equal(series[trial], [1.0, 2.0, n])
        facts = store.host_facts(plan.hash)[sshd1.nodes[0]]
        assert {"kernel", "cpu_model", "cores", "memory", "workdir"} <= set(facts)
        assert facts["workdir"] == str(workdir)
        assert (workdir / "benchfiles" / "work.sh").exists() and (
            workdir / "setup.txt"
        ).read_text() == "ready\n"


def test_three_hosts_run_their_rounds_concurrently(harness, sshd3, tmp_path):
    spec = harness.spec(f"""
  seed 5
  timeout 10s
  {harness.hosts(sshd3, tmp_path / "remote")}
  factor n in [1, 2]
  benchmark b {{
    run "sleep 0.2; echo $BENCHLANG_HOST; true {{n}}"
  }}
  design {{ runs 6 series 1 order random }}
""")
    plan, store, summary = harness.run(spec)
    with store:
        rows = _trials(store, plan)
        assert summary.failed == 0 and len(rows) == plan.n_trials == 12
        expected = [plan.hosts[h] for h in plan.trial_host.tolist()]
        assert [r[1] for r in rows] == expected
        assert all(r[6].decode().strip() == r[1] for r in rows)
        spans = store.db.execute(
            "SELECT host, MIN(started), MAX(ended) FROM trials GROUP BY host"
        ).fetchall()
        assert len(spans) == 3
        whole = max(s[2] for s in spans) - min(s[1] for s in spans)
        assert whole < 0.7 * sum(s[2] - s[1] for s in spans), "hosts did not run at the same time"
        assert len(store.host_facts(plan.hash)) == 3


def test_nodes_from_file(harness, sshd3, tmp_path):
    (tmp_path / "hosts.txt").write_text("# the testbed\n" + "\n".join(sshd3.nodes[:2]) + "\n")
    spec = harness.spec(f"""
  hosts ssh {{ nodes from file "hosts.txt" identity "{sshd3.identity}" known_hosts "{sshd3.known_hosts}" workdir "{tmp_path / "w"}" }}
  factor n in [1, 2]
  benchmark b {{ run "echo {{n}}" }}
  design {{ runs 2 series 1 order fixed }}
""")
    plan, store, summary = harness.run(spec)
    with store:
        assert plan.hosts == tuple(sshd3.nodes[:2])
        assert summary.failed == 0 and {r[1] for r in _trials(store, plan)} == set(sshd3.nodes[:2])


def _bad_keys_spec(harness, bed, tmp_path, known_hosts_text):
    known = tmp_path / "known_hosts_test"
    known.write_text(known_hosts_text)
    return harness.spec(f"""
  hosts ssh {{ nodes ["{bed.nodes[0]}"] identity "{bed.identity}" known_hosts "{known}" workdir "{tmp_path / "w"}" }}
  benchmark b {{ run "true" }}
  design {{ runs 2 series 1 }}
"""), known


def test_changed_host_key_stops_the_host_with_the_fix(harness, sshd3, tmp_path):
    other_key = sshd3.servers[1].host_pub
    spec, known = _bad_keys_spec(
        harness, sshd3, tmp_path, f"[127.0.0.1]:{sshd3.servers[0].port} {other_key}\n"
    )
    plan, store, summary = harness.run(spec)
    with store:
        assert summary.ran == 0 and len(summary.hosts_down) == 1
        host, message = summary.hosts_down[0]
        assert host == sshd3.nodes[0]
        assert (
            "HOST KEY CHANGED" in message
            and f"ssh-keygen -R '[127.0.0.1]:{sshd3.servers[0].port}' -f {known}" in message
        )
        assert store.events(plan.hash)[0][1:3] == (host, "host_down")


def test_unknown_host_key_stops_the_host_with_the_fix(harness, sshd3, tmp_path):
    spec, known = _bad_keys_spec(harness, sshd3, tmp_path, "")
    _plan, store, summary = harness.run(spec)
    with store:
        ((host, message),) = summary.hosts_down
        assert host == sshd3.nodes[0]
        assert (
            "unknown host key" in message
            and f"ssh-keyscan -p {sshd3.servers[0].port} 127.0.0.1 >> {known}" in message
        )


def test_one_bad_key_among_three_hosts_reassigns_its_rounds(harness, sshd3, tmp_path):
    lines = sshd3.known_hosts.read_text().splitlines()
    known = tmp_path / "known_hosts_two"
    known.write_text("\n".join(lines[1:]) + "\n")
    spec = harness.spec(f"""
  hosts ssh {{ nodes [{", ".join(f'"{n}"' for n in sshd3.nodes)}] identity "{sshd3.identity}" known_hosts "{known}" workdir "{tmp_path / "w"}" }}
  factor n in [1, 2]
  benchmark b {{ run "echo {{n}}" }}
  design {{ runs 6 series 1 }}
""")
    plan, store, summary = harness.run(spec)
    with store:
        rows = _trials(store, plan)
        assert [h for h, _ in summary.hosts_down] == [sshd3.nodes[0]]
        assert len(rows) == plan.n_trials and all(r[3] == "ok" for r in rows)
        assert {r[1] for r in rows} == set(sshd3.nodes[1:])
        kinds = [e[2] for e in store.events(plan.hash)]
        assert kinds == ["host_down", "reassigned"]


def test_insecure_accept_new_host_keys_records_the_key_and_warns(harness, sshd1, tmp_path, caplog):
    known = tmp_path / "fresh_known_hosts"
    spec = harness.spec(f"""
  hosts ssh {{ nodes ["{sshd1.nodes[0]}"] identity "{sshd1.identity}" known_hosts "{known}" workdir "{tmp_path / "w"}" insecure_accept_new_host_keys true }}
  benchmark b {{ run "true" }}
  design {{ runs 2 series 1 }}
""")
    with caplog.at_level(logging.WARNING, logger="benchlang.ssh"):
        plan, store, summary = harness.run(spec)
    with store:
        assert summary.failed == 0 and summary.ran == plan.n_trials
    assert known.read_text().split()[1:] == sshd1.servers[0].host_pub.split()[:2]
    assert any(
        "INSECURE" in r.getMessage() and sshd1.nodes[0] in r.getMessage() for r in caplog.records
    )
    assert any("insecure_accept_new_host_keys is on" in r.getMessage() for r in caplog.records)
    assert known.read_text().count("[127.0.0.1]") == 1


def test_ssh_config_file_supplies_host_port_identity_and_known_hosts(harness, sshd1, tmp_path):
    (tmp_path / "ssh_config").write_text(
        f"Host benchbox\n  HostName 127.0.0.1\n  Port {sshd1.servers[0].port}\n"
        f"  IdentityFile {sshd1.identity}\n  UserKnownHostsFile {sshd1.known_hosts}\n"
    )
    bench_dir = tmp_path / "files"
    bench_dir.mkdir()
    (bench_dir / "x.txt").write_text("42\n")
    spec = harness.spec(f"""
  hosts ssh {{ nodes ["benchbox"] config "ssh_config" workdir "{tmp_path / "w"}" sync "files" }}
  benchmark b {{ run "cat files/x.txt" measure v from stdout regex "([0-9]+)" }}
  design {{ runs 2 series 1 }}
""")
    for store_name in ("first.sqlite", "second.sqlite"):
        plan, store, summary = harness.run(spec, tmp_path / store_name)
        with store:
            assert plan.hosts == ("benchbox",) and summary.failed == 0
            assert store.trial_table(plan.hash).measures["v"].tolist() == [42.0, 42.0]
    assert sorted(p.name for p in (tmp_path / "w" / "files").iterdir()) == ["x.txt"], (
        "a second sync nested the directory"
    )


def test_missing_command_and_missing_workdir_are_failed_trials_with_reasons(
    harness, sshd1, tmp_path
):
    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "w")}
  factor what in ["no-such-command-xyz", "true"]
  benchmark b {{ run "{{what}}" workdir "missing-dir" }}
  design {{ runs 1 series 1 order fixed }}
""")
    _plan, store, summary = harness.run(spec)
    with store:
        rows = store.db.execute(
            "SELECT label, status, exit_status, stderr_tail FROM trials ORDER BY trial"
        ).fetchall()
    assert summary.hosts_down == () and [r[1] for r in rows] == ["failed", "failed"]
    assert all(
        r[2] == 127 and f"cannot enter '{tmp_path / 'w' / 'missing-dir'}'" in r[3].decode()
        for r in rows
    )
    (tmp_path / "w" / "missing-dir").mkdir()
    _plan, store, _summary = harness.run(spec, tmp_path / "again.sqlite")
    with store:
        rows = store.db.execute(
            "SELECT label, status, exit_status, stderr_tail FROM trials ORDER BY trial"
        ).fetchall()
    assert [r[1] for r in rows] == ["failed", "ok"]
    assert rows[0][2] == 127 and "cannot start 'no-such-command-xyz'" in rows[0][3].decode()


def test_refused_login_stops_the_host_and_names_the_cause(harness, sshd1, tmp_path):
    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "w", extra='user "no-such-user-xyz"')}
  benchmark b {{ run "true" }}
  design {{ runs 1 series 1 }}
""")
    _plan, store, summary = harness.run(spec)
    store.close()
    ((host, message),) = summary.hosts_down
    assert (
        host == sshd1.nodes[0]
        and "authentication refused" in message
        and "check user and identity" in message
    )


def test_facts_are_read_on_the_host(harness, sshd1, tmp_path):
    import os
    import platform

    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "w")}
  benchmark b {{ run "true" }}
  design {{ runs 1 series 1 }}
""")
    plan, store, _summary = harness.run(spec)
    with store:
        facts = store.host_facts(plan.hash)[sshd1.nodes[0]]
    meminfo = next(
        line
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    assert facts["cores"] == str(os.cpu_count())
    assert facts["kernel"] == f"{platform.system()} {platform.release()}"
    assert facts["memory"] == meminfo.split(":", 1)[1].strip()
