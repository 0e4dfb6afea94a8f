"""The HTML report of the example specs, built from stores of seeded synthetic values written for
each spec's real plan (benchlang.testing.synthetic), checked as HTML and in a real browser.

Browser: Debian's ``chromium`` (.ci/run installs it), headless, loads each report from a file
with the network disabled, dumps the DOM and takes a screenshot in one launch. A copy of the
page with a probe script measures every section and plot as laid out (width, height, drawn
elements); chromium's console log (``--enable-logging=stderr``) must hold no message.
Screenshots are kept in $BENCHLANG_SCREENSHOTS (default: <tmp>/benchlang-report-screenshots).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from benchlang.app.report import write_report
from benchlang.testing.synthetic import lognormal, synthetic_store

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
MAX_BYTES = 2 * 1024 * 1024
SCREENSHOTS = Path(
    os.environ.get("BENCHLANG_SCREENSHOTS")
    or Path(tempfile.gettempdir()) / "benchlang-report-screenshots"
)
FACTS = {"cpu_model": "AMD EPYC 7B13", "cores": "2", "governor": "performance"}


def quickstart(plan, t):
    if t == 7:
        return "the command exited with status 1"
    tool = int(plan.trial_configuration[t])
    return {"time": 0.05 * (1.0, 1.2, 1.4)[tool] * lognormal(plan, t)}


def order_trap(plan, t):
    """consume is fast only right after produce in the same round (the cache flag)."""
    task = plan.configurations[int(plan.trial_configuration[t])].label
    after_produce = (
        t > 0
        and plan.trial_round[t - 1] == plan.trial_round[t]
        and "produce" in plan.configurations[int(plan.trial_configuration[t - 1])].label
    )
    slow = "consume" in task and not after_produce
    return {"time": (0.25 if slow else 0.01) * lognormal(plan, t)}


def ab_layout(plan, t):
    """new does 5% more work; the first two trials of a batch run 30% slow (warm-up)."""
    levels = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
    cold = 1.3 if plan.trial_position[t] < 2 else 1.0
    base = levels["request"] / 1e6 * 0.02 * (1.05 if levels["version"] == "new" else 1.0)
    return {"cpu": base * cold * lognormal(plan, t, 0.01)}


def latency(plan, t):
    payload = dict(plan.configurations[int(plan.trial_configuration[t])].levels)["payload"]
    rng = np.random.default_rng(int(plan.trial_seed[t]))
    return {"latency": np.exp(rng.normal(np.log(5 + payload / 1000), 0.2, 3000))}


EXAMPLES = {
    "quickstart": (quickstart, {"local": {**FACTS, "kernel": "6.1.0"}}),
    "order-trap": (order_trap, {"local": {**FACTS, "kernel": "6.1.0"}}),
    "ab-layout": (
        ab_layout,
        {"local:0": {**FACTS, "kernel": "6.1.0"}, "local:1": {**FACTS, "kernel": "6.8.0"}},
    ),
    "latency-series": (latency, {"local": {**FACTS, "kernel": "6.1.0"}}),
}
EXPECTED = {
    "quickstart": {"summary", "timescales", "order", "hosts", "failures"},
    "order-trap": {"summary", "order", "hosts"},
    "ab-layout": {"summary", "comparisons", "hosts"},
    "latency-series": {"summary", "timescales", "order", "hosts"},
}


class Page(HTMLParser):
    """Sections, figures (svg attributes, drawn elements, data rows) and every URL-bearing
    attribute of a report."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.figures: list[dict] = []
        self.urls: list[str] = []
        self.tags: set[str] = set()
        self._figure: dict | None = None
        self._in_details = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        for key in ("src", "href", "xlink:href"):
            if a.get(key) and not a[key].startswith("#"):
                self.urls.append(a[key])
        if tag == "section":
            self.sections.append(a["id"])
        elif tag == "figure":
            self._figure = {"svg": None, "drawn": 0, "rows": 0, "caption": False}
            self.figures.append(self._figure)
        elif self._figure is not None:
            if tag == "svg" and self._figure["svg"] is None:
                self._figure["svg"] = a
            elif tag in ("path", "use", "rect", "line", "polyline"):
                self._figure["drawn"] += 1
            elif tag == "figcaption":
                self._figure["caption"] = True
            elif tag == "details":
                self._in_details = True
            elif tag == "tr" and self._in_details:
                self._figure["rows"] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._figure = None
            self._in_details = False


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reports")
    out = {}
    for name, (value, facts) in EXAMPLES.items():
        store = root / f"{name}.sqlite"
        synthetic_store(SPECS / f"{name}.bench", store, value, facts=facts)
        out[name] = root / f"{name}.html"
        write_report(store, out[name])
    return out


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_report_sections_plots_and_weight(reports, name):
    text = reports[name].read_text(encoding="utf-8")
    page = Page()
    page.feed(text)
    assert EXPECTED[name] <= set(page.sections), page.sections
    assert page.sections[0] == "summary"
    assert len(text.encode()) < MAX_BYTES
    assert not page.urls, page.urls  # nothing to fetch: no CDN, font, image or script source
    assert not {"script", "link", "img", "iframe"} & page.tags
    assert set(re.findall(r"url\((.)", text)) <= {"#"}  # only references inside the page
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids))
    assert page.figures
    for fig in page.figures:
        assert fig["svg"] is not None and fig["svg"].get("role") == "img"
        assert len(fig["svg"].get("aria-label", "")) > 20
        assert fig["caption"] and fig["drawn"] > 5 and fig["rows"] > 1, fig


