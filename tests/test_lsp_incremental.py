"""The language server's incremental parse (benchlang/lang/fragments.py) gives what a whole
parse gives, on every edit of seeded edit sequences: the same diagnostics (messages, spans,
hints) and the same checked experiment. The edits are what typing does (a character in a
string or a number, a line added, removed or doubled, a comment) and some that break the text
(a brace or a quote removed), where the whole parse must take over."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from benchlang.lang import fragments, syntax
from benchlang.lang.diagnostics import Source
from benchlang.lsp import features

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_lsp import edit, spec_of  # noqa: E402


def checked(text: str, pieces: bool) -> features.Checked:
    syntax.PIECES["on"] = pieces
    try:
        return features.check_text(text, "e.bench")
    finally:
        syntax.PIECES["on"] = False


@pytest.mark.parametrize(
    "name, seed",
    [("generated", 1), ("quickstart.bench", 2), ("ab-layout.bench", 3), ("sorting.bench", 4)],
)
def test_every_edit_checks_as_the_whole_text_does(name, seed):
    text = spec_of(200) if name == "generated" else (ROOT / "specs" / name).read_text()
    rnd = random.Random(seed)
    pieced = 0
    for _ in range(30):
        edited = edit(text, rnd)  # a broken text is fixed by the next edit, as a user does
        whole, incremental = checked(edited, False), checked(edited, True)
        assert incremental.diagnostics == whole.diagnostics, edited
        assert incremental.experiment == whole.experiment, edited
        if fragments.parse_pieces(edited, syntax._literal_diagnostics) is not None:
            pieced += 1
            text = edited
    assert pieced >= 15, "most edits of a valid spec keep it cut into pieces"


def test_pieces_give_the_whole_parse_tree_with_its_positions():
    text = spec_of(200)
    whole = syntax.parse(Source("e.bench", text))
    pieced = fragments.parse_pieces(text, syntax._literal_diagnostics)
    assert pieced is not None
    assert syntax._flatten(pieced) == whole


@pytest.mark.parametrize(
    "text",
    [
        "benchlang 1\nexperiment x { seed 1\n}\n",  # a statement on the experiment's line
        "benchlang 1\nexperiment x {\n  seed 1\n}\nseed 2\n",  # text after the closing brace
        "benchlang 1\nexperiment x {\n  factor a in\n    [1, 2]\n}\n",  # a statement cut in two
        'benchlang 1\nexperiment x {\n  title "unclosed\n}\n',
        "benchlang 1\nexperiment x {\n  seed 1\n",
    ],
)
def test_a_layout_that_is_not_plain_is_parsed_whole(text):
    assert fragments.parse_pieces(text, syntax._literal_diagnostics) is None
    assert checked(text, True) == checked(text, False)
