"""``benchlang figure --label/--labels`` (names of one's own for the configurations of a figure
for a paper) and ``--notes below|none`` (the notes drawn under the figure, or only in the
file's metadata beside it), on specs/quickstart.bench with seeded synthetic values; and
``level-means`` joining unordered levels by no line."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.figure_stores import SPECS, make_store, quickstart, run_cli

SHA = "digest[tool=sha256sum]"
MD5 = "digest[tool=md5sum]"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return make_store(
        tmp_path_factory.mktemp("labels"), "q", SPECS / "quickstart.bench", quickstart
    )[0]


def _text(svg: Path) -> str:
    """The text drawn in an SVG (matplotlib writes text as <text> with svg.fonttype none)."""
    root = ET.parse(svg).getroot()
    return " ".join(
        "".join(e.itertext()) for e in root.iter() if e.tag.endswith("}text") or e.tag == "text"
    )


def _description(svg: Path) -> str:
    found = re.search(r"<dc:description>(.*?)</dc:description>", svg.read_text(), re.S)
    assert found, "no description in the SVG's metadata"
    return found.group(1)


def test_label_renames_configurations_in_drawing_numbers_and_notes(store, tmp_path, capsys):
    out = tmp_path / "cdf.svg"
    code, printed, err = run_cli(
        capsys, "figure", store, "cdf", "-o", out, "--data", tmp_path / "cdf.csv",
        "--label", f"{SHA}=SHA-256", "--label", f"{MD5}=MD5",
    )  # fmt: skip
    assert code == 0, err
    drawn = _text(out)
    assert "SHA-256" in drawn and "MD5" in drawn
    assert SHA not in drawn and MD5 not in drawn
    assert "digest[tool=b2sum]" in drawn  # not renamed: kept as it is
    csv_text = (tmp_path / "cdf.csv").read_text()
    assert "SHA-256" in csv_text and SHA not in csv_text
    assert SHA not in printed and "SHA-256" in printed  # the notes printed name it anew


def test_labels_file_and_level_names(store, tmp_path, capsys):
    names = tmp_path / "names.txt"
    names.write_text("# names for the paper\nsha256sum=SHA-256\n\nmd5sum = MD5\nb2sum=BLAKE2b\n")
    code, out, err = run_cli(
        capsys, "figure", store, "level-means", "--json", "--labels", names, "--label", "b2sum=B2"
    )
    assert code == 0, err
    body = json.loads(out)
    levels = {row[body["columns"].index("tool")] for row in body["rows"]}
    assert levels == {"SHA-256", "MD5", "B2"}  # --label wins over the file


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--label", "nope=x"], "no configuration or level named 'nope'"),
        (["--label", "sha256sum"], "is not CONFIG=TEXT"),
        (["--labels", "/nonexistent/names.txt"], "cannot read labels file"),
    ],
)
def test_bad_labels_are_refused_with_a_hint(store, tmp_path, capsys, argv, said):
    code, _out, err = run_cli(capsys, "figure", store, "cdf", "-o", tmp_path / "x.svg", *argv)
    assert code == 2
    assert said in err and "hint:" in err
    assert not (tmp_path / "x.svg").exists()


def test_notes_below_or_only_beside_the_figure(store, tmp_path, capsys):
    below, none = tmp_path / "below.svg", tmp_path / "none.svg"
    assert run_cli(capsys, "figure", store, "cdf", "-o", below)[0] == 0
    assert run_cli(capsys, "figure", store, "cdf", "-o", none, "--notes", "none")[0] == 0
    assert "Note: " in _text(below)
    assert "Note: " not in _text(none) and "percentiles" not in _text(none)
    for svg in (below, none):  # caption and notes beside the figure, in its metadata
        described = _description(svg)
        assert "empirical CDF" in described
        assert "Not drawn or not claimed: " in described and "percentiles 12-88" in described


def test_notes_in_png_and_pdf_metadata(store, tmp_path, capsys):
    png, pdf = tmp_path / "cdf.png", tmp_path / "cdf.pdf"
    for path in (png, pdf):
        assert run_cli(capsys, "figure", store, "cdf", "-o", path, "--notes", "none")[0] == 0
    from PIL import Image

    assert "percentiles 12-88" in Image.open(png).info["Description"]
    info = pdf.read_bytes().partition(b"/Subject (")[2]  # a PDF text string: UTF-16 here
    assert "percentiles 12-88".encode("utf-16-be") in info


def test_level_means_joins_only_numeric_levels(store, tmp_path):
    """Tools are unordered: their means are points with intervals, no line between them; the
    levels of a numeric factor (``factor n in [1, 2, 3]``) keep their line."""
    from matplotlib.figure import Figure

    from benchlang.app.figures import FigureSource
    from benchlang.report.figures.datamill_draw import draw_level_means
    from benchlang.report.figures.render import Palette
    from benchlang.testing.synthetic import lognormal
    from tests.figure_stores import levels_of, small_spec

    def styles(source: FigureSource) -> set[str]:
        fig = Figure()
        draw_level_means(fig, source.data("level-means"), Palette([]), False)
        return {line.get_linestyle() for ax in fig.axes for line in ax.get_lines()}

    assert styles(FigureSource(store)) == {"None"}
    spec = small_spec("sizes", levels=(1, 2, 3), profile=False)
    numeric = make_store(
        tmp_path,
        "sizes",
        spec,
        lambda plan, t: {"time": 0.01 * levels_of(plan, t)["n"] * lognormal(plan, t)},
    )[0]
    assert "-" in styles(FigureSource(numeric))


def test_a_notebook_figure_takes_labels_and_notes(store, tmp_path):
    """``store.figure(name, labels=..., notes=...)``: the same names and placement as the CLI,
    the store read once for both the plain and the relabelled figure."""
    import benchlang

    opened = benchlang.open_store(store)
    plain = opened.figure("cdf")
    named = opened.figure("cdf", labels={SHA: "SHA-256"}, notes="none")
    assert named.source.inputs is plain.source.inputs
    assert SHA in plain.data.rows[0] and "SHA-256" in named.data.rows[0]
    svg = named.save(tmp_path / "named.svg")
    assert "SHA-256" in _text(svg) and "Note: " not in _text(svg)
    assert "percentiles 12-88" in _description(svg)
    with pytest.raises(benchlang.UserError, match="no configuration or level named 'sha'"):
        opened.figure("cdf", labels={"sha": "x"})
