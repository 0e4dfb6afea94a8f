"""The trimmed-mean plugin end to end: registered through ``benchlang.statistics``, its
settings checked by ``benchlang check`` from its declared parameters, and a spec run through
the real CLI (local backend, store, analysis) whose comparison comes from the plugin.

The measured values are synthetic and seeded (docs/testing.md): each trial prints a value
derived from its plan seed (``BENCHLANG_SEED``), 1.5x for the treatment, with one trial in ten
an outlier 3x larger, so the numbers do not depend on the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from benchlang_trimmed_mean import TRIMMED_MEAN
from benchlang_trimmed_mean.compute import trimmed_mean, trimmed_mean_ratio

from benchlang.stats.contract import ComparisonSample

VALUE_AWK = """\
BEGIN {
  u = (ENVIRON["BENCHLANG_SEED"] % 2147483648 + 0.5) / 2147483648
  v = (1 + u) * (impl == "new" ? 1.5 : 1)
  if (ENVIRON["BENCHLANG_SEED"] % 10 == 0) v = v * 3
  printf "v=%.12g\\n", v
}
"""

SPEC = """benchlang 1
experiment tm {{
  seed 5
  factor impl in ["old", "new"]
  benchmark work {{
    run "awk -v impl={{impl}} -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }}
  metric v {{ better lower }}
  kpi v {{ percentile 50 confidence 75% }}
  design {{ runs 30 series 1 }}
  analysis {{
    compare v by impl with trimmed_mean {{ {settings} }}
  }}
}}
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "benchlang", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_trimmed_mean_cuts_each_tail():
    x = np.array([1.0, 2.0, 3.0, 4.0, 100.0, 5.0, 6.0, 7.0, 8.0, -50.0])
    assert trimmed_mean(x, 0.1) == pytest.approx(np.mean([1, 2, 3, 4, 5, 6, 7, 8]))
    assert trimmed_mean(x, 0.0) == pytest.approx(x.mean())


def test_the_ratio_and_its_interval_on_synthetic_samples():
    rng = np.random.default_rng(0)
    a, b = rng.lognormal(0, 0.1, 40), 1.3 * rng.lognormal(0, 0.1, 40)
    y = np.concatenate([a, b])
    zeros = np.zeros(y.size, dtype=np.int64)
    sample = ComparisonSample(
        y, np.repeat([0, 1], 40), ("a", "b"), 0, zeros, zeros, zeros, zeros, zeros, seed=1
    )
    out = trimmed_mean_ratio(sample, {**TRIMMED_MEAN.defaults(), "replicates": 500})
    assert out.method == "trimmed_mean" and out.scale == "ratio"
    assert out.ci_low < 1.3 < out.ci_high and out.significant


def test_registered_and_described_through_the_entry_point_group():
    from benchlang.stats.registry import statistics_methods

    catalogue = statistics_methods()
    assert catalogue["trimmed_mean"] == TRIMMED_MEAN
    assert catalogue.distribution("trimmed_mean")[0] == "benchlang-trimmed-mean"
    out = cli("plugins", "--describe", "trimmed_mean", cwd=Path("."))
    assert out.returncode == 0 and "trim" in out.stdout and "[0%, 45%]" in out.stdout


def test_check_reports_a_bad_setting_of_the_plugin_at_its_position(tmp_path):
    (tmp_path / "tm.bench").write_text(SPEC.format(settings="trim 60% replicats 100"))
    out = cli("check", "tm.bench", cwd=tmp_path)
    assert out.returncode == 2
    assert "tm.bench:13:48: error: trim: 60% is outside [0%, 45%]" in out.stderr
    assert (
        "tm.bench:13:52: error: unknown setting 'replicats' in compare with trimmed_mean"
        in out.stderr
    )
    assert "did you mean 'replicates'?" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_spec_runs_end_to_end_with_the_plugin(tmp_path):
    (tmp_path / "value.awk").write_text(VALUE_AWK)
    (tmp_path / "tm.bench").write_text(SPEC.format(settings="trim 20% replicates 2000"))
    run = cli("run", "tm.bench", "--store", "tm.sqlite", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    analysis = cli("analyze", "tm.bench", "--store", "tm.sqlite", "--json", cwd=tmp_path)
    assert analysis.returncode == 0, analysis.stderr
    (comparison,) = json.loads(analysis.stdout)["comparisons"]
    result = comparison["result"]
    assert comparison["method"] == "trimmed_mean" and result["method"] == "trimmed_mean"
    # values are (1 + u) x 1.5 for new: the trimmed ratio is near 1.5, the outliers trimmed
    assert 1.3 < result["estimate"] < 1.7
    assert result["ci_low"] < result["estimate"] < result["ci_high"] and result["significant"]
    text = cli("analyze", "tm.bench", "--store", "tm.sqlite", cwd=tmp_path)
    assert "trimmed_mean" in text.stdout
    record = cli("record", "tm.bench", "--store", "tm.sqlite", "--format", "json", cwd=tmp_path)
    assert record.returncode == 0, record.stderr
    methods = json.loads(record.stdout)["statistics_methods"]
    assert "trimmed_mean (benchlang-trimmed-mean 0.1.0)" in methods
    page = cli("report", "tm.sqlite", "tm.bench", "-o", "tm.html", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "tm.html").read_text(encoding="utf-8")
    assert "compare v by impl with trimmed_mean" in html
    assert "trimmed_mean (95% interval)" in html and "Traceback" not in html
