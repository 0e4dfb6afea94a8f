"""Change points weighted by each point's interval (benchlang/stats/changepoints.py).
Seeded synthetic series; the calibration against Otava is benchmarks/
bench_changepoints_otava.py."""

from __future__ import annotations

import json

import attrs
import numpy as np
import pytest

from benchlang.stats.changepoints import ChangePoints, detect_changes


def _series(rng, n, steps=(), sd=0.02, width=0.03):
    """KPIs in lognormal noise with a step of ratio r at each (index, r), and intervals of
    about +-``width`` around each value (each width itself varying, as a KPI's does)."""
    level = np.zeros(n)
    for at, ratio in steps:
        level[at:] += np.log(ratio)
    values = np.exp(level + rng.normal(0.0, sd, n))
    half = width * np.exp(rng.normal(0.0, 0.3, n))
    return values, values * (1 - half), values * (1 + half)


@pytest.mark.parametrize("ratio", [1.10, 0.90])
def test_planted_step_found_at_its_index_with_an_interval_holding_the_ratio(ratio):
    rng = np.random.default_rng(30)
    values, lower, upper = _series(rng, 120, [(70, ratio)])
    found = detect_changes(values, lower, upper)
    assert [p.index for p in found.points] == [70]
    point = found.points[0]
    assert point.ratio_low < ratio < point.ratio_high
    assert point.ratio_low < point.ratio < point.ratio_high
    assert point.after / point.before == pytest.approx(point.ratio)
    assert point.p_value < 1e-6
    assert found.weighted and found.scale == "log"


def test_several_steps_each_found():
    """Each step within one point of its place (an 8% step is 4 noise deviations: a point
    next to it may fall either side) and its ratio inside the interval."""
    rng = np.random.default_rng(31)
    steps = [(40, 1.08), (90, 0.90), (150, 1.15)]
    values, lower, upper = _series(rng, 200, steps)
    found = detect_changes(values, lower, upper)
    assert len(found.points) == 3
    for point, (at, ratio) in zip(found.points, steps, strict=True):
        assert abs(point.index - at) <= 1
        assert point.ratio_low < ratio < point.ratio_high


def test_no_change_series_are_mostly_clean():
    """Calibration: a change point on at most alpha of series without change (5%; 300 series
    here, so at most 9% allowing 3 binomial standard errors)."""
    rng = np.random.default_rng(32)
    alarms = 0
    for _ in range(300):
        values, lower, upper = _series(rng, 100)
        found = detect_changes(values, lower, upper)
        alarms += bool(found.points or found.spread)
    assert alarms / 300 <= 0.09


def test_a_change_of_noise_is_a_spread_change_not_a_level_change():
    """The trials got twice as noisy at point 60: the intervals double, the values scatter
    twice as much, the level stays."""
    rng = np.random.default_rng(39)
    values, lower, upper = _series(rng, 120, sd=0.01, width=0.02)
    noisy = np.arange(120) >= 60
    values[noisy] *= np.exp(rng.normal(0.0, 0.01, noisy.sum()))
    lower[noisy] = values[noisy] - 2 * (values[noisy] - lower[noisy])
    upper[noisy] = values[noisy] + 2 * (upper[noisy] - values[noisy])
    found = detect_changes(values, lower, upper)
    assert found.points == ()
    assert len(found.spread) == 1 and abs(found.spread[0].index - 60) <= 2
    assert found.spread[0].ratio_low > 1.0
    assert found.spread[0].ratio_low < 2.0 < found.spread[0].ratio_high


def test_isolated_outliers_are_no_change_points():
    rng = np.random.default_rng(33)
    values, lower, upper = _series(rng, 150)
    for at in (30, 77, 120):
        values[at] *= 2.0
    assert detect_changes(values, lower, upper).points == ()


def test_a_noisy_point_weighs_less_than_a_precise_one():
    """Ten points at +15% with wide intervals (a busy machine) between precise points at one
    level: without intervals they are a segment of their own; with them they weigh almost
    nothing, no change is found."""
    rng = np.random.default_rng(34)
    values, lower, upper = _series(rng, 80, sd=0.01, width=0.02)
    values[35:45] *= 1.15
    lower[35:45], upper[35:45] = values[35:45] / 1.5, values[35:45] * 1.5
    plain = detect_changes(values)
    weighted = detect_changes(values, lower, upper)
    assert {p.index for p in plain.points} == {35, 45}
    assert weighted.points == ()


