"""Answers under drift from the design, through the real CLI: a quickstart-like
spec whose command reports its own value (a seeded lognormal draw times a slow trend over the
run, the same factor for every configuration) fails the run-level independence check; in random
order its ranking keeps its intervals, resting on the within-round contrasts, with the
assumption in words and the failed check still reported. In a fixed order it stays descriptive
and says what to change (`order random`); a configuration with a trend of its own fails the
contrasts' check too. The values come from the trial's own seed, not from this machine's
timing, so the outcome does not depend on the machine being idle."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.stats.contrast_independence import (
    contrast_independence,
    within_round_contrasts,
)

DRAW = """BEGIN {
  srand(s); u = rand(); w = rand()
  if (u <= 0) u = 1e-12
  z = sqrt(-2 * log(u)) * cos(6.283185307179586 * w)
  printf "t=%.9f\\n", k * exp(0.1 * z) * (1 + d * t / n) * (k > 1.5 ? 1 + e * t / n : 1)
}
"""

SPEC = """benchlang 1

experiment drifting {{
  seed 1
  workdir "."
  factor k in [1, 1.3, 1.6]
  benchmark draw {{
    run "awk -v s=$BENCHLANG_SEED -v t=$BENCHLANG_TRIAL -v n=75 -v d=0.5 -v e={own} -v k={{k}} -f draw.awk"
    measure t from stdout regex "t=([0-9.]+)"
  }}
  metric t {{ measure mean unit "ms" better lower }}
  kpi t {{ percentile 50 confidence 95% }}
  variability t {{ percentile 25 confidence 75% }}
  design {{
    runs auto
    series auto
    order {order}
  }}
}}
"""
ASSUMPTION = "(a) that the drift moved every configuration alike"
RUN_FAILED = "not independent: trend over the run"


def strict(text: str):
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def run(tmp_path, capsys, order: str = "random", own: float = 0.0) -> tuple[str, str, dict, dict]:
    """`benchlang run` of the drifting spec, then `analyze` and `analyze --json` of its store:
    (the run's closing answer and analyze's full headline, lines unwrapped; the headline's
    ranking; the first configuration's analysis)."""
    (tmp_path / "draw.awk").write_text(DRAW)
    spec = tmp_path / "drift.bench"
    spec.write_text(SPEC.format(order=order, own=own))
    store = tmp_path / "drift.sqlite"
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    answer = " ".join(capsys.readouterr().out.split())
    assert main(["analyze", "--store", str(store)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert main(["analyze", "--store", str(store), "--json"]) == 0
    doc = strict(capsys.readouterr().out)
    (ranking,) = doc["headline"][0]["rankings"]
    return answer, text, ranking, doc["kpis"][0]


def test_random_order_under_drift_answers_from_the_within_round_contrasts(tmp_path, capsys):
    answer, text, ranking, kpi = run(tmp_path, capsys)
    assert f"DESCRIPTIVE ONLY: {RUN_FAILED}" in text  # the failed run-level check, reported
    assert not ranking["descriptive_only"]
    for c in ranking["comparisons"]:
        assert c["lower"] is not None and c["lower"] <= c["ratio"] <= c["upper"]
        assert f"[{c['lower']:.2f}, {c['upper']:.2f}]" in text
        assert f"[{c['lower']:.2f}, {c['upper']:.2f}]" in answer  # the run ends with it
    assert ASSUMPTION in ranking["assumption"] and ASSUMPTION in text and ASSUMPTION in answer
    assert "(c) that no configuration has a trend of its own (a warm-up)" in text
    failed = "the run-level independence check failed (trend over the run p = "
    assert ranking["check"].startswith(failed)
    assert "so the intervals rest on the within-round contrasts, whose check passed" in text
    drift = kpi["drift"]
    assert drift["answers"] and drift["design"] is None and drift["contrasts"]["passed"]
    assert drift["contrasts"]["rounds"] == 25 and drift["contrasts"]["configurations"] == 3
    assert [t["rejected"] for t in drift["contrasts"]["tests"]] == [False, False]


def test_fixed_order_under_drift_stays_descriptive_and_says_order_random(tmp_path, capsys):
    answer, text, ranking, kpi = run(tmp_path, capsys, order="fixed")
    assert f"DESCRIPTIVE ONLY: {RUN_FAILED}" in text
    assert ranking["descriptive_only"]
    assert all(c["lower"] is None for c in ranking["comparisons"])
    assert "ratios only" in text and ASSUMPTION not in text
    advice = "if every round ran every configuration in random order: `order random` in the design"
    assert ranking["reasons"][1].endswith(advice)
    assert advice in text and advice in answer
    assert kpi["drift"] == {"design": ranking["reasons"][1], "answers": False, "contrasts": None}


def test_a_configuration_with_its_own_trend_fails_the_contrasts_too(tmp_path, capsys):
    answer, text, ranking, kpi = run(tmp_path, capsys, own=0.3)
    assert ranking["descriptive_only"] and ASSUMPTION not in text + answer
    assert "and so did the within-round contrasts' check: trend of the within-round contrasts" in (
        text
    )
    assert not kpi["drift"]["answers"] and not kpi["drift"]["contrasts"]["passed"]
    assert kpi["drift"]["contrasts"]["tests"][0]["rejected"]


def aa(rng, k: int, rounds: int, series: int = 1, drift: float = 0.0, own: float = 0.0):
    """An A/A run in random order: every round runs the k configurations in a fresh order;
    values lognormal (sigma 0.1) times (1 + drift t/n); configuration 0 also trends by ``own``."""
    n = k * rounds * series
    config = np.concatenate([rng.permutation(k) for _ in range(rounds * series)])
    rnd = np.repeat(np.arange(rounds * series), k)
    t = np.arange(n)
    logs = np.log1p(drift * t / n) + np.log1p(own * (config == 0) * t / n)
    return np.exp(logs + 0.1 * rng.standard_normal(n)), config, rnd, rnd // rounds, t


def test_the_contrasts_cancel_a_common_drift_and_keep_a_configurations_own():
    rng = np.random.default_rng(47)
    v, c, r, s, t = aa(rng, 3, 10, drift=0.5)
    d = within_round_contrasts(v, c, r, s, t)
    assert d.values.shape == (10, 3) and d.left_out == 0
    assert np.allclose(d.values.sum(axis=1), 0)
    logs = np.log(v).reshape(10, 3)[np.arange(10)[:, None], np.argsort(c.reshape(10, 3), axis=1)]
    assert np.allclose(d.values, logs - logs.mean(axis=1, keepdims=True))
    # a round without every configuration is left out, not half-used
    keep = np.ones(v.size, bool)
    keep[4] = False
    d = within_round_contrasts(v[keep], c[keep], r[keep], s[keep], t[keep])
    assert d.values.shape == (9, 3) and d.left_out == 1


def test_false_alarms_under_a_common_drift_stay_at_the_level_and_own_trends_are_found():
    """A small seeded check, 50 A/A runs per cell (Holm at 5% over the two tests; 3 standard
    errors) and 30 with an own trend: the calibration, 1,000 runs a row, is
    benchmarks/sim_drift_contrasts.py's table (docs/statistics.md)."""
    n = 50
    for k, rounds, series in ((2, 30, 1), (3, 5, 5), (5, 20, 1)):
        rng = np.random.default_rng(k)
        alarms = sum(
            not contrast_independence("t", *aa(rng, k, rounds, series, drift=0.2), seed=i).passed
            for i in range(n)
        )
        assert alarms / n <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n), (k, rounds, series)
    rng = np.random.default_rng(5)
    found = sum(
        not contrast_independence("t", *aa(rng, 3, 5, 5, drift=0.2, own=0.5), seed=i).passed
        for i in range(30)
    )
    assert found >= 27


def test_autocorrelated_contrasts_are_found_and_too_few_rounds_are_not_tested():
    rng = np.random.default_rng(3)
    v, c, r, s, t = aa(rng, 2, 60)
    walk = np.repeat(np.cumsum(rng.standard_normal(60)) * 0.1, 2)
    res = contrast_independence("t", v * np.exp(walk * (c == 0)), c, r, s, t, seed=1)
    assert not res.passed and res.tests[1].rejected
    few = contrast_independence("t", *aa(rng, 3, 3), seed=1)
    assert not few.passed and few.tests == () and "fewer than 4" in few.note
    assert "could not be tested" in few.summary()


@pytest.mark.parametrize("k", [2, 4])
def test_the_check_is_the_same_whatever_the_configurations_are_called(k):
    rng = np.random.default_rng(k)
    v, c, r, s, t = aa(rng, k, 12, 2, drift=0.3)
    one = contrast_independence("t", v, c, r, s, t, seed=3)
    two = contrast_independence("t", v, 10 + 7 * c, r * 3 + 1, s + 5, t, seed=3)
    assert [x.p for x in one.tests] == [x.p for x in two.tests]


def test_many_rounds_are_tested_on_pieces_chosen_without_the_values(monkeypatch):
    import benchlang.stats.contrast_independence as ci

    monkeypatch.setattr(ci, "MAX_ROUNDS", 64)
    monkeypatch.setattr(ci, "PIECE", 16)
    rng = np.random.default_rng(9)
    res = ci.contrast_independence("t", *aa(rng, 3, 300, drift=0.2), seed=2)
    assert res.rounds == 300 and res.tests[0].values == 64  # pieces 0, 5, 10, 15 of 16 rounds
    assert "on 64 of 300 rounds (every 5th piece of 16)" in res.tests[0].method
    v, c, r, s, t = aa(rng, 2, 300)
    walk = np.repeat(np.cumsum(rng.standard_normal(300)) * 0.1, 2)
    assert not ci.contrast_independence("t", v * np.exp(walk * (c == 0)), c, r, s, t).passed
