"""The plugin's KPI method (``kpi M with hutson``): Hutson's fractional order statistic bound,
registered through ``benchlang.statistics`` like the comparison, sized by ``runs auto``, run
by the analysis for every series and named in ``analyze --json`` and the record."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from benchlang_trimmed_mean import HUTSON
from benchlang_trimmed_mean.quantile_bound import fractional_rank, hutson

VALUE_AWK = """\
BEGIN {
  u = (ENVIRON["BENCHLANG_SEED"] % 2147483648 + 0.5) / 2147483648
  printf "v=%.12g\\n", 10 * (1 + u)
}
"""

SPEC = """benchlang 1
experiment hk {
  seed 3
  benchmark work {
    run "awk -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }
  metric v { better lower }
  kpi v with hutson { percentile 90 confidence 95% }
  design { runs auto }
}
"""


def test_its_bound_covers_at_the_nominal_level():
    """2,000 lognormal data sets of 40: the upper 95% bound of p90 and the lower 95% bound of
    p10 cover the true percentile at least 95% of the time (within 3 standard errors) and no
    more than Thompson's bound, whose rank rounds Hutson's fractional one away (Hutson §3)."""
    from benchlang.stats.kpi import kpi

    rng = np.random.default_rng(12)
    x = np.sort(rng.lognormal(size=(2000, 40)), axis=1)
    for p, bound, truth in (
        (90, "upper", math.exp(1.2815516)),
        (10, "lower", math.exp(-1.2815516)),
    ):
        u = fractional_rank(40, p / 100, 0.95, bound)
        i = min(int(u), 39)
        v = x[:, i - 1] + (u - i) * (x[:, i] - x[:, i - 1])
        covered = np.mean(v >= truth) if bound == "upper" else np.mean(v <= truth)
        se = math.sqrt(0.95 * 0.05 / 2000)
        thompson = kpi(x[0], p, 95, bound).achieved_confidence / 100
        assert 0.95 - 3 * se < covered < thompson + 3 * se
        assert hutson(x[0], p, 95, bound).value == pytest.approx(v[0])


def test_it_refuses_below_its_n_and_runs_auto_asks_it():
    k = hutson(np.arange(1.0, 20.0), 95, 95, "upper")
    assert not k.enough and "too few" in k.refusal and k.method == "hutson"
    assert HUTSON.needs({"percentile": 95, "confidence": 95}) == 59


def test_a_spec_runs_with_the_plugins_kpi(tmp_path, capsys, monkeypatch):
    """The real CLI in this process; the plugin found through its installed entry point."""
    from benchlang.app.analysis import analyze_store
    from benchlang.cli import main

    (tmp_path / "value.awk").write_text(VALUE_AWK)
    (tmp_path / "hk.bench").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")

    def cli(*args: str) -> tuple[int, str, str]:
        status = main(list(args))
        out = capsys.readouterr()
        return status, out.out, out.err

    status, out, err = cli("run", "hk.bench", "--store", "hk.sqlite", "--quiet")
    assert status == 0, out + err
    status, out, err = cli("analyze", "hk.bench", "--store", "hk.sqlite", "--json")
    assert status == 0, err
    (got,) = json.loads(out)["kpis"]
    (series,) = got["series"]
    assert got["kpi_method"] == "hutson" and series["method"] == "hutson"
    assert series["n"] == 29  # runs auto: p90 at 95% needs 29 (TriScale Table 2)
    data = analyze_store(tmp_path / "hk.sqlite").data
    values = data.metrics["v"].values[data.table.ok]
    assert series["value"] == pytest.approx(hutson(values, 90, 95, "upper").value)
    record = cli("record", "hk.bench", "--store", "hk.sqlite", "--format", "json")[1]
    assert "hutson (benchlang-trimmed-mean 0.1.0)" in json.loads(record)["statistics_methods"]
    status, out, err = cli("analyze", "hk.bench", "--store", "hk.sqlite")
    assert status == 0 and "KPIs (TriScale §4.2; hutson)" in out and "Traceback" not in err
