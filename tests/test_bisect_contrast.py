"""The within-round contrast bisect decides a step with (stats.round_contrast): the paired t
interval of log values, checked against scipy, the session's level cancelling, and rounds
with a missing build left out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchlang.stats.round_contrast import round_contrast


def rounds(seed: int, n: int, levels: tuple[float, ...], noise: float = 0.03) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array(levels) * np.exp(rng.normal(0, noise, (n, len(levels))))


def test_the_interval_is_the_paired_t_interval_of_log_values():
    x = rounds(1, 8, (1.0, 1.2, 1.4))
    c = round_contrast(x, (-0.5, 1.0, -0.5), 99.0)
    d = np.log(x[:, 1]) - (np.log(x[:, 0]) + np.log(x[:, 2])) / 2
    lo, hi = stats.t.interval(0.99, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    assert (c.estimate, c.lower, c.upper) == pytest.approx((d.mean(), lo, hi), rel=1e-9)
    assert c.rounds == 8 and c.confidence == 99.0
    ratio = round_contrast(x, (-1.0, 1.0, 0.0))
    assert ratio.ratio[0] == pytest.approx(math.exp(np.mean(np.log(x[:, 1] / x[:, 0]))))


def test_a_level_shared_by_the_round_cancels():
    x = rounds(2, 6, (1.0, 1.0, 1.4))
    moved = x * np.array([[1.25], [0.8], [1.1], [0.9], [1.3], [0.7]])  # each round's level
    a = round_contrast(x, (-1.0, 1.0, 0.0))
    b = round_contrast(moved, (-1.0, 1.0, 0.0))
    assert (a.estimate, a.lower, a.upper) == pytest.approx((b.estimate, b.lower, b.upper))
    assert a.lower < 0 < a.upper  # the same level reads as the same


def test_rounds_missing_a_build_are_left_out_and_two_are_needed():
    x = rounds(3, 5, (1.0, 1.4))
    x[1, 0] = np.nan
    x[3, 1] = 0.0
    c = round_contrast(x, (-1.0, 1.0))
    assert c.rounds == 3
    kept = x[[0, 2, 4]]
    assert c.estimate == pytest.approx(np.mean(np.log(kept[:, 1] / kept[:, 0])))
    one = round_contrast(x[:2], (-1.0, 1.0))
    assert one.rounds == 1 and math.isnan(one.lower) and math.isnan(one.estimate)
    unused = round_contrast(
        np.column_stack([x[:, 0], x[:, 0] * 1.1, np.full(5, np.nan)]), (-1, 1, 0)
    )
    assert unused.rounds == 4  # a build the contrast does not use may be missing


def test_a_metric_where_higher_is_better_regresses_downwards():
    """bisect's decisions on rounds x [good, step, bad] values: for throughput (better
    higher) the bad endpoint is the lower one, and a step at the good level reads good."""
    from benchlang.app.history.bisect import endpoint_pairs, judge

    ends = {("ops", "w"): rounds(4, 6, (1.4, 1.0)), ("ops", "v"): rounds(5, 6, (1.0, 1.0))}
    evidence, regressed = endpoint_pairs(ends, {"ops": "higher"}, 95.0)
    assert regressed == [{"metric": "ops", "configuration": "w", "sign": -1.0}]
    assert [e["regressed"] for e in evidence] == [True, False]
    verdict, why = judge({("ops", "w"): rounds(6, 6, (1.4, 1.4, 1.0))}, regressed, 99.0)
    assert verdict == "good" and why[0]["reading"] == "same as good"
    verdict, why = judge({("ops", "w"): rounds(7, 6, (1.4, 1.0, 1.0))}, regressed, 99.0)
    assert verdict == "bad" and why[0]["reading"] == "same as bad"
    verdict, why = judge({("ops", "w"): rounds(8, 1, (1.4, 1.2, 1.0))}, regressed, 99.0)
    assert verdict is None and why[0]["vs_good"] == [None, None, None]
    assert "null_reasons" in why[0]
