"""``design { redundancy N }``: DataMill's purposeful redundancy (de Oliveira et al., ICPE 2013,
§4.2; plan/redundancy.py, stats/equal_hosts.py).

Every configuration runs on N hosts with the same hardware levels, each of them all its
rounds; a host that stops leaves its rounds to its equal hosts only, and a configuration
whose equal hosts disagree is flagged. Host failures are driven by the scripted backend
(real executor, store and CLI); the values are its seeded synthetic ones, so every
statistical assertion is exact for the seed.
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from collections import Counter

import numpy as np
import pytest

from benchlang.backends.registry import backend_kinds
from benchlang.cli import main
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan
from benchlang.plan.plan import PlanError
from benchlang.stats.equal_hosts import equal_hosts, holm, smallest_p
from benchlang.testing.scripted import ScriptedBackend

FACTS = {
    "n0": {"cpu_model": "Xeon"},
    "n1": {"cpu_model": "EPYC"},
    "n2": {"cpu_model": "Xeon"},
    "n3": {"cpu_model": "EPYC"},
    "n4": {"cpu_model": "ARM"},
}
HARDWARE = '  factor cpu from hosts "cpu_model"\n'


def experiment_of(body: str):
    """An experiment of one benchmark crossed with n in [1, 2], and ``body``."""
    text = f'benchlang 1\nexperiment red {{\n  seed 1\n{body}\n  benchmark b {{ run "echo {{n}}" }}\n  factor n in [1, 2]\n}}\n'
    return compile_source(decode("red.bench", text.encode()))


def errors_of(body: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        experiment_of(body)
    return [d.message for d in info.value.diagnostics if d.severity == "error"]


def test_each_configuration_runs_all_its_rounds_on_two_equal_hosts():
    e = experiment_of(HARDWARE + "  design { runs 3 series 2 redundancy 2 }")
    plan = compile_plan(e, tuple(FACTS), FACTS)
    assert plan.hosts == ("n0", "n1", "n2", "n3")
    assert plan.host_groups == (("n0", "n2"), ("n1", "n3"))
    labels = [c.label for c in plan.configurations]
    assert labels == ["b[n=1,cpu=Xeon]", "b[n=2,cpu=Xeon]", "b[n=1,cpu=EPYC]", "b[n=2,cpu=EPYC]"]
    runs = Counter()
    for t in range(plan.n_trials):
        host = plan.hosts[plan.trial_host[t]]
        config = plan.configurations[plan.trial_configuration[t]]
        assert dict(config.levels)["cpu"] == FACTS[host]["cpu_model"]
        runs[(host, config.index, int(plan.trial_series[t]))] += 1
    assert set(runs.values()) == {3}, "every host runs every round of its configurations"
    assert len(runs) == 4 * 2 * 2
    hosts = next(d for d in plan.derived if d.name == "hosts")
    assert "n0, n2 for cpu='Xeon'; n1, n3 for cpu='EPYC'" in hosts.reason
    assert "n4 (the only host with cpu='ARM'; redundancy 2 needs 2 equal hosts)" in hosts.reason
    document = json.loads(plan.json_text())
    assert document["redundancy"] == {"copies": 2, "groups": [["n0", "n2"], ["n1", "n3"]]}
    assert compile_plan(e, tuple(FACTS), FACTS).hash == plan.hash


def test_without_hardware_factors_the_first_n_hosts_are_equal():
    e = experiment_of("  hosts local { slots 3 }\n  design { runs 2 redundancy 2 }")
    plan = compile_plan(e, ("local:0", "local:1", "local:2"))
    assert plan.hosts == ("local:0", "local:1") and plan.host_groups == (plan.hosts,)
    assert plan.n_trials == 2 * 2 * 2
    redundancy = next(d for d in plan.derived if d.name == "redundancy")
    assert "DataMill" in redundancy.reason and "local:0, local:1" in redundancy.reason
    with pytest.raises(PlanError, match="hosts local has 1") as info:
        compile_plan(e, ("local:0",))
    assert "slots 2" in info.value.hint


def test_no_equal_hosts_is_a_plan_error_naming_each_host():
    e = experiment_of(HARDWARE + "  design { runs 2 redundancy 3 }")
    with pytest.raises(
        PlanError, match="no 3 eligible hosts have the same hardware levels"
    ) as info:
        compile_plan(e, tuple(FACTS), FACTS)
    assert "n1: one of only 2 hosts with cpu='EPYC'" in info.value.message


def _brute_force_hosts(levels, required, copies):
    """The fewest hosts such that each has copies - 1 equal hosts among them and together
    they cover every required level."""
    for k in range(len(levels) + 1):
        for subset in itertools.combinations(range(len(levels)), k):
            tuples = Counter(levels[i] for i in subset)
            if any(n < copies for n in tuples.values()):
                continue
            covered = {(j, v) for t in tuples for j, v in enumerate(t)}
            if required <= covered:
                return k
    return None


def test_the_redundant_cover_is_minimal_on_small_random_inventories():
    rng = random.Random(23)
    for _ in range(60):
        n = rng.randint(2, 7)
        facts = {
            f"h{i}": {"cpu_model": rng.choice("XYZ"), "arch": rng.choice("ab")} for i in range(n)
        }
        e = experiment_of(HARDWARE + '  factor arch from hosts "arch"\n  design { redundancy 2 }')
        levels = [(facts[h]["cpu_model"], facts[h]["arch"]) for h in facts]
        try:
            plan = compile_plan(e, tuple(facts), facts)
        except PlanError:
            assert all(c < 2 for c in Counter(levels).values())
            continue
        kept = [lv for lv in levels if Counter(levels)[lv] >= 2]
        required = {(j, v) for t in kept for j, v in enumerate(t)}
        assert len(plan.hosts) == _brute_force_hosts(levels, required, 2)
        for group in plan.host_groups:
            assert len({(facts[h]["cpu_model"], facts[h]["arch"]) for h in group}) == 1


def test_redundancy_and_equal_hosts_errors():
    layout = (
        '  design { versions { old "1" new "2" }\n'
        "    layout unbalanced { hosts 2 requests 2 repetitions 1 }\n"
        '    requests ["x", "y", "z", "w"] redundancy 2 }'
    )
    assert "'redundancy' does not apply to a layout design" in errors_of(layout)
    assert errors_of("  analysis { equal_hosts { alpha 0.05 } }") == [
        "equal_hosts compares the equal hosts of a redundant design, and this one has none"
    ]
    assert errors_of("  design { redundancy 2 }\n  analysis { equal_hosts { alpha 1.5 } }") == [
        "alpha: 1.5 is outside [0.0, 1.0]"
    ]
    assert errors_of("  design { redundancy 2 }\n  analysis { equal_hosts { alpha 0 } }") == [
        "alpha must lie strictly between 0 and 1"
    ]
    e = experiment_of("  design { redundancy 2 }\n  analysis { equal_hosts { alpha 0.05 } }")
    assert e.equal_hosts == {"alpha": 0.05}
    assert experiment_of("  design { redundancy 2 }").equal_hosts == {"alpha": 0.01}
    assert experiment_of("  design { runs 2 }").equal_hosts is None


SPEC = """benchlang 1
experiment red {
  seed 5
  hosts scripted { nodes ["h0", "h1", "h2", "h3"] script "script.json" }
  factor cpu from hosts "cpu_model"
  factor n in [1, 2]
  benchmark b { run "work {n}" measure v from stdout regex "v=([0-9.]+)" }
  metric v { unit "s" better lower }
  design { runs 8 redundancy 2 }
}
"""


@pytest.fixture
def scripted_kind(monkeypatch):
    monkeypatch.setitem(backend_kinds(), "scripted", ScriptedBackend)


def _run(tmp_path, script, capfd, *extra):
    (tmp_path / "red.bench").write_text(SPEC)
    (tmp_path / "script.json").write_text(json.dumps(script))
    store = tmp_path / "red.sqlite"
    status = main(["run", str(tmp_path / "red.bench"), "--store", str(store), "-q", *extra])
    return status, capfd.readouterr(), store


def test_a_stopped_host_leaves_its_rounds_to_its_equal_host_only(tmp_path, scripted_kind, capfd):
    """h0 (Xeon) goes down at its fifth trial: its remaining rounds run on h2, the other Xeon,
    never on an EPYC host; every planned trial runs once and carries its host's levels."""
    script = {
        "h0": {"facts": {"cpu_model": "Xeon"}, "down_at_trial": 17},
        "h1": {"facts": {"cpu_model": "EPYC"}},
        "h2": {"facts": {"cpu_model": "Xeon"}},
        "h3": {"facts": {"cpu_model": "EPYC"}},
    }
    status, captured, store = _run(tmp_path, script, capfd)
    assert status == 0, captured.out + captured.err
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT trial, host, status, levels FROM trials").fetchall()
        events = db.execute("SELECT kind, host, message FROM events").fetchall()
    assert sorted(t for t, *_ in rows) == list(range(64)) and {s for _, _, s, _ in rows} == {"ok"}
    cpu = {h: s["facts"]["cpu_model"] for h, s in script.items()}
    assert all(json.loads(levels)["cpu"] == cpu[host] for _, host, _, levels in rows)
    reassigned = [m for k, h, m in events if k == "reassigned"]
    assert reassigned == ["6 rounds (11 trials) of h0 reassigned to h2"]
    assert Counter(h for _, h, _, _ in rows) == {"h0": 5, "h1": 16, "h2": 27, "h3": 16}
    assert "host h0 stopped" in captured.err


