"""The run-level independence verdict: exact small cases, calibration on
seeded i.i.d. runs, power on obvious dependence, and the verdict through run/analyze."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from benchlang.stats import run_independence as ri
from benchlang.stats.run_independence import holm, independence_tests, metric_tests, run_verdict


def plan(configs: int, series: int, runs: int, rng: np.random.Generator):
    """A plan's shape: rounds of every configuration in random order; time = trial index."""
    rounds = series * runs
    configuration = np.argsort(rng.random((rounds, configs)), axis=1).ravel()
    return configuration, np.repeat(np.arange(series), runs * configs), np.arange(rounds * configs)


def flags(x, configuration, series, time, seed=0) -> np.ndarray:
    blocks = configuration * (series.max() + 1) + series
    res = independence_tests(x, configuration, blocks, time, seed=seed)
    rejected, _ = holm(np.stack([res["trend_p"], res["serial_p"]], axis=1))
    return rejected.any(axis=1)


def test_serial_moments_are_the_exact_permutation_moments():
    """z of the lag-1 statistic uses E and Var over all 7! orders of one series' scores."""
    x = np.array([3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.6])
    res = independence_tests(x[None, :], np.zeros(7), np.zeros(7), np.arange(7))
    u = np.argsort(np.argsort(x)) + 1.0
    d = u / 8 - 0.5
    d -= d.mean()
    stats = [
        float(np.dot(d[list(p)][1:], d[list(p)][:-1])) for p in itertools.permutations(range(7))
    ]
    observed = float(np.dot(d[1:], d[:-1]))
    z = (observed - np.mean(stats)) / np.std(stats)
    assert res["serial_z"][0] == pytest.approx(z, rel=1e-10)
    exact_p = np.mean(np.abs(np.array(stats) - np.mean(stats)) >= abs(observed - np.mean(stats)))
    assert res["serial_p"][0] == pytest.approx(exact_p, abs=0.02)


def test_trend_of_one_stratum_is_spearman_and_its_permutation_p_is_exact():
    x = np.array([2.0, 1.0, 3.5, 3.0, 5.0, 4.0, 7.0, 6.5])
    res = independence_tests(x[None, :], np.zeros(8), np.zeros(8), np.arange(8.0))
    rho = np.corrcoef(np.argsort(np.argsort(x)), np.arange(8))[0, 1]
    assert res["trend_z"][0] == pytest.approx(rho * math.sqrt(7), rel=1e-10)
    from benchlang.stats.rank_exact import spearman_exact_p

    exact = spearman_exact_p(np.arange(8.0), x)
    se = math.sqrt(exact * (1 - exact) / ri.PERMUTATIONS)
    assert abs(res["trend_p"][0] - exact) <= 4 * se + 1e-3


def test_strata_are_combined_not_pooled():
    """Level differences between configurations are no trend: only order within a stratum is."""
    rng = np.random.default_rng(4)
    c, s, t = plan(3, 4, 10, rng)
    x = rng.lognormal(0, 0.1, size=(1, t.size)) * (1 + 10 * c)  # very different levels
    res = independence_tests(x, c, c * 4 + s, t, seed=1)
    assert res["trend_p"][0] > 0.01 and res["strata"] == 3 and res["blocks"] == 12


def test_holm_rejects_step_down():
    rejected, levels = holm(np.array([0.01, 0.04, 0.03, 0.005]), 0.05)
    assert rejected[0].tolist() == [True, False, False, True]
    np.testing.assert_allclose(levels[0], [0.05 / 3, np.nan, 0.025, 0.0125])
    rejected, levels = holm(np.array([0.2, math.nan]), 0.05)
    assert not rejected.any() and levels[0, 0] == 0.05 and math.isnan(levels[0, 1])


@pytest.mark.parametrize("shape", [(3, 5, 5), (10, 10, 5)])
def test_iid_runs_are_flagged_at_most_at_the_nominal_rate(shape):
    """Monte Carlo (75 values) and normal (500 values) paths: a small seeded check, 100 i.i.d.
    runs each; the calibration (1,000 runs a row) is benchmarks/sim_independence_family.py's
    table (docs/statistics.md)."""
    rng = np.random.default_rng(sum(shape))
    c, s, t = plan(*shape, rng)
    x = rng.lognormal(0, 0.1, size=(100, t.size)) * (1 + c)
    rate = np.mean(flags(x, c, s, t, 0))
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 100), rate


