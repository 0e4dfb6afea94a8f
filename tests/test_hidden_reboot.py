"""Reboot as a per-round hidden factor (DataMill, de Oliveira et al. ICPE 2013, §3): the real
executor reboots and reconnects a host before exactly the rounds whose seeded draw says
``rebooted``, and each trial stores its round's draw (run/hidden.py, executor ``_reboot``).
Hosts are the scripted backend's (a real Backend with the reboot capability, no machine to
reboot here)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from benchlang.lang.check import load
from benchlang.lang.diagnostics import SpecError
from benchlang.plan.compile import compile_plan
from benchlang.run.store import Store
from benchlang.testing.scripted import HostScript, ScriptedBackend
from tests.executors import quiet_executor

SPEC = """benchlang 1
experiment rb {
  hosts scripted { nodes ["h0", "h1"] }
  seed 11
  factor reboot hidden
  factor n in [1, 2]
  benchmark b { run "work {n}" measure v from stdout regex "v=([0-9.]+)" }
  design { runs 10 }
}
"""


def _run(tmp_path, scripts):
    spec = tmp_path / "rb.bench"
    spec.write_text(SPEC)
    experiment = load(spec, backends={"scripted": ScriptedBackend})
    backend = ScriptedBackend(scripts)
    plan = compile_plan(experiment, backend.hosts())
    path = tmp_path / "rb.sqlite"
    with Store(path, create=True) as store:
        executor = quiet_executor(experiment, plan, backend, store, backoff=0.0)
        summary = asyncio.run(executor.run())
    return plan, backend, summary, path


def test_hosts_reboot_before_exactly_the_rounds_drawn_rebooted(tmp_path):
    plan, backend, summary, path = _run(tmp_path, {"h0": HostScript(), "h1": HostScript()})
    assert summary.failed == 0
    bounds = plan.round_bounds
    drawn = [plan.plan_levels(int(bounds[r]))["reboot"] for r in range(plan.n_rounds)]
    assert set(drawn) == {"kept", "rebooted"}  # both levels occur with this seed
    for r in range(plan.n_rounds):  # one draw per round: all its trials share it
        trials = range(int(bounds[r]), int(bounds[r + 1]))
        assert {plan.plan_levels(t)["reboot"] for t in trials} == {drawn[r]}
    for host in ("h0", "h1"):
        mine = [r for r in range(plan.n_rounds) if plan.hosts[plan.round_host[r]] == host]
        calls = [c for c in backend.calls if c.host == host]
        reboots = [i for i, c in enumerate(calls) if c.kind == "execute" and c.text == "reboot"]
        assert len(reboots) == sum(drawn[r] == "rebooted" for r in mine)
        assert [c.kind for c in calls].count("reconnect") == len(reboots)
        for i in reboots:  # each reboot is followed by the reconnect, then the round's trials
            assert calls[i + 1].kind == "reconnect" and calls[i + 2].trial is not None
        first_trials = [
            calls[i + 2].trial for i in reboots
        ]  # the trials right after a reboot open a round drawn 'rebooted'
        assert all(drawn[int(plan.trial_round[t])] == "rebooted" for t in first_trials)
    with sqlite3.connect(path) as db:
        stored = {
            t: json.loads(lv)["reboot"] for t, lv in db.execute("SELECT trial, levels FROM trials")
        }
    assert stored == {t: plan.plan_levels(t)["reboot"] for t in range(plan.n_trials)}


def test_a_failing_reboot_stops_the_host_instead_of_storing_rebooted(tmp_path):
    _, _, summary, _ = _run(tmp_path, {"h0": HostScript(fail_on="reboot"), "h1": HostScript()})
    assert [h for h, _ in summary.hosts_down] == ["h0"]
    message = dict(summary.hosts_down)["h0"]
    assert "hidden factor reboot before round" in message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("  factor reboot hidden", "hosts local cannot reboot a host between rounds"),
        ("  factor reboot hidden { per trial }", "per"),
    ],
)
def test_reboot_errors(tmp_path, body, message):
    from benchlang.backends.registry import backend_kinds

    spec = tmp_path / "e.bench"
    spec.write_text(f'benchlang 1\nexperiment e {{\n{body}\n  benchmark b {{ run "true" }}\n}}\n')
    with pytest.raises(SpecError) as info:
        load(spec, backends=backend_kinds())
    assert any(message in d.message for d in info.value.diagnostics)
