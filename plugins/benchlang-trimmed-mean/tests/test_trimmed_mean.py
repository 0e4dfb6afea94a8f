"""The trimmed-mean plugin end to end: registered through ``benchlang.statistics``, its
settings checked by ``benchlang check`` from its declared parameters, and a spec run through
the real CLI in this process (local backend, store, analysis) whose comparison comes from the
plugin, found through its installed entry point as in a process of its own.

The measured values are synthetic and seeded (docs/testing.md): each trial prints a value
derived from its plan seed (``BENCHLANG_SEED``), 1.5x for the treatment, with one trial in ten
an outlier 3x larger, so the numbers do not depend on the machine.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from benchlang_trimmed_mean import TRIMMED_MEAN
from benchlang_trimmed_mean.compute import trimmed_mean, trimmed_mean_ratio

from benchlang.cli import main
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


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    """``benchlang ARGS`` in this process, in tmp_path: (status, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")

    def call(*args: str) -> tuple[int, str, str]:
        status = main(list(args))
        out = capsys.readouterr()
        return status, out.out, out.err

    return call


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


def test_registered_and_described_through_the_entry_point_group(cli):
    from benchlang.stats.registry import statistics_methods

    catalogue = statistics_methods()
    assert catalogue["trimmed_mean"] == TRIMMED_MEAN
    assert catalogue.distribution("trimmed_mean")[0] == "benchlang-trimmed-mean"
    status, out, _ = cli("plugins", "--describe", "trimmed_mean")
    assert status == 0 and "trim" in out and "[0%, 45%]" in out


def test_check_reports_a_bad_setting_of_the_plugin_at_its_position(tmp_path, cli):
    (tmp_path / "tm.bench").write_text(SPEC.format(settings="trim 60% replicats 100"))
    status, _, err = cli("check", "tm.bench")
    assert status == 2
    assert "tm.bench:13:48: error: trim: 60% is outside [0%, 45%]" in err
    assert "tm.bench:13:52: error: unknown setting 'replicats' in compare with trimmed_mean" in err
    assert "did you mean 'replicates'?" in err


def test_a_spec_runs_end_to_end_with_the_plugin(tmp_path, cli):
    (tmp_path / "value.awk").write_text(VALUE_AWK)
    (tmp_path / "tm.bench").write_text(SPEC.format(settings="trim 20% replicates 2000"))
    status, out, err = cli("run", "tm.bench", "--store", "tm.sqlite", "--quiet")
    assert status == 0, out + err
    status, out, err = cli("analyze", "tm.bench", "--store", "tm.sqlite", "--json")
    assert status == 0, err
    (comparison,) = json.loads(out)["comparisons"]
    result = comparison["result"]
    assert comparison["method"] == "trimmed_mean" and result["method"] == "trimmed_mean"
    # values are (1 + u) x 1.5 for new: the trimmed ratio is near 1.5, the outliers trimmed
    assert 1.3 < result["estimate"] < 1.7
    assert result["ci_low"] < result["estimate"] < result["ci_high"] and result["significant"]
    assert "trimmed_mean" in cli("analyze", "tm.bench", "--store", "tm.sqlite")[1]
    status, out, err = cli("record", "tm.bench", "--store", "tm.sqlite", "--format", "json")
    assert status == 0, err
    methods = json.loads(out)["statistics_methods"]
    assert "trimmed_mean (benchlang-trimmed-mean 0.1.0)" in methods
    status, _, err = cli("report", "tm.sqlite", "tm.bench", "-o", "tm.html")
    assert status == 0, err
    html = (tmp_path / "tm.html").read_text(encoding="utf-8")
    assert "compare v by impl with trimmed_mean" in html
    assert "trimmed_mean (95% interval)" in html and "Traceback" not in html