def test_drift_and_autocorrelation_are_found():
    rng = np.random.default_rng(8)
    c, s, t = plan(3, 5, 5, rng)
    drift = rng.lognormal(0, 0.1, size=(50, t.size)) * (1 + 0.25 * t / t.size)
    assert flags(drift, c, s, t).mean() >= 0.9
    c, s, t = plan(3, 5, 25, rng)
    z = rng.normal(size=(100, t.size))
    blocks = c * 5 + s
    for b in np.unique(blocks):
        idx = np.flatnonzero(blocks == b)
        for i in range(1, idx.size):
            z[:, idx[i]] = 0.5 * z[:, idx[i - 1]] + math.sqrt(0.75) * z[:, idx[i]]
    assert flags(np.exp(0.1 * z), c, s, t).mean() >= 0.9


def test_large_runs_are_tested_on_a_subsample_of_whole_series(monkeypatch):
    monkeypatch.setattr(ri, "SUBSAMPLE_ABOVE", 4000)
    rng = np.random.default_rng(3)
    c, s, t = plan(4, 40, 50, rng)  # 8,000 values, 160 series
    x = rng.lognormal(0, 0.1, size=t.size) * (1 + 0.1 * t / t.size)
    tests = metric_tests("m", x, c, s, t)
    assert "on 4000 of 8000 values" in tests[0].method
    assert tests[0].p < 1e-3 and tests[1].values == 4000
    assert "whole series" in tests[0].method


