"""The report reads like a report: the headline first, as an HTML table (per
configuration the ranking's statistic with its unit, the ratio to the best with the joint
interval, in words), then the figures, then the details; one unit per quantity across the page;
the figures' notes in the caption in the page's text size, not drawn small into the figure.

On specs/quickstart.bench with seeded synthetic values (three tools, 1.0, 1.2 and 1.4 x 50 ms;
one trial failed),
laid out by Debian's headless ``chromium`` in a 1280 x 900 window: the headline table ends above
the fold. The screenshot is kept in $BENCHLANG_SCREENSHOTS (default:
<tmp>/benchlang-report-screenshots/headline-first.png).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from benchlang.app.report import report_inputs, write_report
from tests.figure_stores import SPECS, make_store, quickstart

FOLD = 900
SCREENSHOTS = Path(
    os.environ.get("BENCHLANG_SCREENSHOTS")
    or Path(tempfile.gettempdir()) / "benchlang-report-screenshots"
)


def one_fails(plan, t):
    """quickstart's values; trial 7 fails (a "What failed" under the answer)."""
    return "the command exited with status 1" if t == 7 else quickstart(plan, t)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("headline-html")
    store = make_store(root, "quickstart", SPECS / "quickstart.bench", one_fails)[0]
    page = root / "quickstart.html"
    write_report(store, page)
    return store, page.read_text(encoding="utf-8")


def _answer(text: str) -> str:
    found = re.search(r"<table class='answer'>.*?</table>", text, re.S)
    assert found, "no headline table"
    return found.group(0)


def test_headline_table_first_then_figures_then_details(report):
    _store, text = report
    sections = re.findall(r"<section id='([^']+)'>", text)
    assert sections[:3] == ["summary", "figures", "details"], sections
    summary = text[text.index("<section id='summary'>") : text.index("<section id='figures'>")]
    assert summary.index("<table class='answer'>") < summary.index("<h3>What failed</h3>")
    assert "<pre" not in summary  # the terminal's text is not pasted
    assert "identity of this run" in text[text.index("<section id='details'>") :]


def test_headline_rows_are_the_rankings(report):
    """Best first, each statistic in the metric's display unit, each ratio with the ranking's
    joint interval and the sentence a person reads."""
    store, text = report
    (h,) = report_inputs(store).headline
    (g,) = h.groups
    rk = g.ranking
    unit, factor = h.display
    table = _answer(text)
    assert f"<th scope='col'>median ({unit})</th>" in table
    n = rk.family.comparisons or len(rk.comparisons)
    assert f"jointly at {rk.confidence:g}% over {n} comparisons" in table
    rows = re.findall(
        r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>", table
    )
    assert [r[0] for r in rows] == [g.names[j] for j in rk.order]
    assert float(rows[0][1]) == pytest.approx(rk.statistics[rk.order[0]] / factor, rel=1e-3)
    assert rows[0][2] == "1 (best)" and rows[0][3] == "best"
    for (name, _value, ratio, words), c in zip(rows[1:], rk.comparisons, strict=True):
        assert name == g.names[c.worse]
        interval = f"{c.ratio:.2f}× [{c.lower:.2f}, {c.upper:.2f}]"
        assert ratio == interval
        assert words == f"{interval.replace('×', '× slower than ' + g.names[c.better], 1)}"


def test_one_unit_per_quantity_across_the_page(report):
    """Every column of time says ms (the headline's unit); no column of it in seconds."""
    _store, text = report
    units = set(re.findall(r"<th scope='col'>[^<]*\((s|ms)\)</th>", text))
    assert units == {"ms"}, units
    timescales = text[text.index("<section id='timescales'>") :]
    table = timescales[: timescales.index("</table>")]
    headers = re.findall(r"<th scope='col'>([^<]*)</th>", table)
    first = re.findall(r"<td[^>]*>([^<]*)</td>", table.split("<tbody>")[1].split("</tr>")[0])
    lowest = float(first[headers.index("lowest KPI (ms)")])
    assert 40 < lowest < 60  # about 50 ms, shown as ms rather than 0.05 s
    cdf = text[text.index('id="fig-cdf"') :]
    data = cdf[cdf.index("<details>") : cdf.index("</details>")]
    assert "<th scope='col'>x (ms)</th>" in data  # the numbers under a figure as its axis
    first = re.search(r"<tr><td>[^<]*</td><td>trial</td><td class='num'>([0-9.]+)</td>", data)
    assert first and 30 < float(first.group(1)) < 80


