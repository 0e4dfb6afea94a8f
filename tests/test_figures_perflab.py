"""Perflab's figures (Bakshy & Frachtenberg, WWW 2015; docs/figures.md) and the numbers behind
them, on stores of seeded synthetic values written for real plans (benchlang.testing.synthetic):
specs/ab-layout.bench as an A/B store, and an A/A spec (identical versions) run into several
stores. ``figure --list`` offers the five single-store figures and refuses ``aa-empirical`` with
its reason; each exports as SVG and PDF (TrueType fonts); ``--data`` equals ``--json``; the
``requests`` boxes are the store's quartiles; ``simulate-aa --json`` keeps every estimate and
gives each rate its Clopper-Pearson interval; ``advise --sweep`` falls with requests and equals
the layout formula; ``aa-check`` tallies the A/A stores and draws ``aa-empirical``."""

from __future__ import annotations

import csv
import itertools
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from benchlang.testing.synthetic import lognormal, synthetic_store
from tests.figure_stores import ROOT, run_cli

SINGLE = ("requests", "timeline", "se-curves", "aa-estimates", "aa-ladder")
AA_SPEC = """benchlang 1

experiment aa {
  seed 1
  hosts local { slots 6 }
  reset "echo fresh {version}"
  benchmark loop {
    run "echo {version} {request}"
    measure time = wall_time
  }
  metric time { unit "s" better lower }
  design {
    versions { a "1.00" b "1.00" }
    layout fully_balanced { hosts 6 requests 12 repetitions 2 }
    requests [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
  }
  analysis {
    compare time by version with bootstrap { replicates 1000 }
  }
}
"""
AA_STORES = 6


def ab_value(plan, t):
    """About 20-60 ms per request, version new 5% slower, 5% lognormal noise."""
    levels = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
    work = 1.05 if levels["version"] == "new" else 1.0
    return {"cpu": 0.02 * float(levels["request"]) / 1e6 * work * lognormal(plan, t, 0.05)}


def aa_value(plan, t):
    """Request, host, host x batch and residual terms of Eq. 3-4; no version effect."""
    request = float(dict(plan.configurations[int(plan.trial_configuration[t])].levels)["request"])
    host, batch = int(plan.trial_host[t]), int(plan.trial_round[t])
    host_term = np.random.default_rng([plan.seed, host]).normal(0, 0.003)
    batch_term = np.random.default_rng([plan.seed, host, batch]).normal(0, 0.002)
    noise = np.random.default_rng(int(plan.trial_seed[t])).normal(0, 0.002)
    return {"time": 0.05 + 0.005 * request + host_term + batch_term + noise}


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("perflab")
    ab = root / "ab.sqlite"
    synthetic_store(ROOT / "specs" / "ab-layout.bench", ab, ab_value)
    spec = root / "aa.bench"
    spec.write_text(AA_SPEC, encoding="utf-8")
    aa = [root / f"aa{s}.sqlite" for s in range(1, AA_STORES + 1)]
    for seed, path in enumerate(aa, start=1):
        synthetic_store(spec, path, aa_value, seed=seed)
    return {"ab": ab, "aa": aa, "root": root}


def test_list_offers_the_single_store_figures_and_says_why_not_aa_empirical(stores, capsys):
    code, out, _ = run_cli(capsys, "figure", stores["ab"], "--list", "--json")
    assert code == 0
    listed = {f["name"]: f for f in json.loads(out)["figures"]}
    assert all(listed[name]["applies"] for name in SINGLE)
    why = listed["aa-empirical"]
    assert not why["applies"]
    assert "A/B store" in why["reason"] and "'1.00'" in why["reason"] and "'1.05'" in why["reason"]
    code, out, _ = run_cli(capsys, "figure", stores["aa"][0], "--list", "--json")
    listed = {f["name"]: f for f in json.loads(out)["figures"]}
    assert not listed["aa-empirical"]["applies"]
    assert "several A/A stores, and this is one" in listed["aa-empirical"]["reason"]
    code, _, err = run_cli(capsys, "figure", stores["ab"], "aa-empirical", "-o", "x.svg")
    assert code == 2 and "aa-empirical counts false positives" in err and "aa-check" in err


