"""Warm-up trials in any design: ``warmup N`` in the design or a benchmark.

Plans are checked as data; runs go through the real ``benchlang run`` on hosts local with
commands whose first execution per configuration is "cold" (prints 1000, then 10 ever after),
so a warm-up that is not left out shows in every number.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan
from benchlang.run.store import Store


def experiment_of(body: str):
    text = f"benchlang 1\nexperiment w {{\n  seed 4\n{body}\n}}\n"
    return compile_source(decode("w.bench", text.encode()))


def problems(body: str) -> list[tuple[str, str | None]]:
    with pytest.raises(SpecError) as info:
        experiment_of(body)
    return [(d.message, d.hint) for d in info.value.diagnostics if d.severity == "error"]


TWO_BENCHMARKS = """
  factor t in [1, 2]
  factor pad in [0, 64] hidden
  benchmark k {{ run "echo {{t}} {{pad}}" {bench} }}
  benchmark j {{ run "true" }}
  design {{ runs 4 series 2 {design} }}
"""


def test_the_plan_runs_warmups_before_each_configurations_first_measured_trial():
    plan = compile_plan(experiment_of(TWO_BENCHMARKS.format(bench="warmup 3", design="warmup 1")))
    bare = compile_plan(experiment_of(TWO_BENCHMARKS.format(bench="", design="")))
    phase = np.array([plan.phase(t) for t in range(plan.n_trials)])
    measured = phase == "measured"
    assert measured.sum() == bare.n_trials == 4 * 2 * 3
    # the measured trials are exactly the plan without warm-up: same order, seeds, levels
    for name in ("trial_round", "trial_position", "trial_configuration", "trial_seed"):
        assert np.array_equal(getattr(plan, name)[measured], getattr(bare, name)), name
    assert [plan.plan_levels(t) for t in np.flatnonzero(measured)] == [
        bare.plan_levels(t) for t in range(bare.n_trials)
    ]
    # 3 warm-ups of each k configuration (its own setting), 1 of j (the design's), per series
    warm = Counter(
        (int(plan.round_series[plan.trial_round[t]]), plan.configurations[c].label)
        for t, c in enumerate(plan.trial_configuration.tolist())
        if phase[t] == "warmup"
    )
    assert warm == {
        (s, label): n for s in (0, 1) for label, n in (("k[t=1]", 3), ("k[t=2]", 3), ("j", 1))
    }
    # each right before its configuration's measured trial, in the first round of the series
    for t in np.flatnonzero(~measured):
        after = t + 1
        while phase[after] == "warmup":
            after += 1
        assert plan.trial_configuration[after] == plan.trial_configuration[t]
        assert plan.trial_position[after] == plan.trial_position[t]
        assert plan.plan_levels(after) == plan.plan_levels(t), "its measured trial's levels"
        assert plan.trial_round[t] in (0, 4), "first round of series 0 and 1"
    document = json.loads(plan.canonical_json)
    assert document["trials"]["phase"] == phase.tolist()
    derived = {d["name"]: d for d in document["derived"]}
    assert derived["warmup"]["value"] == 14
    assert derived["trials"]["value"] == plan.n_trials == 38
    assert "24 measured" in derived["trials"]["why" if "why" in derived["trials"] else "reason"]


def test_without_warmup_the_plan_is_unchanged():
    bare = compile_plan(experiment_of('  benchmark j { run "true" }\n  design { runs 3 }'))
    zero = compile_plan(experiment_of('  benchmark j { run "true" }\n  design { runs 3 warmup 0 }'))
    assert bare.trial_phase is None and "phase" not in bare.to_json()["trials"]
    assert zero.shape_hash == bare.shape_hash, "warmup 0 runs the very same trials"


def test_every_host_warms_up_in_its_first_round_of_each_series():
    plan = compile_plan(
        experiment_of('  benchmark j { run "true" }\n  design { runs 4 series 2 warmup 2 }'),
        hosts=("local:0", "local:1"),
    )
    warm = [t for t in range(plan.n_trials) if plan.phase(t) == "warmup"]
    rounds = Counter(int(plan.trial_round[t]) for t in warm)
    firsts = {
        (int(plan.round_series[r]), int(plan.round_host[r])): r
        for r in reversed(range(plan.n_rounds))
    }
    assert rounds == dict.fromkeys(firsts.values(), 2) and len(firsts) == 4


@pytest.mark.parametrize(
    ("body", "message", "hint"),
    [
        (
            '  benchmark j { run "true" warmup -1 }',
            "warmup: expected a whole number of at least 0, got -1",
            "warmup 2",
        ),
        (
            '  benchmark j { run "true" warmup 1.5 }',
            "warmup: expected a whole number of at least 0, got 1.5",
            "warmup 2",
        ),
        (
            '  benchmark j { run "true" }\n  design { runs 2 warmup "x" }',
            "warmup: expected a whole number of at least 0, got 'x'",
            "warmup 2",
        ),
        (
            '  benchmark j { run "true" warmup 1 warmup 2 }',
            "'warmup' in benchmark j is given twice",
            "first given on line 4",
        ),
        (
            '  benchmark j { run "true" }\n  design { runs 2 cooldown 1 }',
            "'cooldown' belongs in the layout block",
            "layout fully_balanced { hosts 4 cooldown 2 }",
        ),
    ],
)
def test_bad_warmup_values_are_positioned_errors_with_a_hint(body, message, hint):
    found = problems(body)
    assert any(m == message and h is not None and hint in h for m, h in found), found


def test_a_layout_keeps_its_warmup_in_the_layout_block():
    layout = """
  hosts local {{ slots 2 }}
  benchmark s {{ run "echo {{version}} {{request}}" {bench} }}
  metric wall_time {{ better lower }}
  design {{
    versions {{ old "1" new "2" }}
    layout host_balanced {{ hosts 2 requests 2 repetitions 2 }}
    requests [1, 2, 3, 4]
    {design}
  }}
  analysis {{ compare wall_time by version }}