def test_quickstart_summary_says_what_failed(reports):
    text = reports["quickstart"].read_text(encoding="utf-8")
    assert "class='descriptive'" in text and "DESCRIPTIVE ONLY" in text
    assert "1 of 75 trials failed" in text
    assert "the command exited with status 1" in text
    assert re.search(r"plan hash</td><td>sha256:[0-9a-f]{64}", text)
    assert "Reproducibility record" in text


def test_order_trap_flags_consume_only(reports):
    text = reports["order-trap"].read_text(encoding="utf-8")
    assert "Order matters: job[task=consume] (" in text
    assert "<td class='bad'>job[task=consume]</td>" in text
    assert "<td class='bad'>job[task=produce]" not in text


def test_ab_layout_shows_effect_components_warmup_and_host_difference(reports):
    text = reports["ab-layout"].read_text(encoding="utf-8")
    assert "compare cpu by version with bootstrap" in text
    assert "variance components" in text.lower()
    assert "Warm-up curve of cpu" in text
    assert "<tr class='diff'><td>kernel</td>" in text


def test_series_metric_shows_convergence(reports):
    """Drawn once, as the figure ``convergence`` (its legend in words, each panel's verdict);
    the timescales table counts the trials that did not converge and links the figure."""
    text = reports["latency-series"].read_text(encoding="utf-8")
    assert 'id="fig-convergence"' in text and "<a href='#fig-convergence'>" in text
    assert "Raw series of latency of one trial per configuration" in text
    assert "95th percentile over windows of" in text
    assert "<th scope='col'>not converged</th>" in text