def test_long_series_are_cut_into_pieces_each_its_own_block(monkeypatch):
    monkeypatch.setattr(ri, "SUBSAMPLE_ABOVE", 3000)
    monkeypatch.setattr(ri, "_CHUNK", 500)
    n = 6000  # two series of 3,000 values: cut into pieces of 500, every second kept
    blocks, t = np.repeat([0, 1], n // 2), np.arange(n)
    keep, pieces = ri._subsample(blocks, t)
    assert keep.size == 3000 and np.unique(pieces).size == 6
    for p in np.unique(pieces):
        idx = keep[pieces == p]
        assert np.all(np.diff(idx) == 1) and idx.size == 500  # consecutive trials only
    x = np.random.default_rng(4).lognormal(0, 0.1, n)
    tests = metric_tests("m", x, np.zeros(n), blocks, t)
    assert "pieces of at most 500 consecutive values" in tests[0].method


def test_constant_and_untestable_data():
    tests = metric_tests("m", np.full(20, 2.0), np.zeros(20), np.arange(20) // 5, np.arange(20))
    verdict = run_verdict(tests)
    assert verdict.passed and all(t.p == 1.0 for t in tests)
    one_per_series = metric_tests("m", np.arange(6.0), np.zeros(6), np.arange(6), np.arange(6))
    verdict = run_verdict(one_per_series)
    assert one_per_series[1].p is None and "no series has 3 values" in one_per_series[1].note
    assert verdict.family() == "run-level, 1 test at 5%"
    assert not verdict.passed and "trend over the run" in verdict.reason()
    json.dumps(verdict.to_dict(), allow_nan=False)
    assert run_verdict(metric_tests("m", np.array([]), [], [], [])).passed is False


def test_the_family_spans_metrics_and_says_so():
    rng = np.random.default_rng(2)
    c, s, t = plan(3, 5, 5, rng)
    a = metric_tests("a", rng.lognormal(size=t.size), c, s, t, seed=1)
    b = metric_tests("b", rng.lognormal(size=t.size) * (1 + t), c, s, t, seed=1)
    verdict = run_verdict(a + b)
    assert verdict.for_metric("a").family() == "run-level, 4 tests, Holm at 5% (first step 1.25%)"
    assert verdict.for_metric("a").passed and not verdict.for_metric("b").passed
    reason = verdict.for_metric("b").reason()
    assert reason.startswith("not independent: trend over the run: stratified rank trend p = ")
    assert "(3 configurations)" in reason
    assert ri.per_series_note(1, 15) == "1 of 15 series at 5%: 0.75 expected by chance"


DRAW = "awk -v k={k} -v t=$BENCHLANG_TRIAL 'NR == t + 1 {{{{ print k * $1 }}}}' {noise}"
"""A trial prints k times its own line of ``noise`` (a seeded table written by ``noise``):
an awk start per trial, where a Python interpreter took 30-50 ms."""


def noise(where, drift: float):
    """Trial t's factor: lognormal(0, 0.1) times (1 + drift t / 45), one line per trial."""
    t = np.arange(45)
    draws = np.random.default_rng(3).lognormal(0, 0.1, t.size) * (1 + drift * t / 45)
    path = where / "noise.txt"
    path.write_text("".join(f"{v:.9f}\n" for v in draws))
    return path


SPEC = """benchlang 1
experiment ind {{
  seed 3
  factor k in [1, 2, 3]
  benchmark draw {{
    run "{run}"
    measure v from stdout regex "([0-9.]+)"
  }}
  metric v {{ measure mean better lower }}
  kpi v {{ percentile 50 confidence 95% }}
  design {{ runs 5 series 3 order random }}
}}
"""


def test_run_and_analyze_say_the_run_level_verdict(tmp_path, cli_in_process):
    """A drifting run is descriptive only once, for the run, with the family in words; the
    JSON carries the verdict (strict); --per-series-independence brings back TriScale's rule."""
    run = DRAW.format(k="{k}", noise=noise(tmp_path, drift=2))
    (tmp_path / "ind.bench").write_text(SPEC.format(run=run))
    status, out, err = cli_in_process(
        ["run", "ind.bench", "--store", "s.sqlite", "-q", "-v"], cwd=tmp_path
    )
    assert status == 0, err
    text = " ".join(out.split())
    assert (
        "DESCRIPTIVE ONLY: not independent: trend over the run: stratified rank trend p = " in text
    )
    assert "(run-level, 2 tests, Holm at 5% (first step 2.5%))" in text
    assert "DESCRIPTIVE ONLY draw[" not in text  # said once for the run, not per configuration
    status, out, err = cli_in_process(["analyze", "--store", "s.sqlite", "--json"], cwd=tmp_path)
    assert status == 0, err
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
    verdict = doc["headline"][0]["independence"]
    assert verdict["passed"] is False and verdict["tests"][0]["rejected"] is True
    assert all(r["independence"]["family"] == verdict["family"] for r in doc["kpis"])
    status, out, err = cli_in_process(["analyze", "--store", "s.sqlite"], cwd=tmp_path)
    assert "v: TriScale's per-series tests (§4.5, shown, not a verdict): " in out
    assert "per-series test (trend p, LB p)" in out
    status, out, err = cli_in_process(
        ["analyze", "--store", "s.sqlite", "--per-series-independence"], cwd=tmp_path
    )
    assert status == 0, err
    assert "(§4.5, each decides, on request)" in out


def test_an_independent_run_passes(tmp_path, cli_in_process):
    run = DRAW.format(k="{k}", noise=noise(tmp_path, drift=0))
    (tmp_path / "ind.bench").write_text(SPEC.format(run=run))
    status, out, err = cli_in_process(
        ["run", "ind.bench", "--store", "s.sqlite", "-q", "-v"], cwd=tmp_path
    )
    assert status == 0, err
    text = " ".join(out.split())
    assert (
        "independence (run-level, 2 tests, Holm at 5% (first step 2.5%)): passed (trend over the run p"
        in text
    )
    assert "not independent" not in text
    status, out, err = cli_in_process(
        ["record", "--store", "s.sqlite", "--format", "json"], cwd=tmp_path
    )
    assert status == 0, err
    assert json.loads(out)["independence"][0].startswith("v: independence (run-level, 2 tests")


def test_with_a_span_the_trend_is_within_series_and_the_kpis_join():
    """A level shift between series is the variability score's business with a span, not a
    trend; the KPIs' trend across series is then its own test."""
    rng = np.random.default_rng(6)
    c, s, t = plan(3, 6, 8, rng)
    x = rng.lognormal(0, 0.1, size=t.size) * (1 + 0.5 * s)  # series differ, no trend inside
    within = metric_tests("m", x, c, s, t, span=True)
    assert within[0].p > 0.01 and within[0].note == "18 series of 3 configurations"
    assert metric_tests("m", x, c, s, t)[0].p < 1e-4  # without a span it is a drift
    kpis = np.array([np.median(x[(c == k) & (s == j)]) for k in range(3) for j in range(6)])
    kc, ks = np.repeat(np.arange(3), 6), np.tile(np.arange(6), 3)
    across = ri.kpi_trend_test("m", kpis, kc, ks)
    assert across.name == ri.KPI_TREND and across.p < 0.01
    assert (
        run_verdict([*within, across]).family()
        == "run-level, 3 tests, Holm at 5% (first step 1.67%)"
    )


def test_csv_columns_share_one_family(tmp_path):
    from benchlang.app.analysis import analyze_csv

    rng = np.random.default_rng(9)
    rows = [f"{a:.6f},{b:.6f}" for a, b in rng.lognormal(size=(40, 2))]
    path = tmp_path / "v.csv"
    path.write_text("a,b\n" + "\n".join(rows) + "\n")
    results = analyze_csv(path, {"percentile": 50, "confidence": 95}, None, None, "lower")
    families = {r.analysis.independence.family() for r in results}
    assert families == {"run-level, 4 tests, Holm at 5% (first step 1.25%)"}