def test_a_group_without_a_healthy_host_is_left_for_resume(tmp_path, scripted_kind, capfd):
    script = {
        "h0": {"facts": {"cpu_model": "Xeon"}, "unreachable": True},
        "h1": {"facts": {"cpu_model": "EPYC"}},
        "h2": {"facts": {"cpu_model": "Xeon"}, "unreachable": True},
        "h3": {"facts": {"cpu_model": "EPYC"}},
    }
    status, captured, store = _run(tmp_path, script, capfd)
    assert status == 1 and "PARTIAL: 32 of 64 planned trials did not run" in captured.out
    with sqlite3.connect(store) as db:
        hosts = {h for (h,) in db.execute("SELECT host FROM trials")}
        unrun = [m for (m,) in db.execute("SELECT message FROM events WHERE kind = 'unrun'")]
    assert hosts == {"h1", "h3"}
    assert any("no equal host of h0, h2 remains" in m for m in unrun)
    script["h0"]["unreachable"] = script["h2"]["unreachable"] = False
    status, captured, store = _run(tmp_path, script, capfd, "--resume")
    assert status == 0, captured.out + captured.err
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM trials").fetchone() == (64,)


def test_a_host_that_disagrees_with_its_equal_host_is_flagged(tmp_path, scripted_kind, capfd):
    """h3's values are 1.5x h1's (same hardware levels): both EPYC configurations differ;
    the Xeon hosts agree. Shown by run, analyze, analyze --json and the report's summary."""
    script = {
        "h0": {"facts": {"cpu_model": "Xeon"}},
        "h1": {"facts": {"cpu_model": "EPYC"}},
        "h2": {"facts": {"cpu_model": "Xeon"}},
        "h3": {"facts": {"cpu_model": "EPYC"}, "value": 1.5},
    }
    status, captured, store = _run(tmp_path, script, capfd)
    assert status == 0, captured.out + captured.err
    assert "v of b[n=1,cpu=EPYC] differs between equal hosts h1" in captured.out
    assert main(["analyze", str(tmp_path / "red.bench"), "--store", str(store), "--json"]) == 0
    found = json.loads(capfd.readouterr().out)["equal_hosts"][0]
    verdicts = {c["configuration"]: c["differ"] for c in found["configurations"]}
    assert verdicts == {
        "b[n=1,cpu=Xeon]": False,
        "b[n=2,cpu=Xeon]": False,
        "b[n=1,cpu=EPYC]": True,
        "b[n=2,cpu=EPYC]": True,
    }
    epyc = found["configurations"][2]
    assert set(epyc["hosts"]) == {"h1", "h3"} and epyc["delta_percent"] > 40
    assert epyc["adjusted_p"] < found["alpha"] == 0.01

    from benchlang.app.report import report_inputs
    from benchlang.report.html.summary import warnings_of

    lines = warnings_of(report_inputs(store))
    assert sum("differs between equal hosts" in line for line in lines) == 2

    from benchlang.app.report import methods_of

    methods = methods_of(store)
    assert "on 2 hosts with the same hardware levels (purposeful redundancy" in methods
    assert "@article{holm1979simple" in methods and "@article{kruskal1952ranks" in methods


