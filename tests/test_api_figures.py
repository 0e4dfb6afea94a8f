"""The papers' figures in a notebook (docs/api.md#figures-in-a-notebook): ``BenchStore.figures()``
lists what ``benchlang figure --list`` lists, ``figure(name)`` saves what ``benchlang figure``
writes (PDF with TrueType fonts, valid SVG), shows inline in Jupyter, gives its rows as a
DataFrame, reads the store once for every figure, and refuses with the CLI's reasons; on a
store of seeded synthetic values of a real plan (tests/figure_stores.py)."""

from __future__ import annotations

import csv
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

import benchlang
import benchlang.app.report
from benchlang.app.api_figures import Drawn
from benchlang.testing.synthetic import lognormal
from tests.figure_stores import make_store, run_cli, small_spec, write_load

SPEC = small_spec("notebook", levels=range(1, 5))


def job_time(plan, t):
    """n x 10 ms, lognormal noise."""
    n = dict(plan.configurations[int(plan.trial_configuration[t])].levels)["n"]
    return {"time": 0.01 * n * lognormal(plan, t)}


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("api_figures")
    write_load(root)
    return make_store(root, "notebook", SPEC, job_time)[0]


@pytest.fixture(scope="module")
def store(path):
    return benchlang.open_store(path)


def test_figures_lists_what_the_cli_lists(store, path, capsys):
    shown = store.figures()
    code, out, _ = run_cli(capsys, "figure", path, "--list", "--json")
    assert code == 0
    cli = [(f["name"], f["applies"], f["reason"]) for f in json.loads(out)["figures"]]
    assert [(f.name, f.applies, f.reason) for f in shown] == cli
    assert {"cdf", "cdf-overlay"} <= {f.name for f in shown if f.applies}
    code, text, _ = run_cli(capsys, "figure", path, "--list")
    assert code == 0 and str(shown) == text
    html = shown._repr_html_()
    assert html.startswith("<table>") and html.count("<tr>") == len(shown) + 1


def test_a_figure_saves_as_pdf_svg_png_and_csv(store, tmp_path):
    cdf = store.figure("cdf")
    pdf = cdf.save(tmp_path / "cdf.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and b"/FontFile2" in data and b"/Type3" not in data
    root = ET.fromstring(cdf.save(tmp_path / "cdf.svg").read_bytes())
    assert root.tag.endswith("svg") and len(root.findall(".//{*}path")) > 5
    assert cdf.save(tmp_path / "cdf.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    cdf.save(tmp_path / "again.svg", data_csv=tmp_path / "cdf.csv")
    with (tmp_path / "cdf.csv").open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == cdf.data.columns and len(rows) == len(cdf.data.rows) + 1
    with pytest.raises(benchlang.UserError, match=r"\.svg, \.pdf or \.png"):
        cdf.save(tmp_path / "cdf.jpg")


def test_the_saved_figure_is_the_one_the_cli_writes(store, path, capsys, tmp_path):
    store.figure("order-delta", style="paper").save(tmp_path / "api.svg")
    cli = tmp_path / "cli.svg"
    code, _, err = run_cli(capsys, "figure", path, "order-delta", "-o", cli, "--style", "paper")
    assert code == 0, err
    assert (tmp_path / "api.svg").read_bytes() == cli.read_bytes()


def test_jupyter_shows_the_figure_inline(store):
    overlay = store.figure("cdf-overlay")
    svg = overlay._repr_svg_()
    assert svg.startswith(("<svg", "<?xml"))
    assert overlay.picture("svg") is overlay.picture("svg")  # drawn once
    html = overlay._repr_html_()
    assert "<figure" in html and "<svg" in html and "<figcaption>" in html
    assert overlay.data.caption.split(" ")[0] in html
    assert str(overlay).startswith(f"cdf-overlay ({overlay.data.paper}): ")
    assert (
        repr(overlay) == f"<Drawn cdf-overlay: {overlay.data.paper}, {len(overlay.data.rows)} rows>"
    )


def test_frame_holds_the_figures_rows(store):
    data = store.figure("series-kpis").data
    frame = store.figure("series-kpis").frame()
    assert tuple(frame.columns) == data.columns and len(frame) == len(data.rows)

    def same(a, b) -> bool:
        if a is None or (isinstance(a, float) and math.isnan(a)):
            return b is None or (isinstance(b, float) and math.isnan(b))
        return a == b

    for got, row in zip(frame.itertuples(index=False), data.rows, strict=True):
        assert all(same(a, b) for a, b in zip(got, row, strict=True)), (got, row)


def test_the_store_is_read_once_for_every_figure(path, monkeypatch, tmp_path):
    calls = []
    real = benchlang.app.report.report_inputs

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(benchlang.app.report, "report_inputs", counted)
    store = benchlang.open_store(path)
    assert calls == []
    store.figures()
    for name in ("cdf", "variability", "order-ci", "order-cases"):
        figure = store.figure(name)
        assert isinstance(figure, Drawn) and figure.name == name
        figure.save(tmp_path / f"{name}.pdf")
    assert len(calls) == 1
    assert store._figure_source() is store._figure_source()


def test_a_figure_that_does_not_apply_says_why(store):
    reason = next(f.reason for f in store.figures() if f.name == "convergence")
    assert "one number per trial" in reason
    with pytest.raises(benchlang.UserError) as err:
        store.figure("convergence")
    assert err.value.message == reason


def test_an_unknown_figure_names_those_that_exist(store):
    with pytest.raises(benchlang.UserError, match="no figure named 'cfd'") as err:
        store.figure("cfd")
    assert "cdf-overlay" in err.value.hint


def test_a_style_that_cannot_be_used_is_said_not_raised_in_jupyter(store, tmp_path):
    figure = store.figure("cdf", style=str(tmp_path / "missing.mplstyle"))
    assert figure._repr_svg_() is None  # Jupyter falls back to the HTML
    html = figure._repr_html_()
    assert "not drawn:" in html and "no style" in html and "mplstyle" in html
    with pytest.raises(benchlang.UserError, match="no style"):
        figure.save(tmp_path / "cdf.svg")


def test_the_notebook_escapes_user_text_and_shows_what_matplotlib_said(store, tmp_path):
    cdf = store.figure("cdf")
    odd = attrs.evolve(cdf.data, caption="<script>x</script> & [n=1]", notes=("a <b> note",))
    html = Drawn("cdf", odd, cdf.source)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt; &amp; [n=1]" in html
    assert "a &lt;b&gt; note" in html and "<b> note" not in html
    style = tmp_path / "tiny.mplstyle"
    style.write_text("figure.figsize: 0.1, 0.1\n", encoding="utf-8")
    tiny = store.figure("cdf", style=str(style))
    assert tiny.said()[0].startswith("constrained_layout not applied")
    assert "matplotlib: constrained_layout not applied" in tiny._repr_html_()
    assert store.figure("cdf").said() == ()


def test_a_style_matplotlib_cannot_draw_with_is_said_and_save_writes_nothing_silently(
    store, tmp_path
):
    style = tmp_path / "dpi.mplstyle"
    style.write_text("savefig.dpi: 0\n", encoding="utf-8")
    broken = store.figure("cdf", style=str(style))
    with pytest.raises(benchlang.UserError, match="matplotlib cannot draw cdf with style"):
        broken.save(tmp_path / "cdf.png")
    assert not (tmp_path / "cdf.png").exists()
    cdf = store.figure("cdf")
    with pytest.raises(benchlang.UserError, match=r"written before it: .*cdf\.svg"):
        cdf.save(tmp_path / "cdf.svg", data_csv=tmp_path / "no" / "cdf.csv")
