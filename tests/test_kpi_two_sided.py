"""Two-sided KPIs, ``kpi M { ... bound both }``: the equal-tailed
distribution-free interval [X_(l), X_(u)] of a percentile (Thompson 1936; Hahn & Meeker,
Statistical Intervals, §5.2), its ranks checked against binomial ranks computed here with
scipy.stats.binom, its two-sided minimum n, ``runs auto``, ``size --two-sided``, and the
interval printed by ``analyze`` (text and --json) and the record."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from benchlang.cli import main
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.stats._orderstat import min_samples
from benchlang.stats.kpi import kpi, kpis
from benchlang.stats.sizing import sizing


def binomial_ranks(n: int, p: float, c: float) -> tuple[int, int, float] | None:
    """The equal-tailed ranks from scipy's binomial, by direct search: l the largest rank with
    P(Bin(n, p) >= l) >= (1 + c)/2, u the smallest with P(Bin(n, p) <= u - 1) >= (1 + c)/2."""
    side = (1 + c) / 2
    k = np.arange(1, n + 1)
    lows = k[stats.binom.sf(k - 1, n, p) >= side - 1e-12]
    highs = k[stats.binom.cdf(k - 1, n, p) >= side - 1e-12]
    if lows.size == 0 or highs.size == 0:
        return None
    low, high = int(lows.max()), int(highs.min())
    return low, high, float(stats.binom.cdf(high - 1, n, p) - stats.binom.cdf(low - 1, n, p))


@pytest.mark.parametrize("percentile", [5.0, 25.0, 50.0, 90.0, 95.0, 99.0])
@pytest.mark.parametrize("confidence", [75.0, 90.0, 95.0, 99.0])
def test_ranks_and_values_match_the_binomial(percentile, confidence):
    rng = np.random.default_rng(int(percentile * 100 + confidence))
    p, c = percentile / 100, confidence / 100
    for n in (1, 2, 5, 6, 7, 20, 59, 71, 72, 73, 150, 400):
        x = rng.lognormal(0.0, 0.5, n)
        k = kpi(x, percentile, confidence, "both")
        expected = binomial_ranks(n, p, c)
        if expected is None:
            assert not k.enough and k.ranks is None and n < k.min_n
            assert f"needs at least {k.min_n} values" in k.refusal
            continue
        low, high, coverage = expected
        assert n >= k.min_n and k.enough
        assert k.ranks == (low, high)
        order = np.sort(x)
        assert (k.lower, k.upper) == (order[low - 1], order[high - 1])
        assert k.achieved_confidence == pytest.approx(100 * coverage, abs=1e-9)
        assert k.achieved_confidence >= confidence - 1e-9
        assert k.value == pytest.approx(np.percentile(x, percentile))


def test_the_two_sided_minimum_is_where_the_binomial_first_allows_an_interval():
    """6 for the median at 95%, 72 for p95 (TriScale's min_number_samples two-sided)."""
    assert sizing(50, 95, two_sided=True) == min_samples(0.5, 0.95, "both") == 6
    assert sizing(95, 95, two_sided=True) == min_samples(0.95, 0.95, "both") == 72
    for percentile in (1.0, 10.0, 50.0, 75.0, 95.0, 99.0):
        for confidence in (80.0, 95.0, 99.0):
            n = sizing(percentile, confidence, two_sided=True)
            assert n == min_samples(percentile / 100, confidence / 100, "both")
            assert binomial_ranks(n, percentile / 100, confidence / 100) is not None
            assert binomial_ranks(n - 1, percentile / 100, confidence / 100) is None
    assert sizing(50, 95, exclude=1, two_sided=True) == min_samples(0.5, 0.95, "both", 1)


def test_below_the_minimum_the_kpi_refuses_with_that_minimum():
    k = kpi(np.arange(71.0), 95, 95, "both")
    assert not k.enough and k.min_n == 72
    out = k.to_dict()
    json.dumps(out, allow_nan=False)
    assert out["lower"] is None and out["upper"] is None
    assert "a two-sided 95% interval of p95 needs at least 72 values" in out["refusal"]
    assert "71 given" in out["null_reasons"]["lower"]


def test_series_of_several_lengths_at_once_equal_one_at_a_time():
    rng = np.random.default_rng(4)
    series = [rng.normal(size=n) for n in (6, 9, 9, 30, 5)]
    together = kpis(series, 50, 95, "both")
    alone = [kpi(x, 50, 95, "both") for x in series]
    for a, b in zip(together, alone, strict=True):
        assert (a.ranks, a.n) == (b.ranks, b.n)
        assert np.array_equal([a.lower, a.upper], [b.lower, b.upper], equal_nan=True)


def _experiment(body: str):
    text = (
        "benchlang 1\nexperiment e {\n"
        '  benchmark b { run "true"\n measure t = wall_time }\n'
        f"  metric t {{ measure mean }}\n{body}\n}}\n"
    )
    return compile_source(decode("e.bench", text.encode()))


def test_runs_auto_sizes_the_two_sided_interval():
    e = _experiment("  kpi t { percentile 95 confidence 95% bound both }\n  design { runs auto }")
    assert e.design.runs == 72 and e.kpis[0].bound == "both"
    assert "two-sided" in e.design.runs_reason


def _errors(body: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        _experiment(body)
    return [d.message for d in info.value.diagnostics if d.severity == "error"]


def test_one_sided_methods_refuse_bound_both_with_a_reason():
    errors = _errors(
        "  kpi t with kpi_bootstrap { percentile 50 confidence 95% bound both }\n"
        "  design { runs 30 }"
    )
    assert errors[0] == (
        "kpi t: kpi_bootstrap gives one-sided bounds only; its two-sided coverage is not "
        "established"
    )
    errors = _errors(
        "  kpi t { percentile 50 confidence 95% bound both }\n  stop when kpi t width < 5% max 50"
    )
    assert any("the width rule watches a one-sided bound" in e for e in errors)


def test_size_two_sided(capsys):
    assert main(["size", "--percentile", "50", "--confidence", "95", "--two-sided"]) == 0
    assert capsys.readouterr().out == "6\n"
    assert main(["size", "--percentile", "95", "--confidence", "95%", "--two-sided", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["n"], out["two_sided"]) == (72, True)


SPEC = """\
benchlang 1
experiment two {
  seed 5
  factor k in [1, 2]
  benchmark b {
    run "python3 -c 'import os; s = int(os.environ[\\"BENCHLANG_SEED\\"]); print(\\"t=\\", {k} + (s % 1000) / 1000)'"
    measure t from stdout regex "t= ([0-9.]+)"
  }
  metric t { measure mean }
  kpi t { percentile 50 confidence 95% bound both }
  design { runs auto }
}
"""


def test_a_run_prints_the_interval_everywhere(tmp_path, capsys):
    """Seeded values (a function of each trial's seed) through run, analyze and record."""
    spec, store = tmp_path / "two.bench", tmp_path / "two.sqlite"
    spec.write_text(SPEC)
    assert main(["run", str(spec), "--store", str(store), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["results", str(store), "--format", "json"]) == 0
    trials = json.loads(capsys.readouterr().out)["trials"]
    rows = [(t["configuration"], t["metrics"]["t"]) for t in trials if t["status"] == "ok"]
    assert main(["analyze", str(spec), "--store", str(store), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["kpis"]) == 2
    for item in doc["kpis"]:
        (series,) = item["series"]
        values = np.sort([v for label, v in rows if label == item["configuration"]])
        assert values.size == 6 and series["ranks"] == [1, 6]
        assert (series["lower"], series["upper"]) == (values[0], values[-1])
        assert series["achieved_confidence"] == pytest.approx(100 * (1 - 2 / 64))
    assert main(["analyze", str(spec), "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "p50 both" in text and "x(1)..x(6) 96.9%" in text
    assert "KPI: 95% two-sided interval [lower, upper] of the median" in text
    assert main(["record", str(spec), "--store", str(store)]) == 0
    record = capsys.readouterr().out
    assert "| KPI confidence | 95% two-sided | 95% two-sided |" in record
    line = next(x for x in record.splitlines() if x.startswith("| KPI |"))
    assert line.count("[") == 2
    assert main(["record", str(spec), "--store", str(store), "--format", "json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics  # the structure is checked by the record's own tests; the fields here:
    flat = json.dumps(metrics)
    assert '"kpi_bound": "both"' in flat and '"kpi_lower"' in flat
