"""Clustered reweighting bootstrap (Bakshy & Frachtenberg, WWW 2015, §5) and its A/A behaviour (§6, Table 3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare, norm, poisson

from benchlang.design.layouts import layout_schedule
from benchlang.stats.ab.bootstrap import (
    ABBootstrapResult,
    TooFewClusters,
    ab_bootstrap,
    bootstrap_se_many,
    cluster_codes,
    cluster_sums,
    draw_weights,
    host_blocks,
    replicate_differences,
)
from benchlang.stats.ab.designs import VarianceComponents
from benchlang.stats.ab.simulate import ABDesign, simulate_aa, simulate_outcomes

ENDPOINT1 = VarianceComponents.from_sd(
    request=1.05, host=0.12, request_batch=0.10, host_batch=0.075, residual=0.10
)


@pytest.mark.parametrize("kind", ["poisson", "exponential", "double_or_nothing"])
def test_weights_have_mean_and_variance_one(kind):
    w = draw_weights(kind, (400_000,), np.random.default_rng(0))
    assert w.mean() == pytest.approx(1.0, abs=0.01)
    assert w.var() == pytest.approx(1.0, abs=0.02)
    assert (w >= 0).all()


def test_poisson_weights_follow_the_poisson_distribution():
    w = draw_weights("poisson", (2_000_000,), np.random.default_rng(1)).astype(int)
    observed = np.bincount(w, minlength=7)[:7].astype(float)
    observed[6] = (w >= 6).sum()
    expected = np.r_[poisson.pmf(np.arange(6), 1.0), poisson.sf(5, 1.0)] * w.size
    assert chisquare(observed, expected).pvalue > 0.001
    assert w.max() <= 12


def test_iid_bootstrap_matches_the_textbook_se():
    rng = np.random.default_rng(1)
    y = np.concatenate([rng.normal(10, 2, 3000), rng.normal(10.3, 1, 2000)])
    v = np.repeat([0, 1], [3000, 2000])
    r = ab_bootstrap(y, v, cluster="none", replicates=4000, seed=2)
    se = np.sqrt(y[v == 0].var() / 3000 + y[v == 1].var() / 2000)
    assert r.se == pytest.approx(se, rel=0.05)
    assert r.estimate == pytest.approx(y[v == 1].mean() - y[v == 0].mean())
    z = norm.ppf(0.975)
    assert (r.ci_low, r.ci_high) == pytest.approx((r.estimate - z * r.se, r.estimate + z * r.se))
    assert r.significant and r.clusters == 5000 and r.dropped == 0


def test_host_clustered_bootstrap_tracks_the_cluster_robust_se():
    # hosts carry a large shared effect: the iid SE is far too small, the host-clustered one is right
    d = ABDesign.from_schedule(layout_schedule("unbalanced", 32, 512, 1, seed=0))
    comps = VarianceComponents(host=1.0, residual=1.0)
    y = simulate_outcomes(d, comps, 1, np.random.default_rng(5))[0]
    host = ab_bootstrap(y, d.version, host=d.host, cluster="host", replicates=4000, seed=1)
    iid = ab_bootstrap(y, d.version, cluster="none", replicates=4000, seed=1)
    truth = np.sqrt(2 * (1.0 / 16 + 1.0 / 512))
    assert host.se == pytest.approx(truth, rel=0.35)
    assert iid.se < truth / 3


def test_percentile_interval_and_log_outcomes():
    rng = np.random.default_rng(3)
    base = np.exp(rng.normal(0, 0.1, 4000))
    v = np.repeat([0, 1], 2000)
    y = base * np.where(v == 1, 1.05, 1.0)
    r = ab_bootstrap(y, v, cluster="none", log=True, interval="percentile", replicates=2000, seed=4)
    assert r.relative_effect == pytest.approx(0.05, abs=0.01)
    assert r.ci_low < np.log(1.05) < r.ci_high and r.interval == "percentile"
    assert ab_bootstrap(y, v, cluster="none", replicates=50).relative_effect is None
    with pytest.raises(ValueError, match="positive"):
        ab_bootstrap(y - 2, v, cluster="none", log=True)


def test_host_blocks_group_hosts_sharing_requests():
    s = layout_schedule("request_balanced", 8, 32, 1, seed=0)
    blocks = host_blocks(s.request, s.host)
    assert np.unique(blocks).size == 4
    assert np.array_equal(np.unique(blocks * 8 + s.host).size, 8)
    fb = layout_schedule("fully_balanced", 8, 32, 1, seed=0)
    assert np.unique(host_blocks(fb.request, fb.host)).size == 8


def test_vectorised_many_experiments_agree_with_single_runs():
    d = ABDesign.from_schedule(layout_schedule("fully_balanced", 8, 64, 1, seed=0))
    Y = simulate_outcomes(d, ENDPOINT1, 3, np.random.default_rng(0))
    codes = cluster_codes("host", d.size, d.request, d.host)
    sums, counts = cluster_sums(Y, d.version, codes)
    for e in range(3):
        s1, c1 = cluster_sums(Y[e], d.version, codes)
        assert np.allclose(s1, sums[e]) and np.array_equal(c1, counts)
    est, se = bootstrap_se_many(Y, d.version, codes, 3000, "poisson", np.random.default_rng(1))
    for e in range(3):
        single = ab_bootstrap(Y[e], d.version, host=d.host, cluster="host", replicates=3000, seed=e)
        assert est[e] == pytest.approx(single.estimate)
        assert se[e] == pytest.approx(single.se, rel=0.08)


def test_replicates_losing_a_version_are_dropped_not_averaged():
    y = np.arange(4.0)
    v = np.array([0, 0, 1, 1])
    sums, counts = cluster_sums(y, v, np.array([0, 0, 1, 1]))
    reps = replicate_differences(sums, counts, 500, "poisson", np.random.default_rng(0))
    assert np.isnan(reps).any()
    r = ab_bootstrap(
        np.r_[y, y + 1],
        np.r_[v, v],
        host=np.r_[0, 1, 2, 3, 0, 1, 2, 3],
        cluster="host",
        replicates=500,
        min_clusters=2,  # below the floor on purpose: the drop mechanics are what is tested
    )
    assert r.dropped > 0 and r.replicates + r.dropped == 500


def test_bad_inputs():
    with pytest.raises(ValueError, match="needs the host"):
        ab_bootstrap(np.ones(4), np.array([0, 0, 1, 1]), cluster="host")
    with pytest.raises(ValueError, match="unknown cluster"):
        cluster_codes("user", 4)
    with pytest.raises(ValueError, match="unknown weights"):
        draw_weights("uniform", (3,), np.random.default_rng(0))
    with pytest.raises(ValueError, match="version"):
        ab_bootstrap(np.ones(4), np.array([0, 0, 2, 1]), cluster="none")


@pytest.mark.slow
def test_aa_type_i_error_pattern_of_table3():
    """Table 3: host-clustered (host-block for RB) <= ~10%; request-clustered > 40% for RB and FB; iid ~0% for FB."""
    schemes = {
        "unbalanced": ("host",),
        "request_balanced": ("request", "host_block"),
        "host_balanced": ("host",),
        "fully_balanced": ("none", "request", "host"),
    }
    rates = {
        kind: simulate_aa(
            kind, 16, 512, 1, ENDPOINT1, experiments=400, replicates=100, seed=11, schemes=s
        )
        for kind, s in schemes.items()
    }
    for kind, res in rates.items():
        host_scheme = "host_block" if kind == "request_balanced" else "host"
        # 8-16 clusters: a little above 5%; 400 experiments put +-3% of noise on a rate of 10%
        assert res.rate(host_scheme) <= 0.13, (kind, res.rate(host_scheme))
        assert res.simulated_sd == pytest.approx(res.analytic_se, rel=0.1)
    assert rates["request_balanced"].rate("request") > 0.40
    assert rates["fully_balanced"].rate("request") > 0.40
    assert rates["fully_balanced"].rate("none") <= 0.01
    # the host-clustered SE of the fully balanced layout is close to the analytic one
    fb = rates["fully_balanced"]
    host_se = next(s.mean_se for s in fb.schemes if s.cluster == "host")
    assert host_se == pytest.approx(fb.analytic_se, rel=0.15)


def test_aa_power_with_a_real_effect():
    res = simulate_aa(
        "fully_balanced",
        8,
        64,
        2,
        ENDPOINT1,
        experiments=200,
        replicates=100,
        seed=3,
        schemes=("host",),
        effect=0.25,
    )
    assert res.rate("host") > 0.9


def test_one_cluster_per_version_is_refused_never_se_zero_significant():
    """UB with 2 hosts, host clusters: each version lies in one cluster, whose weight cancels
    in its mean, so every replicate would give the same difference (SE 0, "significant")."""
    rng = np.random.default_rng(3)
    y = np.r_[rng.normal(1.0, 0.1, 20), rng.normal(1.0, 0.1, 20)]
    v = np.r_[np.zeros(20, int), np.ones(20, int)]
    host = v.copy()
    with pytest.raises(TooFewClusters, match="at least 5 per version") as err:
        ab_bootstrap(y, v, host=host, cluster="host", replicates=200)
    assert err.value.per_version == (1, 1)
    # RB on 2 hosts, host_block: one block holds both versions
    request = np.tile(np.arange(20), 2)
    with pytest.raises(TooFewClusters):
        ab_bootstrap(y, v, host=host, request=request, cluster="host_block", replicates=200)
    # even with the floor lowered to its minimum, one cluster per version is refused
    with pytest.raises(TooFewClusters):
        ab_bootstrap(y, v, host=host, cluster="host", replicates=200, min_clusters=2)


def test_zero_se_is_never_significant():
    r = ABBootstrapResult(
        estimate=0.3,
        se=0.0,
        ci_low=0.3,
        ci_high=0.3,
        confidence=95.0,
        interval="clt",
        cluster="host",
        clusters=2,
        replicates=100,
        dropped=0,
        weights="poisson",
        log=False,
        mean_control=1.0,
        mean_treatment=1.3,
    )
    assert not r.significant


def test_simulated_scheme_with_one_cluster_per_version_has_no_rate():
    """H = 1: the host scheme's single cluster holds both versions, so its SE is 0 up to
    rounding; a rate of 1 from 1e-17 SEs would be an artefact, so none is given."""
    res = simulate_aa("fully_balanced", 1, 8, 1, ENDPOINT1, experiments=50, replicates=20, seed=2)
    host = next(s for s in res.schemes if s.cluster == "host")
    assert host.clusters_per_version == (1, 1) and host.degenerate
    assert np.isnan(host.rejection_rate) and host.tested == 0 and host.rejections == 0
    request = next(s for s in res.schemes if s.cluster == "request")
    assert not request.degenerate and not request.below_floor
    assert request.tested == 50 and 0 <= request.rejection_rate <= 1


def test_simulated_rate_counts_only_experiments_with_an_se():
    """Two host clusters holding both versions and 3 replicates: a replicate loses a version
    when both hosts draw weight 0 (e^-2), so about 5% of experiments keep fewer than two
    replicates and have no SE. They are left out of the rate, not counted as not rejected."""
    res = simulate_aa(
        "fully_balanced",
        2,
        16,
        1,
        ENDPOINT1,
        experiments=400,
        replicates=3,
        seed=5,
        schemes=("host",),
    )
    s = res.schemes[0]
    has_se = np.isfinite(s.ses)
    assert s.below_floor and not s.degenerate
    assert 0 < s.estimates.size - s.tested == np.count_nonzero(~has_se)
    z = 1.959963984540054
    rejected = np.abs(s.estimates[has_se]) > z * s.ses[has_se]
    assert s.rejections == np.count_nonzero(rejected)
    assert s.rejection_rate == pytest.approx(rejected.mean())
