"""Few top-level units: from 3 series, when every configuration has enough trials in every
series for its percentile, the ranking's family is the cluster-level t on per-series contrasts
(df G - 1) with a single-step max-t critical value, not a bootstrap maximum over the series
(benchmarks/sim_few_units_ranking.py, docs/statistics.md)."""

from __future__ import annotations

import contextlib
import io
import math
import re

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.stats._special import t_ppf
from benchlang.stats.cluster_t import MIN_CLUSTERS
from benchlang.stats.headline import rank
from benchlang.stats.simultaneous import bonferroni_t, cluster_max_t


def _design(series: int, rounds: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    config = np.tile(np.arange(k), series * rounds)
    rnd = np.repeat(np.arange(series * rounds), k) % rounds
    ser = np.repeat(np.arange(series), rounds * k)
    return config, np.stack([ser, rnd], axis=1)


def _quickstart(seed: int, ratio: float = 1.3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """5 series x 5 rounds of 3 configurations, c1 and c2 ``ratio`` slower than c0: a series
    level (sd 0.05), rounds (0.02), a configuration x series interaction (0.01), noise 0.10."""
    config, clusters = _design(5, 5, 3)
    rng = np.random.default_rng(seed)
    ser, rnd = clusters[:, 0], clusters[:, 1]
    logs = (
        np.array([0.0, math.log(ratio), math.log(ratio)])[config]
        + rng.normal(0, 0.05, 5)[ser]
        + rng.normal(0, 0.02, (5, 5))[ser, rnd]
        + rng.normal(0, 0.01, (5, 3))[ser, config]
        + rng.normal(0, 0.10, config.size)
    )
    return np.exp(logs), config, clusters


def test_the_quickstart_shape_gets_a_clear_interval_from_the_t():
    """5 series, 3 configurations, a 1.3x difference: the bootstrap maximum over 5 series
    (the rule before, ``min_clusters=5``) left it unresolved; the t resolves it."""
    values, config, clusters = _quickstart(5)
    names = ["series", "round"]
    r = rank(values, config, clusters, level_names=names, seed=0)
    assert r.family.df == 4 and r.family.comparisons == 3
    assert "cluster-level t over 5 series units" in r.family.method
    assert "single-step max-t over 3" in r.family.method
    assert r.order[0] == 0 and all(c.clear for c in r.comparisons)
    before = rank(values, config, clusters, level_names=names, seed=0, min_clusters=5)
    assert before.family.df is None and not all(c.clear for c in before.comparisons)


def test_the_t_interval_is_the_mean_contrast_with_the_max_t_critical_value():
    values, config, clusters = _quickstart(2)
    r = rank(values, config, clusters, level_names=["series", "round"], seed=0)
    logs = np.log(values)
    per = np.array(
        [
            [np.median(logs[(clusters[:, 0] == s) & (config == j)]) for j in range(3)]
            for s in range(5)
        ]
    )
    crit = cluster_max_t(5, 3, "pairs", 95.0)
    assert r.family.critical == crit
    for c in r.comparisons:
        d = per[:, c.worse] - per[:, c.better]
        half = crit * d.std(ddof=1) / math.sqrt(5)
        assert c.ratio == pytest.approx(math.exp(d.mean()))
        assert c.lower == pytest.approx(math.exp(d.mean() - half))
        assert c.upper == pytest.approx(math.exp(d.mean() + half))


def test_the_max_t_lies_between_one_t_and_bonferroni():
    """One contrast: t itself; more: above one contrast's t, at most Bonferroni's; deterministic.
    Tukey's pooled-scale value q(3, 4) / sqrt 2 = 3.56 is below it: that shortcut treats
    separately studentized contrasts as if they shared one scale (too liberal, the simulation)."""
    assert cluster_max_t(5, 2, "pairs", 95.0) == pytest.approx(t_ppf(0.975, 4))
    assert cluster_max_t(5, 3, "alone", 95.0) == pytest.approx(t_ppf(0.975, 4))
    for units, k in ((3, 3), (5, 3), (5, 10), (15, 5)):
        m = k * (k - 1) // 2
        crit = cluster_max_t(units, k, "pairs", 95.0)
        assert t_ppf(0.975, units - 1) < crit <= bonferroni_t(units - 1, m, 95.0)
        assert cluster_max_t(units, k, "mcb", 95.0) < crit
    assert cluster_max_t(5, 3, "pairs", 95.0) > 3.56


def test_few_series_a_and_a_claims_at_most_five_percent():
    """A/A with 6 series x 5 rounds and 3 configurations: runs with any claim within two Monte
    Carlo SEs of 5% (300 seeded data sets)."""
    config, clusters = _design(6, 5, 3)
    claims = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        ser = clusters[:, 0]
        logs = (
            rng.normal(0, 0.05, 6)[ser]
            + rng.normal(0, 0.01, (6, 3))[ser, config]
            + rng.normal(0, 0.1, config.size)
        )
        r = rank(np.exp(logs), config, clusters, level_names=["series", "round"], seed=seed)
        assert r.family.df == 5
        claims += any(c.clear for c in r.comparisons)
    assert claims / 300 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 300)


def test_many_balanced_units_keep_the_t():
    """20 series x 5 rounds: every configuration has the median's 5 trials in every series, so
    the t (no power cliff where the bootstrap would start)."""
    config, clusters = _design(20, 5, 2)
    values = np.exp(0.2 * config + np.random.default_rng(1).normal(0, 0.05, config.size))
    r = rank(values, config, clusters, level_names=["series", "round"], replicates=200)
    assert r.family.df == 19 and "cluster-level t over 20 series" in r.family.method


def test_units_too_thin_for_the_percentile_take_the_bootstrap_or_none():
    """One trial per configuration per round, ranked by p90: a round's p90 would be its one
    trial, so no t; 30 rounds (p90's 25 trials and more) take the bootstrap of the p90 (the
    ratio is of the p90s); 10 rounds, too few for that bootstrap (13.8-14.8% false claims in A/A),
    and 4 rounds, too few units for any, are descriptive only with the reason. For the median 2
    trials a series are enough for the t; one trial a series takes the bootstrap from 5."""
    config, clusters = _design(1, 30, 2)
    rng = np.random.default_rng(2)
    values = np.exp(rng.normal(0, 0.05, config.size))
    values = np.where((config == 1) & (rng.random(config.size) < 0.25), 1.6 * values, values)
    r = rank(values, config, clusters, level_names=["series", "round"], percentile=90)
    assert r.family.df is None and "bootstrap" in r.family.method
    assert r.comparisons[0].ratio == pytest.approx(max(r.statistics) / min(r.statistics))
    ten = clusters[:, 1] < 10
    r = rank(values[ten], config[ten], clusters[ten], level_names=["s", "round"], percentile=90)
    assert r.descriptive_only and r.reasons == (
        "a configuration has 1 trial in a round unit, too few for its p90 there (the "
        "cluster-level t needs 10), and 10 trials in all are too few for a bootstrap of the p90 "
        "(it needs 25)",
    )
    four = clusters[:, 1] < 4
    r = rank(values[four], config[four], clusters[four], level_names=["s", "round"], percentile=90)
    assert (
        r.descriptive_only
        and "4 round units are too few for a bootstrap (it needs 5)" in (r.reasons[0])
    )
    config, clusters = _design(MIN_CLUSTERS, 4, 2)
    r = rank(np.exp(0.1 * config + rng.normal(0, 0.05, config.size)), config, clusters)
    assert r.family.df == MIN_CLUSTERS - 1
    r = rank(np.exp(0.1 * config + rng.normal(0, 0.05, config.size)), config, clusters[:, :1])
    assert r.family.df == MIN_CLUSTERS - 1  # 4 trials per series: the median's 2 and more
    config, clusters = _design(MIN_CLUSTERS + 1, 1, 2)
    r = rank(np.exp(0.1 * config + rng.normal(0, 0.05, config.size)), config, clusters)
    assert r.family.df is None and "bootstrap" in r.family.method  # one trial a series


def test_a_missing_configuration_in_a_unit_falls_back_to_bonferroni():
    """A configuration missing from a series: the t with Bonferroni's critical value."""
    values, config, clusters = _quickstart(3)
    keep = ~((clusters[:, 0] == 3) & (config == 2)) & (clusters[:, 0] < 4)
    r = rank(values[keep], config[keep], clusters[keep], level_names=["series", "round"])
    assert "Bonferroni over 3" in r.family.method
    # the pairs with c2 have 3 series: the largest critical value and the smallest df are theirs
    assert r.family.critical == pytest.approx(bonferroni_t(2, 3, 95.0)) and r.family.df == 2
    keep = ~((clusters[:, 0] == 4) & (config == 2))
    r = rank(values[keep], config[keep], clusters[keep], level_names=["series", "round"])
    assert "Bonferroni over 3" in r.family.method and r.family.df == 3


def test_the_best_is_never_slower_than_another_with_a_missing_unit():
    """5 series whose levels differ 2.7x; B is 10% faster than A in the 3 series it ran in, C
    1.35x slower than A in two series and 14% faster in three. Per-pair means over different
    series are not transitive (the best printed a ratio of 0.95); the levels of the additive
    model order them, and every ratio to the best is at least 1, on the t and in the column."""
    level = np.array([0.0, 0.0, 0.0, 1.0, 1.0])
    rows = []
    for g in range(5):
        for r in range(5):
            rows.append((0, g, r, level[g] + 0.001 * r))
            if g >= 2:
                rows.append((1, g, r, level[g] - 0.1 + 0.001 * r))
            rows.append((2, g, r, level[g] + (0.3 if g < 2 else -0.15) + 0.001 * r))
    config = np.array([x[0] for x in rows])
    clusters = np.array([[x[1], x[2]] for x in rows])
    values = np.exp([x[3] for x in rows])
    r = rank(values, config, clusters, level_names=["series", "round"])
    assert r.family.df == 2 and r.order[0] == 1
    assert all(c.better == 1 and c.ratio >= 1.0 for c in r.comparisons)
    for c in r.comparisons:
        assert c.ratio == pytest.approx(r.statistics[c.worse] / r.statistics[c.better])


def test_the_quickstart_shape_through_import_and_analyze(tmp_path):
    values, config, clusters = _quickstart(5)
    rows = ["test,order,run_seq,position,value,series"]
    for x in range(config.size):
        s, r = clusters[x]
        rows.append(f"c{config[x]},random,{s * 5 + r},{x % 3},{values[x]:.6f},{s}")
    csv, store = tmp_path / "quick.csv", tmp_path / "quick.sqlite"
    csv.write_text("\n".join(rows) + "\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["import", str(csv), "--store", str(store), "--series-column", "series"]) == 0
        assert main(["analyze", str(store)]) == 0
    text = out.getvalue()
    ranking = " ".join(text[text.index("Ranking") :].split())
    assert "jointly at 95% over 3 comparisons, cluster-level t on 5 series (df 4)" in ranking, text
    assert (
        len(re.findall(r"c0 is 1\.\d\d× lower value than c\d \[1\.\d\d, \d\.\d\d\]", ranking)) == 2
    )


def test_a_missing_cell_takes_the_jackknife_of_the_fitted_contrast():
    """c2 missing from 3 of 8 series and c1 noisy (its configuration x series sd 0.5): each
    interval is centred on the model's contrast and scaled by that contrast's delete-one-unit
    jackknife; the pair's own contrasts' spread claimed c0 against c2 (both quiet) in 11% of
    A/A runs (a second reader), the jackknife in at most nominal here (300 seeded runs)."""
    config, clusters = _design(8, 5, 3)
    keep = ~((config == 2) & (clusters[:, 0] < 3))
    config, clusters = config[keep], clusters[keep]
    ser = clusters[:, 0]
    claims = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        logs = (
            rng.normal(0, 0.05, 8)[ser]
            + np.where(config == 1, rng.normal(0, 0.5, 8)[ser], 0.0)
            + rng.normal(0, 0.1, config.size)
        )
        r = rank(np.exp(logs), config, clusters, level_names=["series", "round"], seed=seed)
        assert "delete-one-unit jackknife" in r.family.method and r.family.df == 4
        claims += any(c.clear for c in r.comparisons)
    assert claims / 300 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 300)


def test_configurations_that_share_no_units_are_not_compared():
    """c0 and c1 in series 0-2, c2 and c3 in series 3-5: the levels of the two parts are not
    comparable (a disconnected layout), so descriptive only, with the reason."""
    config, clusters = _design(6, 5, 4)
    first = clusters[:, 0] < 3
    keep = np.where(first, config < 2, config >= 2)
    rng = np.random.default_rng(4)
    values = np.exp(rng.normal(0, 0.1, int(keep.sum())))
    r = rank(values, config[keep], clusters[keep], level_names=["series", "round"])
    assert r.descriptive_only
    assert "the configurations do not share series units enough to be compared" in r.reasons[0]


def test_layouts_that_give_no_sound_interval_say_so():
    """Three layouts a second reader found giving claims without sound intervals: a pair that
    shares no series (the jackknife has no bound for it), a configuration in only 2 of 5 series
    (a bootstrap over 2 units of a noisy configuration claimed 13-30% of A/A runs), and 7
    one-trial rounds of 3 configurations at the median (the bootstrap: 6.0%); two
    configurations from 6 one-trial rounds keep the bootstrap (2.4-3.6%)."""
    rng = np.random.default_rng(8)
    config, clusters = _design(6, 5, 3)
    ser = clusters[:, 0]
    keep = (config == 0) | ((config == 1) & (ser < 3)) | ((config == 2) & (ser >= 3))
    values = np.exp(rng.normal(0, 0.1, int(keep.sum())))
    r = rank(values, config[keep], clusters[keep], level_names=["series", "round"])
    assert r.descriptive_only and r.reasons == (
        "some configurations share too few series units for an interval (fewer than 2 in "
        "common, or removing one series unit separates them)",
    )
    assert all(math.isnan(c.lower) and not c.clear for c in r.comparisons)
    config, clusters = _design(5, 5, 3)
    keep = ~((config == 2) & (clusters[:, 0] < 3))
    values = np.exp(rng.normal(0, 0.1, int(keep.sum())))
    r = rank(values, config[keep], clusters[keep], level_names=["series", "round"])
    assert r.descriptive_only and r.reasons == (
        "configuration 2 is measured in fewer than 3 series units",
    )
    config, clusters = _design(1, 7, 3)
    r = rank(np.exp(rng.normal(0, 0.1, config.size)), config, clusters, level_names=["s", "round"])
    assert (
        r.descriptive_only
        and "7 trials in all are too few for a bootstrap of the p50" in (r.reasons[0])
    )
    config, clusters = _design(1, 6, 2)
    r = rank(np.exp(rng.normal(0, 0.1, config.size)), config, clusters, level_names=["s", "round"])
    assert not r.descriptive_only and "bootstrap" in r.family.method
