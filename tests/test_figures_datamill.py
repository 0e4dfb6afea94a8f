"""DataMill's figures (de Oliveira et al., ICPE 2013; docs/figures.md) through the real CLI on
stores of seeded synthetic values for real plans: ``specs/datamill.bench`` (two slots, hidden
factors, an anova) and a 14-configuration store. The boxes are the values' quartiles, the
level means are ``results``' mean interval, every configuration is drawn, and a store without
factors or series says why it cannot have these figures."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from benchlang.testing.synthetic import lognormal
from tests.figure_stores import (
    ROOT,
    datamill,
    figure_json,
    levels_of,
    make_store,
    run_cli,
    small_spec,
)

NAMES = ("series-boxes", "levels", "level-means")
MANY = small_spec(
    seed=4, kpis=False, variability=False, design="runs 4 series 3 order random", profile=False
)
FLAT = """benchlang 1

experiment flat {
  seed 4
  benchmark job {
    run "true"
    measure time = wall_time
  }
  metric time { unit "s" better lower }
  design { runs 12 }
}
"""


def many_value(plan, t):
    return {"time": 0.002 * levels_of(plan, t)["n"] * lognormal(plan, t, 0.1)}


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("datamill")
    out = {}
    for name, spec, value in (
        ("datamill", ROOT / "specs" / "datamill.bench", datamill),
        ("many", MANY, many_value),
        ("flat", FLAT, lambda plan, t: {"time": 0.01 * lognormal(plan, t)}),
    ):
        out[name] = (*make_store(root, name, spec, value), value)
    return out


def test_list_offers_datamills_figures(stores, capsys):
    store = stores["datamill"][0]
    code, out, _ = run_cli(capsys, "figure", str(store), "--list", "--json")
    assert code == 0
    listed = {f["name"]: f for f in json.loads(out)["figures"]}
    assert all(listed[name]["applies"] for name in NAMES)
    code, out, _ = run_cli(capsys, "figure", str(stores["flat"][0]), "--list")
    _shown, _, refused = out.partition("not applicable to this store:")
    lines = {line.split()[0]: line for line in refused.splitlines() if line.strip()}
    assert "no factor has two levels" in lines["levels"]
    assert "no factor has two levels" in lines["level-means"]
    assert "one" in lines["series-boxes"]


@pytest.mark.parametrize("name", NAMES)
def test_exports_svg_and_pdf_with_truetype_fonts(stores, capsys, tmp_path, name):
    store = str(stores["datamill"][0])
    svg, pdf, data = tmp_path / f"{name}.svg", tmp_path / f"{name}.pdf", tmp_path / "d.csv"
    assert run_cli(capsys, "figure", store, name, "-o", str(svg), "--data", str(data))[0] == 0
    root = ET.fromstring(svg.read_bytes())
    assert root.tag.endswith("svg") and len(root.findall(".//{*}path")) > 5
    code, _, err = run_cli(capsys, "figure", store, name, "-o", str(pdf), "--style", "paper")
    assert code == 0, err
    assert pdf.read_bytes().startswith(b"%PDF") and b"/FontFile2" in pdf.read_bytes()
    assert b"/Type3" not in pdf.read_bytes()
    body = figure_json(capsys, stores["datamill"][0], name)
    with data.open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == body["columns"]
    assert len(rows) - 1 == len(body["rows"])
    for got, want in zip(rows[1:], body["rows"], strict=True):
        for cell, value in zip(got, want, strict=True):
            if isinstance(value, float):
                assert float(cell) == pytest.approx(value, rel=1e-12)
            else:
                assert cell == ("" if value is None else str(value))


def test_levels_roles_follow_the_anova_and_the_hosts(stores, capsys):
    body = figure_json(capsys, stores["datamill"][0], "levels")
    assert body["columns"][:3] == ["panel", "tool", "colour"]
    assert body["meta"] == {
        "y_label": "time (ms)",
        "x": "tool",
        "panel": "host",
        "colour": "level",
    }
    panels = {r[0] for r in body["rows"]}
    assert panels == {"local:0", "local:1"}
    means = {(r[0], r[1], r[2]): r[4] for r in body["rows"] if r[3] == "mean"}
    assert len(means) == 2 * 2 * 3
    for level in ("1", "6", "9"):
        assert means[("local:1", "xz", level)] > means[("local:0", "xz", level)]
        assert means[("local:0", "xz", level)] > 2 * means[("local:0", "gzip", level)]


def test_series_boxes_are_the_quartiles_of_each_series(stores, capsys):
    store, plan, value = stores["many"]
    body = figure_json(capsys, store, "series-boxes")
    assert body["columns"] == ["configuration", "series", "stat", "value"]
    got: dict = {}
    for label, series, stat, v in body["rows"]:
        got.setdefault((label, series), {})[stat] = v
    labels = {f"job[n={n}]" for n in range(1, 15)}
    assert {label for label, _ in got} == labels
    for t_label, s in [("job[n=3]", "0"), ("job[n=14]", "2")]:
        v = np.array(
            [
                1000 * value(plan, t)["time"]
                for t in range(plan.n_trials)
                if plan.configurations[int(plan.trial_configuration[t])].label == t_label
                and int(plan.trial_series[t]) == int(s)
            ]
        )
        box = got[(t_label, s)]
        assert box["n"] == v.size == 4
        q1, med, q3 = np.percentile(v, [25, 50, 75])
        assert (box["q1"], box["med"], box["q3"], box["mean"]) == pytest.approx(
            (q1, med, q3, v.mean())
        )
        assert v.min() <= box["whislo"] <= box["whishi"] <= v.max()


def test_every_one_of_14_configurations_is_drawn(stores, capsys, tmp_path):
    svg = tmp_path / "boxes.svg"
    assert run_cli(capsys, "figure", str(stores["many"][0]), "series-boxes", "-o", str(svg))[0] == 0
    root = ET.fromstring(svg.read_bytes())
    texts = {"".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {f"job[n={n}]" for n in range(1, 15)} <= texts
    body = figure_json(capsys, stores["many"][0], "levels")
    assert {r[1] for r in body["rows"]} == {str(n) for n in range(1, 15)}


def test_level_means_are_the_results_mean_interval(stores, capsys):
    store = stores["many"][0]
    body = figure_json(capsys, store, "level-means")
    code, out, _ = run_cli(capsys, "results", str(store), "--json")
    assert code == 0
    summaries = {
        c["configuration"]["label"]: c["metrics"]["time"]["summary"]
        for c in json.loads(out)["configurations"]
    }
    assert len(body["rows"]) == 14
    for _line, n, count, mean, low, high, level, clusters, descriptive in body["rows"]:
        s = summaries[f"job[n={n}]"]
        interval = s["mean_interval"]
        assert count == s["n"] == 12 and not descriptive
        assert (mean, low, high) == pytest.approx(
            (1000 * s["mean"], 1000 * interval["lower"], 1000 * interval["upper"])
        )
        assert (level, clusters) == (interval["level"], interval["clusters"])
    assert "Student t over the means" in body["caption"] and "95%" in body["caption"]


def test_a_store_without_factors_is_refused_with_the_reason(stores, capsys, tmp_path):
    store = str(stores["flat"][0])
    code, out, err = run_cli(capsys, "figure", store, "levels", "-o", str(tmp_path / "x.svg"))
    assert code == 2 and not out and "Traceback" not in err
    assert err.startswith("benchlang: error: levels draws a metric by a factor's levels")
    assert "hint:" in err and not (tmp_path / "x.svg").exists()
    code, _, err = run_cli(capsys, "figure", store, "series-boxes", "--json")
    assert code == 2 and "series or replicate block" in err
    code, _, err = run_cli(capsys, "figure", store, "level-means", "--metric", "nope", "--json")
    assert code == 2 and "no metric 'nope'" in err


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_figures_datamill")


def test_boxes_in_one_pass_equal_a_box_each():
    from benchlang.stats.figure_datamill import box, boxes

    rng = np.random.default_rng(7)
    groups = [rng.lognormal(0, 0.5, int(rng.integers(0, 120))) for _ in range(200)]
    groups += [np.array([]), np.array([np.nan, 1.0]), np.array([3.0]), np.r_[np.ones(50), 100.0]]
    groups += [rng.standard_cauchy(3000), np.r_[np.inf, 2.0, 2.0]]  # > MAX_OUTLIERS outliers
    assert boxes(groups) == [box(g) for g in groups]
