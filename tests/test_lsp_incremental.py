"""The language server's incremental parse (benchlang/lang/fragments.py) gives what a whole
parse gives, on every edit of seeded edit sequences: the same diagnostics (messages, spans,
hints) and the same checked experiment. The edits are what typing does (a character in a
string or a number, a line added, removed, doubled, split or joined, a comment) and some that
break the text (a brace or a quote removed, a keyword misspelt, a stray character): the
broken statement alone is re-parsed, with the whole parse's error recovery, or, where a brace
is left open or closed too early, the whole parse resumes where the last plain piece ends.
The suite tries 30 edits a text and 60 fuzzed texts a test; ``BENCHLANG_FUZZ=full``
(tests/fuzz_budget.py) 60 edits and 1,000 texts."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlang.lang import ast, fragments, syntax
from benchlang.lang.diagnostics import Source
from benchlang.lsp import features
from tests.fuzz_budget import cases

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_lsp import MIXED, edit, spec_of  # noqa: E402


def checked(text: str, pieces: bool) -> features.Checked:
    syntax.PIECES["on"] = pieces
    try:
        return features.check_text(text, "e.bench")
    finally:
        syntax.PIECES["on"] = False


EVERY_KIND = {**MIXED, "typo": 10, "split": 5, "join": 5}
"""The benchmark's mixed edits and those it leaves out: misspelt keywords, split and joined
lines."""


@pytest.mark.parametrize(
    "name, seed",
    [("generated", 1), ("quickstart.bench", 2), ("ab-layout.bench", 3), ("sorting.bench", 4)],
)
def test_every_edit_checks_as_the_whole_text_does(name, seed):
    text = spec_of(200) if name == "generated" else (ROOT / "specs" / name).read_text()
    rnd = random.Random(seed)
    answered = {"ast": 0, "errors": 0, "whole": 0}
    edits = cases(30, 60)
    for _ in range(edits):
        edited = edit(text, rnd, EVERY_KIND)
        whole, incremental = checked(edited, False), checked(edited, True)
        assert incremental.diagnostics == whole.diagnostics, edited
        assert incremental.experiment == whole.experiment, edited
        pieced = fragments.parse_pieces(edited)
        answered[
            "whole" if pieced is None else "errors" if isinstance(pieced, list) else "ast"
        ] += 1
        if isinstance(pieced, ast.Experiment) or (isinstance(pieced, list) and rnd.random() < 0.3):
            text = edited  # most typos are fixed by the next edit; some stay while others come
    assert answered["errors"] >= edits // 10, answered  # syntax errors, answered from pieces
    assert answered["ast"] + answered["errors"] >= edits * 3 // 4, answered


def test_pieces_give_the_whole_parse_tree_with_its_positions():
    text = spec_of(200)
    whole = syntax.parse(Source("e.bench", text))
    pieced = fragments.parse_pieces(text)
    assert isinstance(pieced, ast.Experiment)
    assert syntax._flatten(pieced) == whole


def test_a_line_added_above_moves_the_statements_below_without_parsing_them():
    text = spec_of(200)
    fragments.parse_pieces(text)
    before = fragments._piece.cache_info().misses
    lines = text.split("\n")
    moved = "\n".join([*lines[:3], "", "  # a note", *lines[3:]])
    pieced = fragments.parse_pieces(moved)
    assert fragments._piece.cache_info().misses - before <= 1  # the comment only
    assert syntax._flatten(pieced) == syntax.parse(Source("e.bench", moved))


def test_a_typo_reparses_only_its_statement_and_reports_what_check_reports():
    text = spec_of(200)
    fragments.parse_pieces(text)
    before = fragments._piece.cache_info().misses
    broken = text.replace("    measure time = wall_time\n", "    measre time = wall_time\n", 1)
    pieced = fragments.parse_pieces(broken)
    assert isinstance(pieced, list) and pieced
    assert fragments._piece.cache_info().misses - before == 1
    assert checked(broken, True) == checked(broken, False)


@pytest.mark.parametrize(
    "text",
    [
        "benchlang 1\nexperiment x { seed 1\n}\n",  # a statement on the experiment's line
        "benchlang 1\nexperiment x {\n  factor a in\n    [1, 2]\n}\n",  # a statement cut in two
        'benchlang 1\nexperiment x {\n  reset "r"\n  reconnect\n}\n',  # continued below
    ],
)
def test_a_valid_layout_that_is_not_plain_is_parsed_whole(text):
    assert fragments.parse_pieces(text) is None
    assert checked(text, True) == checked(text, False)


@pytest.mark.parametrize(
    "text",
    [
        "benchlang 1\nexperiment x {\n  seed 1\n}\nseed 2\n",  # text after the closing brace
        'benchlang 1\nexperiment x {\n  title "unclosed\n}\n',
        "benchlang 1\nexperiment x {\n  seed 1\n",  # the experiment left open
        "benchlang 1\nexperiment x {\n  benchmark b {\n  seed 1\n}\n",  # a brace left open
        "benchlang 1\nexperiment x {\n  seed 1\n  }\n  seed 2\n}\n",  # closed too early
        "benchlang 1\nexperiment x {\n  seed\n  seed 2\n}\n",  # refused at the next line
    ],
)
def test_broken_layouts_report_what_the_whole_parse_reports(text):
    assert isinstance(fragments.parse_pieces(text), list)
    assert checked(text, True) == checked(text, False)


_spec = importlib.util.spec_from_file_location(
    "lang_fuzz", Path(__file__).with_name("test_lang_fuzz.py")
)
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)
FUZZED = settings(fuzz.SETTINGS, max_examples=cases(60, 1000))


@FUZZED
@given(
    st.sampled_from(range(len(fuzz.SEED_TEXTS))),
    st.lists(fuzz.MUTATION, min_size=1, max_size=5),
)
def test_mutated_specs_check_as_the_whole_text_does(which, mutations):
    """The checker's fuzzed inputs (tests/test_lang_fuzz.py): tokens deleted, inserted,
    doubled or replaced anywhere, braces and quotes included."""
    text = fuzz.mutate(which, mutations)
    assert checked(text, True) == checked(text, False)


@FUZZED
@given(st.lists(st.lists(st.sampled_from(fuzz.VOCAB), max_size=6), max_size=12))
def test_token_soup_lines_check_as_the_whole_text_does(lines):
    body = "\n".join("  " + " ".join(line) for line in lines)
    text = f"benchlang 1\nexperiment x {{\n{body}\n}}\n"
    assert checked(text, True) == checked(text, False)
