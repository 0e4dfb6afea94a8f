"""Analysis-only changes reuse the store: a plan's shape hash covers what shapes its
trials, so a spec that differs from a stored run's only in its analysis (a variability
confidence, an added order_dependence, comments) is analysed and resumed on the stored trials
with its own analysis; a change that shapes the trials is still a new plan."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from benchlang.plan.plan import shape_of

SPEC = """benchlang 1
experiment shape {
  seed 4
  factor k in [1, 2]
  benchmark b {
    run "echo v={k}"
    measure v from stdout regex "v=([0-9]+)"
  }
  metric v { better lower }
  kpi v { percentile 50 confidence 95% }
  variability v { percentile 25 confidence 75% }
  design { runs 5 series 5 }
}
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    from tests.conftest import cli_here as cli

    root = tmp_path_factory.mktemp("shape")
    (root / "v1.bench").write_text(SPEC)
    status, out, err = cli(["run", "v1.bench", "--store", "s.sqlite", "--quiet"], cwd=root)
    assert status == 0, out + err
    return root


def _variant(root: Path, name: str, old: str, new: str) -> str:
    (root / name).write_text(SPEC.replace(old, new))
    return name


def test_an_analysis_only_change_is_analysed_on_the_stored_trials(stored, cli_in_process):
    spec = _variant(stored, "v2.bench", "confidence 75% }", "confidence 70% }  # looser")
    status, out, err = cli_in_process(["record", spec, "--store", "s.sqlite"], cwd=stored)
    assert status == 0, err
    assert "differs from the stored run's spec only in what does not shape its trials" in err
    assert "| Variability confidence | 70% | 70% |" in out
    status, out, err = cli_in_process(["run", spec, "--store", "s.sqlite", "--resume"], cwd=stored)
    assert status == 0, out + err
    assert "running 0 of 50 trials" in out + err and "continuing plan" in err
    plans = sqlite3.connect(stored / "s.sqlite").execute("SELECT count(*) FROM plans").fetchone()
    assert plans == (1,), "no second plan was stored"


def test_a_change_that_shapes_the_trials_is_a_new_plan(stored, cli_in_process):
    spec = _variant(stored, "v3.bench", "runs 5 series 5", "runs 6 series 5")
    status, _, err = cli_in_process(["analyze", spec, "--store", "s.sqlite"], cwd=stored)
    assert status == 2 and "holds no plan" in err
    status, _, err = cli_in_process(["run", spec, "--store", "s.sqlite", "--resume"], cwd=stored)
    assert status == 2 and "a change to its analysis does not" in err


def test_the_shape_ignores_where_a_plan_came_from_only(stored):
    import json

    (document,) = [
        json.loads(row[0])
        for row in sqlite3.connect(stored / "s.sqlite").execute("SELECT plan_json FROM plans")
    ]
    moved = {**document, "spec_hash": "sha256:other", "derived": [], "hash": "x"}
    assert shape_of(moved) == shape_of(document)
    reseeded = {**document, "seed": document["seed"] + 1}
    assert shape_of(reseeded) != shape_of(document)
    trials = {
        **document,
        "trials": {**document["trials"], "seed": document["trials"]["seed"][::-1]},
    }
    assert shape_of(trials) != shape_of(document)
