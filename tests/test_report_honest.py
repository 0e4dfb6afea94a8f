"""The report's and figures' former defects, fixed, on seeded synthetic stores of
real plans through the real CLI: Δ% printed as a percent with its true caption, every one of 14
configurations drawn in the order plots, one palette with a second cue, the convergence legend
in words, the profile's lags in the units ``profile`` prints, the complete ANOVA table headed
as the spec wrote it and its descriptive-only verdict in "What failed"; one drawing per
figure (item 6), and a figure's numbers the same whether the report or an export computes
them (the export computes only what its figure needs)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from benchlang.testing.synthetic import lognormal
from tests.figure_stores import ROOT, latency, make_store, run_cli, small_spec, write_load

LEVELS = range(1, 15)
MANY = small_spec(levels=LEVELS)
ANOVA = """benchlang 1

experiment factorial {
  seed 11
  hosts local { slots 2 }
  factor tool in ["gzip", "xz"]
  factor level in [1, 6, 9]

  benchmark compress {
    run "{tool} -{level}"
    measure time = wall_time
  }

  metric time { measure mean unit "s" better lower }
  design { runs 5 series 2 order random }
  analysis { anova time ~ tool * level }
}
"""


def many_value(plan, t):
    """n x 10 ms; n = 3 takes 15.4 times longer in random order: Δ% of about -1,440%."""
    n = dict(plan.configurations[int(plan.trial_configuration[t])].levels)["n"]
    trap = 15.4 if n == 3 and plan.round_order[int(plan.trial_round[t])] else 1.0
    return {"time": 0.01 * n * trap * lognormal(plan, t)}


def skewed(plan, t):
    """Exponential noise: residuals far from normal, so the ANOVA is descriptive only."""
    levels = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
    rng = np.random.default_rng(int(plan.trial_seed[t]))
    base = {"gzip": 0.1, "xz": 0.3}[levels["tool"]] * (1 + levels["level"] / 10)
    return {"time": base * float(np.exp(2.0 * rng.standard_exponential()))}


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("honest")
    write_load(root)
    return {
        "many": make_store(root, "many", MANY, many_value)[0],
        "anova": make_store(root, "anova", ANOVA, skewed)[0],
        "latency": make_store(root, "latency", ROOT / "specs" / "latency-series.bench", latency)[0],
    }


PAGES: dict[tuple[Path, tuple[str, ...]], str] = {}


def report(capsys, store: Path, *extra: str) -> str:
    """The page of ``store`` written by ``benchlang report`` (once per store and options)."""
    if (store, extra) not in PAGES:
        page = store.with_suffix(".html" if not extra else ".plain.html")
        code, _, err = run_cli(capsys, "report", str(store), "-o", str(page), *extra)
        assert code == 0, err
        PAGES[store, extra] = page.read_text(encoding="utf-8")
    return PAGES[store, extra]


def section(page: str, ident: str) -> str:
    start = page.index(f"<section id='{ident}'>")
    return page[start : page.index("</section>", start)]


def texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg)]


def test_delta_is_a_percent_with_its_true_caption(stores, capsys):
    code, out, _ = run_cli(capsys, "order", str(stores["many"]))
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("job[n=3] "))
    delta = re.search(r"(-[0-9,]+)%", row)
    assert delta and -1600 < int(delta.group(1).replace(",", "")) < -1300, row
    assert "e+" not in out and "e-0" not in row
    meaning = next(line for line in out.splitlines() if line.strip().startswith("job[n=3]:"))
    assert re.search(r"by 1,[0-9]{3}%", meaning), meaning
    page = report(capsys, stores["many"])
    order = section(page, "order")
    assert "random vs fixed median" not in page
    assert "Δ% = (mean fixed − mean random) / mean fixed × 100" in order
    cells = re.findall(r"<td class='num'>([^<]*)</td>|<td>([-+][0-9,.]+%)</td>", order)
    assert any(re.fullmatch(r"-1,[0-9]{3}%", b) for _a, b in cells)


def test_every_configuration_is_in_the_order_plots(stores, capsys):
    order = section(report(capsys, stores["many"]), "order")
    boxes, positions = re.findall(r"<svg .*?</svg>", order, flags=re.S)[:2]
    labels = [f"job[n={n}]" for n in LEVELS]
    drawn = set(texts(boxes))
    assert all(f"{label} {kind}" in drawn for label in labels for kind in ("fixed", "random"))
    assert "each of 14 configurations" in order
    assert set(labels) <= set(texts(positions))
    assert "each of 14 configurations by its position" in order


def test_one_palette_with_a_second_cue(stores, capsys):
    from benchlang.report.figures.render import OKABE_ITO, Palette
    from benchlang.report.html import plots

    assert plots.COLOURS == OKABE_ITO
    labels = [f"job[n={n}]" for n in LEVELS]
    palette = Palette(labels)
    cues = [plots.cues(palette, label) for label in labels]
    assert len(set(cues)) == len(labels)  # colour and dash never both repeat
    assert {c for c, _d in cues} == set(OKABE_ITO)
    order = section(report(capsys, stores["many"]), "order")
    positions = re.findall(r"<svg .*?</svg>", order, flags=re.S)[1]
    for colour, dash in cues:
        line = rf'stroke="{colour}" fill="none" stroke-width="1.2"'
        assert re.search(line + (rf' stroke-dasharray="{dash}"' if dash else "/>"), positions)


def test_the_convergence_legend_says_what_it_draws(stores, capsys):
    code, out, _ = run_cli(capsys, "figure", str(stores["latency"]), "convergence", "--json")
    assert code == 0
    meta = json.loads(out)["meta"]
    assert re.fullmatch(r"95th percentile over windows of [0-9,]+ samples", meta["window_label"])
    assert set(meta["verdicts"].values()) <= {"converged", "did NOT converge"}


def test_profile_lags_in_the_units_profile_prints(stores, capsys):
    page = report(capsys, stores["many"])
    profile = section(page, "profile")
    assert "<svg" not in profile and "86400" not in page
    cells = re.findall(r"<td>([^<]*)</td>", profile)
    assert "1h" in cells and "1d" in cells  # every, seasonal period: as `profile` prints them
    assert 'id="fig-profile"' in page
    code, out, _ = run_cli(capsys, "figure", str(stores["many"]), "profile", "--json")
    assert code == 0
    periods = [r[1] for r in json.loads(out)["rows"] if r[6]]
    assert periods == ["1d"]


def test_the_anova_table_is_complete_and_its_failure_is_said(stores, capsys):
    page = report(capsys, stores["anova"])
    ab = section(page, "comparisons")
    assert "<h3>anova time ~ tool * level</h3>" in ab
    assert "time ~ tool * level, n = 60" in ab and "tool+level" not in page
    for column in ("df", "sum sq", "mean sq", "F", "p", "η²"):
        assert f"<th scope='col'>{column}</th>" in ab
    assert re.search(r"<p>R² [0-9.]+, adjusted R² -?[0-9.]+</p>", ab)
    assert "time per host" in ab and "local:0" in ab and "local:1" in ab
    failed = section(page, "summary")
    assert "<h3>What failed</h3>" in failed
    assert "anova time ~ tool * level: DESCRIPTIVE ONLY: residuals are not normal" in failed
    assert "Every assumption that was tested held" not in failed


def test_each_figure_is_drawn_once(stores, capsys):
    page = report(capsys, stores["many"])
    for ident in ("timescales", "profile"):
        assert "<svg" not in section(page, ident), ident
    assert "<a href='#fig-series-kpis'>series-kpis</a>" in section(page, "timescales")
    ids = re.findall(r'<figure class=\'plot\' id="(fig-[a-z-]+)"', page)
    assert len(ids) == len(set(ids)) and "fig-cdf" in ids and "fig-order-delta" in ids
    plain = report(capsys, stores["many"], "--no-figures")
    assert 'id="fig-' not in plain and "<section id='timescales'>" in plain


@pytest.mark.parametrize("name", ["variability", "order-delta", "cdf"])
def test_an_export_computes_what_the_report_computes(stores, capsys, tmp_path, name):
    """The export gathers only what its figure reads; its numbers equal the report's, whose
    inputs are all computed first."""
    from benchlang.app.report import report_inputs
    from benchlang.report.figures import kind_of
    from benchlang.report.html import render_report

    store = stores["many"]
    inputs = report_inputs(store, with_headline=False)
    render_report(inputs, figures=False)
    data = kind_of(name).build(inputs, None)
    path = tmp_path / f"{name}.csv"
    code, _, err = run_cli(
        capsys, "figure", str(store), name, "-o", str(tmp_path / "f.svg"), "--data", str(path)
    )
    assert code == 0, err
    with path.open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == data.columns
    expected = [["" if v is None or v != v else str(v) for v in row] for row in data.rows]
    assert rows[1:] == expected


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_report_honest")
