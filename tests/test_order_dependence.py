"""OrderSage analysis (Duplyakin et al., ATC 2023) against the paper's case-study data."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchlang.report.order import order_json, render_order_table
from benchlang.stats.order_dependence import (
    ci_case,
    eta_squared_h,
    explain_delta,
    median_ci_ranks,
    order_dependence,
)

DATA = Path("/work/shared/data/ordersage")
if not DATA.is_dir():
    DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ordersage"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="OrderSage case-study data not present")


def load(name: str) -> dict[str, np.ndarray]:
    with open(DATA / f"{name}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {
        "value": np.array([float(r["value"]) for r in rows]),
        "test": np.array([r["test"] for r in rows]),
        "order": np.array([r["order"] for r in rows]),
        "position": np.array([int(r["position"]) for r in rows]),
        "run_seq": np.array([int(r["run_seq"]) for r in rows]),
    }


def analyse(name: str, better: str, alpha: float = 0.05):
    d = load(name)
    return d, order_dependence(d["value"], d["test"], d["order"], alpha=alpha, better=better)


@needs_data
def test_table3_memcached_reproduces_paper():
    _, result = analyse("table3_memcached", "higher")
    by = {c.configuration: c for c in result.configurations}
    assert [c.configuration for c in result.configurations] == ["cmd_set", "cmd_get", "get_hits"]
    # Paper, Table 3: KW p 0.49, 0.74, 0.00009; Δ% 0.3, -0.2, 5.3; cases 2, 2, 3.
    assert round(by["cmd_set"].p_value, 2) == 0.49
    assert round(by["cmd_get"].p_value, 2) == 0.74
    assert round(by["get_hits"].p_value, 5) == 0.00009
    assert [round(by[t].delta_percent, 1) for t in ("cmd_set", "cmd_get", "get_hits")] == [
        0.3,
        -0.2,
        5.3,
    ]
    assert [by[t].ci_case for t in ("cmd_set", "cmd_get", "get_hits")] == [2, 2, 3]
    assert result.m == 3
    assert result.threshold == pytest.approx(0.05 / 3)
    assert result.order_matters
    assert result.significant == ("get_hits",)
    assert all(c.n_fixed == 50 and c.n_random == 50 for c in result.configurations)
    # η² = (H - 1)/(n - 2): negative for the two null tests (clipped), positive for get_hits.
    assert by["cmd_set"].eta_squared_clipped and by["cmd_set"].eta_squared == 0.0
    assert by["cmd_get"].eta_squared_clipped
    h = by["get_hits"].h_statistic
    assert by["get_hits"].eta_squared == pytest.approx((h - 1) / 98)
    assert not by["get_hits"].eta_squared_clipped
    assert "fixed order looks better" in by["get_hits"].delta_meaning


@needs_data
def test_table3_ci_uses_order_statistics_at_corrected_level():
    d, result = analyse("table3_memcached", "higher")
    level = 1 - 0.05 / 3
    j, k, achieved = median_ci_ranks(50, level)
    assert achieved >= level
    for c in result.configurations:
        for side, low, high in (
            ("fixed", c.ci_fixed_low, c.ci_fixed_high),
            ("random", c.ci_random_low, c.ci_random_high),
        ):
            x = np.sort(d["value"][(d["test"] == c.configuration) & (d["order"] == side)])
            assert (low, high) == (x[j - 1], x[k - 1])
        assert c.median_fixed == np.median(
            d["value"][(d["test"] == c.configuration) & (d["order"] == "fixed")]
        )
        assert c.ci_ranks_fixed == (int(j), int(k))


@needs_data
def test_table4_ties_use_scipy_tie_correction():
    d, result = analyse("table4_npb_npbench", "lower")
    assert result.m == 3 and all(c.n_fixed == c.n_random == 100 for c in result.configurations)
    for c in result.configurations:
        sel = d["test"] == c.configuration
        fx, rd = (
            d["value"][sel & (d["order"] == "fixed")],
            d["value"][sel & (d["order"] == "random")],
        )
        pooled = np.concatenate((fx, rd))
        ranks = stats.rankdata(pooled)
        n = pooled.size
        h_raw = 12 / (n * (n + 1)) * (
            ranks[:100].sum() ** 2 / 100 + ranks[100:].sum() ** 2 / 100
        ) - 3 * (n + 1)
        _, tie_counts = np.unique(pooled, return_counts=True)
        correction = 1 - (tie_counts**3 - tie_counts).sum() / (n**3 - n)
        assert c.h_statistic == pytest.approx(h_raw / correction, rel=1e-10)
        assert c.p_value == pytest.approx(stats.chi2.sf(h_raw / correction, 1), rel=1e-10)
        if c.configuration in ("softmax", "SPMV"):
            # Integer milliseconds: many ties, so the correction changes the result.
            assert tie_counts.max() > 1
            assert correction < 1.0
            assert c.p_value < stats.chi2.sf(h_raw, 1)
    assert not result.order_matters
    assert "lower is better" in result.configurations[0].delta_meaning


@needs_data
def test_table5_small_samples_give_min_max_intervals():
    d, result = analyse("table5_ufs", "higher")
    assert result.m == 20
    assert result.threshold == pytest.approx(0.0025)
    assert result.ci_level == pytest.approx(0.9975)
    assert len(result.configurations) == 20
    for c in result.configurations:
        assert c.n_fixed == c.n_random == 10
        assert c.ci_ranks_fixed == c.ci_ranks_random == (1, 10)
        assert c.ci_level_achieved_fixed >= 0.9975
        for side, low, high in (
            ("fixed", c.ci_fixed_low, c.ci_fixed_high),
            ("random", c.ci_random_low, c.ci_random_high),
        ):
            x = d["value"][(d["test"] == c.configuration) & (d["order"] == side)]
            assert (low, high) == (x.min(), x.max())
        assert c.ci_case in (1, 2, 3)
    assert all(c.p_value >= 0.0025 for c in result.configurations)
    assert not result.order_matters


def test_eta_squared_and_case_rules():
    assert eta_squared_h(5.0, 22, 2) == (pytest.approx(0.2), False)
    assert eta_squared_h(0.5, 22, 2) == (0.0, True)
    assert ci_case(1, 0, 2, 5, 4, 6) == 1
    # Case 2 is "or": only one median inside the other CI is enough.
    assert ci_case(5.0, 3, 6, 3.5, 1, 4) == 2
    assert ci_case(5.0, 4.5, 6, 3.5, 1, 4.6) == 3


def test_delta_sign_explanation_depends_on_better():
    assert "looks better" in explain_delta(2.0, "higher")
    assert "looks worse" in explain_delta(2.0, "lower")
    assert "looks better" in explain_delta(-2.0, "lower")
    assert "higher in fixed order" in explain_delta(2.0, None)


def _synthetic(shift: float, seed: int):
    rng = np.random.default_rng(seed)
    n = 40
    conf = np.repeat(np.array(["a", "b", "c"]), 2 * n)
    order = np.tile(np.repeat(np.array(["fixed", "random"]), n), 3)
    values = rng.lognormal(mean=3.0, sigma=0.05, size=conf.size)
    values[(conf == "b") & (order == "fixed")] *= 1 + shift
    return values, conf, order


def test_planted_order_effect_is_flagged_and_null_is_not():
    result = order_dependence(*_synthetic(0.2, seed=1), better={"a": "lower", "b": "lower"})
    b = result.configurations[1]
    assert result.significant == ("b",)
    assert b.ci_case == 1
    assert b.delta_percent == pytest.approx(100 * 0.2 / 1.2, abs=2.0)
    assert "fixed order looks worse" in b.delta_meaning
    null = order_dependence(*_synthetic(0.0, seed=2))
    assert not null.order_matters


def test_invalid_and_degenerate_inputs():
    with pytest.raises(ValueError, match="order"):
        order_dependence([1.0, 2.0], ["a", "a"], ["fixed", "shuffled"])
    with pytest.raises(ValueError, match="finite"):
        order_dependence([1.0, np.nan], ["a", "a"], ["fixed", "random"])
    result = order_dependence(
        [3.0] * 6 + [1.0, 2.0, 3.0],
        ["a"] * 6 + ["b"] * 3,
        ["fixed", "fixed", "fixed", "random", "random", "random", "fixed", "fixed", "fixed"],
    )
    a, b = result.configurations
    assert (a.p_value, a.h_statistic, a.ci_case) == (1.0, 0.0, 2)
    assert not b.compared and b.ci_case is None and b.n_random == 0
    assert result.m == 1
    empty = order_dependence([1.0, 2.0], ["a", "a"], ["fixed", "fixed"])
    assert empty.m == 0 and not empty.order_matters
    out = io.StringIO()
    render_order_table(empty, out)
    assert "nothing to compare" in out.getvalue()


@needs_data
def test_render_and_json():
    _, result = analyse("table3_memcached", "higher")
    out = io.StringIO()
    render_order_table(result, out)
    text = out.getvalue()
    for word in ("cmd_set", "get_hits", "verdict: order matters", "case 3", "Δ%", "0.01667"):
        assert word in text
    rows = order_json(result)
    json.dumps(rows, allow_nan=False)
    required = {
        "configuration", "n_fixed", "n_random", "p_value", "significant", "eta_squared",
        "eta_squared_clipped", "delta_percent", "ci_case", "median_fixed", "median_random",
        "ci_fixed_low", "ci_fixed_high", "ci_random_low", "ci_random_high", "threshold",
    }  # fmt: skip
    assert all(required <= set(r) for r in rows)
    assert [r["ci_case"] for r in rows] == [2, 2, 3]