def test_holm_and_the_smallest_reachable_p():
    assert np.allclose(holm([0.01, 0.04, 0.03, 0.2]), [0.04, 0.09, 0.09, 0.2])
    assert smallest_p([3, 3]) == pytest.approx(0.1)  # 2 of the 20 splits are as extreme
    result = equal_hosts([1.0, 2, 3, 4, 5, 6], [0, 0, 0, 1, 1, 1], [0] * 6)
    assert result.configurations[0].p is None and "too few trials" in result.configurations[0].why


def test_equal_hosts_keep_the_family_wise_error_rate():
    """When equal hosts agree, the chance of flagging any of 4 configurations is at most
    alpha (300 seeded datasets, 10 trials per host; benchmarks/sim_equal_hosts.py runs more);
    a 60% host effect is found."""
    rng = np.random.default_rng(7)
    configuration = np.repeat(np.arange(4), 20)
    host = np.tile(np.repeat([0, 1], 10), 4)
    false_alarms = found = 0
    for _ in range(300):
        values = rng.lognormal(0.0, 0.3, configuration.size)
        false_alarms += bool(equal_hosts(values, host, configuration, 0.05).differing)
        found += bool(
            equal_hosts(values * np.where(host == 1, 1.6, 1.0), host, configuration, 0.05).differing
        )
    assert false_alarms / 300 <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 300)
    assert found / 300 >= 0.9
