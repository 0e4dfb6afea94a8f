"""The statistics registry (docs/plugins.md, "Statistics methods"): built-ins registered in
benchlang's own pyproject, the checker validating settings from declared parameters with
positioned diagnostics, the language forms and their shorthands, ``plugins --describe``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.stats.contract import KINDS, ComparisonOutcome, Method, Parameter, to_plain
from benchlang.stats.registry import statistics_methods

BUILT_INS = {
    "thompson": "kpi",
    "kpi_bootstrap": "kpi",
    "variability": "variability",
    "bootstrap": "comparison",
    "mixed_effects": "comparison",
    "mann_whitney": "comparison",
    "median_ratio": "comparison",
    "equivalence": "comparison",
    "anova": "factorial",
    "order_dependence": "order",
    "position_effects": "order",
    "after": "stopping",
    "kpi_width": "stopping",
    "adaptive": "stopping",
}

BASE = """
  factor v in ["a", "b"]
  benchmark b { run "echo {v}" measure x from stdout regex "([0-9]+)" }
  metric x { measure mean }
"""


def compiled(body: str):
    text = f"benchlang 1\nexperiment t {{\n{textwrap.dedent(BASE)}{textwrap.dedent(body)}\n}}\n"
    return compile_source(decode("t.bench", text.encode()))


def errors(body: str) -> list[tuple[int, int, str, str | None]]:
    with pytest.raises(SpecError) as info:
        compiled(body)
    return [(d.span.line, d.span.column, d.message, d.hint) for d in info.value.diagnostics]


def test_every_built_in_is_registered_through_the_entry_point_group():
    catalogue = statistics_methods()
    for name, kind in BUILT_INS.items():
        method = catalogue[name]
        assert method.kind == kind and method.name == name
        assert catalogue.distribution(name)[0] == "benchlang"
        assert method.source, f"{name} cites no source"


def test_declarations_are_consistent_and_implementations_load():
    for name in BUILT_INS:
        method = statistics_methods()[name]
        assert method.kind in KINDS
        assert len({p.name for p in method.parameters}) == len(method.parameters)
        for p in method.parameters:
            assert p.doc
            if p.default is not None and p.type == "choice":
                assert p.default in p.choices
        assert callable(method.load())


def test_declaration_modules_import_no_heavy_library():
    code = (
        "import sys\n"
        "from benchlang.stats.registry import statistics_methods\n"
        "c = statistics_methods()\n"
        "[c[n] for n in c]\n"
        "print(sorted(m for m in ('scipy', 'statsmodels', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_bad_declaration_is_refused_when_made():
    with pytest.raises(ValueError, match="unknown kind"):
        Method("m", "regression", "s", "src", "mod:fn")
    with pytest.raises(ValueError, match="needs its choices"):
        Parameter("p", "choice", "doc")


def test_outcomes_serialise_without_a_to_dict():
    o = ComparisonOutcome("m", 1.5, "ratio", ci_low=1.1, ci_high=float("nan"), confidence=95.0)
    plain = to_plain(o)
    assert plain["estimate"] == 1.5 and plain["ci_high"] is None and plain["details"] == {}
    json.dumps(plain)


def test_unknown_comparison_method_says_did_you_mean_at_its_position():
    [(line, column, message, hint)] = errors(
        "analysis { compare x by v with mann_whitny { confidence 95% } }"
    )
    assert (line, column) == (7, 32)
    assert message == "unknown comparison method 'mann_whitny'"
    assert hint == "did you mean 'mann_whitney'?"


def test_a_method_of_another_kind_is_named_as_such():
    [(_, _, message, _)] = errors("analysis { compare x by v with kpi_width }")
    assert message == "'kpi_width' is a stopping rule method, not a comparison method"


def test_bad_and_missing_settings_are_checked_against_declared_parameters():
    found = errors(
        """
        analysis {
          compare x by v with equivalence { alpah 0.05 }
          compare x by v with mann_whitney { exact sometimes }
        }
        """
    )
    messages = {m: h for _, _, m, h in found}
    assert (
        messages["unknown setting 'alpah' in compare with equivalence"] == "did you mean 'alpha'?"
    )
    assert "compare with equivalence needs 'margin'" in messages
    assert any(m.startswith("exact: expected one of auto, exact, asymptotic") for m in messages)


def test_stop_forms_and_their_shorthands_give_the_same_model():
    kpi = "kpi x { percentile 50 confidence 95% }\n"
    assert compiled(kpi + "stop after 12").stop == compiled(kpi + "stop after { count 12 }").stop
    shorthand = compiled(kpi + "stop when kpi x width < 5% max 40").stop
    named = compiled(kpi + "stop kpi_width { metric x width 5% max 40 }").stop
    assert shorthand == named and shorthand.settings["relative"]
    assert compiled(kpi + "stop adaptive { ks 0.2 }").stop.settings["ks"] == 0.2
    [(_, _, message, hint)] = errors(kpi + "stop adaptve { ks 0.2 }")
    assert (
        message == "unknown stopping rule method 'adaptve'" and hint == "did you mean 'adaptive'?"
    )


def test_kpi_with_thompson_is_the_default_kpi():
    plain = compiled("kpi x { percentile 50 confidence 95% }").kpis
    named = compiled("kpi x with thompson { percentile 50 confidence 95% }").kpis
    assert plain == named
    [(_, _, message, hint)] = errors("kpi x with tompson { percentile 50 confidence 95% }")
    assert message == "unknown KPI method 'tompson'" and hint == "did you mean 'thompson'?"


def test_named_analyses_in_the_analysis_block():
    exp = compiled("analysis { position_effects { alpha 0.01 } }")
    assert exp.order_dependence == {"alpha": 0.01}
    [(_, _, message, _)] = errors("analysis { position_effect { alpha 0.01 } }")
    assert message == "unknown order analysis or factorial analysis method 'position_effect'"


def test_plugins_describe_prints_parameters(cli_in_process):
    code, out, _ = cli_in_process(["plugins", "--describe", "equivalence"])
    assert code == 0
    assert re.search(r"margin \(required\)\s+percent\s+-", out)
    assert "Schuirmann" in out
    code, out, _ = cli_in_process(["plugins", "--describe", "equivalence", "--json"])
    described = json.loads(out)["method"]
    assert described["kind"] == "comparison" and described["package"] == "benchlang"
    code, _, err = cli_in_process(["plugins", "--describe", "bootstrp"])
    assert code == 2 and "did you mean 'bootstrap'?" in err


def test_check_warns_when_the_design_gives_a_method_too_few_trials():
    text = (
        "benchlang 1\nexperiment t {\n" + textwrap.dedent(BASE) + "  design { runs 3 series 1 }\n"
        "  analysis { compare x by v with mann_whitney { confidence 99% } }\n}\n"
    )
    from benchlang.lang.check import check_source

    warnings = check_source(decode("t.bench", text.encode())).warnings
    assert [w.message for w in warnings] == [
        "compare x by v with mann_whitney needs at least 5 trials per level; "
        "the design gives 3 (runs x series)"
    ]


def test_runs_auto_gives_each_level_the_sample_its_comparison_method_needs():
    """runs auto asks the compared methods (Method.needs) as well as the KPIs: median_ratio
    declares 5 trials per level, more than the p50/75% KPI's 2; with 2 series, 3 runs."""
    plain = compiled("  kpi x { percentile 50 confidence 75% }\n  design { runs auto }\n")
    assert plain.design.runs == 2
    sized = compiled(
        "  kpi x { percentile 50 confidence 75% }\n  design { runs auto }\n"
        "  analysis { compare x by v with median_ratio { } }\n"
    )
    assert sized.design.runs == 5 and "median_ratio needs at least 5" in sized.design.runs_reason
    two = compiled(
        "  design { runs auto series 2 }\n"
        "  analysis { compare x by v with mann_whitney { confidence 99% } }\n"
    )
    assert two.design.runs == 3  # 5 per level at 99% (2 / C(10, 5) < 1%), over 2 series


