"""The stopping rule's figures (Mittal et al., PMBS 2023; docs/figures.md) and
``stopping-eval --json``'s KS curve, through the real CLI: a store of seeded synthetic values for
the real plan of ``specs/stopping.bench`` (every planned trial, a long reference), and a real
run (the CLI in process, real trials) whose rule stopped each configuration, which the replay
must reproduce."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from benchlang.stats.stopping import AdaptiveStop
from benchlang.stats.stopping_eval import evaluate, prefix_ks_distances
from benchlang.testing.synthetic import synthetic_store
from tests.conftest import cli_here
from tests.figure_stores import ROOT, figure_json, run_cli

NAMES = ("stopping-ks", "stopping-density")
RUN = """benchlang 1
experiment stopped {
  seed 3
  factor k in [1, 2]
  benchmark echo {
    run "sh -c 'if [ {k} = 1 ]; then echo value=5; else echo value=$(( ($BENCHLANG_TRIAL * 7919) % 101 )); fi'"
    measure v from stdout regex "value=([0-9]+)"
  }
  metric v { better lower }
  stop adaptive { min 10 max 30 }
}
"""


def stopping_value(plan, t):
    """slow 0: lognormal around 10 ms; slow 30: 30% of the trials 4x slower."""
    slow = dict(plan.configurations[int(plan.trial_configuration[t])].levels)["slow"]
    rng = np.random.default_rng(int(plan.trial_seed[t]))
    factor = 4.0 if rng.random() * 100 < slow else 1.0
    return {"time": 0.01 * factor * float(np.exp(rng.normal(0.0, 0.1)))}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    store = tmp_path_factory.mktemp("stopping") / "stopping.sqlite"
    plan = synthetic_store(ROOT / "specs" / "stopping.bench", store, stopping_value)
    return store, plan


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ran")
    spec, store = root / "stopped.bench", root / "stopped.sqlite"
    spec.write_text(RUN, encoding="utf-8")
    code, _out, err = cli_here(["run", spec, "--store", store, "--quiet"], cwd=root)
    assert code == 0, err
    return store


def stream(plan, label: str) -> np.ndarray:
    """The configuration's values in trial order, in ms (the unit the CLI prints)."""
    return np.array(
        [
            1000 * stopping_value(plan, t)["time"]
            for t in range(plan.n_trials)
            if plan.configurations[int(plan.trial_configuration[t])].label == label
        ]
    )


def silverman(v: np.ndarray):
    """scipy's Gaussian KDE with Silverman's rule of thumb, 0.9 min(sd, IQR/1.34) n^(-1/5)."""
    from scipy.stats import gaussian_kde

    sd = v.std(ddof=1)
    q1, q3 = np.percentile(v, [25, 75])
    h = 0.9 * min(sd, (q3 - q1) / 1.34) * v.size ** (-0.2)
    return gaussian_kde(v, bw_method=h / sd)


def test_list_offers_the_stopping_figures(synthetic, capsys):
    code, out, _ = run_cli(capsys, "figure", str(synthetic[0]), "--list", "--json")
    assert code == 0
    listed = {f["name"]: f for f in json.loads(out)["figures"]}
    assert all(listed[name]["applies"] for name in NAMES)


def test_a_spec_without_a_stop_rule_is_refused_with_the_reason(tmp_path, capsys):
    from benchlang.testing.synthetic import lognormal

    store = tmp_path / "q.sqlite"
    synthetic_store(
        ROOT / "specs" / "quickstart.bench",
        store,
        lambda plan, t: {"time": 0.05 * lognormal(plan, t)},
    )
    for name in NAMES:
        code, out, err = run_cli(capsys, "figure", str(store), name, "-o", str(tmp_path / "x.svg"))
        assert code == 2 and not out
        assert err.startswith(f"benchlang: error: {name} replays the spec's stopping rule")
        assert "stop adaptive { ks 0.1 max 400 }" in err
    assert not (tmp_path / "x.svg").exists()


def test_ks_curve_and_stops_are_the_replay_of_the_specs_rule(synthetic, capsys):
    store, plan = synthetic
    body = figure_json(capsys, store, "stopping-ks")
    assert body["columns"] == ["configuration", "part", "k", "ks", "action", "class"]
    assert body["meta"]["threshold"] == 0.1
    for label in ("loop[slow=0]", "loop[slow=30]"):
        x = stream(plan, label)
        assert x.size == 800  # 400 planned per series, 2 series: every trial of the plan
        curve = [r for r in body["rows"] if r[0] == label and r[1] == "curve"]
        assert [r[2] for r in curve] == list(range(1, 801))
        np.testing.assert_allclose([r[3] for r in curve], prefix_ks_distances(x), atol=1e-12)
        e = evaluate(x, AdaptiveStop(ks=0.1, max_n=400), 0.1)
        (stop,) = [r for r in body["rows"] if r[0] == label and r[1] == "stop"]
        assert stop[2:] == [e.stop_n, pytest.approx(e.ks), e.action, e.detected_class]
        (optimal,) = [r for r in body["rows"] if r[0] == label and r[1] == "optimal"]
        assert optimal[2] == e.optimal_n
    assert any(
        "descriptive only: each reference (a configuration's trials: loop[slow=0] 800, "
        "loop[slow=30] 800) is shorter than the 1,000" in n
        for n in body["notes"]
    )


