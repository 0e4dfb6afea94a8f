"""Where the bootstrap KPI under-covers it still answers: with the smoothed
bootstrap where its simulated coverage reaches the level, else with Thompson's order-statistic
bound and a note; below the order statistic's minimum n it says no method covers
(docs/statistics.md, "KPI by bootstrap")."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest

from benchlang.stats._kpi_bootstrap_table import SMOOTHED_MIN_N
from benchlang.stats.kpi import kpi
from benchlang.stats.kpi_bootstrap import kpi_bootstrap
from tests.lognormal_awk import lognormal_awk

SPEC = """benchlang 1
experiment lat {{
  seed 7
  benchmark work {{
    run "awk -f value.awk"
    measure t from stdout regex "t=([0-9.]+)ms"
  }}
  metric t {{ better lower }}
  kpi t with kpi_bootstrap {{ percentile {p} confidence 95% }}
  design {{ runs {runs} series 2 }}
}}
"""


def _run(tmp_path, monkeypatch, capsys, p: int, runs: int, decimals: int):
    from benchlang.app.analysis import analyze_store
    from benchlang.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "value.awk").write_text(lognormal_awk("t", 20, 0.3, f"%.{decimals}f", "ms"))
    spec, store = tmp_path / "lat.bench", tmp_path / "lat.sqlite"
    spec.write_text(SPEC.format(p=p, runs=runs))
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    assert main(["analyze", str(spec), "--store", str(store), "--json"]) == 0
    (got,) = json.loads(capsys.readouterr().out)["kpis"]
    data = analyze_store(store).data
    table = data.table
    values = {
        s["series"]: data.metrics["t"].values[table.ok & (table.series == s["series"])]
        for s in got["series"]
    }
    assert main(["analyze", str(spec), "--store", str(store)]) == 0
    return got, values, capsys.readouterr().out


def test_a_lower_is_better_metric_gets_the_order_statistic_upper_bound_with_a_note(
    tmp_path, monkeypatch, capsys
):
    """p90 upper at 95% on 40 trials: BCa never covers an upper bound, the smoothed bootstrap
    not below its simulated n, so Thompson's X_(k) answers, named as such, with the note."""
    assert SMOOTHED_MIN_N.get(("smoothed", "upper", 90.0, 95.0)) in (None, *range(41, 10**6))
    got, values, text = _run(tmp_path, monkeypatch, capsys, 90, 40, 6)
    assert len(got["series"]) == 2
    for s in got["series"]:
        want = kpi(values[s["series"]], 90, 95, "upper")
        assert s["bound"] == "upper" and s["refusal"] is None
        assert s["value"] == want.value and s["rank"] == want.rank == 40  # P(Bin(40,.9)<=39)
        assert s["achieved_confidence"] == pytest.approx(want.achieved_confidence)
        assert s["details"]["answered_by"] == "thompson"
        assert "under-covers at every simulated n" in s["details"]["note"]
    assert "x(40) 98.5%" in text
    assert "note: the bca bootstrap bound (upper) of p90 at 95% under-covers" in text
    assert "DESCRIPTIVE ONLY" not in text


def test_values_rounded_to_1_ms_get_an_answer(tmp_path, monkeypatch, capsys):
    """Trials printing whole milliseconds (about 20 ms: a handful of distinct values), p50
    upper at 95%: every series gets the smoothed bootstrap's bound (adopted from n = 20), the
    one the method computes on the stored values with the plan's seed."""
    got, values, text = _run(tmp_path, monkeypatch, capsys, 50, 30, 0)
    for s in got["series"]:
        x = values[s["series"]]
        assert np.array_equal(x, np.round(x)) and np.unique(x).size < x.size
        assert s["refusal"] is None and math.isfinite(s["value"])
        assert s["details"]["answered_by"] == "smoothed" and s["min_n"] == 20
        want = kpi_bootstrap(x, 50, 95, "upper", seed=7)
        assert s["value"] == pytest.approx(want.value, rel=1e-12)
        assert np.median(x) <= s["value"] <= x.max() + 10
    assert "smoothed 95%" in text and "DESCRIPTIVE ONLY" not in text
    assert "note: the bca bootstrap bound (upper) of p50 at 95% under-covers" in text
    assert "the smoothed bootstrap answers (simulated to cover from n = 20" in text


def test_rounded_series_are_never_left_without_an_answer():
    """200 seeded series of n = 30 rounded to 1 ms (lognormal about 5 ms: ties everywhere),
    both sides of p50 and the upper p90: no refusal, where BCa used to refuse a share."""
    rng = np.random.default_rng(54)
    series = np.round(rng.lognormal(np.log(5.0), 0.3, (200, 30)))
    for p, bound in ((50, "upper"), (50, "lower"), (90, "upper")):
        got = [
            kpi_bootstrap(x, p, 95, bound, replicates=1000, seed=i) for i, x in enumerate(series)
        ]
        assert all(k.enough and k.refusal is None for k in got)
        notes = [k.details.get("note", "") for k in got]
        assert all(n == "" or "answers" in n for n in notes)


def test_below_the_order_statistic_minimum_no_method_covers():
    """A 95% upper bound of p99 needs n >= 299 without assumptions (log 0.05 / log 0.99)."""
    x = np.random.default_rng(3).lognormal(0.0, 1.0, 299)
    short = kpi_bootstrap(x[:298], 99, 95, "upper")
    assert not short.enough and short.to_dict()["value"] is None
    assert "needs at least 299 values" in short.refusal
    assert "no method covers p99 at 95% without assumptions" in short.refusal
    enough = kpi_bootstrap(x, 99, 95, "upper")
    assert enough.value == x.max() and enough.details["answered_by"] == "thompson"


ADOPTED = sorted((k, n) for k, n in SMOOTHED_MIN_N.items() if n is not None and k[3] == 95.0)


@pytest.mark.skipif(not ADOPTED, reason="the simulation adopted no smoothed cell at 95%")
def test_the_smoothed_bootstrap_covers_as_simulated_on_a_seeded_check():
    """At the first adopted cell at 95% and its n, 200 seeded lognormal data sets through the
    method itself (its SplitMix64 resamples and kernel draws): coverage within 3 Monte Carlo
    standard errors (4.6 points) of the nominal 95% or above."""
    (_, side, p, _), n = ADOPTED[0]
    truth = math.exp(NormalDist().inv_cdf(p / 100))
    data = np.random.default_rng(541).lognormal(0.0, 1.0, (200, n))
    got = [kpi_bootstrap(x, p, 95, side, replicates=1000, seed=i) for i, x in enumerate(data)]
    assert {k.details["answered_by"] for k in got} == {"smoothed"}
    hits = [(k.value >= truth) if side == "upper" else (k.value <= truth) for k in got]
    assert np.mean(hits) >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 200)
