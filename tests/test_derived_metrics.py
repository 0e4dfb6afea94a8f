"""Derived metrics: ``metric efficiency = bytes_saved / wall_time`` (DataMill §4).

The expression is parsed by the grammar and checked with positioned diagnostics; its values
are computed from the stored measures of each trial, with no value (nan) where it is not
finite.
"""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from benchlang import model
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.run.stopping import StoppingController
from benchlang.run.store import TrialRecord
from benchlang.run.trial_metric import evaluate

BENCH = """benchlang 1
experiment d {{
  benchmark k {{
    run "echo saved 10 series 1 2"
    measure bytes_saved from stdout regex "saved ([0-9]+)"
    measure s series from stdout regex "series ([0-9 ]+)"
    measure t = wall_time
    measure rss = max_rss
  }}
{body}
}}
"""


def compile_body(body: str) -> model.Experiment:
    return compile_source(decode("d.bench", BENCH.format(body=body).encode()))


def diagnostic(body: str):
    with pytest.raises(SpecError) as info:
        compile_body(body)
    (first, *_rest) = [d for d in info.value.diagnostics if d.severity == "error"]
    return first


def test_a_derived_metric_compiles_with_its_unit_and_text():
    experiment = compile_body(
        "  metric efficiency = bytes_saved / t { better higher }\n"
        "  metric rate = rss / (t * 2)\n"
        "  metric gap = t - 0.5\n"
        "  metric same = t / wall_time\n"
    )
    efficiency = experiment.metric("efficiency")
    assert efficiency.expression.names() == ("bytes_saved", "t")
    assert efficiency.measure == "bytes_saved / t" and efficiency.better == "higher"
    assert efficiency.unit is None, "bytes_saved has no declared unit"
    assert experiment.metric("rate").unit == "KiB/s"
    assert experiment.metric("rate").measure == "rss / (t * 2)"
    assert experiment.metric("gap").unit == "s"
    assert experiment.metric("same").unit is None


@pytest.mark.parametrize(
    ("body", "message", "line", "col"),
    [
        (
            "  metric e = bytes_savd / t",
            "metric 'e' uses 'bytes_savd', which is no measure",
            10,
            14,
        ),
        (
            "  metric e = s / t",
            "metric 'e' uses 's', a raw series; a derived metric combines single numbers of one trial",
            10,
            14,
        ),
        ("  metric e = t : rss", "':' is not arithmetic (metric 'e')", 10, 14),
        ("  metric e = t + rss", "metric 'e': '+' of quantities in s and KiB", 10, 14),
        (
            "  metric e = t / rss { measure median }",
            "'measure' does not apply to derived metric 'e': its value per trial is the expression",
            10,
            24,
        ),
    ],
)
def test_errors_point_at_the_offending_part(body, message, line, col):
    found = diagnostic(body)
    assert found.message == message
    assert (found.span.line, found.span.column) == (line, col)


def test_an_unknown_name_suggests_the_closest_measure():
    assert diagnostic("  metric e = bytes_savd / t").hint == "did you mean 'bytes_saved'?"


def test_the_expression_is_never_evaluated_as_text():
    for text in ('__import__("os").system("true")', "t; rm", "t ** 2"):
        with pytest.raises(SpecError):
            compile_body(f"  metric e = {text}")


def test_evaluate_is_elementwise_and_gives_no_value_where_not_finite():
    expression = compile_body("  metric e = -(bytes_saved - 4) / t * 2 + 1").metric("e").expression
    columns = {
        "bytes_saved": np.array([10.0, 4.0, 8.0, np.nan]),
        "t": np.array([2.0, 0.0, 0.0, 1.0]),
    }
    values = evaluate(expression, columns.__getitem__)
    np.testing.assert_allclose(values[:1], [-(10 - 4) / 2 * 2 + 1])
    assert np.isnan(values[1]), "0/0 is no value"
    assert np.isnan(values[2]), "a division by zero is no value, not inf"
    assert np.isnan(values[3]), "a missing measure is no value"


def test_a_run_computes_each_trials_value_from_its_own_measures(tmp_path, cli_in_process):
    spec = tmp_path / "d.bench"
    spec.write_text(
        """benchlang 1
experiment d {
  seed 2
  factor n in [3, 30]
  benchmark k {
    run "echo saved {n}"
    measure bytes_saved from stdout regex "saved ([0-9]+)"
    measure t = wall_time
  }
  metric efficiency = bytes_saved / t { better higher }
  stop adaptive { metric efficiency min 4 max 4 }
}
"""
    )
    status, _out, err = cli_in_process(
        ["run", spec, "--store", tmp_path / "d.sqlite"], cwd=tmp_path
    )
    assert status == 0, err
    status, _out, err = cli_in_process(["results", tmp_path / "d.sqlite", "--csv"], cwd=tmp_path)
    assert status == 0, err
    db = sqlite3.connect(tmp_path / "d.sqlite")
    rows = db.execute(
        "SELECT m1.value, m2.value FROM measures m1 JOIN measures m2 "
        "ON m1.trial = m2.trial AND m1.plan_hash = m2.plan_hash "
        "WHERE m1.name = 'bytes_saved' AND m2.name = 't'"
    ).fetchall()
    assert len(rows) == 8 and {r[0] for r in rows} == {3.0, 30.0}
    from benchlang.report.data import load_data
    from benchlang.run.store import Store

    with Store(tmp_path / "d.sqlite") as store:
        data = load_data(store)
    values = data.metrics["efficiency"].values
    expected = data.table.measures["bytes_saved"] / data.table.measures["t"]
    np.testing.assert_allclose(values, expected)


def test_a_stopping_rule_watches_a_derived_metric():
    experiment = compile_body(
        "  metric efficiency = bytes_saved / t\n  stop adaptive { metric efficiency max 10 }"
    )
    controller = StoppingController(experiment)
    record = TrialRecord(
        0, 0, 0, 0, "local", 0, "k", "k", {}, "random", "ok", None, 0, False, 0.0, 1.0, 1,
        b"", b"", {"bytes_saved": 12.0, "t": 4.0}, {},
    )  # fmt: skip
    assert controller.value_of(record) == 3.0
    zero = TrialRecord(
        1, 0, 0, 0, "local", 0, "k", "k", {}, "random", "ok", None, 0, False, 0.0, 1.0, 1,
        b"", b"", {"bytes_saved": 12.0, "t": 0.0}, {},
    )  # fmt: skip
    assert math.isnan(controller.value_of(zero))
