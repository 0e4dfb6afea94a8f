"""``benchlang analyze`` as a person reads it: in a 100-column terminal no line
runs past the edge, labels are never cut, every table's columns line up, and the metric has one
unit in every table and note, the headline's (``report.table.metric_scale``). The store is the
quickstart's plan with seeded times that straddle one second (sha256sum 1.3 s, md5sum 0.7 s),
where a unit chosen per number would mix seconds and milliseconds."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from benchlang.testing.synthetic import lognormal, synthetic_store
from tests.test_closing_output import ANSI, HEADER_UNIT, QUANTITY, in_terminal

ROOT = Path(__file__).resolve().parents[1]
SECONDS = {"sha256sum": 1.3, "md5sum": 0.7, "b2sum": 0.9}
RULE = re.compile(r"^[─-]{10,}")


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    here = tmp_path_factory.mktemp("analyze")
    spec = here / "quickstart.bench"
    spec.write_text((ROOT / "specs" / "quickstart.bench").read_text())

    def value(plan, t):
        tool = dict(plan.configurations[int(plan.trial_configuration[t])].levels)["tool"]
        return {"time": SECONDS[tool] * lognormal(plan, t, 0.02)}

    facts = {"local": {"cpu_model": "AMD EPYC", "cores": "2", "kernel": "Linux 6.18"}}
    synthetic_store(spec, here / "q.sqlite", value, facts=facts)
    argv = [sys.executable, "-m", "benchlang", "analyze", "quickstart.bench", "--store", "q.sqlite"]
    status, seen = in_terminal(argv, here, columns=100)
    assert status == 0, seen
    return seen


def test_no_line_runs_past_a_100_column_terminal(analyzed):
    wide = [line for line in analyzed.splitlines() if len(line.rstrip()) > 100]
    assert not wide, wide
    assert analyzed.count("digest[tool=sha256sum]") >= 7  # labels whole: 5 KPIs, score, headline


def test_one_unit_for_the_metric_in_every_table(analyzed):
    units = set(QUANTITY.findall(analyzed)) | set(HEADER_UNIT.findall(analyzed))
    assert units == {"ms"}, units
    assert "Headline: time (ms)" in analyzed
    kpis = re.findall(r"^digest\[tool=sha256sum\] .*? (\d+) ms ", analyzed, re.M)
    assert kpis and all(1200 < int(k) < 1400 for k in kpis), kpis  # not "1.3 s" beside "700 ms"


def test_every_table_lines_up(analyzed):
    lines = analyzed.splitlines()
    tables = 0
    for i, line in enumerate(lines):
        if not RULE.match(line):
            continue
        rows = []
        for row in lines[i + 1 :]:
            if not row.startswith("digest["):
                if row.startswith(" ") and rows:
                    continue  # a cell wrapped onto the next line
                break
            rows.append(row)
        ends = {tuple(m.end() for m in re.finditer(r"\d ms\b", row)) for row in rows}
        assert rows and len(ends) == 1, rows  # the numbers of each column end at one place
        tables += 1
    assert tables == 2  # the KPIs and the variability scores


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("label", ["digest[tool=sha256sum]", "x" * 80])
def test_a_table_keeps_every_column_in_a_narrow_terminal(label, monkeypatch):
    """A short label is never folded; one longer than half the terminal folds, and the other
    columns stay (rich would drop them to keep an unfoldable label whole)."""
    from benchlang.report.table import render_table

    monkeypatch.setenv("COLUMNS", "60")
    out = _Terminal()
    rows = [[label, 5, "1.000 ms"], ["digest[tool=md5sum]", 5, "2.000 ms"]]
    render_table(["configuration", "n", "value"], rows, stream=out, plain=False)
    lines = ANSI.sub("", out.getvalue()).splitlines()
    assert all(len(line) <= 60 for line in lines), lines
    assert sum("ms" in line for line in lines) == 2
    assert any(line.startswith(label[:40]) for line in lines)
    if len(label) < 30:
        assert any(line.startswith(label + "  ") for line in lines)


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_analyze_terminal")
