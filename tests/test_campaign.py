"""Campaigns (several stores of one experiment read as sessions): `analyze S1 S2 ...` uses
sessions as the top clusters of the ranking and shows each configuration's between-session
share (stats.campaign: Searle, Casella & McCulloch 1992, §3.5; Bakshy & Frachtenberg 2015, §3);
stores of other experiments or configurations are refused (exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as scipy_stats

from benchlang.stats.campaign import session_share

SPEC = """benchlang 1

experiment camp {{
  seed 5
  factor speed in [100, {other}]
  benchmark b {{
    run "sh -c 'echo t=$(( {{speed}} * $(cat level) * (1000 + ($BENCHLANG_SEED % 41)) ))'"
    measure t from stdout regex "t=([0-9]+)"
  }}
  metric t {{ measure mean unit "us" better lower }}
  kpi t {{ percentile 50 confidence 95% }}
  design {{ runs 6 order random }}
}}
"""


def test_the_share_matches_the_one_way_anova():
    rng = np.random.default_rng(4)
    session = np.repeat(np.arange(6), [5, 7, 6, 5, 8, 6])  # unbalanced, as stores are
    level = rng.normal(0, 0.05, 6)[session]
    values = np.exp(level + rng.normal(0, 0.02, session.size))
    share = session_share(values, session)
    logs = np.log(values)
    f = scipy_stats.f_oneway(*(logs[session == s] for s in range(6)))
    assert share.p_value == pytest.approx(f.pvalue, rel=1e-9)
    assert share.sessions == 6 and share.trials == session.size
    assert 0 < share.icc < 1 and share.between > share.within
    one = session_share(values[session == 0], session[session == 0])
    assert one.sessions == 1 and np.isnan(one.icc) and np.isnan(one.p_value)


def test_the_estimates_are_unbiased_over_simulated_campaigns():
    """Searle's moment estimators: mean over 400 balanced campaigns within 5% of the truth."""
    rng = np.random.default_rng(7)
    between, within = [], []
    for _ in range(400):
        session = np.repeat(np.arange(8), 10)
        logs = rng.normal(0, 0.05, 8)[session] + rng.normal(0, 0.02, session.size)
        share = session_share(np.exp(logs), session)
        between.append(share.between)
        within.append(share.within)
    assert np.mean(within) == pytest.approx(0.02**2, rel=0.05)
    assert np.mean(between) == pytest.approx(0.05**2, rel=0.1)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, cli_in_process):
    here = tmp_path_factory.mktemp("campaign")
    (here / "c.bench").write_text(SPEC.format(other=110))
    (here / "other").mkdir()
    (here / "other" / "c.bench").write_text(SPEC.format(other=120))
    for i, level in enumerate([97, 104, 88, 101]):
        (here / f"s{i}").mkdir()
        (here / f"s{i}" / "level").write_text(f"{level}\n")
    (here / "other" / "level").write_text("100\n")
    calls = [["run", here / "c.bench", "--store", here / f"s{i}.sqlite", "-q"] for i in range(4)]
    cwds = [here / f"s{i}" for i in range(4)]
    calls.append(["run", here / "other" / "c.bench", "--store", here / "o.sqlite", "-q"])
    cwds.append(here / "other")
    for call, cwd in zip(calls, cwds, strict=True):
        status, _, err = cli_in_process(call, cwd=cwd)
        assert status == 0, err
    return here


def test_sessions_are_the_top_clusters_and_their_share_is_shown(campaign, cli_in_process):
    stores = [campaign / f"s{i}.sqlite" for i in range(4)]
    status, out, err = cli_in_process(["analyze", *stores, "--json"], cwd=campaign)
    assert status == 0, err
    document = json.loads(out, parse_constant=pytest.fail)
    shares = document["sessions"]
    assert [r["configuration"] for r in shares] == ["b[speed=100]", "b[speed=110]"]
    assert all(r["sessions"] == 4 and r["trials"] == 24 and r["icc"] > 0.5 for r in shares)
    (ranking,) = document["headline"][0]["rankings"]
    assert ranking["levels"][0] == "session" and ranking["units"][0] == 4
    (comparison,) = ranking["comparisons"]
    assert comparison["ratio"] == pytest.approx(1.1, rel=0.02) and comparison["clear"]
    assert ranking["family"]["df"] == 3  # the cluster-level t over 4 sessions
    status, text, _ = cli_in_process(["analyze", *stores], cwd=campaign)
    assert status == 0 and "between sessions (4 stores, one session each)" in text
    one = json.loads(cli_in_process(["analyze", stores[0], "--json"], cwd=campaign)[1])
    assert "sessions" not in one
    assert one["headline"][0]["rankings"][0]["levels"][0] != "session"


def test_stores_of_other_configurations_are_refused(campaign, cli_in_process):
    status, out, err = cli_in_process(
        ["analyze", campaign / "s0.sqlite", campaign / "o.sqlite"], cwd=campaign
    )
    assert status == 2 and not out and "differ in their configurations" in err
    assert "Traceback" not in err
