"""The ANOVA table as DataMill reports it (mean squares, R²) against published numbers, and the
per-host breakdown (stats/anova.py; DataMill, de Oliveira et al. ICPE 2013, §5)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from benchlang.stats.anova import anova, host_breakdown

# Montgomery, Design and Analysis of Experiments (8th ed.), Example 3.1: etch rate (Å/min) at
# four RF power levels, five wafers each; his Table 3.4 is the ANOVA below.
ETCH = [
    575,
    542,
    530,
    539,
    570,
    565,
    593,
    590,
    579,
    610,
    600,
    651,
    610,
    637,
    629,
    725,
    700,
    715,
    685,
    710,
]
POWER = [160] * 5 + [180] * 5 + [200] * 5 + [220] * 5


def test_montgomery_table_3_4():
    a = anova(np.array(ETCH, float), {"power": POWER}, ["power"], "")
    power, residual = a.rows
    assert (power.df, residual.df) == (3, 16)
    assert power.sum_sq == pytest.approx(66870.55)
    assert residual.sum_sq == pytest.approx(5339.20)
    assert power.mean_sq == pytest.approx(22290.18, abs=0.01)
    assert residual.mean_sq == pytest.approx(333.70, abs=0.01)
    assert power.f == pytest.approx(66.80, abs=0.01)
    assert a.r_squared == pytest.approx(66870.55 / 72209.75)
    assert a.adj_r_squared == pytest.approx(1 - (5339.20 / 16) / (72209.75 / 19))
    assert a.to_dict()["r_squared"] == a.r_squared


def test_host_breakdown_on_seeded_values():
    rng = np.random.default_rng(7)
    y = np.concatenate([rng.normal(10, 1, 50), rng.normal(13, 1, 50), [np.nan]])
    hosts = ["b"] * 50 + ["a"] * 50 + ["a"]
    found = host_breakdown(y, hosts)
    a, b = found.rows
    assert (a.host, a.n, b.host, b.n) == ("a", 50, "b", 50)  # sorted, the NaN left out
    assert a.mean == pytest.approx(np.mean(y[50:100])) and b.sd == pytest.approx(
        np.std(y[:50], ddof=1)
    )
    one_way = anova(y[:100], {"host": hosts[:100]}, ["host"], "")
    assert found.between_share == pytest.approx(one_way.rows[0].eta_squared)
    assert found.between_share > 0.5


def datamill(seed: int = 11):
    """Four hosts (two with the same CPU model), two tools, 12 trials per host: seeded values
    with a CPU effect, a tool effect and noise."""
    rng = np.random.default_rng(seed)
    host = np.repeat(["h0", "h1", "h2", "h3"], 12)
    cpu = np.array([{"h0": "xeon", "h1": "xeon", "h2": "epyc", "h3": "arm"}[h] for h in host])
    tool = np.tile(["xz", "gzip"], 24)
    y = rng.normal(10, 1, host.size) + 3.0 * (cpu == "arm") + 1.0 * (tool == "gzip")
    return y, host, cpu, tool


def test_a_term_determined_by_an_earlier_one_is_dropped_by_name():
    """host after cpu, with one host per CPU model: host has no degrees of freedom of its own.
    Fitting it anyway would give it cpu's sum of squares and a SingularMatrixWarning."""
    y, host, cpu, tool = datamill()
    one = np.isin(host, ["h0", "h2", "h3"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = anova(y[one], {"tool": tool[one], "cpu": cpu[one], "host": host[one]},
                  ["tool", "cpu", "host"], "*+")  # fmt: skip
    assert a.dropped == ("host is determined by cpu: its term is dropped",)
    assert [r.term for r in a.rows] == ["tool", "cpu", "tool:cpu", "Residual"]
    sums = [r.sum_sq for r in a.rows]
    assert len(set(sums)) == len(sums)
    same = anova(y[one], {"tool": tool[one], "cpu": cpu[one]}, ["tool", "cpu"], "*")
    assert [r.sum_sq for r in a.rows] == pytest.approx([r.sum_sq for r in same.rows])
    assert a.to_dict()["dropped"] == list(a.dropped)


def test_the_later_term_is_the_one_dropped_and_the_names_follow_the_formula():
    y, host, cpu, _tool = datamill()
    one = np.isin(host, ["h0", "h2", "h3"])
    a = anova(y[one], {"host": host[one], "cpu": cpu[one]}, ["host", "cpu"], "*")
    assert a.dropped == (
        "cpu is determined by host: its term is dropped",
        "host:cpu is determined by host: its term is dropped",
    )
    assert [r.term for r in a.rows] == ["host", "Residual"] and a.rows[0].df == 2


def test_a_nested_term_and_an_interaction_with_missing_cells_are_named():
    y, host, cpu, tool = datamill()
    nested = anova(y, {"cpu": cpu, "host": host}, ["cpu", "host"], "+")
    assert nested.dropped == (
        "host is partly determined by cpu (1 of its 3 degrees of freedom left: its levels are "
        "nested in it): its term is dropped",
    )
    missing = ~((tool == "gzip") & (cpu == "arm"))
    a = anova(y[missing], {"tool": tool[missing], "cpu": cpu[missing]}, ["tool", "cpu"], "*")
    assert a.dropped == (
        "tool:cpu is only partly estimable (1 of its 2 degrees of freedom: not every "
        "combination of its levels was measured): its term is dropped",
    )
    assert [r.term for r in a.rows] == ["tool", "cpu", "Residual"]


def test_a_model_with_no_residual_degrees_of_freedom_is_refused():
    with pytest.raises(ValueError, match="no residual degrees of freedom"):
        anova(np.array([1.0, 2.0, 3.0, 4.0]), {"k": ["a", "b", "c", "d"]}, ["k"], "")
