"""The KPI by bootstrap (``kpi M with kpi_bootstrap``; docs/statistics.md, "KPI by bootstrap"):
its bound equals a direct numpy computation (percentile) and a hand computation of Efron's
BCa on the same resamples, it is seeded, it refuses below the n of its simulated coverage with
the fix in words, and `benchlang run` / `analyze` name it with its settings."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from benchlang.design.streams import uniforms
from benchlang.stats._kpi_bootstrap_table import MIN_N, needed_n
from benchlang.stats.kpi_bootstrap import (
    jackknife_percentiles,
    kpi_bootstrap,
    row_quantiles,
    sample_rank,
)
from benchlang.stats.triscale import analyze_metric
from tests.lognormal_awk import lognormal_awk

ROOT = Path(__file__).resolve().parents[1]


def _resamples(x: np.ndarray, b: int, seed: int) -> np.ndarray:
    """The resamples as documented: the seed's ``kpi_bootstrap:<sha256 of the values>``
    stream, one uniform per (replicate, draw), index floor(u n)."""
    key = hashlib.sha256(np.ascontiguousarray(x, dtype=np.float64).tobytes()).hexdigest()[:16]
    u = uniforms(seed, f"kpi_bootstrap:{key}", np.arange(b)[:, None], np.arange(x.size))
    return x[np.minimum((u * x.size).astype(np.int64), x.size - 1)]


def test_percentile_bound_equals_the_direct_numpy_computation():
    x = np.random.default_rng(5).lognormal(0.0, 1.0, 120)
    k = kpi_bootstrap(x, 50, 95, "lower", interval="percentile", replicates=1000, seed=3)
    replicates = np.quantile(_resamples(x, 1000, 3), 0.5, axis=1, method="inverted_cdf")
    assert k.enough and k.refusal is None and k.method == "kpi_bootstrap"
    assert k.value == pytest.approx(np.quantile(replicates, 0.05), rel=1e-12)
    assert k.details["estimate"] == np.quantile(x, 0.5, method="inverted_cdf")
    assert k.n == 120 and k.min_n == MIN_N[("percentile", "lower", 50.0, 95.0)]


def test_bca_bound_equals_a_hand_computation_on_the_same_resamples():
    """Efron & Tibshirani Eq. 14.10, 14.14, 14.15, computed the slow way: z0 from the share of
    replicates below the estimate, a from an explicit leave-one-out loop."""
    x = np.random.default_rng(8).lognormal(0.0, 1.0, 80)
    k = kpi_bootstrap(x, 10, 95, "lower", interval="bca", replicates=2000, seed=11)
    replicates = np.quantile(_resamples(x, 2000, 11), 0.1, axis=1, method="inverted_cdf")
    estimate = np.quantile(x, 0.1, method="inverted_cdf")
    normal = NormalDist()
    z0 = normal.inv_cdf(float(np.mean(replicates < estimate)))
    jack = np.array([np.quantile(np.delete(x, i), 0.1, method="inverted_cdf") for i in range(80)])
    d = jack.mean() - jack
    a = (d**3).sum() / (6 * (d**2).sum() ** 1.5)
    z = normal.inv_cdf(0.05)
    level = normal.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
    assert k.details["bias"] == pytest.approx(z0, abs=1e-12)
    assert k.details["acceleration"] == pytest.approx(a, abs=1e-12)
    assert k.details["level"] == pytest.approx(level, abs=1e-12)
    assert k.value == pytest.approx(np.quantile(replicates, level), rel=1e-12)


def test_the_jackknife_shortcut_and_the_row_quantiles_equal_numpy():
    rng = np.random.default_rng(2)
    rows = np.sort(rng.exponential(size=(4, 37)), axis=1)
    for p in (0.01, 0.1, 0.5, 0.95, 0.99):
        slow = [
            [np.quantile(np.delete(r, i), p, method="inverted_cdf") for i in range(37)]
            for r in rows
        ]
        assert np.array_equal(jackknife_percentiles(rows, p), np.array(slow))
    levels = rng.random(4)
    want = [np.quantile(r, q) for r, q in zip(rows, levels, strict=True)]
    assert np.allclose(row_quantiles(rows, levels), want, rtol=0, atol=1e-14)
    assert all(sample_rank(n, p) == math.ceil(p * n) for n in (10, 59, 100) for p in (0.5, 0.95))


def test_the_same_seed_gives_the_same_bound_and_another_seed_another(monkeypatch):
    import benchlang.stats.kpi_bootstrap as module

    x = np.random.default_rng(4).normal(10.0, 1.0, 200)
    a = kpi_bootstrap(x, 50, 95, "lower", seed=1)
    assert a.value == kpi_bootstrap(x.copy(), 50, 95, "lower", seed=1).value
    assert a.value != kpi_bootstrap(x, 50, 95, "lower", seed=2).value
    monkeypatch.setattr(module, "_BLOCK", 7 * 200 + 3)  # replicates drawn 7 at a time
    assert kpi_bootstrap(x, 50, 95, "lower", seed=1).value == a.value


def test_below_its_simulated_n_it_answers_otherwise_or_says_no_method_covers():
    """tests/test_kpi_bootstrap_fallback.py checks the answers given instead; here the words."""
    x = np.random.default_rng(6).lognormal(0.0, 1.0, 2000)
    need = MIN_N[("bca", "lower", 5.0, 95.0)]  # 59, also the order statistic's minimum
    short = kpi_bootstrap(x[: need - 1], 5, 95, "lower")
    assert not short.enough and math.isnan(short.value)
    assert f"below n = {need}" in short.refusal and f"has {need - 1}" in short.refusal
    assert "no method covers p5 at 95% without assumptions" in short.refusal
    assert kpi_bootstrap(x[:need], 5, 95, "lower").enough
    upper = kpi_bootstrap(x, 95, 95, "upper")
    assert upper.enough and "under-covers at every simulated n" in upper.details["note"]
    flat = kpi_bootstrap(np.full(100, 3.0), 50, 95, "lower")
    assert flat.value == 3.0 and flat.details["note"].startswith("BCa is undefined here")
    assert kpi_bootstrap(np.full(100, 3.0), 50, 95, "lower", interval="percentile").value == 3.0
    # a request beyond the simulated cells is not extrapolated
    assert needed_n(99.5, 95, "upper", "bca")[0] is None
    assert needed_n(50, 99.9, "lower", "bca")[0] is None
    assert needed_n(75, 95, "lower", "bca")[0] is None
    assert needed_n(7, 93, "lower", "bca")[0] == MIN_N[("bca", "lower", 5.0, 95.0)]
    result = analyze_metric(
        x[:40], None, 5, 95, "lower", None, None, kpi_method=kpi_bootstrap, options={}
    )
    assert result.descriptive_only
    assert any("run at least 59 runs per series" in r for r in result.reasons)


def test_the_simulations_exact_replicates_match_explicit_resampling():
    """benchmarks/sim_kpi_bootstrap_coverage.py draws x*_(k) by inverting
    P(J_k <= j) = P(Bin(n, (j+1)/n) >= k); its distribution is that of resampling n values
    (two-sample KS distance within the 99.9% band for 20,000 replicates each)."""
    path = ROOT / "benchmarks" / "sim_kpi_bootstrap_coverage.py"
    spec = importlib.util.spec_from_file_location("sim_kpi_bootstrap_coverage", path)
    sim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sim)
    rng = np.random.default_rng(9)
    ordered = np.sort(rng.lognormal(size=(1, 20)), axis=1)
    for p in (0.5, 0.95):
        k = sample_rank(20, p)
        exact = sim.replicates_of_rank(rng, ordered, k, 20000)[0]
        explicit = np.quantile(
            ordered[0][rng.integers(0, 20, (20000, 20))], p, axis=1, method="inverted_cdf"
        )
        grid = ordered[0]
        gap = np.abs(
            np.searchsorted(np.sort(exact), grid, side="right")
            - np.searchsorted(np.sort(explicit), grid, side="right")
        ).max()
        assert gap / 20000 < 1.95 * math.sqrt(2 / 20000)


VALUE_AWK = lognormal_awk("v", 100, 0.3, "%.12g")

SPEC = """benchlang 1
experiment kb {{
  seed 21
  benchmark work {{
    run "awk -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }}
  metric v {{ better higher }}
  kpi v with kpi_bootstrap {{ percentile {p} confidence 95% }}
  design {{ runs 12 series 2 }}
}}
"""


def test_run_and_analyze_name_the_kpi_method_and_its_settings(tmp_path, capsys, monkeypatch):
    """A real run (local backend, store) of 2 series of 12 trials; ``analyze --json`` gives the
    bounds kpi_bootstrap computes on the stored values with the plan's seed, and names the method;
    the table and the record name it with its settings; a p5 bound needs 59 (`check` says so)."""
    from benchlang.app.analysis import analyze_store
    from benchlang.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "value.awk").write_text(VALUE_AWK)
    spec, store = tmp_path / "kb.bench", tmp_path / "kb.sqlite"
    spec.write_text(SPEC.format(p=50))
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    assert main(["analyze", str(spec), "--store", str(store), "--json"]) == 0
    (got,) = json.loads(capsys.readouterr().out)["kpis"]
    assert got["kpi_method"] == "kpi_bootstrap"
    assert got["kpi_settings"] == {"interval": "bca", "replicates": 2000}
    data = analyze_store(store).data
    assert len(got["series"]) == 2
    for series in got["series"]:
        values = data.metrics["v"].values[data.table.ok & (data.table.series == series["series"])]
        want = kpi_bootstrap(values, 50, 95, "lower", seed=21)
        assert series["method"] == "kpi_bootstrap" and series["refusal"] is None
        assert series["value"] == pytest.approx(want.value, rel=1e-12)
    assert main(["analyze", str(spec), "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "KPIs (TriScale §4.2; kpi_bootstrap { interval bca replicates 2000 })" in text
    assert "Headline: v, higher is better" in text  # no order-statistic line for a bootstrap
    assert main(["record", "--store", str(store)]) == 0
    record = capsys.readouterr().out
    assert "kpi_bootstrap { interval bca replicates 2000 } (benchlang" in record
    assert "95% (kpi_bootstrap)" in record

    spec.write_text(SPEC.format(p=5))  # the checker already asks the method's simulated n
    assert main(["check", str(spec)]) == 2
    assert "12 runs are too few for kpi v (percentile 5, confidence 95%): it needs at least 59" in (
        capsys.readouterr().err
    )


def test_check_accepts_a_kpi_the_bootstrap_answers_through_its_fallback():
    """Upper bounds of p95 under-cover at every simulated n: the spec is accepted (the
    order-statistic bound answers, sized by Thompson's n); a lower bound of p5 is sized by
    the bootstrap's simulated n."""
    from benchlang.lang.check import compile_source
    from benchlang.lang.syntax import decode

    def spec(kpi: str, better: str = "lower") -> str:
        return (
            "benchlang 1\nexperiment t {\n"
            '  benchmark b { run "echo 1" measure x from stdout regex "([0-9]+)" }\n'
            f"  metric x {{ measure mean better {better} }}\n  {kpi}\n"
            "  design { runs auto }\n}\n"
        )

    exp = compile_source(decode("t.bench", spec(LATENCY).encode()))
    assert exp.kpis[0].bound == "upper" and exp.design.runs == 59  # Thompson: p95 at 95%
    exp = compile_source(decode("t.bench", spec(THROUGHPUT, "higher").encode()))
    assert exp.kpis[0].bound == "lower" and exp.design.runs == MIN_N[("bca", "lower", 5.0, 95.0)]


LATENCY = "kpi x with kpi_bootstrap { percentile 95 confidence 95% }"
THROUGHPUT = "kpi x with kpi_bootstrap { percentile 5 confidence 95% }"