PROBE = """<script>
const box = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
document.body.setAttribute("data-probe", JSON.stringify({
  sections: [...document.querySelectorAll("section")].map(s => [s.id, ...box(s)]),
  plots: [...document.querySelectorAll("figure svg")].map(s =>
    [...box(s), s.querySelectorAll("path, use").length]),
}));
</script></body>"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    chromium() is None, reason="Debian's chromium is not installed (.ci/run installs it)"
)
@pytest.mark.parametrize("name", ["quickstart", "order-trap", "ab-layout", "latency-series"])
def test_report_in_headless_chromium(reports, name, tmp_path):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    probed = tmp_path / f"{name}.html"
    probed.write_text(reports[name].read_text(encoding="utf-8").replace("</body>", PROBE, 1))
    shot = SCREENSHOTS / f"{name}.png"
    shot.unlink(missing_ok=True)
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,4000",
            f"--screenshot={shot}",
            "--dump-dom",
            probed.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console
    found = re.search(r'data-probe="([^"]*)"', done.stdout)
    assert found, done.stdout[:2000]
    probe = json.loads(found.group(1).replace("&quot;", '"'))
    ids = {s[0] for s in probe["sections"]}
    assert EXPECTED[name] <= ids
    assert all(w > 300 and h > 50 for _, w, h in probe["sections"]), probe["sections"]
    assert probe["plots"] and all(w > 200 and h > 100 and n > 5 for w, h, n in probe["plots"])
    assert shot.stat().st_size > 20_000
    print(f"screenshot: {shot}", file=sys.stderr)


@pytest.mark.parametrize(
    ("name", "phrases"),
    [
        ("quickstart", ["5 series of 5 runs", "minimal N for kpi time", "one-sided 95% upper",
                        "1 of 75 trials failed", "DESCRIPTIVE ONLY", "No reset ran"]),
        ("order-trap", ["Kruskal-Wallis", "reset (the command `true`)",
                        "trial order changed the results of job[task=consume]"]),
        ("ab-layout", ["fully balanced A/B layout", "clustered reweighting bootstrap",
                       "crossed random effects"]),
    ],
)  # fmt: skip
def test_methods_paragraph_cites_what_it_names(reports, name, phrases):
    from benchlang.app.report import methods_of

    text = methods_of(reports[name].with_suffix(".sqlite"))
    paragraph, _, bibtex = text.partition("\n\n")
    assert paragraph.startswith("**Methods.** We ran ")
    for phrase in phrases:
        assert phrase in paragraph, phrase
    cited = {k for group in re.findall(r"\[([a-z0-9; ]+)\]", paragraph) for k in group.split("; ")}
    entries = set(re.findall(r"^@\w+\{(\w+),", bibtex, re.M))
    assert cited and cited == entries


def test_a_long_data_table_is_downsampled_and_says_so():
    from benchlang.report.html.page import MAX_ROWS, figure
    from benchlang.report.html.plots import lines

    x = np.arange(10_000, dtype=float)
    svg = lines([("y", x, np.sqrt(x))], "a long curve", "x", "y")
    html = figure(
        svg, "a curve of 10,000 points", ["x", "y"], [[i, i * 2.0] for i in range(10_000)]
    )
    assert f"data behind this plot ({MAX_ROWS} of 10,000 rows, evenly spaced)" in html
    page = Page()
    page.feed(html)
    assert page.figures[0]["rows"] == MAX_ROWS + 1  # the header row and the rows shown
    assert "<td class='num'>9999</td>" in html  # evenly spaced: the last row is kept


def test_plots_draw_only_finite_coordinates():
    """NaN and inf in the data are left out of the drawing (a browser logs an error for a
    path with "nan" in it), and ticks of a tiny span far from zero stay distinct."""
    from benchlang.report.html import plots

    nan, inf = float("nan"), float("inf")
    x = np.arange(3.0)
    svgs = [
        plots.lines(
            [("a", x, np.array([1.0, nan, 3.0]))], "t", "x", "y", vlines=[("v", nan)],
            bands=[("b", x, np.array([0.0, nan, 1.0]), x + 2)],
        ),
        plots.intervals([("a", nan, None, None), ("b", 1.0, 0.5, inf)], "t", "e", reference=1),
        plots.points([("a", np.array([])), ("b", np.r_[np.ones(50), 9.0, nan])], "t", "y", boxes=True),
        plots.bars(["a", "b"], [1.0, nan], "t", "y", errors=[0.1, inf]),
    ]  # fmt: skip
    for svg in svgs:
        drawn = " ".join(re.findall(r'\b(?:d|x|y|transform)="([^"]*)"', svg))
        assert not re.search(r"(?i)nan|inf", drawn), svg
    tiny = plots.lines([("a", x, 1e9 + x * 1e-3)], "t", "x", "y")
    labels = re.findall(r"text-anchor=\"end\">([^<]*)</text>", tiny)
    assert len(labels) == len(set(labels)) > 1, labels


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_report_html")
