"""The hover table stays complete: every keyword of the grammar and every setting the checker
accepts in a design, layout or convergence block has its meaning there; method settings come
from the methods' declarations, and each of those has a doc and a source."""

from __future__ import annotations

from benchlang.lang.ab_design import LAYOUT_SCHEMA
from benchlang.lang.check.design import _DESIGN_SCHEMA
from benchlang.lang.check.metrics import _CONVERGENCE_SCHEMA
from benchlang.lang.grammar import keyword_of_terminal
from benchlang.lsp.keywords import CONVERGENCE, DESIGN, KEYWORDS, render
from benchlang.stats.registry import statistics_methods


def test_every_keyword_of_the_grammar_has_a_meaning():
    words = {v for v in keyword_of_terminal().values() if v.isidentifier()}
    assert words == set(KEYWORDS)
    assert all(doc.meaning for doc in KEYWORDS.values())


def test_every_block_setting_the_checker_accepts_has_a_meaning():
    assert set(_DESIGN_SCHEMA) | set(LAYOUT_SCHEMA) <= set(DESIGN)
    assert set(_CONVERGENCE_SCHEMA) == set(CONVERGENCE)


def test_every_method_setting_has_a_doc_and_its_method_a_source():
    for method in statistics_methods().values():
        assert method.source
        for parameter in method.parameters:
            assert parameter.doc, (method.name, parameter.name)


def test_a_hover_names_unit_default_and_source():
    text = render("runs", DESIGN["runs"])
    assert "unit: trials" in text and "default: auto" in text and "TriScale" in text
