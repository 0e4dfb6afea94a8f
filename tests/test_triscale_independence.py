"""Independence test (TriScale §4.5, made sound): calibration and power by simulation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.signal import lfilter
from scipy.stats import norm

from benchlang.stats import independence
from benchlang.stats.independence import independence_batch, ljung_box_lags

SIZES = [10, 20, 30, 50, 100, 200, 500, 1000]


def ar1(rng: np.random.Generator, reps: int, n: int, phi: float) -> np.ndarray:
    e = rng.normal(size=(reps, n))
    e[:, 0] /= math.sqrt(1 - phi**2)
    return lfilter([1.0], [1.0, -phi], e, axis=1)


def fail_rate(x: np.ndarray) -> float:
    return 1.0 - float(independence_batch(x)["passed"].mean())


def test_matches_statsmodels_acf_and_ljung_box():
    from statsmodels.stats.diagnostic import acorr_ljungbox  # statsmodels and pandas: 2 s
    from statsmodels.tsa.stattools import acf

    rng = np.random.default_rng(11)
    for n in (12, 80, 700):
        x = ar1(rng, 1, n, 0.3)[0]
        res = independence(x)
        h = ljung_box_lags(n)
        assert res.lags == h
        np.testing.assert_allclose(res.acf, acf(x, nlags=h)[1:], rtol=1e-10)
        lb = acorr_ljungbox(x, lags=[h])
        assert res.ljung_box_p == pytest.approx(float(lb["lb_pvalue"].iloc[0]), rel=1e-9)


def test_batch_and_single_agree():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(50, 40))
    x[::3] += np.linspace(0, 2, 40)
    batch = independence_batch(x)
    single = np.array([independence(row).passed for row in x])
    np.testing.assert_array_equal(batch["passed"], single)


def test_iid_passes_at_the_nominal_rate_for_every_n():
    rng = np.random.default_rng(1)
    for n in SIZES:
        for draw in (rng.normal, rng.exponential):
            rate = 1.0 - fail_rate(draw(size=(2000, n)))
            assert 0.925 <= rate <= 0.975, (n, rate)


def test_ar1_half_fails_from_n_50():
    rng = np.random.default_rng(2)
    rates = {n: fail_rate(ar1(rng, 2000, n, 0.5)) for n in SIZES}
    assert rates[50] >= 0.75 and all(rates[n] >= 0.95 for n in SIZES if n >= 100), rates
    assert all(fail_rate(ar1(rng, 1000, n, 0.9)) >= 0.99 for n in (50, 100, 1000))


def test_trend_of_one_sd_fails_increasingly_and_near_the_best_possible():
    """A 1-SD linear drift over N values: no 5%-level test can flag it every time at N = 30.

    The oracle (known direction and sigma, one-sided z-test of the OLS slope at level 2.5%,
    our trend share) has power Phi(z - 1.96), z = sqrt(N(N+1) / (12(N-1))): 0.37 at N = 30.
    """
    rng = np.random.default_rng(3)
    for n in SIZES:
        x = rng.normal(size=(2000, n)) + np.linspace(0.0, 1.0, n)
        rate = fail_rate(x)
        oracle = norm.cdf(math.sqrt(n * (n + 1) / (12 * (n - 1))) - 1.96)
        if n >= 30:
            assert rate >= max(0.2, 0.65 * oracle), (n, rate, oracle)
        if n >= 300:
            assert rate >= 0.95, (n, rate)


def test_seasonal_sine_and_trend_fail():
    t = np.arange(200)
    rng = np.random.default_rng(8)
    sine = np.sin(2 * np.pi * t / 24) + rng.normal(scale=0.3, size=t.size)
    res = independence(sine)
    assert not res.passed and not res.uncorrelated
    assert not independence(np.arange(30.0) + rng.normal(scale=0.5, size=30)).stationary


def test_constant_and_tiny_inputs():
    assert independence(np.full(20, 3.0)).passed
    small = independence([1.0, 2.0, 3.0])
    assert not small.passed and "too few" in small.reason
    json.dumps(independence(np.arange(10.0)).to_dict())
