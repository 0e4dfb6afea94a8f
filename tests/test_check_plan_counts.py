"""`check` and `plan` agree on configurations and trials: one counting
function (design.counting.plan_counts) for every example spec, hardware factors (each chosen
host's levels, DataMill §4.1), equal hosts (redundancy, §4.2), `hosts where`, warm-up trials
on several hosts and series, and fixed_vs_random order."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from benchlang.cli import main

SPECS = sorted((Path(__file__).resolve().parents[1] / "specs").glob("*.bench"))
FACTS = {
    "local:0": {"cpu_model": "Xeon E5", "memory": "2097152 kB", "arch": "x86_64"},
    "local:1": {"cpu_model": "Xeon E5", "memory": "1048576 kB", "arch": "x86_64"},
    "local:2": {"cpu_model": "Cortex-A72", "memory": "4194304 kB", "arch": "aarch64"},
    "local:3": {"cpu_model": "EPYC", "memory": "8388608 kB", "arch": "x86_64"},
    "local:4": {"cpu_model": "EPYC", "memory": "8388608 kB", "arch": "x86_64"},
}
VARIANTS = {
    "hardware": ('slots 5 facts from file "facts.json"', 'factor cpu from hosts "cpu_model"', ""),
    "hardware-where": (
        'slots 5 facts from file "facts.json"',
        'hosts where memory >= 2GB\n  factor cpu from hosts "cpu_model"',
        "warmup 1 series 2",
    ),
    "hardware-redundancy": (
        'slots 5 facts from file "facts.json"',
        'factor cpu from hosts "cpu_model"',
        "redundancy 2",
    ),
    "where-only": ('slots 5 facts from file "facts.json"', 'hosts where arch == "x86_64"', ""),
    "warmup-hosts": ("slots 3", "", "warmup 2 series 2"),
    "warmup-fixed-vs-random": ("slots 2", "", "warmup 1 order fixed_vs_random"),
    "redundancy": ("slots 4", "", "redundancy 2 warmup 1"),
}


def _variant(tmp_path: Path, name: str) -> Path:
    hosts, factors, design = VARIANTS[name]
    (tmp_path / "facts.json").write_text(json.dumps(FACTS))
    spec = tmp_path / f"{name}.bench"
    spec.write_text(
        f"benchlang 1\nexperiment e {{\n  seed 3\n  hosts local {{ {hosts} }}\n"
        f"  {factors}\n  factor n in [1, 2, 3]\n"
        '  benchmark b { run "echo {n}"\n measure t = wall_time }\n'
        '  benchmark c { run "echo {n}"\n measure t = wall_time\n warmup 3 }\n'
        f"  metric t {{ measure mean }}\n  design {{ runs 3 {design} }}\n}}\n"
    )
    return spec


def _check_and_plan(spec: Path, capsys) -> tuple[tuple[int, int], tuple[int, int]]:
    assert main(["check", str(spec)]) == 0
    said = re.search(r"(\d+) configurations, (\d+) trials", capsys.readouterr().out)
    assert said, "check printed no counts"
    assert main(["plan", str(spec), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    derived = {d["name"]: d["value"] for d in plan["derived"]}
    trials = len(plan["trials"]["round"])
    assert derived["trials"] == trials
    return (int(said[1]), int(said[2])), (len(plan["configurations"]), trials)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_check_and_plan_agree_on_every_example_spec(spec, tmp_path, capsys, monkeypatch):
    for item in spec.parent.iterdir():  # files a spec reads (facts, node lists) beside it
        if item.is_file():
            shutil.copy(item, tmp_path / item.name)
    monkeypatch.chdir(tmp_path)
    checked, planned = _check_and_plan(tmp_path / spec.name, capsys)
    assert checked == planned


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_check_and_plan_agree_with_hardware_factors_hosts_and_warmup(name, tmp_path, capsys):
    checked, planned = _check_and_plan(_variant(tmp_path, name), capsys)
    assert checked == planned
    if name == "hardware":  # 3 CPU models: the set cover takes 3 of the 5 hosts
        measured = 3 * 6 * 3  # each host: 6 configurations x 3 runs
        warm = 3 * 3 * 3  # each host's first round: benchmark c's 3 configurations x 3
        assert planned == (3 * 6, measured + warm)


def test_a_backend_that_must_be_asked_is_counted_per_host_and_says_so(tmp_path, capsys):
    spec = tmp_path / "ssh.bench"
    spec.write_text(
        'benchlang 1\nexperiment s {\n  hosts ssh { nodes ["n1", "n2"] }\n'
        '  factor cpu from hosts "cpu_model"\n  factor n in [1, 2]\n'
        '  benchmark b { run "echo {n}" }\n  design { runs 3 }\n}\n'
    )
    assert main(["check", str(spec)]) == 0
    out = capsys.readouterr().out
    assert (
        "2 configurations, 6 trials (per host and its hardware levels: the hosts are chosen" in out
    )
    assert "'benchlang plan' reads their facts from hosts ssh" in out
