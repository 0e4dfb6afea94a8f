"""Warm-up and cool-down suggestion from repeated requests (Bakshy & Frachtenberg, WWW 2015, §2.2)."""

from __future__ import annotations

import numpy as np
import pytest

from benchlang.design.layouts import layout_schedule
from benchlang.stats.ab.designs import VarianceComponents
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes
from benchlang.stats.ab.warmup import suggest_warmup

COMPS = VarianceComponents.from_sd(
    request=1.0, host=0.3, request_batch=0.2, host_batch=0.1, residual=0.2
)


def data(warm: np.ndarray | None = None, cool: np.ndarray | None = None, seed: int = 0):
    s = layout_schedule("fully_balanced", 8, 40, 4, seed=seed)
    d = ABDesign.from_schedule(s)
    y = simulate_outcomes(d, COMPS, 1, np.random.default_rng(seed))[0]
    n_run = 40 // 8 * 4
    if warm is not None:
        y[s.position < warm.size] += warm[s.position[s.position < warm.size]]
    if cool is not None:
        back = n_run - 1 - s.position
        y[back < cool.size] += cool[back[back < cool.size]]
    return y, s


def suggestions(seeds, **kwargs):
    out = []
    for seed in seeds:
        y, s = data(seed=seed, **kwargs)
        out.append(suggest_warmup(y, s.request, s.host * 2 + s.batch, s.position))
    return out


def test_no_transient_rarely_suggests_anything():
    rs = suggestions(range(20))
    assert sum((r.warmup, r.cooldown) == (0, 0) for r in rs) >= 18
    assert rs[1].batches == 16 and rs[1].position_mean.size == 20
    assert abs(np.mean([r.autocorrelation for r in rs])) < 0.1


def test_decaying_warmup_and_a_slow_tail_are_found():
    rs = suggestions(range(20), warm=np.array([2.0, 1.0, 0.5]), cool=np.array([0.8]))
    assert sum(r.warmup == 3 for r in rs) >= 15
    assert sum(r.cooldown == 1 for r in rs) >= 15
    assert all(r.warmup >= 3 and r.cooldown >= 1 for r in rs)
    assert all(r.position_mean[0] > r.position_mean[5] + 1.0 for r in rs)


def test_trials_in_any_row_order_give_the_same_answer():
    y, s = data(warm=np.array([2.0, 1.0]))
    perm = np.random.default_rng(1).permutation(y.size)
    a = suggest_warmup(y, s.request, s.host * 2 + s.batch, s.position)
    b = suggest_warmup(y[perm], s.request[perm], (s.host * 2 + s.batch)[perm], s.position[perm])
    assert (a.warmup, a.cooldown) == (b.warmup, b.cooldown)
    assert a.autocorrelation == pytest.approx(b.autocorrelation)


def test_needs_repeated_requests():
    s = layout_schedule("fully_balanced", 4, 16, 1)
    with pytest.raises(ValueError, match="repeated"):
        suggest_warmup(np.ones(s.trials), s.request, s.host * 2 + s.batch, s.position)


def test_independent_errors_rarely_read_as_dependent_trials():
    """60 seeded pilots without a transient or dependence: the lags after the position effects
    lie beyond their (centred, Bonferroni) bounds in few; judged around 0, each lag at 5%, the
    note fired in 81% (the residuals share their request's mean, which pulls every lag below 0).
    The expectation under independence is exact: the mean over pilots matches it."""
    rs = suggestions(range(60))
    assert sum(r.dependent_lags.size > 0 for r in rs) <= 6
    mean = np.mean([r.acf_after for r in rs], axis=0)
    expected = np.mean([r.acf_null_after for r in rs], axis=0)
    assert expected[3] < -0.03
    assert np.abs(mean - expected).max() < 0.015


def test_neighbouring_trials_that_influence_each_other_are_found():
    """AR(1) errors (phi 0.4) within each host batch: lag 1 lies beyond its bound in most."""
    found = 0
    for seed in range(20):
        y, s = data(seed=seed)
        rng = np.random.default_rng(100 + seed)
        batch = s.host * 2 + s.batch
        for b in np.unique(batch):
            idx = np.flatnonzero(batch == b)[np.argsort(s.position[batch == b])]
            e = np.zeros(idx.size)
            for i in range(idx.size):
                e[i] = (0.4 * e[i - 1] if i else 0.0) + 0.3 * rng.standard_normal()
            y[idx] += e
        r = suggest_warmup(y, s.request, batch, s.position)
        found += 1 in r.dependent_lags
    assert found >= 16


def test_values_must_be_finite():
    y, s = data(seed=0)
    y[3] = np.nan
    with pytest.raises(ValueError, match="finite"):
        suggest_warmup(y, s.request, s.host * 2 + s.batch, s.position)
    empty = np.zeros(0, dtype=np.int64)
    with pytest.raises(ValueError, match="no successful trials"):
        suggest_warmup(np.zeros(0), empty, empty, empty)


def test_identical_values_suggest_nothing_and_flag_no_lag():
    y, s = data(seed=0)
    r = suggest_warmup(np.full(y.size, 3.0), s.request, s.host * 2 + s.batch, s.position)
    assert (r.warmup, r.cooldown) == (0, 0) and r.dependent_lags.size == 0
    assert np.isfinite(r.acf_bound).all() and np.isfinite(r.acf_null_after).all()


def test_each_lags_bound_is_the_exact_null_sd_of_the_fits_residual_autocorrelation():
    """The bound's SD (Durbin & Watson 1950 §3 moments) against the SD of the lag
    autocorrelations of least-squares residuals of 4,000 white-noise vectors, fitted here with
    the design matrix written out (cell dummies, then a dummy per tested position from the
    start and from the end of the batch), independently of the module's algebra."""
    s = layout_schedule("fully_balanced", 4, 16, 2, seed=1)
    batch = s.host * 2 + s.batch
    y = simulate_outcomes(ABDesign.from_schedule(s), COMPS, 1, np.random.default_rng(1))[0]
    r = suggest_warmup(y, s.request, batch, s.position)
    order = np.lexsort((s.position, batch))
    run = np.unique(batch, return_inverse=True)[1][order]
    cell = np.unique(np.stack([batch, s.request], 1), axis=0, return_inverse=True)[1].ravel()
    length = np.bincount(run)[run]
    pos = s.position[order]
    back = length - 1 - pos
    columns = [cell[order] == c for c in range(cell.max() + 1)]
    columns += [pos == k for k in range(r.tested)] + [back == k for k in range(r.tested)]
    X = np.column_stack(columns).astype(float)
    e = np.random.default_rng(7).standard_normal((4000, y.size))
    resid = e - (X @ np.linalg.lstsq(X, e.T, rcond=None)[0]).T
    acf = np.column_stack(
        [
            np.sum(resid[:, :-lag] * resid[:, lag:] * (run[:-lag] == run[lag:]), axis=1)
            for lag in r.lags
        ]
    ) / np.sum(resid**2, axis=1, keepdims=True)
    assert r.acf_bound / r.lag_z == pytest.approx(acf.std(axis=0, ddof=1), rel=0.06)
    assert r.acf_null_after == pytest.approx(acf.mean(axis=0), abs=0.006)