def test_weights_move_the_level_toward_precise_points():
    """The levels are weighted means: noisy high points pull the unweighted level up, the
    weighted one stays near the precise points' level. Without intervals the +5% point at 48,
    five deviations out and down-weighted, may move the place a point early."""
    rng = np.random.default_rng(35)
    values, lower, upper = _series(rng, 100, [(50, 1.2)], sd=0.01, width=0.02)
    noisy = np.arange(0, 50, 3)
    values[noisy] *= 1.05
    lower[noisy], upper[noisy] = values[noisy] / 1.3, values[noisy] * 1.3
    plain, weighted = detect_changes(values).points[0], detect_changes(values, lower, upper)
    assert weighted.points[0].index == 50 and abs(plain.index - 50) <= 1
    assert abs(weighted.points[0].before - 1.0) < abs(plain.before - 1.0)
    assert abs(weighted.points[0].ratio - 1.2) < abs(plain.ratio - 1.2)


def test_one_sided_bounds_and_unknown_intervals_are_accepted():
    rng = np.random.default_rng(37)
    values, _, upper = _series(rng, 100, [(50, 1.1)])
    upper[::7] = np.nan
    found = detect_changes(values, upper=upper)
    assert [p.index for p in found.points] == [50] and found.weighted


def _strict(document: dict) -> dict:
    return json.loads(json.dumps(document, allow_nan=False))


def test_to_dict_is_strict_json_with_reasons_for_undefined_numbers():
    rng = np.random.default_rng(38)
    values, lower, upper = _series(rng, 100, [(50, 1.1)])
    document = _strict(detect_changes(values, lower, upper).to_dict())
    assert document["points"][0]["index"] == 50 and "null_reasons" not in document
    assert isinstance(document["spread"], list)

    short = _strict(detect_changes(values[:5]).to_dict())
    assert short["points"] == [] and short["noise_cv"] is None
    assert "too few points" in short["null_reasons"]["noise_cv"]
    assert short["possible"] is None and "serial" in short["null_reasons"]

    crossing = np.concatenate([rng.normal(-1.0, 0.05, 40), rng.normal(1.0, 0.05, 40)])
    result = detect_changes(crossing)
    assert result.scale == "linear" and [p.index for p in result.points] == [40]
    point = _strict(result.to_dict())["points"][0]
    assert point["ratio"] is None and "not positive" in point["null_reasons"]["ratio"]


def test_bad_input_is_refused_or_explained():
    with pytest.raises(ValueError, match="alpha"):
        detect_changes(np.ones(20), alpha=1.5)
    with pytest.raises(ValueError, match="min_size"):
        detect_changes(np.ones(20), min_size=1)
    assert "undefined values" in detect_changes([1.0, float("nan")] * 10).note
    constant = detect_changes(np.ones(30))
    assert constant.points == () and constant.note == "the series is constant"
    assert isinstance(constant, ChangePoints)


def test_an_outlier_at_either_end_weighs_less():
    """The first and the last point are judged against the median of the window of their
    neighbours that holds them, not against copies of themselves, so an outlier there is
    down-weighted like one inside (its variance grows by |u| / 3)."""
    from benchlang.stats._changepoint_scan import huber_var

    rng = np.random.default_rng(40)
    y = rng.normal(0.0, 0.01, 200)
    y[0] += 0.2
    y[-1] -= 0.2
    y[100] += 0.2
    var = huber_var(y, np.full(200, 1e-4), 5)
    assert var[0] > 4e-4 and var[-1] > 4e-4 and var[100] > 4e-4
    assert np.median(var) == pytest.approx(1e-4)


def test_correlated_noise_is_said_descriptive_only():
    """Points that drift together from commit to commit (AR(1), coefficient 0.6) break the
    independence the p-values assume: the result says so; independent points do not."""
    rng = np.random.default_rng(41)
    drift = np.zeros(2000)
    e = rng.normal(0.0, 0.02, 2000)
    for i in range(1, 2000):
        drift[i] = 0.6 * drift[i - 1] + e[i]
    found = detect_changes(np.exp(drift))
    assert found.note and "correlated from commit to commit" in found.note
    assert "descriptive only" in found.note
    values, lower, upper = _series(rng, 2000)
    assert detect_changes(values, lower, upper).note is None


