"""The population factor (TriScale, Jacob et al. JSys 2021, §5.3) in the report's views: the
HTML page's "Population" section shows the block ``analyze`` prints with the numbers of
``analyze --json``'s ``population``, and ``record --format methods`` says the KPIs were
generalised over the factor's sampled inputs. The store is tests/test_population_factor.py's
spec written with the values its command prints (``population_value``, seeded) for its real
plan (benchlang.testing.synthetic)."""

from __future__ import annotations

import html
import json

import pytest

from benchlang.cli import main
from benchlang.report.table import format_number
from benchlang.testing.synthetic import synthetic_store
from tests.test_population_factor import BASES, POPULATION, population_value


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("population-views")
    spec, path = root / "traces.bench", root / "traces.sqlite"
    spec.write_text(POPULATION, encoding="utf-8")
    synthetic_store(spec, path, population_value)
    return path


def cli(capsys, *argv: object) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def strict(text: str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_the_page_shows_analyzes_population_block(store, capsys, tmp_path):
    analyzed = strict(cli(capsys, "analyze", store, "--json"))["population"]
    printed = cli(capsys, "analyze", store)
    block = printed[printed.index("KPIs over the population of trace") :].strip().splitlines()
    page = tmp_path / "page.html"
    cli(capsys, "report", store, "-o", page)
    text = page.read_text(encoding="utf-8")
    start = text.index("<section id='population'>")
    section = text[start : text.index("</section>", start)]
    shown = html.unescape(section)
    assert text.index("<section id='summary'>") < start  # after the answer
    for line in block:  # analyze's lines, word for word
        assert line.strip() in shown
    assert len(analyzed["kpis"]) == 2  # one cell per tool
    for r in analyzed["kpis"]:
        k = r["population_kpi"]
        assert k["refusal"] is None and k["n"] == len(BASES) and k["bound"] == "upper"
        assert (
            f"t over trace ({r['cell']}): p{k['percentile']:g} <= {k['value']:.4g} s at "
            f"{k['confidence']:g}% over {k['n']} inputs "
            f"(exact {k['achieved_confidence']:.1f}%; {k['min_n']} inputs needed)"
        ) in shown
        assert f"t ({r['cell']}): the KPI of each of the {len(BASES)} inputs" in shown
        for name, value in zip(r["inputs"], r["input_kpis"], strict=True):
            assert f"<td>{name}</td><td class='num'>{format_number(value, 4)}</td>" in section
    (c,) = analyzed["contrasts"]
    assert (
        f"median difference {c['median']:.4g} s, {c['confidence']:g}% interval "
        f"[{c['lower']:.4g}, {c['upper']:.4g}] over {c['n']} inputs"
    ) in shown
    assert "href='#population'" in text  # in the table of contents


def test_the_methods_paragraph_names_the_factor_and_its_inputs(store, capsys):
    record = cli(capsys, "record", store)
    assert f"population: factor trace, {len(BASES)} inputs sampled" in record
    methods = cli(capsys, "record", store, "--format", "methods")
    paragraph = methods.split("\n\n")[0]
    assert (
        f"KPIs were generalised over {len(BASES)} sampled inputs of the factor trace "
        "(TriScale §5.3): for t, a one-sided 75% upper confidence bound on the 50th "
        "percentile of the inputs' KPIs, from order statistics"
    ) in paragraph
    assert "@article{thompson1936," in methods and "@article{jacob2021triscale," in methods


def test_a_refused_population_kpi_is_said_on_the_page(tmp_path, capsys):
    """At 99% the median of the inputs needs 7 inputs (log 0.01 / log 0.5): with 6 the page
    says analyze's refusal, with the number to add, and no bound."""
    spec, path = tmp_path / "traces.bench", tmp_path / "traces.sqlite"
    text = POPULATION.replace("percentile 50 confidence 75%", "percentile 50 confidence 99%")
    assert text != POPULATION
    spec.write_text(text, encoding="utf-8")
    synthetic_store(spec, path, population_value)
    analyzed = strict(cli(capsys, "analyze", path, "--json"))["population"]
    refusals = [r["population_kpi"]["refusal"] for r in analyzed["kpis"]]
    assert len(refusals) == 2 and all(refusals)
    page = tmp_path / "page.html"
    cli(capsys, "report", path, "-o", page)
    text = page.read_text(encoding="utf-8")
    start = text.index("<section id='population'>")
    shown = html.unescape(text[start : text.index("</section>", start)])
    for r, why in zip(analyzed["kpis"], refusals, strict=True):
        assert "needs 7: add 1 input" in why
        assert f"t over trace ({r['cell']}): refused: {why}" in shown
    assert "p50 <=" not in shown