def _pdf_fonts_ok(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(b"%PDF") and b"/FontFile2" in data and b"/Type3" not in data


def test_a_figure_exports_pdf_with_truetype_fonts(stores, capsys, tmp_path):
    """The format is what is tested (one figure); the others are drawn once, as SVG, below."""
    pdf = tmp_path / f"{SINGLE[0]}.pdf"
    code, _, err = run_cli(capsys, "figure", stores["ab"], SINGLE[0], "-o", pdf)
    assert code == 0, err
    assert _pdf_fonts_ok(pdf)


@pytest.mark.parametrize("name", SINGLE)
def test_each_figure_exports_svg_and_its_csv_is_its_json(stores, capsys, tmp_path, name):
    svg, data = (tmp_path / f"{name}.{ext}" for ext in ("svg", "csv"))
    code, out, err = run_cli(capsys, "figure", stores["ab"], name, "-o", svg, "--data", data)
    assert code == 0, err
    assert out.startswith(f"wrote {svg} and {data} (Perflab (Bakshy & Frachtenberg, WWW 2015)")
    root = ET.fromstring(svg.read_bytes())
    assert root.tag.endswith("svg") and len(root.findall(".//{*}path")) > 5
    code, out, _ = run_cli(capsys, "figure", stores["ab"], name, "--json")
    doc = json.loads(out)
    assert doc["name"] == name and "Bakshy & Frachtenberg" in doc["caption"]
    with data.open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == doc["columns"]
    assert len(rows) - 1 == len(doc["rows"]) > 0
    for got, want in zip(rows[1:], doc["rows"], strict=True):
        for cell, value in zip(got, want, strict=True):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                assert cell == ("" if value is None else str(value))
            else:
                assert math.isclose(float(cell), value, rel_tol=1e-12)


def test_requests_boxes_are_the_stores_quartiles(stores, capsys):
    from benchlang.app.stores import load_store

    data = load_store(stores["ab"])
    t = data.table
    y = data.metrics["cpu"].values
    _code, out, _ = run_cli(capsys, "figure", stores["ab"], "requests", "--json")
    doc = json.loads(out)
    rows = [dict(zip(doc["columns"], r, strict=True)) for r in doc["rows"]]
    assert {r["version"] for r in rows} == {"old", "new"}
    assert sum(r["trials"] for r in rows) == int(t.ok.sum()) == 120
    for r in rows:
        mask = np.array(
            [
                str(lv["request"]) == r["request"] and lv["version"] == r["version"]
                for lv in t.levels
            ]
        )
        q = np.quantile(y[mask], [0, 0.25, 0.5, 0.75, 1])
        assert np.allclose([r["min"], r["q1"], r["median"], r["q3"], r["max"]], q)
    assert "12 warm-up and cool-down trials" in " ".join(doc["notes"])
    assert doc["meta"]["display_unit"] == "ms" and doc["meta"]["factor"] == 0.001


def test_aa_ladder_marks_the_intervals_that_exclude_zero(stores, capsys):
    _code, out, _ = run_cli(capsys, "figure", stores["ab"], "aa-ladder", "--json")
    doc = json.loads(out)
    rows = [dict(zip(doc["columns"], r, strict=True)) for r in doc["rows"]]
    estimates = [r["estimate"] for r in rows]
    assert estimates == sorted(estimates)
    for r in rows:
        assert r["false_positive"] == (r["low"] > 0 or r["high"] < 0)
    rate = sum(r["false_positive"] for r in rows) / len(rows)
    assert doc["meta"]["rate"] == pytest.approx(rate)
    assert doc["meta"]["rate_low"] <= rate <= doc["meta"]["rate_high"]
    assert any("2 host clusters per version" in n for n in doc["notes"])


def test_simulate_aa_json_keeps_estimates_and_monte_carlo_intervals(capsys):
    from statsmodels.stats.proportion import proportion_confint

    code, out, err = run_cli(
        capsys,
        "simulate-aa",
        "--layout",
        "request_balanced",
        "--hosts",
        "8",
        "--requests",
        "32",
        "--components",
        "request=1,host=0.2,host_batch=0.1,residual=0.2",
        "--experiments",
        "120",
        "--replicates",
        "50",
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    for s in doc["schemes"]:
        assert len(s["estimates"]) == len(s["ses"]) == 120
        ci = s["type_i_error_interval"]
        assert ci["method"] == "Clopper-Pearson" and ci["runs"] == 120
        assert ci["count"] == round(s["type_i_error"] * 120)
        low, high = proportion_confint(ci["count"], 120, alpha=0.05, method="beta")
        assert ci["low"] == pytest.approx(low, abs=1e-9) and ci["high"] == pytest.approx(high)
        rejected = [
            abs(e) > 1.959963984540054 * se for e, se in zip(s["estimates"], s["ses"], strict=True)
        ]
        assert sum(rejected) == ci["count"]
    estimates = np.array(doc["schemes"][0]["estimates"])
    assert np.std(estimates, ddof=1) == pytest.approx(doc["simulated_sd"])


def test_advise_sweep_falls_with_requests_and_is_the_layout_formula(stores, capsys):
    code, out, err = run_cli(
        capsys,
        "advise",
        ROOT / "specs" / "ab-layout.bench",
        "--pilot",
        stores["ab"],
        "--sweep",
        "--sweep-hosts",
        "2,4",
        "--sweep-requests",
        "8:128",
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["scale"] == "log"
    points = doc["points"]
    for key in {(p["layout"], p["hosts"]) for p in points}:
        se = [
            p["analytic_se"]
            for p in sorted(points, key=lambda p: p["requests"])
            if (p["layout"], p["hosts"]) == key
        ]
        assert len(se) == 9 and all(a > b for a, b in itertools.pairwise(se))
    c = doc["components"]
    fb = next(
        p for p in points if (p["layout"], p["hosts"], p["requests"]) == ("fully_balanced", 4, 8)
    )
    R, T, H = 8, fb["repetitions"], 4
    nu_h = H * (R // H * T) ** 2 / (R * T)
    hand = 2 / (R * T) * (T * c["request_batch"] + nu_h * c["host_batch"] + c["residual"])
    assert fb["analytic_se"] == pytest.approx(math.sqrt(hand), rel=1e-12)
    simulated = [p for p in points if p["simulated_sd"] is not None]
    assert simulated and all(abs(p["simulated_sd"] / p["analytic_se"] - 1) < 0.3 for p in simulated)


def test_aa_check_tallies_the_aa_stores_and_draws_aa_empirical(stores, capsys, tmp_path):
    from scipy.stats import binom

    pdf, data = tmp_path / "aa.pdf", tmp_path / "aa.csv"
    code, out, err = run_cli(capsys, "aa-check", *stores["aa"], "-o", pdf, "--data", data, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["runs"]) == AA_STORES
    (test,) = doc["tests"]
    assert test["test"] == "time (bootstrap)" and test["runs"] == AA_STORES
    assert test["false_positives"] == sum(r["false_positive"] for r in doc["runs"])
    for r in doc["runs"]:
        assert r["false_positive"] == (r["low"] > r["no_change"] or r["high"] < r["no_change"])
    assert test["band_low"] == binom.ppf(0.025, AA_STORES, 0.05) / AA_STORES
    assert test["band_high"] == binom.ppf(0.975, AA_STORES, 0.05) / AA_STORES
    assert test["low"] <= test["rate"] <= test["high"]
    assert _pdf_fonts_ok(pdf)
    with data.open(encoding="utf-8") as f:
        assert next(csv.reader(f)) == list(test)
    code, out, _ = run_cli(capsys, "aa-check", *stores["aa"])
    assert code == 0
    header, row = out.splitlines()[1], out.splitlines()[3]
    assert header.split()[:3] == ["compare", "runs", "false"]
    assert row.startswith("time (bootstrap)") and f"{test['false_positives']}" in row.split()


def test_aa_check_ladder_ranks_the_real_runs_intervals(stores, capsys, tmp_path):
    from benchlang.app.aa_check import aa_check, ladder_figure

    svg = tmp_path / "ladder.svg"
    code, out, err = run_cli(capsys, "aa-check", *stores["aa"], "--ladder", svg)
    assert code == 0, err
    assert f"wrote {svg}" in out
    assert ET.fromstring(svg.read_bytes()).tag.endswith("svg")
    check = aa_check(stores["aa"])
    data = ladder_figure(check, "time (bootstrap)")
    rows = data.where()
    assert [r["estimate"] for r in rows] == sorted(r["estimate"] for r in rows)
    assert {r["experiment"] for r in rows} == {p.name for p in stores["aa"]}
    assert sum(r["false_positive"] for r in rows) == check.figure.where()[0]["false_positives"]
    assert data.meta["no_change"] == 1.0  # the bootstrap compares a ratio
    code, _, err = run_cli(capsys, "aa-check", *stores["aa"], "--ladder", svg, "--test", "x")
    assert code == 2 and "no compare 'x' gave intervals" in err


def test_aa_check_refuses_an_ab_store_and_a_single_store(stores, capsys):
    code, _, err = run_cli(capsys, "aa-check", stores["aa"][0], stores["ab"])
    assert code == 2 and "is an A/B run, not an A/A run" in err
    code, _, err = run_cli(capsys, "aa-check", stores["aa"][0])
    assert code == 2 and "give two stores or more" in err


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_figures_perflab")
