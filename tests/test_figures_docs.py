"""docs/figures.md shows every figure of the registry, rendered from the example specs: each
example spec's real plan is written with seeded synthetic values (benchlang.testing.synthetic),
the numbers of every figure that applies to each example are built (what ``figure --list``
builds; the command itself is tests/test_figures.py's), and each figure is drawn to SVG from the
example the page shows it from, through the same functions as ``benchlang figure`` (the store's
inputs gathered once), and must parse. With
``BENCHLANG_REGEN_FIGURES=1`` the figures the page embeds are written to docs/figures/: SVG
when under 60 KB, else PNG at 80 dpi.

Every figure must come from some example (``aa-empirical`` from several A/A stores of
ab-layout's spec with its versions made equal and six slots, through ``aa-check``: a
host-clustered interval needs three hosts per version); ``kpi-scatter`` and
``profile`` need two KPIs and a ``profile``, which no example spec has, so they come from a
small spec of this file (``TWO_KPIS``)."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.testing.synthetic import lognormal, synthetic_store
from tests.figure_stores import (
    ROOT,
    SPECS,
    datamill,
    latency,
    levels_of,
    make_store,
    quickstart,
    small_spec,
    write_load,
)
from tests.test_figures_papers_last import fig4
from tests.test_population_factor import POPULATION, population_value
from tests.test_runtime_factor import FIG4

PAGE = ROOT / "docs" / "figures.md"
SHOWN = ROOT / "docs" / "figures"
REGEN = os.environ.get("BENCHLANG_REGEN_FIGURES") == "1"
MAX_BYTES = 60_000
TWO_KPIS = small_spec(
    "two_kpis", levels=[1, 2, 3], cpu=True, variability=False, design="runs 6 series 3 order random"
)


def order_trap(plan, t):
    """consume is fast only right after produce in the same round (the cache flag)."""
    after_produce = (
        t > 0
        and plan.trial_round[t - 1] == plan.trial_round[t]
        and levels_of(plan, t - 1)["task"] == "produce"
    )
    slow = levels_of(plan, t)["task"] == "consume" and not after_produce
    return {"time": (0.25 if slow else 0.01) * lognormal(plan, t)}


def ab_layout(plan, t, work: float = 1.05):
    """Version new does 5% more work; request, host and batch effects (Perflab Eq. 3-4)."""
    levels = levels_of(plan, t)
    host, batch = int(plan.trial_host[t]), int(plan.trial_round[t])
    shared = np.random.default_rng([plan.seed, host, batch]).normal(0, 0.02)
    factor = work if levels["version"] == "new" else 1.0
    return {"cpu": levels["request"] / 1e6 * 0.02 * factor * (1 + shared) * lognormal(plan, t)}


def stopping(plan, t):
    """slow 30: 30% of the trials 4x slower; a series' own offset (a busy machine)."""
    rng = np.random.default_rng(int(plan.trial_seed[t]))
    slow = 4.0 if rng.random() * 100 < levels_of(plan, t)["slow"] else 1.0
    series = 1.0 + 0.08 * int(plan.trial_series[t])
    return {"time": 0.005 * slow * series * float(np.exp(rng.normal(0.0, 0.15)))}


def two_kpis(plan, t):
    time = 0.01 * levels_of(plan, t)["n"] * lognormal(plan, t, 0.05)
    return {"time": time, "cpu": 0.8 * time * lognormal(plan, t, 0.02)}


EXAMPLES = {
    "quickstart": (SPECS / "quickstart.bench", quickstart),
    "latency-series": (SPECS / "latency-series.bench", latency),
    "order-trap": (SPECS / "order-trap.bench", order_trap),
    "ab-layout": (SPECS / "ab-layout.bench", ab_layout),
    "datamill": (SPECS / "datamill.bench", datamill),
    "stopping": (SPECS / "stopping.bench", stopping),
    "two-kpis": (TWO_KPIS, two_kpis),
    "runtime-factor": (FIG4, fig4),
    "population": (POPULATION, population_value),
}
SOURCE = {
    "kpi-scatter": "two-kpis",
    "convergence": "latency-series",
    "series-kpis": "quickstart",
    "runtimes": "runtime-factor",
    "population-kpis": "population",
    "variability": "quickstart",
    "cdf": "quickstart",
    "cdf-overlay": "quickstart",
    "profile": "two-kpis",
    "order-pvalues": "order-trap",
    "order-delta": "order-trap",
    "order-ci": "order-trap",
    "order-cases": "order-trap",
    "requests": "ab-layout",
    "timeline": "ab-layout",
    "se-curves": "ab-layout",
    "aa-estimates": "ab-layout",
    "bootstrap-model": "ab-layout",
    "aa-ladder": "ab-layout",
    "aa-empirical": "aa-check",
    "series-boxes": "datamill",
    "levels": "datamill",
    "level-means": "datamill",
    "stopping-ks": "stopping",
    "stopping-density": "stopping",
    "stopping-synthetic": "stopping",
}
"""The example each figure of docs/figures.md is drawn from."""
AA_STORES = 4


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("examples")
    write_load(root)
    out = {name: make_store(root, name, spec, value)[0] for name, (spec, value) in EXAMPLES.items()}
    text = (SPECS / "ab-layout.bench").read_text(encoding="utf-8")
    for old, new in (
        ('new "1.05"', 'new "1.00"'),
        ("slots 2", "slots 6"),
        ("hosts 2 ", "hosts 6 "),
    ):
        assert old in text
        text = text.replace(old, new)
    same = root / "aa-layout.bench"
    same.write_text(text.replace("requests 20", "requests 18"), encoding="utf-8")
    for seed in range(1, AA_STORES + 1):
        out[f"aa{seed}"] = root / f"aa{seed}.sqlite"
        synthetic_store(same, out[f"aa{seed}"], lambda plan, t: ab_layout(plan, t, 1.0), seed=seed)
    return out


