"""The ANOVA table as DataMill reports it (mean squares, R²) against published numbers, and the
per-host breakdown (stats/anova.py; DataMill, de Oliveira et al. ICPE 2013, §5)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from benchlang.stats.anova import anova, anova_by_host, host_breakdown

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


def _cells(y: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Each value's cell mean over the given factors."""
    cell = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)[1].ravel()
    return (np.bincount(cell, weights=y) / np.bincount(cell))[cell]


def test_a_two_factor_interaction_model_keeps_every_term_and_matches_hand_sums():
    """DataMill's reduced model (Tables 3 and 4): main effects and two-factor interactions,
    non-significant terms kept. Balanced 2x2x2 with 4 replicates: the sums of squares are the
    cell-mean contrasts (Montgomery §5.3)."""
    rng = np.random.default_rng(21)
    a, b, c = (np.array(g).ravel() for g in np.meshgrid([0, 1], [0, 1], [0, 1], indexing="ij"))
    a, b, c = (np.repeat(x, 4) for x in (a, b, c))
    y = 5 + 2.0 * a + 0.5 * a * b + rng.normal(0, 1, a.size)
    fit = anova(y, {"a": a, "b": b, "c": c}, ["a", "b", "c"], "++", order=2)
    assert fit.formula == "metric ~ (a + b + c)^2"
    terms = [r.term for r in fit.rows]
    assert terms == ["a", "b", "c", "a:b", "a:c", "b:c", "Residual"]
    g = y.mean()
    main = {k: float(((_cells(y, v) - g) ** 2).sum()) for k, v in {"a": a, "b": b, "c": c}.items()}
    pairs = {"a:b": (a, b), "a:c": (a, c), "b:c": (b, c)}
    inter = {
        k: float(((_cells(y, u, v) - _cells(y, u) - _cells(y, v) + g) ** 2).sum())
        for k, (u, v) in pairs.items()
    }
    by_term = {r.term: r for r in fit.rows}
    for k, ss in {**main, **inter}.items():
        assert by_term[k].sum_sq == pytest.approx(ss) and by_term[k].df == 1
    residual = float(((y - g) ** 2).sum()) - sum(main.values()) - sum(inter.values())
    assert by_term["Residual"].sum_sq == pytest.approx(residual)
    assert by_term["Residual"].df == a.size - 7
    assert any(r.p_value is not None and r.p_value > 0.05 for r in fit.rows)  # kept


def test_by_host_fits_each_host_apart_and_names_a_term_constant_on_a_host():
    y, host, cpu, tool = datamill()
    found = anova_by_host(y, {"tool": tool, "cpu": cpu}, ["tool", "cpu"], "*", host)
    assert [t.host for t in found.tables] == ["h0", "h1", "h2", "h3"]
    for t in found.tables:
        mine = host == t.host
        alone = anova(y[mine], {"tool": tool[mine]}, ["tool"], "")
        assert t.notes == (f"cpu has one level on host {t.host}: its terms are left out",)
        assert [r.sum_sq for r in t.anova.rows] == pytest.approx([r.sum_sq for r in alone.rows])
        assert t.anova.r_squared == pytest.approx(alone.r_squared)
    assert found.to_dict()["tables"][0]["anova"]["rows"][0]["term"] == "tool"


FACTS = {
    "local:0": {"cpu_model": "Xeon E5"},
    "local:1": {"cpu_model": "Cortex-A72"},
    "local:2": {"cpu_model": "EPYC"},
}
SPEC = """benchlang 1
experiment dm {
  seed 3
  hosts local { slots 3 facts from file "facts.json" }
  factor tool in ["xz", "gzip"]
  factor level in [1, 9]
  factor aslr in ["on", "off"]
  benchmark b { run "echo {tool} {level} {aslr}"
    measure t = wall_time }
  metric t { measure mean unit "s" }
  design { runs 3 }
  analysis {
    anova t ~ (tool + level + aslr)^2
    anova t ~ tool * level by host
  }
}
"""


def _cli(cwd, *args: str, code: int = 0) -> str:
    """The CLI in this process (``cli_here``); the trials it runs are processes."""
    from tests.conftest import cli_here

    status, out, err = cli_here(args, cwd=cwd)
    assert status == code, err
    return out + err


def test_datamill_tables_by_host_and_reduced_through_the_cli(tmp_path):
    import json

    from benchlang.jsonout import loads

    (tmp_path / "facts.json").write_text(json.dumps(FACTS))
    (tmp_path / "dm.bench").write_text(SPEC)
    _cli(tmp_path, "run", "dm.bench", "--store", "dm.sqlite", "-q", "-i")
    text = _cli(tmp_path, "analyze", "dm.bench", "--store", "dm.sqlite")
    assert "t: metric ~ (tool + level + aslr)^2, n = 24" in text
    for h in FACTS:
        assert f"t on host {h}: metric ~ tool * level, n = 8" in text
    assert text.count("adjusted R²") == 4 and "mean sq" in text
    reduced, by_host = loads(
        _cli(tmp_path, "analyze", "dm.bench", "--store", "dm.sqlite", "--json")
    )["comparisons"]
    terms = [r["term"] for r in reduced["mixed_effects"]["rows"]]
    assert terms == ["tool", "level", "aslr", "tool:level", "tool:aslr", "level:aslr", "Residual"]
    tables = by_host["anova_by_host"]["tables"]
    assert [t["host"] for t in tables] == sorted(FACTS)
    for t in tables:
        table = t["anova"]
        assert table["n"] == 8 and {"r_squared", "adj_r_squared"} <= set(table)
        assert [r["term"] for r in table["rows"]] == ["tool", "level", "tool:level", "Residual"]
        assert {"df", "sum_sq", "mean_sq", "f", "p_value", "eta_squared"} <= set(table["rows"][0])
    _cli(tmp_path, "report", "dm.sqlite", "-o", "dm.html")
    page = (tmp_path / "dm.html").read_text()
    assert "ANOVA (DataMill §5) on host local:1: t ~ tool * level" in page  # the metric named


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("tool * level by aslr", "only 'by host'"),
        ("(tool * level)^2", "applies to a sum of factors"),
        ("(tool + level)^3", "interaction order 3"),
        ("tool + host by host", "cannot also have host as a term"),
    ],
)
def test_a_wrong_anova_shape_is_refused_with_the_fix(tmp_path, formula, message):
    spec = SPEC.replace(
        "anova t ~ (tool + level + aslr)^2\n    anova t ~ tool * level by host",
        f"anova t ~ {formula}",
    )
    (tmp_path / "dm.bench").write_text(spec)
    assert message in _cli(tmp_path, "check", "dm.bench", code=2)
