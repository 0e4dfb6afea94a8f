"""A composite across benchmarks (Perflab, Bakshy & Frachtenberg WWW 2015, §7, footnote 11):
its footnote-11 SE against hand computation, the joint host bootstrap's correlation against
the one simulated, both SEs through the real CLI on a seeded synthetic store."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchlang.stats.ab.bootstrap import ab_bootstrap
from benchlang.stats.composite import composite_bootstrap
from benchlang.testing.synthetic import synthetic_store

BENCHMARKS = ("feed", "search", "photos")
WEIGHTS = np.array([0.5, 0.3, 0.2])
SPEC = """benchlang 1
experiment composite_demo {{
  seed 11
  hosts local {{ slots {hosts} }}
  factor build in ["a", "b"]
  benchmark feed {{ run "echo {{build}}" measure t from stdout regex "([0-9.]+)" }}
  benchmark search {{ run "echo {{build}}" measure t from stdout regex "([0-9.]+)" }}
  benchmark photos {{ run "echo {{build}}" measure t from stdout regex "([0-9.]+)" }}
  metric t {{ better lower }}
  design {{ runs {hosts} }}
  analysis {{ compare t by build }}
}}
"""


def store_with(tmp_path: Path, rho: float, hosts: int = 40, seed: int = 3) -> tuple[Path, dict]:
    """Every host runs one round of the six configurations; host x build effects (SD 1) with
    correlation ``rho`` across the benchmarks, noise SD 0.1. Returns the store and the values."""
    rng = np.random.default_rng(seed)
    corr = np.full((3, 3), rho) + (1 - rho) * np.eye(3)
    b = rng.standard_normal((hosts, 3)) @ np.linalg.cholesky(corr).T
    (tmp_path / "c.bench").write_text(SPEC.format(hosts=hosts))
    rows: dict[str, list] = {"y": [], "version": [], "component": [], "host": []}

    def value(plan, t):
        c = plan.configurations[int(plan.trial_configuration[t])]
        k, h = BENCHMARKS.index(c.benchmark), int(plan.trial_host[t])
        v = int(dict(c.levels)["build"] == "b")
        y = (
            10
            + k
            + v * (0.5 + b[h, k])
            + np.random.default_rng(int(plan.trial_seed[t])).normal(0, 0.1)
        )
        for key, x in zip(rows, (y, v, k, h), strict=True):
            rows[key].append(x)
        return {"t": y}

    synthetic_store(tmp_path / "c.bench", tmp_path / "c.sqlite", value)
    return tmp_path / "c.sqlite", {**{k: np.array(v) for k, v in rows.items()}, "b": b}


def strict(text: str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_independent_benchmarks_match_the_footnote_by_hand():
    """Three benchmarks on disjoint hosts: the composite is sum w_k d_k, its footnote-11 SE is
    sqrt(sum w_k^2 se_k^2) exactly, each se_k is that benchmark's own host bootstrap SE, and
    the joint SE and the correlations show no covariance."""
    rng = np.random.default_rng(7)
    hosts_per, n = 12, 4
    host = np.repeat(np.arange(3 * hosts_per), 2 * n)
    component = host // hosts_per
    version = np.tile(np.repeat([0, 1], n), 3 * hosts_per)
    y = 5.0 + component + 0.3 * version + rng.normal(0, 1, (3 * hosts_per, 2))[host, version]
    y += rng.normal(0, 0.2, y.size)
    r = composite_bootstrap(y, version, component, host, WEIGHTS, replicates=20_000, seed=1)
    d = [
        y[(component == k) & (version == 1)].mean() - y[(component == k) & (version == 0)].mean()
        for k in range(3)
    ]
    assert r.effects == pytest.approx(d, abs=1e-12)
    assert r.estimate == pytest.approx(float(np.dot(WEIGHTS, d)), abs=1e-12)
    se = np.array(r.effect_se)
    assert r.se_independent == pytest.approx(float(np.sqrt(np.sum(WEIGHTS**2 * se**2))), rel=1e-12)
    for k in range(3):
        own = ab_bootstrap(
            y[component == k],
            version[component == k],
            host=host[component == k],
            replicates=20_000,
            seed=k,
        )
        assert se[k] == pytest.approx(own.se, rel=0.05)
    off = np.asarray(r.correlation)[~np.eye(3, dtype=bool)]
    assert np.all(np.abs(off) < 0.05)
    assert r.se_joint == pytest.approx(r.se_independent, rel=0.05)


def test_weights_are_checked_and_renormalised():
    y = np.arange(24.0)
    version, component, host = np.tile([0, 1], 12), np.repeat([0, 1], 12), np.arange(24) // 2
    r = composite_bootstrap(y, version, component, host, [2.0, 2.0], replicates=200)
    assert r.weights == (0.5, 0.5) and "renormalised" in r.notes[0]
    with pytest.raises(ValueError, match="non-negative"):
        composite_bootstrap(y, version, component, host, [-1.0, 2.0], replicates=200)
    with pytest.raises(ValueError, match="at least 5 per version"):
        composite_bootstrap(y, version, component, host % 2, replicates=200)


def test_three_benchmarks_sharing_hosts_print_both_ses_and_the_correlation(tmp_path, run_cli):
    """The done-when of issue 37 item 3: correlated host x build effects (rho 0.8) make the
    joint SE larger than the footnote's, and the correlation found is the simulated one."""
    store, truth = store_with(tmp_path, rho=0.8)
    weights = "feed=0.5,search=0.3,photos=0.2"
    status, out, err = run_cli(["composite", store, "--weights", weights, "--json"])
    assert status == 0, err
    doc = strict(out)
    assert doc["kind"] == "benchlang.composite" and doc["over"] == "benchmark"
    assert [c["name"] for c in doc["components"]] == list(BENCHMARKS)
    y, v, k = truth["y"], truth["version"], truth["component"]
    d = np.array([y[(k == j) & (v == 1)].mean() - y[(k == j) & (v == 0)].mean() for j in range(3)])
    assert doc["estimate"] == pytest.approx(float(WEIGHTS @ d), abs=1e-9)
    assert doc["se_joint"] > 1.3 * doc["se_independent"]
    found = np.array(doc["correlation"])
    realised = np.corrcoef(truth["b"].T)
    off = ~np.eye(3, dtype=bool)
    assert np.abs(found[off] - realised[off]).max() < 0.1
    assert np.abs(found[off] - 0.8).max() < 0.15
    status, text, err = run_cli(["composite", store, "--weights", weights])
    assert status == 0, err
    assert "SE if independent (Perflab footnote 11)" in text
    assert "SE by joint host bootstrap" in text
    assert "correlation between the effects (joint bootstrap): feed~search" in text
    assert "the independent formula understates the SE" in text


def test_mistakes_are_told_without_a_traceback(tmp_path, run_cli):
    store, _ = store_with(tmp_path, rho=0.0, hosts=4)
    status, _, err = run_cli(["composite", store, "--weights", "feed=0.5,ads=0.5"])
    assert status == 2 and "unknown benchmark ads" in err and "Traceback" not in err
    status, _, err = run_cli(["composite", store])
    assert status == 2 and "at least 5 per version" in err and "--cluster round" in err
    status, _, err = run_cli(["composite", store, "--weights", "feed=x"])
    assert status == 2 and "NAME=SHARE" in err