def test_a_split_of_huber_weighted_points_has_a_standard_z():
    """Down-weighted points add spread but no information, so a segment's Huber-weighted mean
    has a sandwich variance: the larger of its own, (phi I + C) / I^2 (I the full points'
    information, C the down-weighted points' psi^2 / var = c^2 / var, phi the full points'
    dispersion), and the pooled one, pooled W / I^2. On 3,000 series without change of 200
    points of heavy-tailed noise (one point in five four times as noisy, no intervals: an
    imported CSV's KPIs) the two-sample z at splits after 5, 10, 50 and 100 points has
    variance at most 1 at each split with it (0.72-0.96), 1.01 after 50 and 100 points with
    the own one alone; read as inverse variances (1 / W) the weights gave it 1.04-1.06 at
    every split (1.06-1.10 under the centred running median the weights came from before;
    benchmarks/bench_changepoints_otava.py --calibration)."""
    from benchlang.stats._changepoint_scan import (
        Dispersion,
        Sums,
        huber_capped,
        huber_info,
        huber_var,
        local_dispersion,
        noise,
    )

    rng = np.random.default_rng(42)
    n, sandwich, own, naive = 200, [], [], []
    for _ in range(3000):
        y = rng.normal(0.0, 0.016, n) * np.where(rng.random(n) < 0.2, 4.0, 1.0)
        model = noise(y, np.full(n, np.nan))
        var = huber_var(y, model.var, 5)
        full = var <= model.var
        sums = Sums(y, var, huber_info(model.var, var), huber_capped(model.var, var))
        dispersion = local_dispersion(var, y, 5, full)
        sandwich.append(sums.tuned(dispersion).scan(0, n, 5)[1][[0, 5, 45, 95]])
        alone = attrs.evolve(dispersion, pooled=0.0)
        own.append(sums.tuned(alone).scan(0, n, 5)[1][[0, 5, 45, 95]])
        plain = Sums(y, var).tuned(Dispersion(phi=dispersion.pooled))
        naive.append(plain.scan(0, n, 5)[1][[0, 5, 45, 95]])
    each = np.var(np.array(sandwich), axis=0)
    assert np.all((each > 0.7) & (each <= 1.0))
    assert np.max(np.var(np.array(own), axis=0)) > 1.0
    assert np.all(np.var(np.array(naive), axis=0) > 1.03)


def test_a_down_weighted_point_adds_psi_squared_to_its_segment_mean_variance():
    """The consistent numerator, term by term: a point 10 deviations from the running median
    adds c^2 / var (psi^2 with c = 3) to its segment's numerator and nothing to its
    information, so the mean's own variance is (phi I + c^2 / var) / I^2, unless the pooled
    pooled W / I^2 is larger; without down-weighted points it is phi / W."""
    from benchlang.stats._changepoint_scan import (
        HUBER_C,
        Dispersion,
        Sums,
        huber_capped,
        huber_info,
        huber_var,
    )

    rng = np.random.default_rng(43)
    y = rng.normal(0.0, 0.01, 40)
    y[7] += 0.1
    model_var = np.full(40, 1e-4)
    var = huber_var(y, model_var, 5)
    capped = huber_capped(model_var, var)
    assert var[7] > model_var[7] and capped[7] == pytest.approx(HUBER_C**2 / 1e-4)
    assert np.count_nonzero(capped) == 1
    sums = Sums(y, var, huber_info(model_var, var), capped)
    info, weight = 19 / 1e-4, 19 / 1e-4 + 1 / var[7]  # [0, 20): 19 full points and one not
    own = (1.3 * info + HUBER_C**2 / 1e-4) / info**2
    assert sums.tuned(Dispersion(phi=1.3, pooled=1.4)).mean(0, 20)[1] == pytest.approx(own)
    pooled = 40.0 * weight / info**2
    assert pooled > own
    assert sums.tuned(Dispersion(phi=1.3, pooled=40.0)).mean(0, 20)[1] == pytest.approx(pooled)
    assert sums.tuned(Dispersion(phi=1.3)).mean(20, 40)[1] == pytest.approx(1.3 / (20 / 1e-4))
