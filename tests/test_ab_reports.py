"""Reports on stored A/B layout runs: store schema upgrade and phases, warm-up advice from a
real run (Bakshy & Frachtenberg §2.2), and ``simulate-aa SPEC`` (§6) on a user's own layout."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchlang.app.store_migrate import migrate_store
from benchlang.run.store import SCHEMA_VERSION, Store, TrialRecord
from tests.store_versions import downgrade

SPEC = """benchlang 1
experiment warm {{
  seed 3
  hosts local {{ slots 2 }}
  reset "sh -c 'rm -f state-$BENCHLANG_HOST'"
  benchmark work {{
    # the first {slow} calls after a reset (per slot) are slow: a warm-up the advice should find
    run "sh -c 'n=$(cat state-$BENCHLANG_HOST 2>/dev/null || echo 0); echo $((n+1)) > state-$BENCHLANG_HOST; if [ $n -lt {slow} ]; then echo 0.5; else echo 0.1; fi' {{version}} {{request}}"
    measure t from stdout regex "([0-9.]+)"
  }}
  metric t {{ better lower }}
  design {{
    versions {{ control "a" treatment "b" }}
    layout fully_balanced {{ hosts 2 requests 6 repetitions 4 warmup {warmup} }}
    requests [1, 2, 3, 4, 5, 6]
  }}
  workdir "."
  analysis {{ compare t by version with bootstrap {{ cluster request replicates 500 }} }}
}}
"""


def benchlang(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def run_spec(tmp_path: Path, slow: int, warmup: int) -> Path:
    (tmp_path / "warm.bench").write_text(SPEC.format(slow=slow, warmup=warmup))
    done = benchlang("run", "warm.bench", "--store", "warm.sqlite", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "warm.sqlite"


def test_warmup_advice_finds_the_slow_start_of_every_batch(tmp_path):
    """Each batch's first two trials are 5x slower: analyze suggests two warm-up trials."""
    run_spec(tmp_path, slow=2, warmup=0)
    done = benchlang("analyze", "warm.bench", "--store", "warm.sqlite", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    advice = json.loads(done.stdout)["warmup"][0]
    assert advice["metric"] == "t" and advice["warmup"] == 0 and advice["batches"] == 4
    assert advice["suggested_warmup"] == 2 and advice["suggested_cooldown"] == 0
    text = benchlang("analyze", "warm.bench", "--store", "warm.sqlite", cwd=tmp_path).stdout
    assert "set warmup 2 cooldown 0 in the layout" in text


def test_warmup_trials_are_stored_and_left_out(tmp_path):
    """With warmup 2 the slow trials are the warm-up: stored with their phase, not analysed,
    and the advice (counted from the batch start) asks for nothing more."""
    store_path = run_spec(tmp_path, slow=2, warmup=2)
    with Store(store_path) as store:
        table = store.trial_table(store.plan().plan_hash)
    assert (table.phase == "warmup").sum() == 4 * 2
    assert np.all(table.measures["t"][table.phase == "warmup"] == 0.5)
    assert np.all(table.measures["t"][table.phase == "measured"] == 0.1)
    results = json.loads(benchlang("results", "warm.sqlite", "--json", cwd=tmp_path).stdout)[
        "configurations"
    ]
    assert [r["n"] for r in results] == [24, 24]
    assert all(r["metrics"]["t"]["max"] == 0.1 for r in results)
    advice = json.loads(
        benchlang("analyze", "warm.bench", "--store", "warm.sqlite", "--json", cwd=tmp_path).stdout
    )["warmup"][0]
    assert advice["suggested_warmup"] <= 2
    comparison = json.loads(
        benchlang("analyze", "warm.bench", "--store", "warm.sqlite", "--json", cwd=tmp_path).stdout
    )["comparisons"][0]
    assert comparison["trials"] == 48 and comparison["bootstrap"]["estimate"] == pytest.approx(0.0)


def test_simulate_aa_takes_the_layout_from_the_spec_and_components_from_a_pilot(tmp_path):
    run_spec(tmp_path, slow=0, warmup=0)
    done = benchlang(
        "simulate-aa",
        "warm.bench",
        "--pilot",
        "warm.sqlite",
        "--experiments",
        "50",
        "--replicates",
        "50",
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["layout"], report["hosts"], report["requests"], report["repetitions"]) == (
        "fully_balanced",
        2,
        6,
        4,
    )
    assert {s["cluster"] for s in report["schemes"]} == {"iid", "request", "host", "host-block"}
    given = benchlang(
        "simulate-aa",
        "warm.bench",
        "--components",
        "request=1,residual=0.5",
        "--experiments",
        "50",
        "--replicates",
        "50",
        "--json",
        cwd=tmp_path,
    )
    assert json.loads(given.stdout)["analytic_se"] > 0
    clash = benchlang(
        "simulate-aa", "warm.bench", "--hosts", "4", "--components", "request=1", cwd=tmp_path
    )
    assert clash.returncode == 2 and "cannot be combined with SPEC" in clash.stderr
    neither = benchlang("simulate-aa", "warm.bench", cwd=tmp_path)
    assert neither.returncode == 2 and "--pilot" in neither.stderr


def test_simulate_aa_refuses_a_spec_without_layout(tmp_path):
    (tmp_path / "plain.bench").write_text(
        'benchlang 1\nexperiment p { benchmark b { run "true" } }\n'
    )
    done = benchlang("simulate-aa", "plain.bench", "--components", "request=1", cwd=tmp_path)
    assert done.returncode == 2 and "has no A/B layout" in done.stderr


def _record(trial: int) -> TrialRecord:
    return TrialRecord(
        trial=trial,
        series=0,
        round=0,
        position=trial,
        host="local",
        configuration=0,
        label="b",
        benchmark="b",
        levels={},
        order_kind="random",
        status="ok",
        reason=None,
        exit_status=0,
        timed_out=False,
        started=1.0,
        ended=2.0,
        attempts=1,
        stdout_tail=b"",
        stderr_tail=b"",
        measures={"wall_time": float(trial)},
        series_values={},
        phase="warmup" if trial == 0 else "measured",
    )


def test_a_migrated_schema_1_store_keeps_its_trials(tmp_path):
    path = tmp_path / "old.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "exp", "sha256:s", 1, "{}")
        store.record_trial("sha256:p", _record(1))
    downgrade(path, 1)
    migrate_store(path)
    with Store(path, write=True) as store:
        store.record_trial("sha256:p", _record(0))
        table = store.trial_table("sha256:p")
    assert table.trial.tolist() == [0, 1] and table.phase.tolist() == ["warmup", "measured"]
    version = (
        sqlite3.connect(path)
        .execute("SELECT value FROM meta WHERE key='schema_version'")
        .fetchone()[0]
    )
    assert int(version) == SCHEMA_VERSION


def test_a_trial_table_selects_every_column_alike(tmp_path):
    with Store(tmp_path / "s.sqlite", create=True) as store:
        store.add_plan("sha256:p", "exp", "sha256:s", 1, "{}")
        for t in range(4):
            store.record_trial("sha256:p", _record(t))
        table = store.trial_table("sha256:p")
    measured = table.select(table.measured)
    assert measured.trial.tolist() == [1, 2, 3] and len(measured.levels) == 3
    assert measured.measures["wall_time"].tolist() == [1.0, 2.0, 3.0]
    assert measured.position.tolist() == [1, 2, 3] and set(measured.phase) == {"measured"}
