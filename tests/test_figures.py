"""``benchlang figure`` and the report's papers' figures (docs/figures.md), on stores of seeded
synthetic values written for real plans (benchlang.testing.synthetic): what ``--list`` offers
per store, every figure exported once (SVG valid XML, PDF with TrueType fonts and no Type 3,
PNG: the formats in turn, and one figure in all three),
``--data`` equal to what ``analyze`` and ``order`` print, all 14 configurations of a
14-configuration store drawn in every figure, and a figure that does not apply refused."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchlang.report.figures import NAMES
from benchlang.testing.synthetic import lognormal, synthetic_store
from tests.figure_stores import (
    ROOT,
    SPECS,
    latency,
    make_store,
    quickstart,
    run_cli,
    small_spec,
    write_load,
)

FIGURES = (*NAMES["triscale"], *NAMES["ordersage"])
LEVELS = range(1, 15)
MANY = small_spec(cpu=True, levels=LEVELS)


def many_value(plan, t):
    """n x 10 ms; n = 3 pays 50% in random order (an ordering trap); cpu is 80% of time."""
    n = dict(plan.configurations[int(plan.trial_configuration[t])].levels)["n"]
    trap = 1.5 if n == 3 and plan.round_order[int(plan.trial_round[t])] else 1.0
    time = 0.01 * n * trap * lognormal(plan, t)
    return {"time": time, "cpu": 0.8 * time * lognormal(plan, t, 0.01)}


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("figures")
    write_load(root)
    return {
        "many": make_store(root, "many", MANY, many_value)[0],
        "latency": make_store(root, "latency", SPECS / "latency-series.bench", latency)[0],
    }


def store_of(name: str) -> str:
    return "latency" if name == "convergence" else "many"


def test_list_names_what_applies_per_store(stores, capsys):
    code, out, _ = run_cli(capsys, "figure", str(stores["many"]), "--list", "--json")
    assert code == 0
    listed = {f["name"]: f for f in json.loads(out)["figures"]}
    assert list(listed)[: len(FIGURES)] == list(FIGURES)  # other papers' figures follow
    applies = {name for name, f in listed.items() if f["applies"]} & set(FIGURES)
    assert applies == set(FIGURES) - {"convergence", "runtimes"}
    assert "one number per trial" in listed["convergence"]["reason"]
    code, out, _ = run_cli(capsys, "figure", str(stores["latency"]), "--list")
    assert code == 0
    shown, _, refused = out.partition("not applicable to this store:")
    names = {line.split()[0] for line in shown.splitlines() if line.strip()} & set(FIGURES)
    assert names == {"convergence", "series-kpis", "cdf", "cdf-overlay"}
    assert "kpi-scatter" in refused and "only latency has a KPI" in refused


FORMATS = ("svg", "pdf", "png")


def _check_export(path: Path) -> None:
    """SVG valid XML with drawn paths, PDF with TrueType fonts (no Type 3), PNG by its magic."""
    data = path.read_bytes()
    if path.suffix == ".svg":
        root = ET.fromstring(data)
        assert root.tag.endswith("svg") and len(root.findall(".//{*}path")) > 5
    elif path.suffix == ".pdf":
        assert data.startswith(b"%PDF") and b"/FontFile2" in data and b"/Type3" not in data
    else:
        assert data.startswith(b"\x89PNG\r\n\x1a\n")


ONE_LABEL = ("convergence", "profile", "runtimes")
"""The figures that do not draw each configuration (all 14 are drawn in the others)."""
EXPORTS = [(name, FORMATS[i % 3]) for i, name in enumerate(n for n in FIGURES if n != "runtimes")]
"""Each figure in one format, the formats in turn (runtimes needs a runtime factor:
tests/test_figures_papers_last.py)."""


@pytest.mark.parametrize(
    ("name", "ext"), [(n, ext) for n, ext in EXPORTS if ext != "svg" or n in ONE_LABEL]
)
def test_every_figure_exports(stores, capsys, tmp_path, name, ext):
    """Each figure drawn once, in one format; the formats taken in turn cover all three (the
    SVGs of those drawing every configuration are test_all_14_configurations_are_drawn's)."""
    path = tmp_path / f"{name}.{ext}"
    code, out, err = run_cli(capsys, "figure", str(stores[store_of(name)]), name, "-o", str(path))
    assert code == 0, err
    assert out.startswith(f"wrote {path}")
    _check_export(path)


def test_one_figure_exports_svg_pdf_png(stores, capsys, tmp_path):
    """The format is what is tested: one figure written as each of the three."""
    for ext in FORMATS:
        path = tmp_path / f"variability.{ext}"
        code, out, err = run_cli(
            capsys, "figure", str(stores["many"]), "variability", "-o", str(path)
        )
        assert code == 0, err
        assert out.startswith(f"wrote {path}")
        _check_export(path)


def _texts(svg: Path) -> set[str]:
    """Every text drawn in an SVG written with text as text (``svg.fonttype none``)."""
    root = ET.fromstring(svg.read_bytes())
    return {"".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")}


@pytest.mark.parametrize("name", [n for n in FIGURES if n not in ONE_LABEL])
def test_all_14_configurations_are_drawn(stores, capsys, tmp_path, name):
    svg, data = tmp_path / f"{name}.svg", tmp_path / f"{name}.csv"
    code, _, err = run_cli(
        capsys, "figure", str(stores["many"]), name, "-o", str(svg), "--data", str(data)
    )
    assert code == 0, err
    _check_export(svg)
    labels = {f"job[n={n}]" for n in LEVELS}
    with data.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if name == "order-cases":
        assert sum(int(r["configurations"]) for r in rows) == len(labels)
        drawn = {label for r in rows for label in r["names"].split("; ") if r["names"]}
        assert drawn == labels
        return
    assert {r["configuration"] for r in rows} == labels
    assert labels <= _texts(svg), labels - _texts(svg)


def test_data_csv_is_what_analyze_and_order_print(stores, capsys, tmp_path):
    store = str(stores["many"])
    code, out, _ = run_cli(capsys, "order", store, "--json")
    assert code == 0
    order = {c["configuration"]: c for c in json.loads(out)["configurations"]}
    path = tmp_path / "delta.csv"
    assert (
        run_cli(
            capsys,
            "figure",
            store,
            "order-delta",
            "-o",
            str(tmp_path / "d.svg"),
            "--data",
            str(path),
        )[0]
        == 0
    )
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    deltas = [float(r["delta_percent"]) for r in rows]
    assert deltas == sorted(deltas)
    for r in rows:
        assert float(r["delta_percent"]) == pytest.approx(
            order[r["configuration"]]["delta_percent"]
        )
    trap = next(r for r in rows if r["configuration"] == "job[n=3]")
    assert trap["significant"] == "True" and float(trap["delta_percent"]) < -30

    code, out, _ = run_cli(capsys, "figure", store, "variability", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    code, out, _ = run_cli(capsys, "analyze", "--store", store, "--json")
    assert code == 0
    analysed = {
        k["configuration"]: k["variability"]
        for k in json.loads(out)["kpis"]
        if k["metric"] == "time"
    }
    intervals = {r[0]: r[3:] for r in rows if r[1] == "variability"}
    assert set(intervals) == set(analysed)
    for label, (score, low, high) in intervals.items():
        v = analysed[label]
        assert (score, low, high) == pytest.approx((v["score"], v["lower"], v["upper"]))
        kpis = [r[3] for r in rows if r[0] == label and r[1] == "series KPI"]
        assert min(kpis) <= low <= high <= max(kpis)


def test_a_figure_that_does_not_apply_exits_2_with_the_reason(stores, capsys, tmp_path):
    code, out, err = run_cli(
        capsys, "figure", str(stores["latency"]), "order-ci", "-o", str(tmp_path / "x.pdf")
    )
    assert code == 2 and not out
    assert err.startswith("benchlang: error: order-ci compares fixed-order and random-order")
    assert "hint:" in err and "Traceback" not in err
    assert not (tmp_path / "x.pdf").exists()
    code, _, err = run_cli(capsys, "figure", str(stores["many"]), "cdf", "-o", "cdf.jpeg")
    assert code == 2 and "name it .svg, .pdf or .png" in err
    code, _, err = run_cli(capsys, "figure", str(stores["many"]), "no-such", "-o", "x.svg")
    assert code == 2 and "no figure named 'no-such'" in err


def test_paper_style_and_a_style_of_ones_own(stores, capsys, tmp_path):
    store = str(stores["many"])
    pdf = tmp_path / "variability.pdf"
    assert (
        run_cli(capsys, "figure", store, "variability", "-o", str(pdf), "--style", "paper")[0] == 0
    )
    box = re.search(rb"/MediaBox \[\s*0 0 ([0-9.]+) ([0-9.]+)\s*\]", pdf.read_bytes())
    assert box and float(box.group(1)) == pytest.approx(3.3 * 72)
    style = tmp_path / "mine.mplstyle"
    style.write_text('axes.facecolor: "#abcdef"\n', encoding="utf-8")
    svg = tmp_path / "mine.svg"
    assert (
        run_cli(capsys, "figure", store, "variability", "-o", str(svg), "--style", str(style))[0]
        == 0
    )
    assert "#abcdef" in svg.read_text(encoding="utf-8")
    code, _, err = run_cli(capsys, "figure", store, "cdf", "--style", str(tmp_path / "none"))
    assert code == 2 and "no style" in err
    style.write_text("axes.nosuch: 3\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "figure", store, "cdf", "-o", str(svg), "--style", str(style))
    assert code == 2 and not out
    assert err.splitlines()[0].endswith(
        "Bad key axes.nosuch in file " + f"{style}, line 1 ('axes.nosuch: 3')"
    )


def test_profile_lags_in_the_units_profile_prints(stores, capsys):
    code, out, _ = run_cli(capsys, "figure", str(stores["many"]), "profile", "--json")
    assert code == 0
    body = json.loads(out)
    periods = [r for r in body["rows"] if r[6]]
    assert [r[1] for r in periods] == ["1d"]
    assert "every 1h" in body["caption"] and "1d" in body["caption"]


def test_json_is_strict(stores, capsys):
    def refuse(name):
        raise AssertionError(f"{name} in --json")

    for name in ("cdf", "order-pvalues", "kpi-scatter", "order-ci"):
        code, out, _ = run_cli(capsys, "figure", str(stores["many"]), name, "--json")
        assert code == 0
        body = json.loads(out, parse_constant=refuse)
        assert body["caption"] and body["paper"] and body["rows"]
    level = re.search(r"its ([0-9.]+)% distribution-free", body["caption"])
    assert level and float(level.group(1)) == pytest.approx(100 * (1 - 0.05 / 14), abs=0.01)


def test_quickstart_report_shows_the_figures(tmp_path):
    from benchlang.app.report import write_report

    store, page = tmp_path / "q.sqlite", tmp_path / "q.html"
    synthetic_store(SPECS / "quickstart.bench", store, quickstart)
    write_report(store, page)
    text = page.read_text(encoding="utf-8")
    ids = set(re.findall(r'<figure class=\'plot\' id="(fig-[a-z-]+)"', text))
    triscale = {"fig-series-kpis", "fig-variability", "fig-cdf", "fig-cdf-overlay"}
    assert ids == triscale | {"fig-series-boxes", "fig-levels", "fig-level-means"}  # DataMill
    assert "TriScale (Jacob et al., JSys 2021) Fig. 10" in text
    found = re.findall(r'\bid="([^"]+)"', text)
    assert len(found) == len(set(found))


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_figures")


def test_each_module_names_its_figures_and_an_export_imports_its_own():
    import importlib
    import subprocess
    import sys

    from benchlang.report.figures import registry

    for module, names in NAMES.items():
        kinds = importlib.import_module(f"benchlang.report.figures.{module}").FIGURES
        assert tuple(kind.name for kind in kinds) == names
    assert list(registry()) == [n for names in NAMES.values() for n in names]
    probe = (
        "import sys; from benchlang.report.figures import kind_of; kind_of('cdf'); "
        "print(*sorted(m for m in sys.modules if m.startswith('benchlang.report.figures.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == [
        "benchlang.report.figures.render",
        "benchlang.report.figures.triscale",
        "benchlang.report.figures.triscale_draw",
    ]


def test_all_writes_each_figure_that_applies_once_with_its_numbers(stores, capsys, tmp_path):
    store = str(stores["latency"])
    code, out, _ = run_cli(capsys, "figure", store, "--list", "--json")
    applies = [f["name"] for f in json.loads(out)["figures"] if f["applies"]]
    out_dir, data_dir = tmp_path / "figs", tmp_path / "figs" / "data"
    code, out, err = run_cli(
        capsys, "figure", store, "--all", "-o", out_dir, "--format", "pdf", "--data", data_dir
    )
    assert code == 0, err
    assert sorted(p.name for p in out_dir.glob("*.pdf")) == sorted(f"{n}.pdf" for n in applies)
    assert sorted(p.stem for p in data_dir.glob("*.csv")) == sorted(applies)
    for name in applies:
        pdf = (out_dir / f"{name}.pdf").read_bytes()
        assert pdf.startswith(b"%PDF") and b"/FontFile2" in pdf and b"/Type3" not in pdf
        assert f"wrote {out_dir / name}.pdf (" in out
    not_drawn = out.split("not drawn, as they do not apply to this store (--list says why): ")[1]
    assert "kpi-scatter" in not_drawn and "cdf," not in not_drawn
    single = tmp_path / "cdf.csv"
    assert (
        run_cli(capsys, "figure", store, "cdf", "-o", tmp_path / "cdf.svg", "--data", single)[0]
        == 0
    )
    assert (data_dir / "cdf.csv").read_text(encoding="utf-8") == single.read_text(encoding="utf-8")


def test_several_names_in_one_command_json_and_refusals(stores, capsys, tmp_path):
    store = str(stores["many"])
    code, out, err = run_cli(
        capsys, "figure", store, "order-delta", "cdf-overlay", "-o", tmp_path, "--json"
    )
    assert code == 0, err
    body = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
    assert [f["name"] for f in body["figures"]] == ["order-delta", "cdf-overlay"]  # as asked
    assert body["skipped"] == []
    for f in body["figures"]:
        assert f["path"] == str(tmp_path / f"{f['name']}.svg") and f["rows"]
        ET.fromstring(Path(f["path"]).read_bytes())
    latency, out_dir = str(stores["latency"]), tmp_path / "none"
    code, out, err = run_cli(capsys, "figure", latency, "cdf", "order-ci", "-o", out_dir)
    assert code == 2 and not out and "Traceback" not in err
    assert "order-ci: order-ci compares fixed-order and random-order" in err
    assert not out_dir.exists()  # every figure built before any is written
    code, _, err = run_cli(capsys, "figure", store, "cdf", "--all")
    assert code == 2 and "--all draws every figure that applies: name none" in err
    code, _, err = run_cli(capsys, "figure", store, "cdf", "-o", "x.svg", "--format", "pdf")
    assert code == 2 and "-o x.svg is not a .pdf file" in err
    code, _, err = run_cli(capsys, "figure", store, "--list", "--all")
    assert code == 2 and "--list takes no figure name" in err


def test_batch_refusals_say_why_and_write_nothing(stores, capsys, tmp_path):
    store = str(stores["many"])
    taken = tmp_path / "taken.svg"
    taken.write_text("mine", encoding="utf-8")
    out_dir = tmp_path / "out"
    refusals = {
        "is a file, and several figures are written into a directory": ("-o", taken),
        "taken.svg is a file": ("-o", out_dir, "--data", taken),
        "figure named twice: cdf": ("cdf", "-o", out_dir),
        "matplotlib cannot draw cdf with style": ("-o", out_dir, "--format", "png"),
        "no style": ("-o", out_dir, "--style", tmp_path / "none.mplstyle"),
    }
    dpi = tmp_path / "dpi.mplstyle"
    dpi.write_text("savefig.dpi: 0\n", encoding="utf-8")
    for message, extra in refusals.items():
        style = ("--style", dpi) if "cannot draw" in message else ()
        names = ("cdf", "cdf-overlay", *extra[: extra.index("-o")])
        opts = (*extra[extra.index("-o") :], *style)
        code, out, err = run_cli(capsys, "figure", store, *names, *opts)
        assert code == 2 and not out and "Traceback" not in err, (message, err)
        assert err.startswith("benchlang: error: ") and message in err, (message, err)
        assert "hint:" in err
        assert not out_dir.exists() and taken.read_text(encoding="utf-8") == "mine"
    code, _, err = run_cli(capsys, "figure", store, "--all", "--metric", "nosuch", "-o", out_dir)
    assert code == 2 and "no figure applies to this store: kpi-scatter: no KPI of 'nosuch'" in err
    assert not out_dir.exists()
    code, _, err = run_cli(capsys, "figure", tmp_path / "no.sqlite", "cdf", "cdf-overlay")
    assert code == 2 and err.startswith("benchlang: error: no store at")


def test_options_that_would_be_ignored_are_refused(stores, capsys, tmp_path):
    store = str(stores["many"])
    for extra in (("--format", "pdf"), ("-o", tmp_path), ("--data", "x.csv")):
        code, out, err = run_cli(capsys, "figure", store, "--list", *extra)
        assert code == 2 and not out
        assert f"--list writes nothing: {' '.join(map(str, extra))} has no use" in err
    for names in (("cdf",), ("cdf", "order-ci"), ("--all",)):
        code, out, err = run_cli(capsys, "figure", store, *names, "--json", "--data", "d.csv")
        assert code == 2 and not out
        assert "--json without -o prints the numbers and writes nothing: --data d.csv" in err


def test_json_without_output_draws_nothing_with_it_says_what_was_written(
    stores, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    store, strict = str(stores["latency"]), {"parse_constant": lambda c: pytest.fail(c)}
    code, out, err = run_cli(capsys, "figure", store, "cdf", "series-kpis", "--json")
    assert code == 0, err
    body = json.loads(out, **strict)
    assert [(f["name"], f["path"], f["warnings"]) for f in body["figures"]] == [
        ("cdf", None, []),
        ("series-kpis", None, []),
    ]
    assert list(tmp_path.iterdir()) == []
    code, out, _ = run_cli(capsys, "figure", store, "--all", "--json")
    body = json.loads(out, **strict)
    skipped = {s["name"]: s["reason"] for s in body["skipped"]}
    assert code == 0 and "only latency has a KPI" in skipped["kpi-scatter"]
    assert {f["name"] for f in body["figures"]} >= {"cdf", "convergence"}
    assert list(tmp_path.iterdir()) == []
    spec = str(SPECS / "latency-series.bench")
    code, out, err = run_cli(capsys, "figure", store, spec, "cdf", "-o", "one.svg", "--json")
    assert code == 0, err
    body = json.loads(out, **strict)
    assert body["path"] == "one.svg" and body["warnings"] == [] and body["rows"]
    assert Path("one.svg").is_file()


def test_a_file_that_cannot_be_written_names_those_written_before_it(stores, capsys, tmp_path):
    (tmp_path / "order-ci.svg").mkdir()
    code, out, err = run_cli(
        capsys, "figure", str(stores["many"]), "variability", "order-ci", "-o", tmp_path
    )
    assert code == 2 and not out and "Traceback" not in err
    assert f"cannot write {tmp_path / 'order-ci.svg'}: Is a directory" in err
    assert f"(written before it: {tmp_path / 'variability.svg'})" in err
    one, csv_path = tmp_path / "one.svg", tmp_path / "no" / "one.csv"
    code, _, err = run_cli(
        capsys, "figure", stores["many"], "variability", "-o", one, "--data", csv_path
    )
    assert code == 2 and f"(written before it: {tmp_path / 'one.svg'})" in err


def test_what_matplotlib_warns_is_a_note_not_a_warning(stores, capsys, tmp_path):
    style = tmp_path / "odd.mplstyle"
    style.write_text("font.family: NoFontCalledThisInTestFigures\n", encoding="utf-8")
    code, out, err = run_cli(
        capsys, "figure", stores["many"], "variability", "-o", tmp_path / "a.svg", "--style", style
    )
    assert code == 0 and err == ""
    assert "  note: matplotlib: findfont: Font family 'NoFontCalledThisInTestFigures'" in out
    style.write_text("figure.figsize: 0.1, 0.1\n", encoding="utf-8")
    names, opts = ("variability", "order-ci"), ("-o", tmp_path / "b", "--style", style, "--json")
    code, out, err = run_cli(capsys, "figure", stores["many"], *names, *opts)
    assert code == 0 and err == ""
    for figure in json.loads(out)["figures"]:
        assert figure["warnings"][0].startswith("constrained_layout not applied")


def test_names_may_follow_the_options(stores, capsys, tmp_path):
    store = str(stores["many"])
    code, _, err = run_cli(
        capsys, "figure", "-o", tmp_path, store, "--format", "pdf", "variability", "order-ci"
    )
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["order-ci.pdf", "variability.pdf"]
    code, _, err = run_cli(capsys, "figure", store, "--plan", "nosuch", "cdf")
    assert code == 2 and "holds no plan nosuch" in err
