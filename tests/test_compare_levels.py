"""``compare M by F``: never SE 0 presented as significant, a valid default cluster on one
host (rounds), k >= 2 levels with Bonferroni-simultaneous ratio intervals whose coverage is at
least nominal over 1,000+ seeded data sets (Bakshy & Frachtenberg §5; Cameron & Miller 2015)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from benchlang import model
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import Source
from benchlang.report.compare_text import render_comparisons
from benchlang.report.comparison_data import compare
from benchlang.report.data import ExperimentData
from benchlang.run.store import TrialTable
from benchlang.run.trial_metric import MetricValues
from benchlang.stats.ab.levels import compare_levels, compare_levels_many, pair_list

SPEC = """benchlang 1
experiment c {{
  seed 7
  factor tool in [{levels}]
  benchmark b {{
    run "echo {{tool}}"
    measure time = wall_time
  }}
  metric time {{ better {better} }}
}}
"""


def experiment(levels: list[str], better: str = "lower") -> model.Experiment:
    text = SPEC.format(levels=", ".join(f'"{x}"' for x in levels), better=better)
    return compile_source(Source("c.bench", text), Path("."))


def data_for(
    exp: model.Experiment,
    y: np.ndarray,
    tool: list[str],
    *,
    host: list[str] | None = None,
    series: np.ndarray | None = None,
    rounds: np.ndarray | None = None,
) -> ExperimentData:
    n = y.size
    levels = tuple({"tool": t} for t in tool)
    names = list(exp.factor("tool").levels)
    table = TrialTable(
        trial=np.arange(n),
        series=np.zeros(n, int) if series is None else series,
        round=np.arange(n) if rounds is None else rounds,
        position=np.zeros(n, int),
        host=np.array(host or ["local"] * n, dtype=object),
        configuration=np.array([names.index(t) for t in tool]),
        label=np.array([f"b[tool={t}]" for t in tool], dtype=object),
        benchmark=np.array(["b"] * n, dtype=object),
        levels=levels,
        order_kind=np.array(["random"] * n, dtype=object),
        ok=np.ones(n, bool),
        reason=np.array([""] * n, dtype=object),
        measures={"time": y},
        phase=np.array(["measured"] * n, dtype=object),
    )
    metric = exp.metric("time")
    return ExperimentData(exp, None, table, {"time": MetricValues(metric, y, None)})


def rounds_design(levels: list[str], rounds: int, effects: list[float], seed: int):
    """One host, one series; every round runs every level once after one reset (a round
    effect shared by the levels), log-normal noise."""
    rng = np.random.default_rng(seed)
    k = len(levels)
    r = np.repeat(np.arange(rounds), k)
    lv = np.tile(np.arange(k), rounds)
    y = np.exp(np.log(effects)[lv] + rng.normal(0, 0.05, rounds)[r] + rng.normal(0, 0.05, r.size))
    return y, [levels[i] for i in lv], r


def rendered(results) -> str:
    buf = io.StringIO()
    render_comparisons(results, buf)
    return buf.getvalue()


def test_one_local_host_default_cluster_is_rounds_and_valid():
    exp = experiment(["gzip", "xz"])
    y, tool, r = rounds_design(["gzip", "xz"], 12, [1.0, 1.3], seed=1)
    res = compare(
        data_for(exp, y, tool, rounds=r),
        model.Comparison("time", "tool", "bootstrap", {"replicates": 2000}),
    )
    assert res.problem is None
    assert res.levels.cluster == "round" and res.levels.clusters_per_level == (12, 12)
    b = res.bootstrap
    assert b.cluster == "round" and b.clusters == 12 and b.se > 0
    assert b.significant and b.ci_low < b.estimate < b.ci_high
    (pair,) = res.levels.pairs
    assert pair.se > 0 and pair.ci_low < 1.3 < pair.ci_high and pair.significant
    text = rendered([res])
    assert "ratios of means" in text and "round clusters" in text


def test_one_local_host_with_too_few_rounds_claims_nothing():
    """2 rounds: neither the bootstrap (5) nor the cluster-level t (3) has clusters enough."""
    exp = experiment(["gzip", "xz"])
    y, tool, r = rounds_design(["gzip", "xz"], 2, [1.0, 1.3], seed=2)
    res = compare(
        data_for(exp, y, tool, rounds=r), model.Comparison("time", "tool", "bootstrap", {})
    )
    assert res.bootstrap is None and res.levels is None
    assert "at least 5 clusters per level, nor 3 for the cluster-level t" in res.problem
    assert "1 more round per level (3 in all) gives a cluster-level t interval" in res.problem
    text = rendered([res])
    assert "not compared" in text and "yes" not in text


def test_three_rounds_give_the_cluster_level_t_interval():
    """3 rounds: too few for the bootstrap, enough for the cluster-level t (Donald & Lang 2007;
    coverage in benchmarks/sim_few_clusters.py)."""
    exp = experiment(["gzip", "xz"])
    y, tool, r = rounds_design(["gzip", "xz"], 3, [1.0, 1.3], seed=2)
    res = compare(
        data_for(exp, y, tool, rounds=r), model.Comparison("time", "tool", "bootstrap", {})
    )
    assert res.problem is None and res.bootstrap is None
    assert res.levels.method == "cluster_t" and res.levels.cluster == "round"
    (pair,) = res.levels.pairs
    assert pair.df == 2 and pair.ci_low < 1.3 < pair.ci_high
    assert "cluster-level t with 2 df" in rendered([res])


def test_explicit_host_cluster_on_one_host_is_refused_with_valid_alternatives():
    exp = experiment(["gzip", "xz"])
    y, tool, r = rounds_design(["gzip", "xz"], 10, [1.0, 1.0], seed=3)
    res = compare(
        data_for(exp, y, tool, rounds=r),
        model.Comparison("time", "tool", "bootstrap", {"cluster": "host"}),
    )
    assert res.bootstrap is None
    assert res.levels.refused and res.levels.descriptive_only
    assert all(np.isnan(p.ci_low) and not p.significant for p in res.levels.pairs)
    assert "fewer than 5 clusters" in res.problem and "round (10 per level)" in res.problem
    assert "yes" not in rendered([res])


def test_one_host_per_version_unbalanced_layout_is_refused():
    """UB with hosts 2 + cluster host: each version's trials lie in one host."""
    exp = experiment(["control", "treatment"])
    rng = np.random.default_rng(4)
    n = 40
    tool = ["control"] * (n // 2) + ["treatment"] * (n // 2)
    host = ["local:0"] * (n // 2) + ["local:1"] * (n // 2)
    y = np.exp(rng.normal(0, 0.1, n))
    res = compare(
        data_for(
            exp, y, tool, host=host, rounds=np.r_[np.zeros(n // 2), np.ones(n // 2)].astype(int)
        ),
        model.Comparison("time", "tool", "bootstrap", {"cluster": "host"}),
    )
    assert res.bootstrap is None and res.problem
    assert res.levels.clusters_per_level == (1, 1)
    assert "yes" not in rendered([res])


def test_three_levels_pairwise_against_the_first_with_bonferroni():
    levels = ["gzip", "xz", "zstd"]
    exp = experiment(levels)
    y, tool, r = rounds_design(levels, 20, [1.0, 1.5, 0.7], seed=5)
    res = compare(
        data_for(exp, y, tool, rounds=r),
        model.Comparison("time", "tool", "bootstrap", {"replicates": 2000}),
    )
    lv = res.levels
    assert res.problem is None and res.bootstrap is None  # k > 2: no two-version table
    assert lv.adjustment == "bonferroni" and lv.per_pair_confidence == pytest.approx(97.5)
    assert [(lv.names[p.level], lv.names[p.reference]) for p in lv.pairs] == [
        ("xz", "gzip"),
        ("zstd", "gzip"),
    ]
    xz, zstd = lv.pairs
    assert xz.ci_low < 1.5 < xz.ci_high and zstd.ci_low < 0.7 < zstd.ci_high
    assert xz.significant and zstd.significant
    assert xz.p_adjusted == pytest.approx(min(1.0, 2 * xz.p_value))
    text = rendered([res])
    assert "95% simultaneous (Bonferroni over 2: 97.5% each)" in text
    assert (
        "xz / gzip" in text and "(worse)" in text and "zstd / gzip" in text and "(better)" in text
    )
    every = compare(
        data_for(exp, y, tool, rounds=r),
        model.Comparison(
            "time", "tool", "bootstrap", {"pairs": "all", "reference": "xz", "replicates": 500}
        ),
    )
    assert len(every.levels.pairs) == 3 and every.levels.per_pair_confidence == pytest.approx(
        100 - 5 / 3
    )
    assert every.to_dict()["levels"]["pairs"][0]["significant"] in (True, False)


def test_single_cluster_levels_are_descriptive_only_in_the_stats_function():
    y = np.array([1.0, 1.1, 2.0, 2.1])
    out = compare_levels(y, np.array([0, 0, 1, 1]), np.array([0, 0, 1, 1]), replicates=100)
    assert out.refused and out.pairs[0].estimate == pytest.approx(2.05 / 1.05)
    assert np.isnan(out.pairs[0].se) and not out.pairs[0].significant


def _simulate(E: int, G: int, k: int, m: int, paired: bool, seed: int, sd=(0.1, 0.05, 0.1)):
    rng = np.random.default_rng(seed)
    mu = np.log([1.0, 1.2, 0.9, 1.1][:k])
    if paired:  # every cluster (round) holds every level; cluster and cluster x level effects
        level = np.tile(np.repeat(np.arange(k), m), G)
        codes = np.repeat(np.arange(G), k * m)
        cross = rng.normal(0, sd[1], (E, G * k))[:, codes * k + level]
        u = rng.normal(0, sd[0], (E, G))[:, codes]
    else:  # each cluster (host) holds one level, as in an unbalanced layout
        codes = np.repeat(np.arange(G * k), m)
        level = codes % k
        cross = 0.0
        u = rng.normal(0, sd[0], (E, G * k))[:, codes]
    Y = np.exp(mu[level] + u + cross + rng.normal(0, sd[2], (E, level.size)))
    return Y, level, codes, mu, rng


@pytest.mark.parametrize(
    ("G", "k", "m", "paired", "pairs"),
    [
        (5, 3, 2, True, "reference"),
        (10, 3, 2, True, "reference"),
        (8, 4, 1, True, "all"),
        (5, 3, 4, False, "reference"),
    ],
)
def test_ratio_intervals_cover_at_least_nominal(G, k, m, paired, pairs):
    """1,000 seeded log-normal data sets per design; the true ratio of means is
    exp(mu_j - mu_ref). The Bonferroni family (all pairs at once) must cover >= 95%."""
    E = 1000
    Y, level, codes, mu, rng = _simulate(E, G, k, m, paired, seed=100 + G + k)
    out = compare_levels_many(Y, level, codes, pairs=pairs, replicates=400, rng=rng)
    true = np.array([np.exp(mu[a] - mu[b]) for a, b in pair_list(k, 0, pairs)])
    covered = (out["ci_low"] <= true) & (true <= out["ci_high"])
    assert covered.all(axis=1).mean() >= 0.95
    assert (covered.mean(axis=0) >= 0.95).all()
    assert (out["se"] > 0).all()