def test_densities_are_of_the_reference_the_stopped_and_the_optimal_sample(synthetic, capsys):
    store, plan = synthetic
    ks = figure_json(capsys, store, "stopping-ks")
    body = figure_json(capsys, store, "stopping-density")
    assert body["meta"]["x_label"] == "time (ms)"
    for label in ("loop[slow=0]", "loop[slow=30]"):
        stop = next(r for r in ks["rows"] if r[0] == label and r[1] == "stop")
        optimal = next(r for r in ks["rows"] if r[0] == label and r[1] == "optimal")
        x = stream(plan, label)
        lo, hi = np.percentile(x, [0.5, 99.5])
        for sample, n, distance in (
            ("reference", 800, 0.0),
            ("stopped", stop[2], stop[3]),
            ("optimal", optimal[2], optimal[3]),
        ):
            rows = [r for r in body["rows"] if r[0] == label and r[1] == sample]
            assert len(rows) == 200 and {(r[4], r[5]) for r in rows} == {(n, distance)}
            grid = np.array([r[2] for r in rows])
            assert grid[0] == pytest.approx(lo) and grid[-1] == pytest.approx(hi)
            np.testing.assert_allclose([r[3] for r in rows], silverman(x[:n])(grid), rtol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_exports_svg_pdf_and_the_csv_is_the_json(synthetic, capsys, tmp_path, name):
    store = str(synthetic[0])
    svg, pdf, data = tmp_path / f"{name}.svg", tmp_path / f"{name}.pdf", tmp_path / "d.csv"
    assert run_cli(capsys, "figure", store, name, "-o", str(svg), "--data", str(data))[0] == 0
    root = ET.fromstring(svg.read_bytes())
    texts = {"".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"loop[slow=0]", "loop[slow=30]"} <= texts
    assert run_cli(capsys, "figure", store, name, "-o", str(pdf), "--style", "paper")[0] == 0
    raw = pdf.read_bytes()
    assert raw.startswith(b"%PDF") and b"/FontFile2" in raw and b"/Type3" not in raw
    body = figure_json(capsys, synthetic[0], name)
    with data.open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == body["columns"] and len(rows) - 1 == len(body["rows"])
    for got, want in zip(rows[1:], body["rows"], strict=True):
        for cell, value in zip(got, want, strict=True):
            if isinstance(value, float):
                assert float(cell) == pytest.approx(value, rel=1e-12)
            else:
                assert cell == str(value)


def test_the_replay_reproduces_the_runs_recorded_stops(ran, capsys):
    import sqlite3

    db = sqlite3.connect(ran)
    stops = dict(
        db.execute(
            "SELECT label, after_trials FROM stops JOIN "
            "(SELECT DISTINCT configuration AS c, label FROM trials) "
            "ON c = configuration"
        )
    )
    db.close()
    body = figure_json(capsys, ran, "stopping-ks")
    replayed = {r[0]: r[2] for r in body["rows"] if r[1] == "stop"}
    assert replayed == stops and stops["echo[k=1]"] == 10
    assert not any("the run stopped" in n for n in body["notes"])
    constant = next(r for r in body["rows"] if r[0] == "echo[k=1]" and r[1] == "stop")
    assert constant[4:] == ["stop", "constant"]


def test_stopping_eval_json_gives_the_prefix_ks_curve(tmp_path, capsys):
    x = np.random.default_rng(8).lognormal(np.log(100), 0.3, 1200)
    path = tmp_path / "stream.json"
    path.write_text(json.dumps(x.tolist()), encoding="utf-8")
    code, out, _ = run_cli(capsys, "stopping-eval", str(path), "--json")
    assert code == 0
    (got,) = json.loads(out)["streams"]
    curve = np.array(got["ks_curve"])
    assert curve.size == 1200 and curve[-1] == 0.0
    np.testing.assert_allclose(curve, prefix_ks_distances(x), atol=1e-12)
    assert curve[got["stop_n"] - 1] == pytest.approx(got["ks"])
    assert np.all(curve[got["optimal_n"] - 1 :] <= got["ks_threshold"])
    assert curve[got["optimal_n"] - 2] > got["ks_threshold"]


def test_a_configuration_too_short_for_the_rule_is_named_not_drawn(tmp_path, capsys):
    spec, store = tmp_path / "short.bench", tmp_path / "short.sqlite"
    spec.write_text(
        RUN.replace("min 10 max 30", "min 10 max 12").replace("stopped", "short"),
        encoding="utf-8",
    )

    def value(plan, t):
        k = dict(plan.configurations[int(plan.trial_configuration[t])].levels)["k"]
        if k == 2 and t >= 6:  # three rounds of two trials: k=2 succeeds 3 times
            return "the command exited with status 1"
        return {"v": float(40 + (t * 7919) % 13)}

    synthetic_store(spec, store, value)
    body = figure_json(capsys, store, "stopping-ks")
    assert {r[0] for r in body["rows"]} == {"echo[k=1]"}
    assert "echo[k=2]: not drawn (3 successful trials; the rule decides from 10)" in body["notes"]
    (stop,) = [r for r in body["rows"] if r[1] == "stop"]
    assert stop[2] == 12 and stop[4] == "stop_warn"


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_figures_stopping")
