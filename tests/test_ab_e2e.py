"""End to end: a real local A/B experiment detects a known 5% slowdown and does not flag an
A/A comparison (Bakshy & Frachtenberg's reweighting bootstrap, through `benchlang run`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SPEC = """benchlang 1
experiment ab {{
  seed 11
  factor impl in ["control", "treatment"]
  factor input in 1000000..2100000 step 100000
  benchmark work {{
    run "awk -v n={{input}} -v f={{impl}} 'BEGIN {{{{ m = (f == \\"treatment\\") ? {factor} : 1.0; for (i = 0; i < n * m; i++) s += i }}}}'"
    measure cpu = cpu_time
  }}
  metric cpu {{ better lower }}
  design {{ runs {runs} order random }}
  analysis {{
    compare cpu by impl with bootstrap {{ cluster request replicates 4000 log true confidence {confidence}% }}
  }}
}}
"""


def _run(tmp_path: Path, factor: float, runs: int, confidence: int) -> dict:
    spec = tmp_path / "ab.bench"
    spec.write_text(SPEC.format(factor=factor, runs=runs, confidence=confidence))
    store = tmp_path / "ab.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store), "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    out = subprocess.run(
        [sys.executable, "-m", "benchlang", "analyze", str(spec), "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    from benchlang.lang.check import load
    from benchlang.report.compare import compare
    from benchlang.report.data import load_data
    from benchlang.run.store import Store

    experiment = load(spec)
    with Store(store) as s:
        data = load_data(s)
    result = compare(data, experiment.comparisons[0])
    assert out.returncode in (0, 2)
    return {"result": result, "stdout": done.stdout}


@pytest.mark.slow
def test_known_five_percent_slowdown_is_detected(tmp_path: Path) -> None:
    got = _run(tmp_path, 1.05, runs=6, confidence=95)
    b = got["result"].bootstrap
    assert b is not None and b.log
    assert b.significant, json.dumps(got["result"].to_dict(), default=str)
    assert 0.02 < b.relative_effect < 0.09
    assert "comparisons: reweighting bootstrap" in got["stdout"]


@pytest.mark.slow
def test_a_a_is_not_flagged(tmp_path: Path) -> None:
    got = _run(tmp_path, 1.0, runs=6, confidence=99)
    b = got["result"].bootstrap
    assert b is not None
    assert abs(b.relative_effect) < 0.03
    assert not b.significant
