"""What an editor shows besides colours: completion lists each word once in
every block (``warmup`` was listed twice in design, as a setting and as a keyword), and a bad
kpi gives its own error only (a percentile out of range also gave ``runs auto needs a kpi``)."""

from __future__ import annotations

import pytest

from benchlang.lang.check import check_source
from benchlang.lang.diagnostics import Source, SpecError
from benchlang.lsp import features
from benchlang.lsp.index import Index

BLOCKS = {
    "design": "  design {\n    \n  }\n",
    "layout": "  design {\n    layout fully_balanced {\n      \n    }\n  }\n",
    "convergence": "  metric t { measure mean }\n  convergence t {\n    \n  }\n",
    "benchmark": '  benchmark b {\n    \n    run "true"\n  }\n',
    "experiment": "  \n",
}


@pytest.mark.parametrize("block", sorted(BLOCKS))
def test_completion_lists_each_word_once(block):
    text = "benchlang 1\nexperiment e {\n" + BLOCKS[block] + "}\n"
    lines = text.split("\n")
    line = next(i for i, t in enumerate(lines) if i > 1 and t.strip() == "")
    labels = [label for label, _, _ in features.completion(Index(text), line, len(lines[line]))]
    assert labels, block
    assert len(labels) == len(set(labels)), sorted(w for w in labels if labels.count(w) > 1)
    if block == "design":
        assert labels.count("warmup") == 1 and {"runs", "order", "layout"} <= set(labels)


SPEC = """benchlang 1
experiment e {
  benchmark b { run "true"  measure time = wall_time }
  metric time { measure mean unit "s" better lower }
  kpi time { %s }
  design { runs auto }
}
"""


def errors(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        check_source(Source("t.bench", text))
    return [d.message for d in info.value.diagnostics if d.severity == "error"]


@pytest.mark.parametrize(
    "kpi",
    [
        "percentile 150 confidence 95%",
        "percentile 50 confidence 100%",
        "percentile x confidence 95%",
    ],
)
def test_a_bad_kpi_is_one_error_not_also_runs_auto_needs_a_kpi(kpi):
    found = errors(SPEC % kpi)
    assert len(found) == 1 and "runs auto needs a kpi" not in found[0], found


def test_runs_auto_without_any_kpi_still_says_it_needs_one():
    text = SPEC.replace("  kpi time { %s }\n", "")
    assert errors(text) == ["runs auto needs a kpi to size the experiment"]