SCALED_KPI = """
import attrs
from benchlang.stats.kpi import kpi


def scaled(values, percentile, confidence, bound, exclude, scale=1.0):
    k = kpi(values, percentile, confidence, bound, exclude)
    return attrs.evolve(k, value=k.value * scale)
"""


def test_a_kpi_method_from_a_plugin_is_sized_run_and_recorded(tmp_path, monkeypatch):
    """A kpi method registered like a plugin's (declaration in the catalogue, implementation in
    its own module): ``runs auto`` asks its minimal sample, the analysis calls it for every
    series with its extra settings, the record names it."""
    from benchlang.app.analysis import analyze_store
    from benchlang.stats.registry import methods_used
    from benchlang.testing.synthetic import lognormal, synthetic_store

    (tmp_path / "scaledkpi.py").write_text(SCALED_KPI)
    monkeypatch.syspath_prepend(str(tmp_path))
    method = Method(
        "scaled_kpi",
        "kpi",
        "Thompson's bound times a factor (a test double of a plugin)",
        "Thompson, Ann. Math. Stat. 7, 1936",
        "scaledkpi:scaled",
        (
            Parameter("percentile", "percentile", "p", required=True),
            Parameter("confidence", "percent", "c", required=True),
            Parameter("scale", "number", "factor", default=1.0, minimum=0.0),
        ),
        min_samples_for=lambda settings: 7,
    )
    monkeypatch.setitem(statistics_methods()._loaded, "scaled_kpi", method)
    body = (
        "  kpi x with scaled_kpi { percentile 50 confidence 75% scale 2 }\n  design { runs auto }\n"
    )
    exp = compiled(body)
    assert exp.design.runs == 7 and "scaled_kpi declares" in exp.design.runs_reason
    assert exp.kpis[0].method == "scaled_kpi" and exp.kpis[0].options == (("scale", 2.0),)
    spec = tmp_path / "t.bench"
    text = f"benchlang 1\nexperiment t {{\n{textwrap.dedent(BASE)}{body}\n}}\n"
    spec.write_text(text)
    synthetic_store(spec, tmp_path / "s.sqlite", lambda plan, t: {"x": 10 * lognormal(plan, t)})
    got = analyze_store(tmp_path / "s.sqlite").kpis
    plain = analyze_store(
        tmp_path / "s.sqlite",
        experiment=compiled(body.replace("with scaled_kpi", "").replace(" scale 2", "")),
    ).kpis
    assert len(got) == 2
    for scaled, thompson in zip(got, plain, strict=True):
        s, t = scaled.analysis.series[0].kpi, thompson.analysis.series[0].kpi
        assert s.value == pytest.approx(2 * t.value) and s.rank == t.rank
    assert methods_used(exp)[0].startswith("scaled_kpi { scale 2 } (benchlang ")
    [(_, _, message, hint)] = errors(
        "kpi x with scaled_kpi { percentile 50 confidence 75% }\n  stop when kpi x width < 5%"
    )
    assert "watches Thompson's bound" in message and "stop adaptive" in hint


def test_the_methods_paragraph_names_the_stop_rule_with_its_settings(tmp_path):
    from benchlang.app.report import methods_of
    from benchlang.testing.synthetic import lognormal, synthetic_store

    body = "  kpi x { percentile 50 confidence 75% }\n  stop adaptive { ks 0.2 min 12 max 30 }\n"
    spec = tmp_path / "t.bench"
    spec.write_text(f"benchlang 1\nexperiment t {{\n{textwrap.dedent(BASE)}{body}\n}}\n")
    synthetic_store(spec, tmp_path / "s.sqlite", lambda plan, t: {"x": 10 * lognormal(plan, t)})
    text = methods_of(tmp_path / "s.sqlite")
    assert "(KS threshold 0.2, at least 12 and at most 30 trials)" in text