def shown(name: str, svg: bytes, tmp: Path, draw_png) -> None:
    """Write the page's copy of a figure: the SVG when small, else a PNG at 80 dpi."""
    for old in SHOWN.glob(f"{name}.*"):
        old.unlink()
    if len(svg) < MAX_BYTES:
        (SHOWN / f"{name}.svg").write_bytes(svg)
        return
    style = tmp / "docs.mplstyle"
    style.write_text("savefig.dpi: 80\n", encoding="utf-8")
    (SHOWN / f"{name}.png").write_bytes(draw_png(str(style)))


def parsed(svg: bytes) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 5
    return root


def test_every_figure_of_the_registry_has_an_example():
    from benchlang.report.figures import registry

    assert set(SOURCE) == set(registry()), "give each figure of the registry an example in SOURCE"
    assert set(SOURCE.values()) == {*EXAMPLES, "aa-check"}


@pytest.mark.parametrize("example", list(EXAMPLES))
def test_every_figure_is_drawn_from_an_example(stores, tmp_path, example):
    """The example's every applicable figure built (each paper's tests draw them all), and the
    figures the page shows from it drawn."""
    from benchlang.app.report import report_inputs
    from benchlang.report.figures import applicable, labels
    from benchlang.report.figures.render import Palette, draw

    inputs = report_inputs(stores[example], with_headline=False)  # as figure --list
    palette = Palette(labels(inputs))
    built = {kind.name: (kind, data) for kind, data, _why in applicable(inputs) if data is not None}
    own = [name for name, source in SOURCE.items() if source == example]
    assert set(own) <= set(built), f"{example} does not list {set(own) - set(built)}"
    if example == "stopping":
        assert "series-boxes" in built  # a figure of another paper applies too
    for name in own:
        kind, data = built[name]
        svg = draw(data, kind.draw, palette, "svg")
        parsed(svg)
        if REGEN:
            shown(
                name,
                svg,
                tmp_path,
                lambda style, k=kind, d=data, p=palette: draw(d, k.draw, p, "png", style),
            )


def test_aa_empirical_is_drawn_from_several_aa_stores(stores, capsys, tmp_path):
    svg = tmp_path / "aa-empirical.svg"
    aa = [str(stores[f"aa{seed}"]) for seed in range(1, AA_STORES + 1)]
    assert main(["aa-check", *aa, "-o", str(svg)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    parsed(svg.read_bytes())
    if REGEN:
        png = tmp_path / "aa-empirical.png"
        style = tmp_path / "docs.mplstyle"
        style.write_text("savefig.dpi: 80\n", encoding="utf-8")
        args = ["aa-check", *aa, "-o", str(png), "--style", str(style)]
        assert main(args) == 0
        capsys.readouterr()
        shown("aa-empirical", svg.read_bytes(), tmp_path, lambda _style: png.read_bytes())


def test_the_page_names_and_shows_every_figure():
    from benchlang.report.figures import registry

    page = PAGE.read_text(encoding="utf-8")
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `([a-z0-9-]+)` \| ([^|]+) \|", page, flags=re.M)
    }
    for name in registry():
        assert name in rows, f"docs/figures.md has no row for {name}"
        assert re.search(r"Figs?\. [0-9]", rows[name]), f"{name}: which paper figure?"
        files = sorted(SHOWN.glob(f"{name}.*"))
        assert len(files) == 1, f"render it: BENCHLANG_REGEN_FIGURES=1 pytest {__file__}"
        assert f"](figures/{files[0].name})" in page, f"docs/figures.md does not show {name}"
        if files[0].suffix == ".svg":
            assert files[0].stat().st_size < MAX_BYTES
            parsed(files[0].read_bytes())
        else:
            assert files[0].read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
            assert files[0].stat().st_size < 2 * MAX_BYTES