"""
    messages = [m for m, _ in problems(layout.format(bench="", design="warmup 2"))]
    assert "'warmup' belongs in the layout block" in messages
    messages = [m for m, _ in problems(layout.format(bench="warmup 2", design=""))]
    assert "benchmark 's' sets warmup, but a layout design warms up per host batch" in messages


# -- through `benchlang run` -------------------------------------------------------------------

# The first execution of each configuration in this directory is cold: it prints 1000.
COLD_FIRST = (
    "echo $BENCHLANG_TRIAL >> {dir}/ran.txt; "
    "if [ $BENCHLANG_TRIAL -eq {stop_at} ]; then : > {dir}/fail; fi; "
    "if test -e {dir}/warm_{{t}}; then echo v=10; else : > {dir}/warm_{{t}}; echo v=1000; fi"
)

SPEC = """benchlang 1
experiment w {{
  seed 5
  factor t in [1, 2]
  reset "test ! -e {dir}/fail"
  benchmark k {{
    run "{command}"
    measure v from stdout regex "v=([0-9]+)"
    warmup 2
  }}
  metric v {{ measure mean }}
  kpi v {{ percentile 50 confidence 75% }}
  design {{ runs 4 series 2 }}
}}
"""


def _rows(store: Path) -> list[tuple]:
    db = sqlite3.connect(store)
    try:
        return db.execute(
            "SELECT trial, round, position, phase, configuration, status FROM trials ORDER BY trial"
        ).fetchall()
    finally:
        db.close()


def test_warmups_run_are_stored_left_out_of_analysis_and_resumed(tmp_path, cli_in_process):
    command = COLD_FIRST.format(dir=tmp_path, stop_at=9)
    (tmp_path / "w.bench").write_text(SPEC.format(dir=tmp_path, command=command))
    status, shown, err = cli_in_process(["plan", "w.bench"], cwd=tmp_path)
    assert status == 0, err
    assert "16 measured (8 rounds x 2 configurations) + 8 warm-up" in shown
    assert "2 of each configuration right before its measured trial" in shown
    status, plan_json, _ = cli_in_process(["plan", "w.bench", "--json"], cwd=tmp_path)
    phases = json.loads(plan_json)["trials"]["phase"]
    assert len(phases) == 24 and phases.count("warmup") == 8

    # Trial 9 (a measured trial of round 2) makes the next reset fail: the host stops.
    store = tmp_path / "w.sqlite"
    status, _out, err = cli_in_process(["run", "w.bench", "--store", store, "-q"], cwd=tmp_path)
    assert status != 0 and "--resume" in err
    first = _rows(store)
    assert [r[0] for r in first] == list(range(10))
    (tmp_path / "fail").unlink()
    status, _out, err = cli_in_process(
        ["run", "w.bench", "--store", store, "-q", "--resume"], cwd=tmp_path
    )
    assert status == 0, err
    rows = _rows(store)
    assert rows[:10] == first, "the first part is kept as it was"
    assert [r[0] for r in rows] == list(range(24)), "every planned trial once"
    ran = [int(x) for x in (tmp_path / "ran.txt").read_text().split()]
    assert sorted(ran) == list(range(24)), "nothing run twice"
    assert [r[3] for r in rows] == phases, "stored with the plan's phase"
    assert all(r[5] == "ok" for r in rows)
    with Store(store) as opened:
        table = opened.trial_table(json.loads(plan_json)["hash"])
    v = table.measures["v"]
    assert np.isfinite(v).all(), "every trial's measure is stored, warm-ups' too"
    cold = table.trial[v == 1000].tolist()
    assert len(cold) == 2 and all(phases[t] == "warmup" for t in cold)

    status, out, err = cli_in_process(
        ["analyze", "w.bench", "--store", store, "--json"], cwd=tmp_path
    )
    assert status == 0, err
    kpis = json.loads(out)["kpis"]
    assert [k["trials"] for k in kpis] == [8, 8], "the 4 warm-ups of each are left out"
    assert all(s["value"] == 10.0 for k in kpis for s in k["series"]), "no cold 1000"
    status, out, err = cli_in_process(["results", store, "--format", "json"], cwd=tmp_path)
    assert status == 0, err
    document = json.loads(out)
    assert document["left_out"] == 8
    assert {t["phase"] for t in document["trials"]} == {"measured"}
    assert max(t["measures"]["v"] for t in document["trials"]) == 10.0
    status, out, err = cli_in_process(
        ["record", "w.bench", "--store", store, "--format", "methods"], cwd=tmp_path
    )
    assert status == 0, err
    assert "8 warm-up trials (before the first measured trial of each configuration" in out


STOPPING = """benchlang 1
experiment s {{
  seed 3
  benchmark k {{
    run "if test -e {dir}/warm; then echo v=5; else : > {dir}/warm; echo v=1000; fi"
    measure v from stdout regex "v=([0-9]+)"
    warmup 3
  }}
  metric v {{ better lower }}
  stop adaptive {{ min 10 max 30 }}
}}
"""


def test_a_stop_rule_sees_only_measured_trials(tmp_path, cli_in_process):
    """The cold warm-up (1000) would make the samples non-constant; the rule sees 10 fives."""
    (tmp_path / "s.bench").write_text(STOPPING.format(dir=tmp_path))
    store = tmp_path / "s.sqlite"
    status, _out, err = cli_in_process(["run", "s.bench", "--store", store, "-q"], cwd=tmp_path)
    assert status == 0, err
    db = sqlite3.connect(store)
    try:
        phases = Counter(p for (p,) in db.execute("SELECT phase FROM trials"))
        stops = db.execute("SELECT after_trials, action, detected_class FROM stops").fetchall()
    finally:
        db.close()
    assert phases == {"warmup": 3, "measured": 10}
    assert stops == [(10, "stop", "constant")]
