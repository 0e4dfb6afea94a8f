"""The notebook's views: ``kpis()``, ``headline()`` and ``compare()`` show HTML
tables (not ``<pre>`` text) and give ``to_frame()``, a tidy, typed DataFrame equal to the
objects the CLI prints; an ad hoc comparison is marked exploratory whether or not the spec has
``compare`` items; an error shows its hint in a notebook. On specs/quickstart.bench with
seeded synthetic values (three tools, 1.0, 1.2 and 1.4 x 50 ms)."""

from __future__ import annotations

import math
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

import benchlang  # noqa: E402
from tests.figure_stores import SPECS, make_store, quickstart  # noqa: E402

PLANNED = (
    (SPECS / "quickstart.bench")
    .read_text()
    .replace('["sha256sum", "md5sum", "b2sum"]', '["sha256sum", "md5sum"]')
    .replace("  design {", "  analysis { compare time by tool with mann_whitney }\n\n  design {", 1)
)
"""Two of the tools and a ``compare`` item: the planned comparison."""


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("frames")
    return {
        "quickstart": make_store(root, "q", SPECS / "quickstart.bench", quickstart)[0],
        "planned": make_store(root, "planned", PLANNED, quickstart)[0],
    }


def test_headline_frame_is_the_ranking_tidy_and_typed(stores):
    shown = benchlang.open_store(stores["quickstart"]).headline()
    frame = shown.to_frame()
    (h,) = shown.value
    (g,) = h.groups
    rk = g.ranking
    assert len(frame) == 3
    assert (
        str(frame["metric"].dtype) == "category" and str(frame["configuration"].dtype) == "category"
    )
    for column in ("statistic", "ratio", "lower", "upper", "confidence"):
        assert frame[column].dtype == "float64", column
    assert frame["place"].tolist() == [1, 2, 3] and frame["clear"].dtype == "boolean"
    assert frame["configuration"].tolist() == [g.labels[j] for j in rk.order]
    assert frame["statistic"].tolist() == pytest.approx([rk.statistics[j] for j in rk.order])
    assert (frame["unit"] == "s").all() and (frame["comparisons"] == rk.family.comparisons).all()
    best = frame.iloc[0]
    assert best["ratio"] == 1.0 and math.isnan(best["lower"]) and pd.isna(best["clear"])
    for (_, row), c in zip(frame.iloc[1:].iterrows(), rk.comparisons, strict=True):
        assert row["configuration"] == g.labels[c.worse]
        assert (row["ratio"], row["lower"], row["upper"]) == pytest.approx(
            (c.ratio, c.lower, c.upper)
        )
        assert bool(row["clear"]) == c.clear
    html = shown._repr_html_()
    assert html.startswith("<table") and "<pre" not in html
    assert "<th scope='col'>median (ms)</th>" in html  # the display unit, as the report shows


def test_kpis_frame_has_a_row_per_series(stores):
    shown = benchlang.open_store(stores["quickstart"]).kpis()
    frame = shown.to_frame()
    series = [(r.configuration, s) for r in shown.value for s in r.analysis.series]
    assert len(frame) == len(series) == 15
    for (_, row), (label, s) in zip(frame.iterrows(), series, strict=True):
        assert row["configuration"] == label and row["series"] == s.series
        if s.kpi.enough:
            assert row["kpi"] == pytest.approx(s.kpi.value)
        else:
            assert math.isnan(row["kpi"])
    assert frame["kpi"].dtype == "float64" and frame["rank"].dtype == "Int64"
    assert frame["descriptive_only"].dtype == "bool"
    html = shown._repr_html_()
    assert html.startswith("<table") and "<pre" not in html and "KPI (ms)" in html


def test_an_ad_hoc_comparison_is_exploratory_without_compare_items(stores):
    shown = benchlang.open_store(stores["quickstart"]).compare("time", by="tool")
    assert "exploratory, not a planned test" in shown.text
    assert "the spec planned (it has no compare item)" in shown.text
    frame = shown.to_frame()
    assert frame["exploratory"].all() and not frame["planned"].any()
    assert frame["estimate"].dtype == "float64" and frame["significant"].dtype == "boolean"
    html = shown._repr_html_()
    assert "<pre" not in html and "EXPLORATORY (ad hoc)" in html and "exploratory" in html


def test_the_specs_comparison_is_planned(stores):
    shown = benchlang.open_store(stores["planned"]).compare()
    frame = shown.to_frame()
    assert frame["method"].tolist() == ["mann_whitney"]
    assert frame["planned"].all() and not frame["exploratory"].any()
    assert "ad hoc" not in shown.text and "planned (the spec&#x27;s)" in shown._repr_html_()
    adhoc = benchlang.open_store(stores["planned"]).compare("time", by="tool", replicates=500)
    assert "outside the run's family of the spec's 1 compare item(s)" in adhoc.text
    assert adhoc.to_frame()["exploratory"].all()


def test_record_has_no_frame_and_says_where_its_grid_is(stores):
    with pytest.raises(benchlang.UserError, match="no frame") as err:
        benchlang.open_store(stores["quickstart"]).record().to_frame()
    assert "hint: record().value.grid()" in str(err.value)


def test_an_error_shows_its_hint_in_a_traceback_and_in_ipython(stores):
    with pytest.raises(benchlang.UserError) as err:
        benchlang.open_store(stores["quickstart"]).compare("wall_time", by="tool")
    assert err.value.message == "no metric named 'wall_time'"  # the CLI's message unchanged
    shown = "".join(traceback.format_exception_only(err.value))
    assert "no metric named 'wall_time'\nhint: metrics: time" in shown
    pytest.importorskip("IPython")
    cell = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_cell("
        f'"import benchlang; benchlang.open_store({str(stores["quickstart"])!r})'
        ".compare('wall_time', by='tool')\")\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", cell],
        capture_output=True,
        text=True,
        timeout=120,
        env={"NO_COLOR": "1", "TERM": "dumb", **__import__("os").environ},
    )
    assert "no metric named 'wall_time'" in done.stdout
    assert "hint: metrics: time" in done.stdout, done.stdout[-2000:]
