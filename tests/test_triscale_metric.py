"""Metric with convergence test (TriScale §4.1, §4.5): windows, scaling, LEDBAT-like runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from scipy.stats import theilslopes

from benchlang.stats import metric
from benchlang.stats._windows import (
    window_extreme,
    window_mean,
    window_order_stats,
    window_percentile,
)
from benchlang.stats.metric import parse_measure, trim_count, window_starts


@pytest.mark.parametrize("n", [2, 3, 7, 101, 199, 200, 201, 1000, 12345])
def test_windows_cover_the_whole_run(n):
    starts, w = window_starts(n)
    assert w == math.ceil(n / 2)
    assert starts[0] == 0 and starts[-1] + w == n
    assert starts.size == min(100, n - w + 1)
    assert np.all(np.diff(starts) >= 1)
    if n >= 1000:
        step = np.diff(starts)
        assert step.max() - step.min() <= 1 and abs(step.mean() - w / 100) <= 0.02 * w


def test_odd_length_keeps_the_last_sample():
    x = np.zeros(101)
    x[-1] = 50.0
    m = metric(x, "max", (95, 5))
    assert m.window_values.max() == 50.0
    assert metric(x, "max").value == 50.0


def _reference(x, measure):
    starts, w = window_starts(x.size)
    windows = sliding_window_view(x, w)[starts]
    if measure == "mean":
        return windows.mean(axis=1)
    if measure == "min":
        return windows.min(axis=1)
    if measure == "max":
        return windows.max(axis=1)
    return np.percentile(windows, measure, axis=1)


@pytest.mark.parametrize("n", [5, 64, 1001, 30_001])
def test_vectorised_windows_match_the_definition(n):
    rng = np.random.default_rng(n)
    x = rng.lognormal(size=n)
    x[::5] = 1.0  # ties
    starts, w = window_starts(n)
    np.testing.assert_allclose(window_mean(x, starts, w), _reference(x, "mean"), rtol=1e-12)
    assert np.array_equal(window_extreme(x, starts, w, "min"), _reference(x, "min"))
    assert np.array_equal(window_extreme(x, starts, w, "max"), _reference(x, "max"))
    ref = np.sort(sliding_window_view(x, w)[starts], axis=1)
    for q in (0.1, 25, 50, 95, 99.9):
        np.testing.assert_allclose(window_percentile(x, starts, w, q), _reference(x, q))
        k = math.floor((w - 1) * q / 100)
        assert np.array_equal(window_order_stats(x, starts, w, np.array([k]))[0], ref[:, k])


def test_rank_buckets_on_a_large_run_match_numpy():
    rng = np.random.default_rng(77)
    x = np.round(rng.exponential(size=300_000), 2)  # many ties
    starts, w = window_starts(x.size)
    assert starts.size * w > 20_000  # the bucket path, not the direct one
    sub = starts[::9]
    np.testing.assert_allclose(
        window_percentile(x, sub, w, 95), np.percentile(sliding_window_view(x, w)[sub], 95, axis=1)
    )


def test_convergence_by_hand_follows_theil_sen():
    rng = np.random.default_rng(12)
    x = rng.normal(10, 1, size=400)
    m = metric(x, "mean", (95, 5))
    starts, w = window_starts(400)
    vals = _reference(x, "mean")
    centres = starts + (w - 1) / 2
    xs = 2 * (centres - centres[0]) / (centres[-1] - centres[0]) - 1
    ys = (2 * vals - (x.min() + x.max())) / (x.max() - x.min())
    res = theilslopes(ys, xs, alpha=0.95)
    assert m.slope == pytest.approx(res.slope)
    assert m.slope_ci == pytest.approx((res.low_slope, res.high_slope))
    assert m.converged and m.value == pytest.approx(np.median(vals))
    assert m.windows == 100 and m.window_length == 200


def _ledbat(rng, n=2000):
    t = np.arange(n)
    ramp = np.minimum(t / (0.6 * n), 1.0)
    return 10.0 * ramp + rng.normal(0, 0.5, size=n)


@pytest.mark.parametrize("measure", ["mean", 50, 95])
def test_ledbat_like_run_fails_and_passes_once_trimmed(measure):
    rng = np.random.default_rng(2020)
    x = _ledbat(rng)
    failed = metric(x, measure, (95, 5))
    assert failed.converged is False and math.isnan(failed.value)
    assert failed.slope > 0 and failed.slope_ci[1] > 0.05
    trimmed = metric(x, measure, (95, 5), trim=0.6)
    assert trimmed.converged and trimmed.trimmed == 1200 and trimmed.n == 800
    assert trimmed.value == pytest.approx(np.median(trimmed.window_values))
    assert metric(x, measure, (95, 5), trim=1200).value == trimmed.value


def test_ledbat_like_run_fails_for_the_maximum_too():
    assert metric(_ledbat(np.random.default_rng(2020)), "max", (95, 5)).converged is False


@pytest.mark.parametrize("measure", ["mean", "median", 95, "min"])
def test_stationary_noise_passes_and_a_linear_trend_fails(measure):
    rng = np.random.default_rng(31)
    noise = rng.normal(100, 5, size=5000)
    assert metric(noise, measure, (95, 5)).converged
    trend = noise + np.linspace(0, 20, 5000)
    assert metric(trend, measure, (95, 5)).converged is False


def test_without_convergence_is_the_plain_measure():
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, np.nan])
    finite = x[np.isfinite(x)]
    assert metric(x, "mean").value == pytest.approx(finite.mean())
    assert metric(x, "median").value == np.median(finite)
    assert metric(x, 90).value == pytest.approx(np.percentile(finite, 90))
    assert metric(x, "p90").value == metric(x, 90.0).value
    assert metric(x, "min").value == 1.0 and metric(x, "max").value == 9.0
    assert metric(x, "mean").converged is None
    json.dumps(metric(x, "mean", (95, 5)).to_dict())


def test_constant_and_short_runs():
    assert metric(np.full(50, 2.0), "mean", (95, 5)).converged
    short = metric(np.array([1.0]), "mean", (95, 5))
    assert short.converged is False and math.isnan(short.value)


def test_bad_measure_and_trim():
    for bad in ("avg", 0, 100, True):
        with pytest.raises(ValueError):
            parse_measure(bad)
    for bad in (1.0, -0.1, -3, True):
        with pytest.raises(ValueError):
            trim_count(100, bad)
    assert trim_count(100, 0.25) == 25 and trim_count(100, 500) == 100
