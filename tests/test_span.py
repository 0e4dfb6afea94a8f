"""TriScale's span (§4.6): each series runs over its span with its rounds at seeded
random times across it (in the plan, honoured by the executor), `span auto` takes the span a
profile analysis recommends, and `check` warns when a profile recommends a longer span."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from benchlang.plan.factorial import spread_over_span

SPEC = """benchlang 1
experiment sp {{
  seed 2
  benchmark b {{ run "true"
    measure t = wall_time }}
  metric t {{ }}
  kpi t {{ percentile 50 confidence 75% }}
  variability t {{ percentile 50 confidence 75% }}
  design {{ runs 2 series 3 span {span} }}{analysis}
}}
"""


def seasonal_csv(path: Path) -> Path:
    """Four weeks of a daily cycle sampled every 2 h (the profile finds 12 lags = 1 day)."""
    rng = np.random.default_rng(1)
    t = np.arange(12 * 7 * 4)
    values = np.sin(2 * np.pi * t / 12) + rng.normal(scale=0.3, size=t.size)
    path.write_text("load\n" + "".join(f"{v:.5f}\n" for v in values))
    return path


def test_rounds_are_spread_over_each_series_span_deterministically():
    series = np.repeat(np.arange(4), 5)
    starts, rounds = spread_over_span(3600.0, series, seed=7)
    assert starts.tolist() == [0.0, 3600.0, 7200.0, 10800.0]
    assert rounds[0] == 0.0
    for s in range(4):
        mine = rounds[series == s]
        assert np.all(np.diff(mine) >= 0) and np.all((mine >= s * 3600) & (mine < (s + 1) * 3600))
    again = spread_over_span(3600.0, series, seed=7)[1]
    assert np.array_equal(rounds, again)
    assert not np.array_equal(rounds, spread_over_span(3600.0, series, seed=8)[1])
    assert spread_over_span(None, series, seed=7)[1] is None


def test_the_plan_shows_the_schedule_and_the_run_honours_it(tmp_path, cli_in_process):
    (tmp_path / "sp.bench").write_text(SPEC.format(span="2s", analysis=""))
    status, out, err = cli_in_process(["plan", "sp.bench", "--json"], cwd=tmp_path)
    assert status == 0, err
    starts = json.loads(out)["rounds"]["start"]
    assert len(starts) == 6 and starts[0] == 0.0 and starts == sorted(starts)
    assert all(
        2.0 * s <= x < 2.0 * (s + 1) for s, x in zip([0, 0, 1, 1, 2, 2], starts, strict=True)
    )
    status, out, err = cli_in_process(["plan", "sp.bench"], cwd=tmp_path)
    assert "rounds at seeded random times across it (TriScale §4.6)" in out
    status, out, err = cli_in_process(
        ["run", "sp.bench", "--store", "s.sqlite", "-q"], cwd=tmp_path
    )
    assert status == 0, out + err
    db = sqlite3.connect(tmp_path / "s.sqlite")
    (begun,) = db.execute("SELECT run_started FROM plans").fetchone()
    for round_, started in db.execute("SELECT round, MIN(started) FROM trials GROUP BY round"):
        assert started - begun >= starts[round_] - 0.05, round_


def test_span_auto_takes_the_profile_recommendation(tmp_path, cli_in_process):
    seasonal_csv(tmp_path / "load.csv")
    analysis = '\n  analysis { profile load from file "load.csv" period 2h }'
    (tmp_path / "auto.bench").write_text(SPEC.format(span="auto", analysis=analysis))
    status, out, err = cli_in_process(["plan", "auto.bench", "--json"], cwd=tmp_path)
    assert status == 0, err
    derived = {d["name"]: d for d in json.loads(out)["derived"]}
    assert derived["span"]["value"] == 86400.0
    assert derived["span"]["reason"].startswith("auto: the longest seasonal period profile load")
    (tmp_path / "none.bench").write_text(SPEC.format(span="auto", analysis=""))
    status, _, err = cli_in_process(["check", "none.bench"], cwd=tmp_path)
    assert status == 2 and "'span auto' takes the span a profile analysis recommends" in err


@pytest.mark.parametrize(("span", "warned"), [("1h", True), ("1d", False)])
def test_check_warns_when_the_profile_wants_a_longer_span(tmp_path, cli_in_process, span, warned):
    seasonal_csv(tmp_path / "load.csv")
    analysis = '\n  analysis { profile load from file "load.csv" period 2h }'
    (tmp_path / "w.bench").write_text(SPEC.format(span=span, analysis=analysis))
    status, _, err = cli_in_process(["check", "w.bench"], cwd=tmp_path)
    assert status == 0, err
    message = "warning: profile load recommends a span of 1d, longer than the declared 1h"
    assert (message in err) is warned
    if warned:
        assert "w.bench:9:" in err and "use span 1d, or span auto" in err
