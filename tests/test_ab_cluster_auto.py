"""`cluster auto` in A/B layouts (Bakshy & Frachtenberg, WWW 2015, §5.2-5.3): host clusters
where there are enough, the cluster-level t with 3-4 (Donald & Lang 2007), and otherwise the
difference as descriptive with why and how many hosts to add; end to end through the real CLI
(check, run, analyze --json and the text report) on local worker slots.

The measured value is synthetic and seeded, as in tests/test_ab_layout_e2e.py: each trial prints
request x version x (1 + 0.02 x slot) x exp(0.02 z), z from the trial's seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_ab_layout_e2e import VALUE_AWK

SPEC = """benchlang 1
experiment auto_{name} {{
  seed {seed}
  hosts local {{ slots {hosts} }}
  benchmark loop {{
    run "awk -v version={{version}} -v request={{request}} -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }}
  metric v {{ unit "s" better lower }}
  design {{
    versions {{ control "1.00" treatment "1.05" }}
    layout {layout} {{ hosts {hosts} requests {requests} repetitions {repetitions} }}
    requests [{pool}]
  }}
  analysis {{ compare v by version with bootstrap {{ log true replicates 2000 }} }}
}}
"""


def _strict(text: str) -> dict:
    def refuse(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def run_auto(tmp: Path, cli_in_process, layout: str, hosts: int, requests: int, repetitions: int):
    work = tmp / f"{layout}_{hosts}"
    work.mkdir()
    pool = ", ".join(str(1_000_000 + 50_000 * i) for i in range(2 * requests))
    (work / "ab.bench").write_text(
        SPEC.format(
            name=layout,
            seed=7,
            hosts=hosts,
            layout=layout,
            requests=requests,
            repetitions=repetitions,
            pool=pool,
        )
    )
    (work / "value.awk").write_text(VALUE_AWK)
    status, out, err = cli_in_process(
        ["run", "ab.bench", "--store", "ab.sqlite"], cwd=work, timeout=600
    )
    assert status == 0, out + err
    assert "Traceback" not in out + err
    status, text, err = cli_in_process(["analyze", "ab.bench", "--store", "ab.sqlite"], cwd=work)
    assert status == 0 and "Traceback" not in text + err, text + err
    status, js, err = cli_in_process(
        ["analyze", "ab.bench", "--store", "ab.sqlite", "--json"], cwd=work
    )
    assert status == 0, err
    (boot,) = [c for c in _strict(js)["comparisons"] if c["method"] == "bootstrap"]
    return boot, text


def test_fully_balanced_six_hosts_gives_a_host_clustered_interval(tmp_path, cli_in_process):
    boot, text = run_auto(tmp_path, cli_in_process, "fully_balanced", 6, 6, 2)
    choice = boot["result"]["details"]["cluster_choice"]
    assert (choice["scheme"], choice["method"], choice["hosts"]) == ("host", "bootstrap", 6)
    assert "host clusters are what Perflab validates" in choice["why"]
    levels = boot["levels"]
    assert levels["cluster"] == "host" and levels["method"] == "bootstrap"
    (pair,) = levels["pairs"]
    assert pair["clusters"] == 6 and pair["ci_low"] < 1.05 < pair["ci_high"]
    assert pair["significant"] and boot["problem"] is None
    assert "cluster auto chose host: 6 hosts per version" in text
    assert "treatment / control" in text


def test_fully_balanced_four_hosts_gives_the_cluster_level_t(tmp_path, cli_in_process):
    boot, text = run_auto(tmp_path, cli_in_process, "fully_balanced", 4, 4, 2)
    levels = boot["levels"]
    assert levels["method"] == "cluster_t" and levels["cluster"] == "host"
    (pair,) = levels["pairs"]
    assert pair["df"] == 3 and pair["ci_low"] < 1.05 < pair["ci_high"]
    assert boot["problem"] is None and "bootstrap" not in boot  # no bootstrap table from 4
    assert "cluster-level t with 3 df (Donald & Lang 2007" in text


def test_two_slots_give_the_difference_as_descriptive_with_the_hosts_to_add(
    tmp_path, cli_in_process
):
    boot, text = run_auto(tmp_path, cli_in_process, "fully_balanced", 2, 6, 2)
    result = boot["result"]
    assert result["ci_low"] is None and result["significant"] is None
    assert 1.0 < result["estimate"] < 1.1
    choice = result["details"]["cluster_choice"]
    assert choice["method"] == "descriptive" and choice["scheme"] is None
    assert choice["fix"]["hosts"] == 3 and choice["fix"]["added"] == 1
    assert choice["fix"]["half_width"] > 0
    check = choice["check"]
    assert 0 <= check["type1"] <= 1 and check["experiments"] == 400
    assert "request clusters are not offered" in boot["problem"]
    assert "simulated Type I error" in boot["problem"]
    assert "1 more host (3 in all) gives a valid host-clustered interval of about ±" in text
    assert "descriptive only" in text


def test_unbalanced_one_host_per_version_says_why_and_what_to_add(tmp_path, cli_in_process):
    boot, text = run_auto(tmp_path, cli_in_process, "unbalanced", 2, 4, 2)
    choice = boot["result"]["details"]["cluster_choice"]
    assert choice["method"] == "descriptive" and choice["layout"] == "unbalanced"
    assert "cannot be told from the difference between hosts" in choice["why"]
    assert choice["fix"]["hosts"] == 6 and choice["fix"]["clusters"] == 3
    assert "4 more hosts (6 in all) give a valid host-clustered interval" in text


@pytest.mark.parametrize("setting", ["request"])
def test_request_clusters_by_the_spec_say_what_they_assume(tmp_path, cli_in_process, setting):
    work = tmp_path / "explicit"
    work.mkdir()
    pool = ", ".join(str(1_000_000 + 50_000 * i) for i in range(6))
    spec = SPEC.format(
        name="x", seed=3, hosts=2, layout="fully_balanced", requests=6, repetitions=1, pool=pool
    ).replace("log true", f"cluster {setting} log true")
    (work / "ab.bench").write_text(spec)
    (work / "value.awk").write_text(VALUE_AWK)
    status, out, err = cli_in_process(
        ["run", "ab.bench", "--store", "ab.sqlite"], cwd=work, timeout=600
    )
    assert status == 0, out + err
    assert "assumes no host or host x batch effect" in out
    assert "far too liberal in the fully balanced layout" in out


ROUNDS = """benchlang 1
experiment three_rounds {
  seed 11
  factor tool in ["1.00", "1.30"]
  benchmark b {
    run "awk -v version={tool} -v request=1000000 -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }
  metric v { unit "s" better lower }
  kpi v { percentile 50 confidence 75% }
  design { runs 3 series 1 }
  analysis { compare v by tool with bootstrap { replicates 2000 } }
}
"""


def test_three_rounds_on_one_host_give_the_cluster_level_t_and_the_record_says_so(
    tmp_path, cli_in_process
):
    """Below 5 clusters per level the cluster-level t gives the interval (3 rounds here); the
    record names the scheme and the method."""
    (tmp_path / "r.bench").write_text(ROUNDS)
    (tmp_path / "value.awk").write_text(VALUE_AWK)
    status, out, err = cli_in_process(["run", "r.bench", "--store", "r.sqlite"], cwd=tmp_path)
    assert status == 0, out + err
    assert "cluster-level t with 2 df" in out
    status, js, err = cli_in_process(
        ["record", "r.bench", "--store", "r.sqlite", "--format", "json"], cwd=tmp_path
    )
    assert status == 0, err
    (line,) = _strict(js)["comparisons"]
    assert line == "v by tool: cluster round (auto), cluster_t, 3/3 per level"
    status, md, err = cli_in_process(["record", "r.bench", "--store", "r.sqlite"], cwd=tmp_path)
    assert (
        status == 0
        and "comparison: v by tool: cluster round (auto), cluster_t, 3/3 per level" in md
    ), md
