"""stats.headline: the cluster-bootstrap ratio intervals cover the true ratio at least as often
as asked (1,000 seeded datasets per design), exact results on fixed seeded data, and the
assumption checks (too few clusters -> descriptive only)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlang.stats._multistage import multistage_weights
from benchlang.stats._weighted import replicate_percentiles, weighted_percentile
from benchlang.stats.headline import expansion, rank


def design(series: int, rounds: int, k: int = 2):
    """Trial columns of a design: every configuration once per round, rounds in series."""
    s, r, c = np.meshgrid(np.arange(series), np.arange(rounds), np.arange(k), indexing="ij")
    return c.ravel(), np.stack([s.ravel(), s.ravel() * rounds + r.ravel()], axis=1)


def simulate(rng, series, rounds, sd_series, sd_round, sd_inter, sd_noise, log_ratio):
    """Log-normal values with series and round effects shared by both configurations, a
    series x configuration interaction and noise; configuration 1 is exp(log_ratio) slower."""
    a = rng.normal(0, sd_series, (series, 1, 1))
    b = rng.normal(0, sd_round, (series, rounds, 1))
    g = rng.normal(0, sd_inter, (series, 1, 2))
    e = rng.normal(0, sd_noise, (series, rounds, 2))
    return np.exp(np.array([0.0, log_ratio]) + a + b + g + e).ravel()


@pytest.mark.parametrize(
    ("series", "rounds", "effects"),
    [
        (5, 5, (0.10, 0.05, 0.05, 0.05)),  # the quickstart's shape, with series effects
        (1, 25, (0.0, 0.05, 0.0, 0.05)),  # one series: rounds are the clusters
    ],
)
def test_ratio_intervals_cover_at_least_nominal(series, rounds, effects):
    rng = np.random.default_rng(20240601)
    config, clusters = design(series, rounds)
    truth = 0.2
    hits, n = 0, 1000
    for d in range(n):
        values = simulate(rng, series, rounds, *effects, truth)
        r = rank(values, config, clusters, replicates=400, seed=d)
        c = r.comparisons[0]
        true = math.exp(truth) if c.worse == 1 else math.exp(-truth)
        hits += c.lower <= true <= c.upper
    coverage = hits / n
    print(f"coverage {series}x{rounds}: {coverage:.3f}")
    assert coverage >= 0.95


def test_exact_ranking_on_fixed_seeded_data():
    """The seeded bootstrap, pinned (``min_clusters=5``: by default 5 series get the
    cluster-level t, tests/test_few_units_ranking.py)."""
    rng = np.random.default_rng(7)
    config, clusters = design(5, 5, k=3)
    values = np.exp(np.array([0.5, 0.0, 0.2])[config] + rng.normal(0, 0.03, config.size))
    boot = {"level_names": ["series", "round"], "seed": 1, "replicates": 2000, "min_clusters": 5}
    r = rank(values, config, clusters, **boot)
    assert r.order == (1, 2, 0)
    assert r.levels == ("series", "round") and r.units == (5, 25)
    assert not r.descriptive_only and r.reasons == ()
    got = [
        (c.better, c.worse, round(c.ratio, 4), round(c.lower, 4), round(c.upper, 4))
        for c in r.comparisons
    ]
    assert got == EXACT, got
    assert all(c.clear for c in r.comparisons)
    again = rank(values, config, clusters, **boot)
    assert again == r


EXACT = [(1, 2, 1.2115, 1.1476, 1.2554), (1, 0, 1.6223, 1.5353, 1.7078)]


def test_higher_is_better_orients_the_ratio():
    config, clusters = design(1, 30)
    values = np.where(config == 0, 100.0, 150.0) * (1 + 0.01 * np.sin(np.arange(config.size)))
    r = rank(values, config, clusters, better="higher", seed=3)
    assert r.order == (1, 0)
    c = r.comparisons[0]
    assert c.ratio == pytest.approx(1.5, rel=0.02) and c.lower > 1.0


def test_too_few_clusters_is_descriptive_only():
    config, clusters = design(1, 2)
    values = np.where(config == 0, 1.0, 2.0) + 0.01 * np.arange(config.size)
    r = rank(values, config, clusters, level_names=["series", "round"])
    assert r.descriptive_only
    assert "2 round units are too few clusters" in r.reasons[0]
    c = r.comparisons[0]
    assert math.isnan(c.lower) and math.isnan(c.upper) and not c.clear
    assert c.ratio == pytest.approx(2.0, rel=0.02)


def test_missing_and_non_positive_values_are_left_out_and_said():
    config, clusters = design(1, 10)
    values = np.where(config == 0, 1.0, 2.0)
    values[0] = np.nan
    values[1] = -1.0
    r = rank(values, config, clusters)
    assert "2 values left out (missing or not positive)" in r.reasons
    assert not r.descriptive_only


def test_weighted_percentile_is_the_usual_median_with_unit_weights():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert weighted_percentile(x, np.ones((1, 4)), 50)[0] == 2.5
    assert weighted_percentile(x[:3], np.ones((1, 3)), 50)[0] == 2.0
    assert weighted_percentile(x, np.array([[0, 0, 1, 0]]), 50)[0] == 3.0
    assert math.isnan(weighted_percentile(x, np.zeros((1, 4)), 50)[0])


def test_unit_percentile_is_the_weighted_percentile_with_unit_weights():
    from benchlang.stats._weighted import unit_percentile

    rng = np.random.default_rng(9)
    for n in (1, 2, 3, 4, 5, 10, 99, 100, 1001):
        x = np.sort(rng.normal(size=n))
        for p in (0.1, 2.5, 25, 50, 75, 90, 97.5, 99.9):
            assert unit_percentile(x, p) == weighted_percentile(x, np.ones((1, n)), p)[0]
    assert math.isnan(unit_percentile(np.empty(0), 50))


def test_multistage_weights_keep_every_level_total():
    clusters = np.array([[s, s * 4 + r] for s in range(3) for r in range(4)])
    weights, leaf = multistage_weights(clusters, 500, np.random.default_rng(0))
    assert weights.shape == (500, 12) and (weights.sum(axis=1) == 12).all()
    assert leaf.tolist() == list(range(12))


def test_expansion_factor():
    assert expansion(5, 95) == pytest.approx(math.sqrt(5 / 4) * 2.7764451 / 1.9599640, rel=1e-6)
    assert 1 < expansion(100, 95) < 1.02


def test_windowed_replicate_percentiles_equal_the_direct_ones():
    """The windowed form (a matrix product below a window, a cumulative sum inside it, the
    rest computed directly) gives exactly the direct form's percentiles, including replicates
    that cross outside the pilot's window."""
    rng = np.random.default_rng(7)
    leaves = 6000
    clusters = np.column_stack([np.arange(leaves) // 60, np.arange(leaves)])
    weights, leaf = multistage_weights(clusters, 300, rng)
    groups = []
    for scale in (1.0, 3.0):
        values = np.sort(rng.lognormal(0, scale, leaves))
        groups.append((values, rng.permutation(leaf)))
    weights[200:210] = 0
    weights[210:220, groups[0][1][:100]] += 10_000  # far below where the pilot crossed
    for percentile in (50, 90, 2.5):
        blocks = [lambda: weights[:32], lambda: weights[32:150], lambda: weights[150:]]
        got = replicate_percentiles(groups, blocks, percentile)
        for j, (values, cols) in enumerate(groups):
            direct = weighted_percentile(values, weights, percentile, columns=cols)
            assert np.array_equal(got[:, j], direct, equal_nan=True), (percentile, j)
        assert np.isnan(got[200:210]).all()
        assert (got[210:220, 0] <= groups[0][0][100]).all()  # crossed outside the window


def test_blocks_drawn_on_any_number_of_cores_give_the_same_ranking(monkeypatch):
    """Each block of replicates draws from its own stream, so one core or several (the
    blocks reduced in worker threads) give identical intervals."""
    import benchlang.stats._multistage as multistage
    import benchlang.stats._weighted as weighted

    rng = np.random.default_rng(5)
    config, clusters = design(20, 50, k=3)
    values = np.exp(np.array([0.1, 0.0, 0.3])[config] + rng.normal(0, 0.05, config.size))
    monkeypatch.setattr(multistage, "BLOCK_WEIGHTS", 2_000)  # 2 replicates per block: 193 blocks
    got = []
    for cores in (1, 3):
        monkeypatch.setattr(weighted, "cores", lambda cores=cores: cores)
        got.append(rank(values, config, clusters, replicates=400, seed=3))
    assert got[0] == got[1]
    assert got[0].comparisons[0].lower < got[0].comparisons[0].ratio


def test_dense_codes_are_the_inverse_of_unique():
    from benchlang.stats._multistage import _dense_codes

    rng = np.random.default_rng(2)
    for x in (
        rng.integers(-5, 40, 300),
        rng.integers(0, 2**40, 300),
        rng.integers(0, 3, 300).astype(np.uint8),
        rng.normal(size=50),
        np.array([], dtype=np.int64),
    ):
        want = np.unique(x, return_inverse=True)[1].ravel()
        assert np.array_equal(_dense_codes(x), want)


def test_nested_units_number_prefixes_as_unique_rows_does():
    from benchlang.stats._multistage import nested_units

    rng = np.random.default_rng(11)
    clusters = np.column_stack(
        [rng.integers(-3, 4, 500), rng.integers(0, 1000, 500), rng.integers(5, 7, 500)]
    )
    for k, level in enumerate(nested_units(clusters)):
        _, expected = np.unique(clusters[:, : k + 1], axis=0, return_inverse=True)
        assert np.array_equal(level, expected.ravel()), k
