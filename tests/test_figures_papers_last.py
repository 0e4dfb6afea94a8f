"""The papers' last figures (docs/figures.md): TriScale Fig. 4
(``runtimes``), Perflab Fig. 6 (``bootstrap-model``) and the stopping rule's Figs. 4/5 on
synthetic ground truth (``stopping-synthetic``, ``stopping-eval --synthetic``), each from a
store of seeded synthetic values written for an example spec's real plan and exported through
the CLI in process; the numbers checked against what the data or the model make known, and
docs/figures.md's table of the five papers' figures against the registry."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from benchlang.report.figures import NAMES
from tests.figure_stores import (
    ROOT,
    SPECS,
    figure_json,
    levels_of,
    make_store,
    quickstart,
    run_cli,
)
from tests.test_runtime_factor import FIG4


def _svg(path: Path) -> None:
    root = ET.fromstring(path.read_bytes())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 5
    assert root.findall(".//{http://www.w3.org/2000/svg}text"), "axes labelled as text"


def _pdf(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-64:]
    assert b"/FontFile2" in data and b"/Type3" not in data  # TrueType embedded, no Type 3


def fig4(plan, t, far: bool = False):
    """tests/test_runtime_factor.py's FIG4 values: 50 samples a second, a ramp over the first
    50 then flat, so a 1 s run never converges and a 4 s run does; ``far``: one sample of the
    first 4 s trial 100 times the rest."""
    rng = np.random.default_rng(int(plan.trial_seed[t]))
    n = int(50 * float(levels_of(plan, t)["runtime"]))
    i = np.arange(n)
    y = 100 + 20 * np.minimum(i, 50) / 50 + rng.normal(0, 0.5, n)
    if far and n == 200:
        y[120] *= 100
    return {"latency": y}


def test_runtimes_side_by_side_with_their_convergence(tmp_path, capsys):
    """FIG4's plan with ``fig4``'s seeded series (its real run, each trial a python3 process
    printing its series, is tests/test_runtime_factor.py's), the figure's samples equal to
    each configuration's first trial's series."""
    store, plan = make_store(tmp_path, "fig4", FIG4, fig4)
    body = figure_json(capsys, store, "runtimes")
    assert body["paper"].endswith("Fig. 4")
    runtimes = body["meta"]["runtimes"]
    assert sorted(runtimes.values()) == [1.0, 4.0]
    code, out, err = run_cli(capsys, "analyze", store, "--json")
    assert code == 0, err
    said = {r["runtime"]: (r["converged"], r["trials"]) for r in json.loads(out)["runtimes"]}
    assert said == {1.0: (0, 4), 4.0: (4, 4)}  # the ramp fills a 1 s run, not a 4 s one
    for label, seconds in runtimes.items():
        k, n = said[seconds]
        verdict = body["meta"]["verdicts"][label]
        assert f"{k} of {n} trials converged" in verdict
        assert ("did NOT converge" in verdict) == (seconds == 1.0)
        index = next(c.index for c in plan.configurations if c.label == label)
        first = int(np.flatnonzero(plan.trial_configuration == index)[0])
        series = fig4(plan, first)["latency"]
        samples = [r for r in body["rows"] if r[0] == label and r[1] == "sample"]
        assert len(samples) == len(series)
        for _l, _p, x, y, _lo, _hi in samples:  # time in the run: sample i at i / 50 s
            i = round(x * len(series) / seconds)
            assert x == pytest.approx(i * seconds / len(series))
            assert y == pytest.approx(series[i])
    out = tmp_path / "runtimes.svg"
    code, _said, err = run_cli(capsys, "figure", store, "runtimes", "-o", out)
    assert code == 0, err
    _svg(out)
    one, _p = make_store(tmp_path, "quickstart", SPECS / "quickstart.bench", quickstart)
    code, _o, err = run_cli(capsys, "figure", one, "runtimes")
    assert code == 2 and "one runtime" in err and "factor runtime in" in err


def test_a_far_sample_does_not_flatten_a_runtime_panel(tmp_path, capsys):
    store, _plan = make_store(tmp_path, "far", FIG4, lambda plan, t: fig4(plan, t, far=True))
    body = figure_json(capsys, store, "runtimes")
    ((label, (low, high)),) = body["meta"]["y_view"].items()
    assert body["meta"]["runtimes"][label] == 4.0
    rest = [r[3] for r in body["rows"] if r[0] == label and r[1] == "sample" and r[3] < 1000]
    assert low <= min(rest) and max(rest) <= high < 1000
    assert any("1 far sample outside the drawn range" in n for n in body["notes"])
    out = tmp_path / "runtimes.pdf"
    code, _o, err = run_cli(capsys, "figure", store, "runtimes", "-o", out)
    assert code == 0, err
    _pdf(out)


def test_a_far_trial_does_not_flatten_perflabs_requests_and_timeline(tmp_path, capsys):
    from tests.test_figures_docs import ab_layout  # it imports fig4 from here

    def far(plan, t):
        return {"cpu": ab_layout(plan, t)["cpu"] * (100.0 if t == 40 else 1.0)}

    store, plan = make_store(tmp_path, "far", SPECS / "ab-layout.bench", far)
    slow = far(plan, 40)["cpu"]
    for name in ("requests", "timeline"):
        body = figure_json(capsys, store, name)
        low, high = body["meta"]["y_view"]
        assert high < slow and low < ab_layout(plan, 0)["cpu"] < high
        assert any("1 trial far outside the rest" in n for n in body["notes"]), name
    code, _o, err = run_cli(capsys, "figure", store, "timeline", "-o", tmp_path / "t.pdf")
    assert code == 0, err
    _pdf(tmp_path / "t.pdf")


def test_model_distribution_has_the_fitted_models_mean_and_se():
    """The pure function on a layout of known components: the 10,000 simulated estimates have
    the model's mean (the effect) and its exact SE, which equals the paper's analytic SE of
    the layout (§4.2.1) computed independently, within Monte Carlo error."""
    from benchlang.design.layouts import layout_schedule
    from benchlang.stats.ab.bootstrap import cluster_codes
    from benchlang.stats.ab.designs import VarianceComponents, layout_se
    from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes
    from benchlang.stats.figure_perflab_model import model_check

    comps = VarianceComponents.from_sd(
        request=2.0, host=1.0, request_batch=0.5, host_batch=0.7, residual=1.5
    )
    for kind in ("unbalanced", "request_balanced", "host_balanced", "fully_balanced"):
        design = ABDesign.from_schedule(layout_schedule(kind, 8, 16, 3, seed=1))
        y = simulate_outcomes(design, comps, 1, np.random.default_rng(2), 0.5)[0]
        codes = cluster_codes("host", design.size, design.request, design.host)
        check = model_check(y, design, comps, codes, "host", seed=3)
        treated = design.version == 1
        assert check.estimate == pytest.approx(y[treated].mean() - y[~treated].mean())
        assert check.model_se == pytest.approx(layout_se(kind, 8, 16, 3, comps), rel=1e-9)
        n = check.simulated.size
        assert n == 10_000 and check.bootstrap.size > 9_000
        assert abs(check.simulated.mean() - check.estimate) < 4 * check.model_se / n**0.5
        # the SD of a normal sample's SD is about sd / sqrt(2 (n - 1)): 0.7% at 10,000
        assert check.simulated.std(ddof=1) == pytest.approx(check.model_se, rel=0.03)
        again = model_check(y, design, comps, codes, "host", seed=3)
        assert np.array_equal(again.simulated, check.simulated)  # seeded
        # every trial simulated (Eq. 3-4 in full) gives the same spread as the levels' sums
        full = simulate_outcomes(design, comps, 4000, np.random.default_rng(4), check.estimate)
        spread = np.std(full[:, treated].mean(axis=1) - full[:, ~treated].mean(axis=1), ddof=1)
        assert spread == pytest.approx(check.simulated.std(ddof=1), rel=0.06)


def test_bootstrap_model_from_an_ab_store(tmp_path, capsys):
    from tests.test_figures_docs import ab_layout  # it imports fig4 from here

    store, _plan = make_store(tmp_path, "ab", SPECS / "ab-layout.bench", ab_layout)
    body = figure_json(capsys, store, "bootstrap-model")
    meta, rows = body["meta"], body["rows"]
    assert body["paper"].endswith("Fig. 6")
    boot = np.array([r[1] for r in rows if r[0] == "bootstrap"])
    sim = np.array([r[1] for r in rows if r[0] == "model"])
    assert sim.size == 10_000 and boot.size + meta["dropped"] == 10_000
    assert meta["dropped"] < 0.2 * 10_000  # 2 clusters a version: e^-2 = 13.5% drop one
    assert meta["simulated_sd"] == pytest.approx(np.std(sim, ddof=1))
    assert meta["simulated_sd"] == pytest.approx(meta["model_se"], rel=0.03)
    assert abs(meta["simulated_mean"] - meta["estimate"]) < 4 * meta["model_se"] / 100
    assert meta["bootstrap_sd"] == pytest.approx(np.std(boot, ddof=1))
    for part in ("bootstrap density", "model density"):
        x, d = (np.array([r[i] for r in rows if r[0] == part]) for i in (1, 2))
        assert np.trapezoid(d, x) == pytest.approx(1.0, abs=0.05)
    assert any("host clusters per version" in n for n in body["notes"])  # 2 hosts: said
    out = tmp_path / "bootstrap-model.pdf"
    code, _o, err = run_cli(capsys, "figure", store, "bootstrap-model", "-o", out)
    assert code == 0, err
    _pdf(out)


def test_stopping_eval_takes_synthetic_streams(capsys):
    from benchlang.stats.stopping_eval import SYNTHETIC_CRITERIA, optimal_stop

    code, out, err = run_cli(
        capsys, "stopping-eval", "--synthetic", "normal,near_constant,drifting", "--json"
    )
    assert code == 0, err
    streams = {s["stream"]: s for s in json.loads(out)["streams"]}
    assert list(streams) == ["normal", "near_constant", "drifting"]
    for name, s in streams.items():
        assert s["criterion"] == SYNTHETIC_CRITERIA[name] and s["n"] == 1000
        curve = np.array(s["ks_curve"])
        assert s["ks"] == pytest.approx(curve[s["stop_n"] - 1])
        assert s["optimal_n"] == optimal_stop(curve, 0.1)
    assert streams["drifting"]["action"] == "stop_warn" and streams["drifting"]["passed"]
    assert streams["near_constant"]["mean_error"] <= 0.01 and streams["near_constant"]["passed"]
    code, out, err = run_cli(
        capsys, "stopping-eval", "--synthetic", "normal", "--length", "3000", "--seed", "9"
    )
    assert code == 0, err
    assert "3000 synthetic samples each, seed 9" in out and "normal" in out
    code, _o, err = run_cli(capsys, "stopping-eval", "--synthetic", "normal", "--length", "999")
    assert code == 2 and "at least 1000" in err
    code, _o, err = run_cli(capsys, "stopping-eval", "--synthetic", "bimodal")
    assert code == 2 and "no synthetic stream named bimodal" in err and "Traceback" not in err


def test_the_generators_have_their_stated_shape():
    """The ground truth is known by construction (docs/stopping.md's table): moments of the
    seeded streams within Monte Carlo error at n = 20,000."""
    from benchlang.stats.stopping_eval import synthetic_streams

    s = synthetic_streams(5, 20_000)
    se = 1 / 20_000**0.5
    assert s["normal"].mean() == pytest.approx(100, abs=4 * 10 * se)
    assert s["normal"].std() == pytest.approx(10, rel=0.03)
    assert np.log(s["lognormal"]).std() == pytest.approx(0.5, rel=0.03)
    assert s["uniform"].min() >= 50 and s["uniform"].max() <= 150
    assert s["exponential"].mean() == pytest.approx(100, abs=4 * 100 * se)
    assert np.polyfit(np.arange(20_000), s["drifting"], 1)[0] == pytest.approx(0.5, rel=0.01)


def test_stopping_synthetic_figure_replays_the_specs_rule(tmp_path, capsys):
    import csv

    from tests.test_figures_docs import stopping  # it imports fig4 from here

    store, _plan = make_store(tmp_path, "stopping", SPECS / "stopping.bench", stopping)
    out, rows = tmp_path / "stopping-synthetic.svg", tmp_path / "stopping-synthetic.csv"
    code, said, err = run_cli(
        capsys, "figure", store, "stopping-synthetic", "-o", out, "--data", rows
    )
    assert code == 0, err
    assert "Figs. 4, 5" in said
    _svg(out)
    caption = ET.fromstring(out.read_bytes()).find(
        ".//{http://purl.org/dc/elements/1.1/}description"
    )
    verdicts = dict(re.findall(r"(\w+): (pass|FAIL) by", caption.text))
    with rows.open(encoding="utf-8") as f:
        drawn = list(csv.DictReader(f))
    assert len(verdicts) == 10
    some = "normal,uniform,near_constant,drifting"  # KS pass and fail, mean, warning
    code, text, err = run_cli(  # the spec's rule (ks 0.1, max 400) and seed (23)
        capsys, "stopping-eval", "--synthetic", some, "--seed", "23", "--json"
    )
    assert code == 0, err
    cli = {s["stream"]: s for s in json.loads(text)["streams"]}
    assert list(cli) == some.split(",")
    for name, s in cli.items():
        n = {r["sample"]: int(r["n"]) for r in drawn if r["configuration"] == name}
        assert n["reference"] == s["n"] == 1000
        assert n["optimal"] == s["optimal_n"]
        assert n.get("stopped", s["n"]) == s["stop_n"]
        assert (verdicts[name] == "pass") == s["passed"]


def test_bootstrap_model_exports_as_svg(tmp_path, capsys):
    """With the tests above, each new figure is written as SVG and as PDF; stopping-synthetic's
    PDF is stopping-density's drawing (``draw_synthetic``), exported as PDF in
    tests/test_figures_stopping.py."""
    from tests.test_figures_docs import ab_layout  # it imports fig4 from here

    store, _plan = make_store(tmp_path, "ab", SPECS / "ab-layout.bench", ab_layout)
    out = tmp_path / "bootstrap-model.svg"
    code, said, err = run_cli(capsys, "figure", store, "bootstrap-model", "-o", out)
    assert code == 0, err
    assert said.startswith(f"wrote {out}")
    _svg(out)


def test_docs_table_lists_every_figure_of_the_five_papers():
    """docs/figures.md's table of the papers' figures: every registry name appears in it, and
    each row names a benchlang figure or says why the paper's figure does not apply."""
    text = (ROOT / "docs" / "figures.md").read_text(encoding="utf-8")
    table = text.split("## The papers' figures, one by one", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    papers = {row.split("|")[1].strip() for row in rows[1:]}
    assert {"TriScale", "OrderSage", "Perflab", "DataMill", "Stopping rule"} <= papers
    named = set(re.findall(r"`([a-z0-9-]+)`", table))
    every = {name for names in NAMES.values() for name in names}
    assert every <= named, f"not in the table: {sorted(every - named)}"
    for row in rows[1:]:
        cell = row.split("|")[3].strip()
        assert cell.startswith("`") or cell.startswith("—"), row
