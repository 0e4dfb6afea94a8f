"""Hardware factors over real sshd hosts: facts read through SSH sessions at plan time
(app/inventory.py), the set cover, and the run on the chosen host (docs/hardware-factors.md)."""

from __future__ import annotations

import json
import platform

import pytest

from benchlang.errors import UserError


def test_facts_over_ssh_choose_one_host_per_hardware_level(harness, sshd3, tmp_path):
    spec = harness.spec(f"""
  seed 5
  {harness.hosts(sshd3, tmp_path / "remote")}
  hosts where cores >= 1 and memory >= 1MB
  factor arch from hosts "arch"
  factor n in [1, 2]
  benchmark b {{ run "echo {{n}}" }}
  design {{ runs 2 }}
""")
    plan, store, summary = harness.run(spec, pin_hosts=True)
    with store:
        assert plan.hosts == (sshd3.nodes[0],)  # the three report one arch: one host covers it
        assert plan.inventory["facts"][sshd3.nodes[2]]["arch"] == platform.machine()
        table = store.trial_table(plan.hash)
        assert summary.failed == 0 and len(table) == plan.n_trials == 4
        assert {lv["arch"] for lv in table.levels} == {platform.machine()}
    reason = next(d for d in plan.derived if d.name == "hosts").reason
    assert "1 of 3 eligible hosts" in reason


def test_declared_facts_make_the_testbed_heterogeneous(harness, sshd3, tmp_path):
    a, b, c = sshd3.nodes
    (tmp_path / "facts.json").write_text(
        json.dumps({a: {"cpu_model": "Xeon"}, b: {"cpu_model": "EPYC"}, c: {"cpu_model": "Xeon"}})
    )
    spec = harness.spec(f"""
  seed 2
  {harness.hosts(sshd3, tmp_path / "remote", extra=f'facts from file "{tmp_path / "facts.json"}"')}
  factor cpu from hosts "cpu_model"
  factor n in [1, 2]
  benchmark b {{ run "echo {{n}}" }}
  design {{ runs 2 }}
""")
    plan, store, summary = harness.run(spec, pin_hosts=True)
    with store:
        assert plan.hosts == (a, b)  # the first Xeon and the EPYC cover both levels
        assert summary.failed == 0 and len(store.trial_table(plan.hash)) == 8
        facts = store.host_facts(plan.hash)
        assert facts[b]["cpu_model"] == "EPYC" and "kernel" in facts[b]  # declared over read
        table = store.trial_table(plan.hash)
        levels = {(h, lv["cpu"]) for h, lv in zip(table.host, table.levels, strict=True)}
    assert levels == {(a, "Xeon"), (b, "EPYC")}


def test_no_ssh_host_passes(harness, sshd3, tmp_path):
    spec = harness.spec(f"""
  {harness.hosts(sshd3, tmp_path / "remote")}
  hosts where arch == "sparc64"
  benchmark b {{ run "true" }}
""")
    with pytest.raises(UserError, match=r"no host passes 'hosts where'.*arch is"):
        harness.prepare(spec)