def test_figure_notes_are_caption_text_not_drawn(report):
    _store, text = report
    figures = text[text.index("<section id='figures'>") : text.index("<section id='details'>")]
    cdf = re.search(r"<figure class='plot' id=\"fig-cdf\">(.*?)</figure>", figures, re.S)
    assert cdf
    svg, caption = cdf.group(1).split("<figcaption>", 1)
    assert "percentiles 12-88" in caption and "Not drawn or not claimed" in caption
    assert "Note:" not in svg and "percentiles" not in svg


PROBE = """<script>
const above = e => e ? e.getBoundingClientRect().top + window.scrollY : -1;
const below = e => e ? e.getBoundingClientRect().bottom + window.scrollY : -1;
const size = s => { const e = document.querySelector(s);
  return e ? parseFloat(getComputedStyle(e).fontSize) : -1; };
document.body.setAttribute("data-probe", JSON.stringify({
  answer: [above(document.querySelector("table.answer")),
           below(document.querySelector("table.answer"))],
  figure: above(document.querySelector("#figures figure")),
  body: size("body"), note: size("figcaption .note"), answer_font: size("table.answer td"),
}));
</script></body>"""


@pytest.mark.skipif(
    not (shutil.which("chromium") or shutil.which("chromium-browser")),
    reason="Debian's chromium is not installed (.ci/run installs it)",
)
def test_headline_above_the_fold_in_chromium(report, tmp_path):
    _store, text = report
    probed = tmp_path / "probed.html"
    probed.write_text(text.replace("</body>", PROBE, 1), encoding="utf-8")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / "headline-first.png"
    shot.unlink(missing_ok=True)
    done = subprocess.run(
        [
            shutil.which("chromium") or shutil.which("chromium-browser"),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size=1280,{FOLD}",
            f"--screenshot={shot}",
            "--dump-dom",
            probed.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'data-probe="([^"]*)"', done.stdout)
    assert found, done.stdout[:2000]
    probe = json.loads(found.group(1).replace("&quot;", '"'))
    top, bottom = probe["answer"]
    assert 0 < top < bottom <= FOLD, probe  # the whole headline table above the fold
    assert probe["figure"] > bottom, probe  # the figures come next
    assert probe["note"] >= 0.9 * probe["body"] >= 13, probe  # notes in the text's size
    assert probe["answer_font"] >= probe["body"] * 0.9, probe
    assert shot.stat().st_size > 20_000


def test_an_ab_layout_answers_with_its_comparisons(tmp_path):
    """A layout has no ranking: the summary's table is the spec's comparisons, one row each
    (the estimate on its scale, its interval or why none), before what failed."""
    from tests.test_report_html import FACTS, ab_layout

    facts = {"local:0": {**FACTS, "kernel": "6.1.0"}, "local:1": {**FACTS, "kernel": "6.8.0"}}
    store = tmp_path / "ab.sqlite"
    from benchlang.testing.synthetic import synthetic_store

    synthetic_store(SPECS / "ab-layout.bench", store, ab_layout, facts=facts)
    write_report(store, tmp_path / "ab.html")
    text = (tmp_path / "ab.html").read_text(encoding="utf-8")
    summary = text[text.index("<section id='summary'>") : text.index("<section id='figures'>")]
    table = _answer(summary)
    assert "the spec&#x27;s comparisons" in table
    rows = re.findall(r"<tr><td>(compare [^<]*)</td><td[^>]*>([^<]*)</td>", table)
    compared = report_inputs(store).comparisons
    assert [r[0] for r in rows] == [
        f"compare cpu by version with {c.comparison.method}" for c in compared
    ]
    ratio = next(v for name, v in rows if name.endswith("bootstrap"))
    assert ratio.startswith("ratio ") and 1.0 < float(ratio.split()[1].rstrip("×")) < 1.1  # 5% more
    assert summary.index("<table class='answer'>") < summary.index("<h3>What failed</h3>")
