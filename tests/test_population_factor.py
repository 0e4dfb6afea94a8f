"""A population factor: ``factor trace in [...] population { ... }``, whose
levels are a sample of inputs that the KPIs generalise over (TriScale, Jacob et al. JSys 2021,
§5.3, Fig. 6). Each input's KPI is the configuration's, the population KPI an order statistic
over them; the other factors' levels are compared with the inputs as blocks. The store comes
from ``benchlang run`` of a spec whose command prints its own seeded value (an awk program, a
millisecond a trial where a Python interpreter took 30-50): each trace has a known base (the
inputs' KPIs sort as the bases do), tool b adds exactly 1."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchlang import model
from benchlang.cli import main
from benchlang.lang.check import compile_source
from benchlang.lang.syntax import decode
from benchlang.stats.population import paired_over_inputs, population_kpi

BASES = {"t1": 3.0, "t2": 7.0, "t3": 1.0, "t4": 5.0, "t5": 2.0, "t6": 9.0}
TRACES = ", ".join(f'"{t}"' for t in BASES)
POPULATION = f'''benchlang 1

experiment traces {{
  seed 11
  factor tool in ["a", "b"]
  factor trace in [{TRACES}] population {{ percentile 50 confidence 75% }}
  benchmark replay {{
    run """awk -v tool={{tool}} -v trace={{trace}} -v seed="$BENCHLANG_SEED" 'BEGIN {{{{
      srand(seed); n = split("{" ".join(f"{t} {b}" for t, b in BASES.items())}", kv, " ")
      for (i = 1; i < n; i += 2) base[kv[i]] = kv[i + 1]
      print "value", sprintf("%.6f", base[trace] + (tool == "b") + 0.01 * rand())
    }}}}'"""
    measure t from stdout regex "value ([0-9.]+)"
  }}
  metric t {{ measure mean unit "s" }}
  kpi t {{ percentile 50 confidence 95% }}
  design {{ runs 5 }}
}}
'''


def population_value(plan, t) -> dict:
    """For synthetic stores (tests/test_figures_docs.py): a value as the command prints it
    (the trace's base, plus 1 for tool b, plus a seeded draw below 0.01)."""
    levels = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
    rng = np.random.default_rng(int(plan.trial_seed[t]))
    return {"t": BASES[levels["trace"]] + (levels["tool"] == "b") + 0.01 * rng.random()}


def strict(text: str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def hand_upper_rank(n: int, p: float, c: float) -> tuple[int, float]:
    """The smallest k with P(Bin(n, p) <= k - 1) >= c, summed term by term (Thompson 1936)."""
    total = 0.0
    for k in range(1, n + 1):
        total += math.comb(n, k - 1) * p ** (k - 1) * (1 - p) ** (n - k + 1)
        if total >= c:
            return k, total
    raise AssertionError("no rank")


@pytest.fixture(scope="module")
def store(built_once):
    """``benchlang run`` of POPULATION, made once for the session (a copy per module)."""

    def build(root):
        (root / "traces.bench").write_text(POPULATION, encoding="utf-8")
        args = ["run", str(root / "traces.bench"), "--store", str(root / "traces.sqlite"), "-q"]
        assert main(args) == 0

    return built_once(POPULATION, build) / "traces.sqlite"


def test_the_declaration_compiles_and_formats():
    exp = compile_source(decode("p.bench", POPULATION.encode()))
    assert exp.population == model.Population("trace", 50.0, 75.0)
    assert exp.factor("trace").levels == tuple(BASES)
    bare = POPULATION.replace(" { percentile 50 confidence 75% }", "")
    assert compile_source(decode("p.bench", bare.encode())).population == model.Population("trace")


def test_fmt_round_trips_the_population(tmp_path, capsys):
    messy = POPULATION.replace(
        "population { percentile 50 confidence 75% }",
        "population   {percentile 50   confidence 75%}   # the inputs",
    )
    path = tmp_path / "p.bench"
    path.write_text(messy, encoding="utf-8")
    assert main(["fmt", "--check", str(path)]) == 1
    assert main(["fmt", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert (
        f"factor trace in [{TRACES}] population {{ percentile 50 confidence 75% }}  # the inputs"
        in text
    )
    assert main(["fmt", "--check", str(path)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("declaration", "word", "message", "hint"),
    [
        (
            f"factor trace in [{TRACES}] hidden population",
            "population",
            "factor 'trace' cannot be both hidden and a population",
            "a population's inputs are crossed into the configurations: drop 'hidden'",
        ),
        (
            'factor trace in ["t1"] population',
            "population",
            "a population needs at least two inputs; factor 'trace' has 1",
            'factor trace in ["a", "b", "c", "d", "e"] population { percentile 50 confidence 95% }',
        ),
        (
            f"factor trace in [{TRACES}] population {{ percentil 50 }}",
            "percentil",
            "unknown setting 'percentil' in population of factor 'trace'",
            "did you mean 'percentile'?",
        ),
    ],
)
def test_a_bad_declaration_is_a_positioned_error(
    tmp_path, capsys, declaration, word, message, hint
):
    line = next(x for x in POPULATION.splitlines() if x.startswith("  factor trace"))
    path = tmp_path / "bad.bench"
    path.write_text(POPULATION.replace(line, "  " + declaration), encoding="utf-8")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    row = POPULATION.splitlines().index(line) + 1
    head = next(x for x in err.splitlines() if ": error: " in x)
    name, at_line, column, _ = head.split(":", 3)
    assert (name, int(at_line)) == (str(path), row) and head.endswith(f"error: {message}")
    lines = err.splitlines()
    source, caret = lines[lines.index(head) + 1 : lines.index(head) + 3]
    assert source.strip() == declaration and caret.strip().startswith("^")
    indent = source.index(declaration) - 2  # the spec's line starts with two spaces
    assert caret.index("^") == indent + int(column) - 1
    assert source[caret.index("^") :].startswith(word)
    assert lines[lines.index(head) + 3] == f"  hint: {hint}"


def test_too_few_inputs_warns_in_check_and_is_refused_with_the_minimum(store, tmp_path, capsys):
    path = store
    few = tmp_path / "few.bench"
    few.write_text(
        POPULATION.replace("percentile 50 confidence 75%", "percentile 75 confidence 95%"),
        encoding="utf-8",
    )
    assert main(["check", str(few)]) == 0
    err = capsys.readouterr().err
    assert "warning: the population KPI of t needs at least 11 inputs; factor 'trace' has 6" in err
    assert "hint: add 5 more level(s) to factor 'trace'" in err
    covered = tmp_path / "covered.bench"
    covered.write_text(
        few.read_text(encoding="utf-8").replace(
            '"t6"] population', '"t6"] coverage 50% population'
        ),
        encoding="utf-8",
    )
    assert main(["check", str(covered)]) == 0
    err = capsys.readouterr().err
    assert "needs at least 11 inputs; factor 'trace' has 6 (3 kept by its coverage)" in err
    assert "hint: keep at least 11 levels: raise the coverage of factor 'trace'" in err
    assert main(["analyze", str(path), str(few)]) == 0
    out = capsys.readouterr().out
    refusal = (
        "refused: 6 input(s) with a KPI; the upper bound of p75 at 95% needs 11: add 5 input(s)"
    )
    assert f"t over trace (tool=a): {refusal}" in out
    assert main(["analyze", str(path), str(few), "--json"]) == 0
    doc = strict(capsys.readouterr().out)
    kpi = doc["population"]["kpis"][0]["population_kpi"]
    assert (kpi["value"], kpi["n"], kpi["min_n"]) == (None, 6, 11)
    assert kpi["refusal"].endswith("add 5 input(s)") and "value" in kpi["null_reasons"]
    assert math.ceil(math.log(0.05) / math.log(0.75)) == 11  # TriScale §4.5 Eq. 4


def test_the_population_kpi_is_the_order_statistic_of_the_inputs_kpis(store, capsys):
    path = store
    assert main(["analyze", str(path), "--json"]) == 0
    doc = strict(capsys.readouterr().out)
    per_configuration = {
        r["configuration"]: r["series"][0]["value"] for r in doc["kpis"] if r["metric"] == "t"
    }
    rank, achieved = hand_upper_rank(6, 0.5, 0.75)
    assert (rank, achieved) == (5, 57 / 64)
    results = doc["population"]["kpis"]
    assert [r["cell"] for r in results] == ["tool=a", "tool=b"]
    for r, shift in zip(results, (0.0, 1.0), strict=True):
        assert r["inputs"] == list(BASES)
        assert r["input_kpis"] == [
            per_configuration[f"replay[tool={r['levels']['tool']},trace={t}]"] for t in BASES
        ]
        for t, value in zip(BASES, r["input_kpis"], strict=True):
            assert BASES[t] + shift <= value <= BASES[t] + shift + 0.01
        k = r["population_kpi"]
        assert k["value"] == sorted(r["input_kpis"])[rank - 1]
        assert 7.0 + shift <= k["value"] <= 7.01 + shift  # the 5th smallest base is t2's
        assert (k["rank"], k["n"], k["min_n"], k["bound"]) == (5, 6, 2, "upper")
        assert k["achieved_confidence"] == pytest.approx(100 * 57 / 64)
    (contrast,) = doc["population"]["contrasts"]
    assert (contrast["compared"], contrast["a"], contrast["b"]) == ("tool", "b", "a")
    differences = sorted(
        b - a for a, b in zip(results[0]["input_kpis"], results[1]["input_kpis"], strict=True)
    )
    assert contrast["ranks"] == [1, 6]  # 6 pairs: the whole range, at 1 - 2/64
    assert (contrast["lower"], contrast["upper"]) == (differences[0], differences[-1])
    assert contrast["achieved_confidence"] == pytest.approx(100 * (1 - 2 / 64))
    assert 0.99 <= contrast["lower"] <= contrast["median"] <= contrast["upper"] <= 1.01
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    value = results[0]["population_kpi"]["value"]
    assert (
        f"t over trace (tool=a): p50 <= {value:.4g} s at 75% over 6 inputs "
        "(exact 89.1%; 2 inputs needed)" in out
    )
    assert "t, tool=b - tool=a, paired by trace: median difference" in out


def test_results_show_the_population_kpi(store, capsys):
    path = store
    assert main(["results", str(path), "--json"]) == 0
    doc = strict(capsys.readouterr().out)
    assert [r["population_kpi"]["rank"] for r in doc["population"]["kpis"]] == [5, 5]
    assert main(["results", str(path)]) == 0
    assert "KPIs over the population of trace (TriScale §5.3" in capsys.readouterr().out


def test_the_record_names_the_population_and_the_inputs_sampled(store, capsys):
    path = store
    line = (
        "population: factor trace, 6 inputs sampled; KPIs generalised over the inputs' KPIs "
        "as p50 at 75% (TriScale §5.3)"
    )
    assert main(["record", str(path), "--format", "markdown"]) == 0
    assert line in capsys.readouterr().out
    assert main(["record", str(path), "--format", "json"]) == 0
    assert strict(capsys.readouterr().out)["populations"] == [line]


def test_the_figure_draws_each_input_and_the_population_kpi(store, tmp_path, capsys):
    path = store
    svg, csv = tmp_path / "fig6.svg", tmp_path / "fig6.csv"
    args = ["figure", str(path), "population-kpis", "-o", str(svg), "--data", str(csv)]
    assert main(args) == 0
    assert "Fig. 6" in capsys.readouterr().out
    assert svg.read_bytes().lstrip().startswith((b"<?xml", b"<svg"))
    assert main(["figure", str(path), "population-kpis", "--json"]) == 0
    doc = strict(capsys.readouterr().out)
    rows = [dict(zip(doc["columns"], r, strict=True)) for r in doc["rows"]]
    population = [r for r in rows if r["part"] == "population KPI"]
    inputs = [r for r in rows if r["part"] == "input KPI" and r["cell"] == "tool=a"]
    assert [r["input"] for r in inputs] == ["t3", "t5", "t1", "t4", "t2", "t6"]
    assert [r["x"] for r in population] == [5, 5]
    assert population[0]["y"] == inputs[4]["y"]


def test_population_kpi_matches_the_order_statistic_by_hand():
    rng = np.random.default_rng(54)
    kpis = rng.lognormal(0.0, 0.5, 23)
    s = np.sort(kpis)
    for p, c in ((50, 95), (75, 75), (90, 90)):
        k, achieved = hand_upper_rank(23, p / 100, c / 100)
        upper = population_kpi(kpis, p, c, "upper")
        assert (upper.rank, upper.value) == (k, s[k - 1])
        assert upper.achieved_confidence == pytest.approx(100 * achieved)
        lower = population_kpi(-kpis, 100 - p, c, "lower")  # the mirror of the upper bound
        assert (lower.rank, lower.value) == (23 + 1 - k, -s[k - 1])
    high, _ = hand_upper_rank(23, 0.5, 0.975)  # each side of a 95% interval at 97.5%
    both = population_kpi(kpis, 50, 95, "both")
    assert both.ranks == (24 - high, high) == (7, 17)
    assert (both.lower, both.upper) == (s[23 - high], s[high - 1])
    refused = population_kpi(kpis[:4], 50, 95, "upper")
    assert refused.refusal == (
        "4 input(s) with a KPI; the upper bound of p50 at 95% needs 5: add 1 input(s)"
    )
    paired = paired_over_inputs(kpis[:5], kpis[:5] - 1.0, 95)
    assert paired.refusal is not None and paired.min_n == 6


def test_the_contrasts_over_inputs_hold_jointly(tmp_path, capsys):
    """Three tools over nine traces: two contrasts against tool a, read as one claim, so
    each is at 97.5% (Bonferroni over the list); with 9 pairs that is ranks (1, 9), where
    95% alone would be (2, 8)."""
    traces = {f"u{i}": float(i) for i in range(1, 10)}
    listed = ", ".join(f'"{t}"' for t in traces)
    spec = (
        POPULATION.replace('["a", "b"]', '["a", "b", "c"]')
        .replace(TRACES, listed)
        .replace(
            " ".join(f"{t} {b}" for t, b in BASES.items()),
            " ".join(f"{t} {b}" for t, b in traces.items()),
        )
    )
    path = tmp_path / "three.sqlite"
    (tmp_path / "three.bench").write_text(spec, encoding="utf-8")
    assert main(["run", str(tmp_path / "three.bench"), "--store", str(path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["analyze", str(path), "--json"]) == 0
    doc = strict(capsys.readouterr().out)
    kpis = {r["levels"]["tool"]: r["input_kpis"] for r in doc["population"]["kpis"]}
    contrasts = doc["population"]["contrasts"]
    assert [(c["a"], c["b"]) for c in contrasts] == [("b", "a"), ("c", "a")]
    for c in contrasts:
        assert c["family"] == {"contrasts": 2, "joint_confidence": 95.0}
        assert c["confidence"] == pytest.approx(97.5)
        assert c["ranks"] == [1, 9]
        d = sorted(x - y for x, y in zip(kpis[c["a"]], kpis["a"], strict=True))
        assert (c["lower"], c["upper"]) == (d[0], d[8])
        assert c["achieved_confidence"] == pytest.approx(100 * (1 - 2 / 512))
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert "interval at 95% jointly over 2 contrasts" in out
