"""Importers on files the real tools wrote: hyperfine --export-json and pyperf JSON, through
`benchlang import`, then `results` and `analyze` on the store."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from benchlang.cli import main
from benchlang.run.importers.registry import detect_importer, importer_names

needs_hyperfine = pytest.mark.skipif(
    shutil.which("hyperfine") is None, reason="hyperfine is not installed (.ci/run installs it)"
)


def trials(store: Path) -> list[tuple]:
    db = sqlite3.connect(store)
    return db.execute(
        "SELECT t.label, t.round, t.position, t.status, t.reason, m.value FROM trials t "
        "LEFT JOIN measures m ON m.plan_hash = t.plan_hash AND m.trial = t.trial "
        "ORDER BY t.trial"
    ).fetchall()


@pytest.fixture(scope="module")
def hyperfine_json(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hf") / "hf.json"
    subprocess.run(
        ["hyperfine", "-N", "-i", "--runs", "5", "--export-json", str(out), "-L", "code", "0,3",
         "sh -c 'exit {code}'"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


@needs_hyperfine
def test_hyperfine_runs_become_trials_with_their_exit_codes(hyperfine_json, tmp_path, capsys):
    exported = json.loads(hyperfine_json.read_text())["results"]
    store = tmp_path / "hf.sqlite"
    assert main(["import", str(hyperfine_json), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "imported 10 trials, 5 failed of 2 configurations" in out and "from hyperfine" in out
    rows = trials(store)
    assert [r[0] for r in rows] == ["sh -c 'exit 0'"] * 5 + ["sh -c 'exit 3'"] * 5
    assert [(r[1], r[2]) for r in rows] == [(b, i) for b in range(2) for i in range(5)]
    assert [r[5] for r in rows] == pytest.approx(exported[0]["times"] + exported[1]["times"])
    assert {r[3] for r in rows[:5]} == {"ok"} and {(r[3], r[4]) for r in rows[5:]} == {
        ("failed", "exit status 3")
    }
    assert main(["import", str(hyperfine_json), "--store", str(store)]) == 0
    assert len(trials(store)) == 10, "importing the same file again adds nothing"


@needs_hyperfine
def test_results_and_analyze_work_on_a_hyperfine_import(tmp_path, capsys):
    export = tmp_path / "hf.json"
    subprocess.run(
        ["hyperfine", "-N", "--runs", "5", "--export-json", str(export), "true", "sleep 0.001"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    store = tmp_path / "s.sqlite"
    assert main(["import", str(export), "--store", str(store), "--name", "cmp"]) == 0
    capsys.readouterr()
    assert main(["results", str(store)]) == 0
    shown = capsys.readouterr().out
    assert "experiment cmp" in shown and "sleep 0.001" in shown and "true" in shown
    assert main(["analyze", "--store", str(store)]) == 0
    assert "p50 upper" in capsys.readouterr().out


@pytest.fixture(scope="module")
def pyperf_json(tmp_path_factory) -> Path:
    pytest.importorskip("pyperf")
    out = tmp_path_factory.mktemp("pyperf") / "pp.json"
    subprocess.run(
        [sys.executable, "-m", "pyperf", "timeit", "--processes", "2", "--values", "3",
         "--loops", "10", "--warmups", "1", "--name", "add", "--quiet", "-o", str(out), "1+1"],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return out


def test_pyperf_values_become_trials_and_its_metadata_host_facts(pyperf_json, tmp_path, capsys):
    suite = json.loads(pyperf_json.read_text())
    values = [v for run in suite["benchmarks"][0]["runs"] for v in run.get("values", [])]
    store = tmp_path / "pp.sqlite"
    assert main(["import", str(pyperf_json), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "imported 6 trials of 1 configuration in 2 rounds from pyperf" in out
    assert "2 warm-up values left out" in out
    rows = trials(store)
    assert [r[5] for r in rows] == pytest.approx(values)
    assert [(r[1], r[2]) for r in rows] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    facts = json.loads(sqlite3.connect(store).execute("SELECT facts FROM hosts").fetchone()[0])
    assert facts["cpu_model"] == suite["metadata"]["cpu_model_name"]
    assert facts["cores"] == str(suite["metadata"]["cpu_count"])
    assert main(["results", str(store)]) == 0
    assert "add" in capsys.readouterr().out
    assert main(["analyze", "--store", str(store)]) == 0, "6 values: a median KPI at 95%"


def test_the_format_is_recognized_and_a_wrong_one_is_one_line(tmp_path, capsys):
    assert {"csv", "hyperfine", "pyperf"} <= set(importer_names())
    hf = tmp_path / "x.json"
    hf.write_text('{"results": [{"command": "true", "times": [0.001]}]}')
    assert detect_importer(hf).name == "hyperfine"
    pp = tmp_path / "y.json"
    pp.write_text('{"benchmarks": [], "version": "1.0"}')
    assert detect_importer(pp).name == "pyperf"
    assert main(["import", str(hf), "--store", str(tmp_path / "s.sqlite"), "--format", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no importer named 'nope'" in err and "csv, google-benchmark, hyperfine, pyperf" in err
    broken = tmp_path / "b.json"
    broken.write_text('{"results": [{"times": [1]}]}')
    assert main(["import", str(broken), "--store", str(tmp_path / "t.sqlite")]) == 2
    assert "has no 'command' or 'times'" in capsys.readouterr().err
    assert main(["import", str(pp), "--store", str(tmp_path / "u.sqlite")]) == 2
    assert "holds no trials" in capsys.readouterr().err
    unknown = tmp_path / "z.dat"
    unknown.write_text("1 2 3\n")
    assert main(["import", str(unknown), "--store", str(tmp_path / "v.sqlite")]) == 2
    assert "cannot tell which tool wrote" in capsys.readouterr().err
