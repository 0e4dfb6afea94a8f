"""Few clusters and the ``cluster auto`` rule in layouts, as pure statistics on seeded values:
the cluster-level t interval (Donald & Lang 2007) against scipy's paired and Welch t tests, its
use by compare_levels below 5 clusters, the layout recognised from who ran what, and the rule's
choice (host bootstrap, cluster-level t, descriptive with the hosts to add) per layout and H
(Bakshy & Frachtenberg, WWW 2015, §5.2-5.3). Its calibration is benchmarks/sim_few_clusters.py
and benchmarks/sim_cluster_auto.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchlang.design.layouts import LAYOUTS, layout_schedule
from benchlang.stats.ab import ABDesign, VarianceComponents, simulate_outcomes
from benchlang.stats.ab.auto import (
    CONDITIONAL,
    choose_layout_cluster,
    host_fix,
    layout_kind,
)
from benchlang.stats.ab.fewclusters import MIN_CLUSTERS_T, cluster_t_pairs, structure
from benchlang.stats.ab.levels import compare_levels

COMPS = VarianceComponents.from_sd(
    request=1.05, host=0.12, request_batch=0.10, host_batch=0.075, residual=0.10
)


def paired_data(G: int, n: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    level = np.tile(np.repeat([0, 1], n), G)
    cluster = np.repeat(np.arange(G), 2 * n)
    y = np.exp(rng.normal(0, 0.3, G)[cluster] + rng.normal(0, 0.05, level.size) + 0.04 * level)
    return y, level, cluster


def test_paired_cluster_t_is_the_paired_t_on_cluster_log_ratios():
    y, level, cluster = paired_data(4)
    out = cluster_t_pairs(y, level, cluster, [(1, 0)], "ratio", 95.0)
    d = [
        math.log(y[(cluster == g) & (level == 1)].mean() / y[(cluster == g) & (level == 0)].mean())
        for g in range(4)
    ]
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert out["df"][0] == 3
    assert out["ci_low"][0, 0] == pytest.approx(math.exp(ci.low), rel=1e-12)
    assert out["ci_high"][0, 0] == pytest.approx(math.exp(ci.high), rel=1e-12)
    assert out["estimate"][0, 0] == pytest.approx(math.exp(np.mean(d)), rel=1e-12)
    assert out["p_value"][0, 0] == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-9)


def test_unpaired_cluster_t_is_welch_on_cluster_log_means():
    rng = np.random.default_rng(1)
    cluster = np.repeat(np.arange(7), 5)
    level = (cluster >= 3).astype(int)  # 3 clusters of level 0, 4 of level 1
    y = np.exp(rng.normal(0, 0.1, 7)[cluster] + rng.normal(0, 0.05, cluster.size))
    out = cluster_t_pairs(y, level, cluster, [(1, 0)], "difference", 90.0)
    means = np.array([y[cluster == g].mean() for g in range(7)])
    res = stats.ttest_ind(means[3:], means[:3], equal_var=False)
    ci = res.confidence_interval(0.90)
    assert (out["ci_low"][0, 0], out["ci_high"][0, 0]) == pytest.approx((ci.low, ci.high))
    assert out["df"][0] == pytest.approx(res.df)
    assert structure(level, cluster, 1, 0) == ("unpaired", 3)


def test_structure_refuses_clusters_that_mix_pairing():
    level = np.array([0, 1, 0, 1, 0, 1])
    cluster = np.array([0, 0, 1, 1, 2, 3])
    assert structure(level, cluster, 1, 0)[0] is None
    out = cluster_t_pairs(np.ones(6) + level, level, cluster, [(1, 0)], "difference", 95.0)
    assert np.isnan(out["ci_low"]).all()


def test_compare_levels_uses_the_cluster_level_t_from_three_clusters_and_refuses_below():
    y, level, cluster = paired_data(3)
    res = compare_levels(y, level, cluster, cluster="host", replicates=200)
    assert res.method == "cluster_t" and res.refused is None
    assert res.pairs[0].df == 2 and res.pairs[0].clusters == 3
    assert res.to_dict()["method"] == "cluster_t"
    y2, level2, cluster2 = paired_data(2)
    refused = compare_levels(y2, level2, cluster2, cluster="host", replicates=200)
    assert refused.method == "bootstrap" and refused.refused is not None
    assert "cluster-level t at least 3" in refused.refused
    assert math.isnan(refused.pairs[0].ci_low)
    off = compare_levels(y, level, cluster, replicates=200, small_sample=False)
    assert off.refused is not None
    assert MIN_CLUSTERS_T == {"paired": 3, "unpaired": 3}


@pytest.mark.parametrize("kind", LAYOUTS)
def test_layout_is_recognised_from_who_ran_what(kind):
    design = ABDesign.from_schedule(layout_schedule(kind, 4, 8, 2, seed=3))
    assert layout_kind(design) == kind


@pytest.mark.parametrize(
    ("kind", "H", "method", "scheme"),
    [
        ("fully_balanced", 16, "bootstrap", "host"),
        ("host_balanced", 6, "bootstrap", "host"),
        ("request_balanced", 16, "bootstrap", "host_block"),
        ("unbalanced", 16, "bootstrap", "host"),
        ("fully_balanced", 4, "cluster_t", "host"),
        ("request_balanced", 6, "cluster_t", "host_block"),
        ("fully_balanced", 2, "descriptive", None),
        ("unbalanced", 2, "descriptive", None),
        ("unbalanced", 4, "descriptive", None),
    ],
)
def test_cluster_auto_follows_perflab(kind, H, method, scheme):
    design = ABDesign.from_schedule(layout_schedule(kind, H, 16, 2, seed=H))
    y = simulate_outcomes(design, COMPS, 1, np.random.default_rng(H))[0]
    choice = choose_layout_cluster(y, design, scale="ratio", seed=1)
    assert (choice.layout, choice.hosts, choice.method, choice.scheme) == (kind, H, method, scheme)
    assert choice.to_dict()["method"] == method
    if method == "descriptive":
        assert choice.fix is not None and choice.fix.hosts > H
        assert "more host" in choice.fix.words()
    else:
        assert choice.fix is None and "per version" in choice.why


def test_two_slot_check_reports_the_run_and_request_clusters_are_never_offered():
    design = ABDesign.from_schedule(layout_schedule("fully_balanced", 2, 16, 2, seed=2))
    strong = VarianceComponents(request=1.0, request_batch=0.01, host_batch=0.05, residual=0.01)
    y = simulate_outcomes(design, strong, 1, np.random.default_rng(5))[0]
    choice = choose_layout_cluster(y, design, scale="ratio", seed=1)
    assert not any(CONDITIONAL.values())
    assert choice.method == "descriptive" and choice.check is not None
    assert choice.check.type1 > 0.1  # the run's own host x batch effect makes requests liberal
    assert "request clusters are not offered" in choice.why and "on this run:" in choice.why


def test_host_fix_sizes_shrink_with_more_hosts():
    fix = host_fix("fully_balanced", 2, 20, 3, COMPS, "ratio")
    assert (fix.hosts, fix.added, fix.bootstrap_hosts) == (3, 1, 5)
    assert fix.bootstrap_half_width < fix.half_width
    ub = host_fix("unbalanced", 2, 20, 3, None, "ratio")
    assert (ub.hosts, ub.clusters, ub.half_width) == (6, 3, None)
    assert ub.words().startswith("4 more hosts (6 in all) give a valid host-clustered interval")


def test_conditional_answer_names_its_assumption_where_the_table_allowed_it(monkeypatch):
    """The conditional branch as it would run if the simulation had allowed it (CONDITIONAL is
    data from benchmarks/sim_cluster_auto.py): no host x batch effect, so the check passes."""
    monkeypatch.setitem(CONDITIONAL, "fully_balanced", True)
    design = ABDesign.from_schedule(layout_schedule("fully_balanced", 2, 16, 2, seed=2))
    calm = VarianceComponents(request=1.0, request_batch=0.01, residual=0.01)
    y = simulate_outcomes(design, calm, 1, np.random.default_rng(8))[0]
    choice = choose_layout_cluster(y, design, scale="ratio", seed=1)
    assert (choice.method, choice.scheme) == ("conditional", "request")
    assert choice.check.passed and choice.check.type1 <= 0.075
    assert choice.assumption.startswith("assumes no host x batch effect")
    assert "simulated Type I error" in choice.check.words()
    assert choice.to_dict()["check"]["passed"] is True
    from benchlang.stats.contract import ComparisonSample
    from benchlang.stats.methods.bootstrap_impl import bootstrap

    sample = ComparisonSample(
        y=np.exp(y),
        level=np.asarray(design.version, dtype=np.int64),
        names=("old", "new"),
        reference=0,
        request=design.request,
        host=design.host,
        series=np.zeros(design.size, dtype=np.int64),
        round=design.batch,
        batch=design.batch,
        seed=1,
        layout=True,
    )
    out = bootstrap(sample, {"replicates": 500})
    assert out.details["levels"].cluster == "request" and out.descriptive_only is None
    assert any(n.startswith("CONDITIONAL: assumes no host x batch effect") for n in out.notes)
    assert any(n.startswith("without the assumption: 1 more host") for n in out.notes)
