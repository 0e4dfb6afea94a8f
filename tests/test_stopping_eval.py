"""The stopping-rule evaluation harness and the issue-5 target on synthetic and real streams."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from benchlang.cli import stopping_eval as cli
from benchlang.errors import UserError
from benchlang.stats.stopping import AdaptiveStop, FixedStop
from benchlang.stats.stopping_eval import (
    SYNTHETIC_CRITERIA,
    evaluate,
    optimal_stop,
    prefix_ks_distances,
    synthetic_streams,
)

STREAMS = Path(__file__).parent / "data" / "streams"


@pytest.mark.parametrize("rounding", [None, 0])
def test_prefix_ks_equals_scipy(rounding):
    x = np.random.default_rng(1).lognormal(0.0, 1.0, 700)
    if rounding is not None:
        x = np.round(x, rounding)  # many ties
    d = prefix_ks_distances(x)
    for k in (1, 2, 17, 255, 256, 257, 500, 700):
        assert d[k - 1] == pytest.approx(stats.ks_2samp(x[:k], x).statistic, abs=1e-12)


def test_optimal_stop_is_the_last_crossing():
    d = np.array([0.9, 0.5, 0.05, 0.2, 0.09, 0.08, 0.1, 0.02])
    assert optimal_stop(d, 0.1) == 5
    assert optimal_stop(d, 0.95) == 1
    assert optimal_stop(np.array([0.3, 0.3]), 0.1) == 3


def test_evaluate_a_fixed_rule():
    x = np.random.default_rng(2).normal(10.0, 1.0, 1000)
    e = evaluate(x, FixedStop(100))
    assert (e.stop_n, e.action, e.n) == (100, "stop", 1000)
    assert e.ks == pytest.approx(stats.ks_2samp(x[:100], x).statistic)
    assert e.ratio == pytest.approx(100 / e.optimal_n)
    assert e.mean_error == pytest.approx(abs(x[:100].mean() - x.mean()) / x.mean())
    never = evaluate(x[:50], FixedStop(60))
    assert never.action == "continue" and never.stop_n == 50 and not never.passed()


def test_synthetic_streams_are_seeded_and_long():
    a, b = synthetic_streams(5), synthetic_streams(5)
    assert list(a) == list(SYNTHETIC_CRITERIA) and len(a) == 10
    for name in a:
        assert a[name].size >= 1000 and np.array_equal(a[name], b[name])
    assert not np.array_equal(synthetic_streams(6)["normal"], a["normal"])
    with pytest.raises(ValueError):
        synthetic_streams(5, n=999)


@pytest.mark.slow
def test_issue_target_on_the_ten_synthetic_streams():
    rule = AdaptiveStop(ks=0.1, min_n=10, max_n=400)
    results = {name: evaluate(x, rule, 0.1) for name, x in synthetic_streams(5).items()}
    passed = {name: e.passed(SYNTHETIC_CRITERIA[name]) for name, e in results.items()}
    assert sum(passed.values()) >= 7, {
        n: (e.stop_n, e.optimal_n, round(e.ks, 3)) for n, e in results.items()
    }
    assert (
        results["drifting"].action == "stop_warn"
        and results["drifting"].detected_class == "drifting"
    )
    assert results["near_constant"].detected_class == "constant"
    assert results["near_constant"].mean_error <= 0.01
    for e in results.values():
        assert e.stop_n <= 400


@pytest.mark.parametrize("path", sorted(STREAMS.glob("*.csv")), ids=lambda p: p.stem)
def test_real_streams_replay(path):
    x = cli.read_stream(path)
    assert x.size >= 1000 and np.all(x > 0)
    e = evaluate(x, AdaptiveStop())
    assert e.stop_n <= 400 and e.action in ("stop", "stop_warn")
    assert e.ks == pytest.approx(stats.ks_2samp(x[: e.stop_n], x).statistic)


def run_cli(argv):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    cli.add_parser(sub)
    args = p.parse_args(["stopping-eval", *argv])
    return args.func(args)


def test_cli_table_and_json(tmp_path, capsys):
    x = synthetic_streams(5)["normal"]
    js = tmp_path / "normal.json"
    js.write_text(json.dumps(x.tolist()))
    csv_path = tmp_path / "two.csv"
    csv_path.write_text("host,ms,other\n" + "\n".join(f"a,{v},{v * 2}" for v in x))
    assert run_cli([str(js)]) == 0
    out = capsys.readouterr().out
    assert "normal.json" in out and "optimal" in out
    assert run_cli([str(js), str(csv_path), "--column", "ms", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["streams"]
    assert rows[0]["stop_n"] == rows[1]["stop_n"] == evaluate(x, AdaptiveStop()).stop_n
    assert rows[0]["detected_class"] and isinstance(rows[0]["passed"], bool)


def test_cli_errors(tmp_path):
    short = tmp_path / "short.json"
    short.write_text(json.dumps([1.0] * 999))
    with pytest.raises(UserError, match="at least 1000"):
        run_cli([str(short)])
    two = tmp_path / "two.csv"
    two.write_text("a,b\n" + "1,2\n" * 1000)
    with pytest.raises(UserError, match="2 numeric columns"):
        run_cli([str(two)])
    with pytest.raises(UserError, match="no column"):
        run_cli([str(two), "--column", "c"])
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    with pytest.raises(UserError, match="JSON list"):
        run_cli([str(bad)])
    with pytest.raises(UserError, match="cannot read"):
        run_cli([str(tmp_path / "missing.csv")])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=12), min_size=2, max_size=300),
    st.data(),
)
def test_prefix_ks_matches_scipy_on_any_stream(values, data):
    x = np.asarray(values, dtype=float)
    k = data.draw(st.integers(min_value=1, max_value=x.size))
    assert prefix_ks_distances(x)[k - 1] == pytest.approx(
        stats.ks_2samp(x[:k], x).statistic, abs=1e-12
    )
