"""The Python API (docs/api.md): ``import benchlang`` stays light; ``load_spec`` and
``open_store`` over a store of seeded synthetic values of a real spec's plan; the objects are
the CLI's, render in Jupyter, and every failure is a UserError with the CLI's message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import benchlang  # noqa: E402
from benchlang.cli import main  # noqa: E402
from benchlang.testing.synthetic import synthetic_store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPEC = """benchlang 1
experiment api {
  seed 5
  factor tool in ["fast", "slow"]
  factor level in [1, 2]
  benchmark b {
    run "echo {tool} {level}"
    measure time = wall_time
    measure size from stdout regex "([0-9]+)"
  }
  metric time { measure mean unit "s" better lower }
  kpi time { percentile 50 confidence 95% }
  design { runs auto series 2 }
  analysis { compare time by tool with mann_whitney }
}
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("api")
    spec = root / "api.bench"
    spec.write_text(SPEC)
    rng = np.random.default_rng(39)

    def value(plan, t):
        levels = dict(plan.configurations[plan.trial_configuration[t]].levels)
        base = 1.0 if levels["tool"] == "fast" else 1.5
        return {"time": base * rng.lognormal(0, 0.05), "size": float(100 * levels["level"])}

    synthetic_store(spec, root / "api.sqlite", value)
    return root / "api.sqlite"


def test_the_surface_is_small_and_lazy():
    assert set(benchlang.__all__) == {
        "__version__",
        "load_spec",
        "open_store",
        "SpecInvalid",
        "UserError",
    }
    probe = (
        "import sys, benchlang; print(sorted(m for m in sys.modules if m.startswith('benchlang')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['benchlang']"
    assert issubclass(benchlang.SpecInvalid, benchlang.UserError)


def test_load_spec_gives_the_checked_experiment_and_its_plan(tmp_path):
    spec = tmp_path / "api.bench"
    spec.write_text(SPEC)
    loaded = benchlang.load_spec(spec)
    assert loaded.experiment.name == "api"
    assert loaded.experiment.design.runs == 5
    assert loaded.plan.n_trials == 4 * 5 * 2
    assert loaded.diagnostics == ()


def test_a_spec_error_has_the_checks_message(tmp_path, capsys):
    spec = tmp_path / "bad.bench"
    spec.write_text(SPEC.replace("wall_time", "wal_time"))
    with pytest.raises(benchlang.SpecInvalid) as err:
        benchlang.load_spec(spec)
    assert main(["check", str(spec)]) == 2
    assert str(err.value) == capsys.readouterr().err.strip()
    assert err.value.diagnostics[0].hint == "did you mean 'wall_time'?"


def test_a_missing_store_is_a_user_error_with_the_clis_message(tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    with pytest.raises(benchlang.UserError) as err:
        benchlang.open_store(missing)
    assert main(["results", str(missing)]) == 2
    assert err.value.message in capsys.readouterr().err


def test_trials_is_one_row_per_trial_with_every_column(store):
    frame = benchlang.open_store(store).trials()
    assert len(frame) == 40
    for column in (
        "tool",
        "level",
        "time",
        "size",
        "host",
        "series",
        "round",
        "position",
        "phase",
        "started",
        "ended",
        "status",
        "benchmark",
    ):
        assert column in frame.columns, column
    assert frame["trial"].tolist() == list(range(40))
    assert set(frame["tool"]) == {"fast", "slow"}
    assert (frame["size"] == 100 * frame["level"]).all()
    assert (frame["status"] == "ok").all()
    slow = frame.loc[frame["tool"] == "slow", "time"].median()
    fast = frame.loc[frame["tool"] == "fast", "time"].median()
    assert slow > 1.3 * fast
    assert str(frame["started"].dtype).startswith("datetime64")


def test_the_analyses_are_the_clis_objects_and_render_in_jupyter(store, capsys):
    opened = benchlang.open_store(store)
    headline = opened.headline()
    assert main(["analyze", "--store", str(store)]) == 0
    printed = capsys.readouterr().out
    assert headline.text.strip() and headline.text.strip() in printed
    assert headline._repr_html_().startswith("<table") and "<pre" not in headline._repr_html_()
    kpis = opened.kpis()
    assert [k.configuration for k in kpis][:2] == ["b[tool=fast,level=1]", "b[tool=fast,level=2]"]
    assert len(kpis) == 4  # one per configuration, its series inside
    assert kpis.text.splitlines()[0] in printed
    record = opened.record()
    assert main(["record", "--store", str(store), "--format", "markdown"]) == 0
    assert record.text.strip() == capsys.readouterr().out.strip()
    assert record._repr_html_().startswith("<table>")
    compared = opened.compare()
    assert [c.comparison.method for c in compared] == ["mann_whitney"]
    family = compared[0].family  # adjusted as the run's family, as analyze prints it
    assert family is not None and family.sentence and family.sentence in printed
    bootstrap = opened.compare("time", by="tool", method="bootstrap", replicates=500)
    assert bootstrap[0].comparison.settings["replicates"] == 500
    assert "ad hoc comparison at its own level, outside the run's family" in bootstrap.text
    assert "ad hoc" not in compared.text
    with pytest.raises(benchlang.UserError, match="no factor named 'tol'"):
        opened.compare("time", by="tol")


def test_parquet_from_the_api_and_the_cli_round_trip(store, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    opened = benchlang.open_store(store)
    written = opened.to_parquet(tmp_path / "t.parquet", measured_only=True)
    frame = pd.read_parquet(written)
    assert len(frame) == len(opened.trials(measured_only=True))
    out = tmp_path / "cli.parquet"
    assert main(["results", str(store), "--format", "parquet", "--output", str(out)]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out), frame)


def test_the_notebook_example_runs(store, tmp_path):
    pytest.importorskip("matplotlib")
    example = ROOT / "docs" / "examples" / "notebook.py"
    done = subprocess.run(
        [sys.executable, str(example), str(store), str(tmp_path / "times.png")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"MPLBACKEND": "Agg", **__import__("os").environ},
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "times.png").stat().st_size > 1000
    assert "fast" in done.stdout and "slow" in done.stdout


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_api")
