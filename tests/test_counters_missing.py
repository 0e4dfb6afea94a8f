"""A counter the host cannot read: ``cache_misses`` on a VM without a PMU is
stored as missing with its reason, and the trial's other measures (``task_clock``,
``page_faults``) stay: the trial succeeds unless a metric needs the missing counter, which then
says why.

The host's perf is replaced by a script on PATH that runs the command and prints what perf 6.1
printed on this VM for ``perf stat -x, -e cache-misses,task-clock,page-faults,duration_time``
(``<not supported>,,cache-misses,...``), so the test does not depend on the machine's PMU; the
executor, parser, store and analysis are the real ones. tests/test_counters.py checks the
parser against perf itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchlang.cli import main
from benchlang.model import Experiment
from benchlang.run.counters import counter_outcome

# perf-stat(1) -x, lines: value, unit, event, run time, percentage, metric value, metric unit.
FAKE_PERF = """#!/bin/sh
# perf stat -x, -e EVENTS -- COMMAND...: run the command, then print each event as perf 6.1
# did on a VM without a PMU.
events=$4
shift 5
"$@"
status=$?
for e in $(echo "$events" | tr ',' ' '); do
  case "$e" in
    cache-misses|cycles|instructions) echo "<not supported>,,$e,0,100.00,," >&2;;
    task-clock) echo "0.38,msec,task-clock,379111,100.00,0.147,CPUs utilized" >&2;;
    page-faults) echo "49,,page-faults,379111,100.00,129.250,K/sec" >&2;;
    duration_time) echo "2575000,ns,duration_time,2575000,100.00,6.792,M/sec" >&2;;
  esac
done
exit $status
"""


@pytest.fixture
def fake_perf(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    perf = bin_dir / "perf"
    perf.write_text(FAKE_PERF)
    perf.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return perf


def _spec(tmp_path: Path, metrics: str) -> Path:
    spec = tmp_path / "c.bench"
    spec.write_text(
        "benchlang 1\nexperiment c {\n  seed 2\n  factor n in [1, 2]\n"
        '  benchmark k {\n    run "echo {n}"\n    measure misses = cache_misses\n'
        "    measure tc = task_clock\n    measure pf = page_faults\n  }\n"
        f"{metrics}  design {{ runs 4 }}\n}}\n"
    )
    return spec


def _trials(store: Path, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["results", str(store), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["trials"]


def test_an_unreadable_counter_is_missing_with_its_reason_and_the_rest_stay(
    tmp_path, fake_perf, capsys
):
    spec = _spec(
        tmp_path,
        '  metric tc { measure mean unit "ms" }\n  kpi tc { percentile 50 confidence 75% }\n',
    )
    store = tmp_path / "c.sqlite"
    assert main(["run", str(spec), "--store", str(store), "--quiet"]) == 0
    trials = _trials(store, capsys)
    assert len(trials) == 8
    for t in trials:
        assert t["status"] == "ok"
        assert t["measures"]["tc"] == 0.38 and t["measures"]["pf"] == 49.0
        assert t["measures"]["wall_time"] == pytest.approx(0.002575)
        assert t["measures"].get("misses") is None, "never a 0"
        assert t["reason"] == (
            "not counted, stored as missing (no metric needs it): misses: perf stat reports "
            "cache-misses as <not supported> (this host has no such counter: hardware events "
            "need a CPU PMU, which many VMs lack)"
        )
    assert main(["analyze", str(spec), "--store", str(store), "--json"]) == 0
    kpis = json.loads(capsys.readouterr().out)["kpis"]
    assert [k["trials"] for k in kpis] == [4, 4]
    assert all(s["value"] == 0.38 and s["n"] == 4 for k in kpis for s in k["series"])


def test_a_metric_that_needs_the_counter_fails_its_trials_and_says_why(tmp_path, fake_perf, capsys):
    spec = _spec(tmp_path, "  metric misses { measure mean }\n  metric tc { measure mean }\n")
    store = tmp_path / "c.sqlite"
    assert main(["run", str(spec), "--store", str(store), "--quiet"]) != 0
    trials = _trials(store, capsys)
    assert trials and all(t["status"] == "failed" for t in trials)
    assert all(t["measures"]["tc"] == 0.38 for t in trials), "what was counted is kept"
    assert all(
        t["reason"].startswith("measure: misses: perf stat reports cache-misses as <not supported>")
        and t["reason"].endswith("; metric misses needs it")
        for t in trials
    )


def test_a_derived_metric_needs_the_measures_it_reads():
    from benchlang.lang.check import compile_source
    from benchlang.lang.syntax import decode

    text = (
        'benchlang 1\nexperiment c {\n  benchmark k { run "true"\n measure m = cache_misses\n'
        " measure tc = task_clock }\n  metric rate = m / tc\n}\n"
    )
    experiment: Experiment = compile_source(decode("c.bench", text.encode()))
    failure, note = counter_outcome(
        {"m": "perf stat reports cache-misses as <not counted>"}, experiment
    )
    assert failure == "m: perf stat reports cache-misses as <not counted>; metric rate needs it"
    assert note is None
    assert counter_outcome({}, experiment) == (None, None)
