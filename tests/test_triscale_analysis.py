"""analyze_metric (spec-driven TriScale analysis), network profiling and the record."""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pytest

from benchlang.cli import profile as profile_cli
from benchlang.errors import UserError
from benchlang.report.record import MetricRecord, Record, format_duration
from benchlang.stats import kpi, variability
from benchlang.stats.profile import profile
from benchlang.stats.triscale import analyze_metric


def test_analyze_metric_per_series_and_across_series():
    rng = np.random.default_rng(42)
    values = rng.normal(10, 1, size=60)
    series = np.repeat(np.arange(6), 10)
    res = analyze_metric(values, series, 50, 95, "upper", 25, 75)
    assert [s.series for s in res.series] == list(range(6))
    for s in res.series:
        ref = kpi(values[series == s.series], 50, 95, "upper")
        assert s.kpi.value == ref.value and s.kpi.rank == ref.rank == 9
    var = variability([s.kpi.value for s in res.series], 25, 75)
    assert res.variability.score == var.score and res.variability.n == 6
    assert res.descriptive_only == bool(res.reasons)
    assert json.loads(json.dumps(res.to_dict(), allow_nan=True))["series"][0]["rank"] == 9


def test_analyze_metric_flags_what_failed():
    values = np.concatenate([np.arange(10.0), np.full(10, 5.0)])
    values[12] = np.nan
    series = np.repeat([0, 1], 10)
    res = analyze_metric(values, series, 95, 95, "upper", 25, 75, per_series_independence=True)
    text = " | ".join(res.reasons)
    assert res.descriptive_only and res.per_series_decides
    assert "series 0: metric values not independent" in text
    assert "series 1: 1 of 10 trials did not converge" in text
    default = analyze_metric(values, series, 95, 95, "upper", 25, 75)
    assert "not independent" not in " | ".join(default.reasons)  # the run-level verdict decides
    assert default.per_series_flags() == (1, 2) and not res.series[0].kpi.independent
    assert "the KPI needs 59" in text and "the score needs 5" in text
    assert math.isnan(res.series[0].kpi.value) and res.series[1].not_converged == 1


def test_analyze_metric_single_series_without_variability():
    rng = np.random.default_rng(7)
    res = analyze_metric(rng.exponential(size=30), None, 90, 95, "upper", None, None)
    assert len(res.series) == 1 and res.variability is None
    assert res.series[0].kpi.rank == 30 and not res.descriptive_only


def _seasonal(rng, weekly=1.0):
    t = np.arange(12 * 7 * 4)  # four weeks sampled every 2 h
    daily = np.sin(2 * np.pi * t / 12)
    return daily + weekly * np.sin(2 * np.pi * t / 84) + rng.normal(scale=0.5, size=t.size)


def test_profile_finds_daily_and_weekly_periods():
    hits = daily_only = iid_quiet = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        hits += profile(_seasonal(rng), 7200).periods == (12, 84)
        daily_only += profile(_seasonal(rng, 0.0), 7200).periods == (12,)
        iid_quiet += profile(rng.normal(size=336), 7200).periods == ()
    assert hits >= 36 and daily_only >= 36 and iid_quiet >= 36
    p = profile(_seasonal(np.random.default_rng(1)), 7200)
    assert p.recommended_span == 7 * 86400 and not p.independence.passed


def test_profile_fills_missing_samples_and_rejects_tiny_input():
    x = _seasonal(np.random.default_rng(3), 0.0)
    x[[5, 50, 100]] = np.nan
    p = profile(x, 7200)
    assert p.missing == 3 and 12 in p.periods
    with pytest.raises(ValueError):
        profile(np.arange(5.0), 60)


def _cli(argv):
    parser = argparse.ArgumentParser()
    profile_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


def test_profile_command(tmp_path, capsys):
    x = _seasonal(np.random.default_rng(1))
    path = tmp_path / "lq.csv"
    path.write_text("time,quality\n" + "".join(f"t{i},{v}\n" for i, v in enumerate(x)))
    assert _cli(["profile", str(path), "--period", "2h", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["periods_seconds"] == [86400.0, 604800.0]
    assert out["recommended_span_seconds"] == 604800.0 and out["column"] == "quality"
    assert _cli(["profile", str(path), "--period", "2h"]) == 0
    assert "at least 1w" in capsys.readouterr().out
    with pytest.raises(UserError):
        _cli(["profile", str(path), "--period", "soon"])
    with pytest.raises(UserError):
        _cli(["profile", str(path), "--period", "2h", "--column", "nope"])
    two = tmp_path / "two.csv"
    two.write_text("a,b\n1,2\n3,4\n")
    with pytest.raises(UserError):
        _cli(["profile", str(two), "--period", "1m"])


def _record():
    delay = MetricRecord(
        "delay",
        "percentile 95",
        True,
        95.0,
        5.0,
        50.0,
        95.0,
        25.0,
        75.0,
        10,
        5,
        30.0,
        86400.0,
        12.5,
        1.25,
        "ms",
    )
    time = MetricRecord(
        "time_s",
        "mean",
        False,
        None,
        None,
        90.0,
        95.0,
        None,
        None,
        29,
        1,
        "30s",
        None,
        0.52,
        None,
        "s",
    )
    return Record("cc & co", "a" * 64, "b" * 64, 7, "0.1.0", (delay, time))


def test_record_forms():
    rec = _record()
    data = json.loads(json.dumps(rec.to_json()))
    assert data["metrics"][0]["kpi_value"] == 12.5 and data["seed"] == 7
    md = rec.to_markdown()
    assert "| Span | 1d | - |" in md and "| KPI | 12.5 ms | 0.52 s |" in md
    assert md.count("\n| ") == 16  # header + separator + 12 parameters + 2 results
    tex = rec.to_latex()
    assert r"\begin{tabular}{@{}lrr@{}}" in tex and r"cc \& co" in tex
    assert r"time\_s" in tex and r"95\%" in tex and tex.count(r" \\") == 15
    assert format_duration(7200) == "2h" and format_duration(90) == "90s"
    assert format_duration(0.5) == "0.5s"


def test_analyze_metric_with_exclusion_asks_for_more_trials():
    rng = np.random.default_rng(17)
    values = rng.normal(size=70)
    res = analyze_metric(values, None, 95, 95, "upper", None, None, exclude=1)
    assert res.series[0].kpi.min_n == 93 and math.isnan(res.series[0].kpi.value)
    assert any("the KPI needs 93" in r for r in res.reasons)
    ok = analyze_metric(values, None, 95, 95, "upper", None, None, exclude=0)
    assert ok.series[0].kpi.rank == 70


def test_analyze_and_record_say_when_no_trial_has_a_value(cli_in_process, write_spec, tmp_path):
    spec = write_spec(
        """
        factor x in [1, 2]
        benchmark b {
          run "echo v={x}; exit 3"
          measure v from stdout regex "v=([0-9]+)"
        }
        metric v { measure mean better lower }
        kpi v { percentile 50 confidence 75% }
        design { runs 3 }
        """
    )
    store = tmp_path / "s.sqlite"
    # --keep-going: every trial fails, and the test is about the store of a whole such run
    assert cli_in_process(["run", spec, "--store", store, "--keep-going"])[0] == 1
    for command in (["analyze", "--store", store], ["record", "--store", store]):
        status, out, err = cli_in_process(command)
        assert status == 2 and out == "", command
        assert "nothing to analyse" in err and "has a value of v (6 trials, 6 failed)" in err
