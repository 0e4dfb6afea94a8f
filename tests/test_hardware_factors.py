"""Hardware factors from the host inventory, ``hosts where`` and the minimum set cover
(DataMill, de Oliveira et al. ICPE 2013, §4.1; plan/inventory.py, design/setcover.py).

Heterogeneous hosts are local slots with injected facts (``facts from file``): the plan, the
run, the store and the analysis see them exactly as facts a machine reported.
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from pathlib import Path

import pytest

from benchlang.cli import main
from benchlang.design.setcover import minimum_cover
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan
from benchlang.plan.plan import PlanError

FACTS = {
    "local:0": {"cpu_model": "Xeon E5", "memory": "2097152 kB", "arch": "x86_64"},
    "local:1": {"cpu_model": "Xeon E5", "memory": "1048576 kB", "arch": "x86_64"},
    "local:2": {"cpu_model": "Cortex-A72", "memory": "4194304 kB", "arch": "aarch64"},
    "local:3": {"cpu_model": "EPYC", "memory": "8388608 kB", "arch": "x86_64"},
}
HOSTS = tuple(FACTS)


def experiment_of(body: str, seed: int = 1):
    text = f'benchlang 1\nexperiment hw {{\n  seed {seed}\n{body}\n  benchmark b {{ run "echo {{n}}" }}\n  factor n in [1, 2]\n}}\n'
    return compile_source(decode("hw.bench", text.encode()))


def errors_of(body: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        experiment_of(body)
    return [d.message for d in info.value.diagnostics if d.severity == "error"]


def brute_force(covers, required, at_least=1):
    """The first (lexicographic) smallest subset covering every required level."""
    for k in range(len(covers) + 1):
        for subset in itertools.combinations(range(len(covers)), k):
            if all(sum(level in covers[i] for i in subset) >= at_least for level in required):
                return subset
    return None


def test_set_cover_equals_brute_force_on_small_random_inventories():
    rng = random.Random(17)
    for _ in range(150):
        n_hosts, n_levels = rng.randint(1, 8), rng.randint(1, 6)
        covers = [
            frozenset(level for level in range(n_levels) if rng.random() < 0.35)
            for _ in range(n_hosts)
        ]
        required = frozenset(level for level in range(n_levels) if rng.random() < 0.8)
        at_least = rng.choice([1, 1, 2])
        assert minimum_cover(covers, required, at_least) == brute_force(covers, required, at_least)


def test_set_cover_cases():
    a, b, c = frozenset({0}), frozenset({1}), frozenset({0, 1})
    assert minimum_cover([a, b, c], frozenset({0, 1})) == (2,)
    assert minimum_cover([a, b], frozenset({0, 1})) == (0, 1)
    assert minimum_cover([a, a], frozenset({0, 1})) is None
    assert minimum_cover([a, b], frozenset()) == ()


def test_hardware_factor_plan_covers_levels_with_the_fewest_hosts():
    e = experiment_of(
        "  hosts local { slots 4 }\n  hosts where memory >= 2GB\n"
        '  factor cpu from hosts "cpu_model"\n  factor arch from hosts "arch"\n  design { runs 3 }'
    )
    plan = compile_plan(e, HOSTS, FACTS)
    assert plan.hosts == ("local:0", "local:2", "local:3")  # local:1 has 1 GiB
    labels = [c.label for c in plan.configurations]
    assert labels[:2] == ["b[n=1,cpu=Xeon E5,arch=x86_64]", "b[n=2,cpu=Xeon E5,arch=x86_64]"]
    assert plan.n_trials == 3 * 2 * 3  # runs x software configurations x hosts
    for t in range(plan.n_trials):  # every trial runs on the host whose levels it has
        host = plan.hosts[plan.trial_host[t]]
        config = dict(plan.configurations[plan.trial_configuration[t]].levels)
        assert config["cpu"] == FACTS[host]["cpu_model"]
    hosts = next(d for d in plan.derived if d.name == "hosts")
    assert "minimum set cover" in hosts.reason and "local:1 (memory is '1048576 kB'" in hosts.reason
    document = json.loads(plan.json_text())
    assert document["inventory"]["facts"]["local:1"] == {
        "memory": "1048576 kB",
        "cpu_model": "Xeon E5",
        "arch": "x86_64",
    }
    assert compile_plan(e, HOSTS, FACTS).hash == plan.hash  # same spec, seed, facts: same plan
    assert plan.pinned  # a stopped host's rounds never move to a host of other levels


def test_one_host_covers_what_several_would():
    facts = {
        "a": {"cpu_model": "X", "arch": "x86_64"},
        "b": {"cpu_model": "Y", "arch": "x86_64"},
        "c": {"cpu_model": "X", "arch": "aarch64"},
    }
    e = experiment_of('  factor arch from hosts "arch"')
    assert compile_plan(e, tuple(facts), facts).hosts == ("a", "c")
    e = experiment_of(
        '  factor arch from hosts "arch" coverage 0%\n  factor cpu from hosts "cpu_model"'
    )
    plan = compile_plan(e, tuple(facts), facts)
    assert len(plan.hosts) == 2 and {facts[h]["cpu_model"] for h in plan.hosts} == {"X", "Y"}


def test_hosts_where_conditions():
    def chosen(where):
        return compile_plan(experiment_of(f"  hosts where {where}"), HOSTS, FACTS).hosts

    assert chosen('arch == "aarch64"') == ("local:2",)
    assert chosen('memory >= 4GiB and arch != "aarch64"') == ("local:3",)
    assert chosen('cpu_model in ["EPYC", "Cortex-A72"]') == ("local:2", "local:3")
    with pytest.raises(PlanError, match="no host passes"):
        chosen("memory > 1TB")
    with pytest.raises(PlanError, match="has no fact 'gpu'"):
        chosen('gpu == "A100"')


def test_hardware_factor_and_hosts_where_errors():
    assert errors_of('  factor cpu from nowhere "cpu_model"') == [
        "no factor provider named 'nowhere' is installed"
    ]
    assert "is not a fact name" in errors_of('  factor cpu from hosts "cpu model"')[0]
    assert "compares a string" in errors_of('  hosts where arch >= "x86"')[0]
    assert "coverage 120% is outside" in errors_of('  factor cpu from hosts "cpu" coverage 120%')[0]
    assert errors_of('  factor cpu from hosts "cpu_model"\n  benchmark c { run "echo {cpu}" }') == [
        "hardware factor 'cpu' is not a placeholder: its levels come from the hosts' facts when the plan is made"
    ]
    with pytest.raises(PlanError, match="need the hosts' facts"):
        compile_plan(experiment_of("  hosts where cores >= 2"))


def _write_spec(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "facts.json").write_text(json.dumps(FACTS))
    spec = tmp_path / "hw.bench"
    spec.write_text(
        "benchlang 1\nexperiment hw {\n  seed 3\n"
        '  hosts local { slots 4 facts from file "facts.json" }\n'
        "  hosts where memory >= 2GB\n"
        '  factor cpu from hosts "cpu_model"\n  factor n in [1, 2]\n'
        '  benchmark b { run "echo {n}"\n measure t = wall_time }\n'
        "  metric t { measure mean }\n  design { runs 3 }\n"
        f"{extra}}}\n"
    )
    return spec


def test_run_stores_hardware_levels_and_analysis_reads_the_recorded_facts(tmp_path, capsys):
    spec = _write_spec(tmp_path, "  analysis { anova t ~ cpu * n }\n")
    store = tmp_path / "hw.sqlite"
    assert main(["plan", str(spec)]) == 0
    shown = capsys.readouterr().out
    assert "minimum set cover" in shown and "local:1 (memory is" in shown
    assert main(["run", str(spec), "--store", str(store), "--quiet"]) == 0
    with sqlite3.connect(store) as db:
        hosts = dict(db.execute("SELECT host, facts FROM hosts").fetchall())
        levels = [json.loads(x) for (x,) in db.execute("SELECT levels FROM trials")]
    assert set(hosts) == {"local:0", "local:2", "local:3"}
    assert json.loads(hosts["local:2"])["cpu_model"] == "Cortex-A72"  # injected, recorded
    assert {lv["cpu"] for lv in levels} == {"Xeon E5", "Cortex-A72", "EPYC"}
    capsys.readouterr()
    assert main(["analyze", str(spec), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "metric ~ cpu * n, n = 18" in out and "cpu:n" in out and "mean sq" in out
    assert "R² " in out and "t per host:" in out  # DataMill's table, and where it varies


def test_anova_accepts_hardware_factor_terms():
    e = experiment_of(
        '  factor cpu from hosts "cpu_model"\n'
        '  benchmark c { run "true"\n measure t = wall_time }\n  metric t { measure mean }\n'
        "  analysis { anova t ~ cpu + host }"
    )
    assert [f.name for f in e.hardware] == ["cpu"]
