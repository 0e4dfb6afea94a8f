"""`benchlang diff` across sessions (docs/cli.md, docs/statistics.md): each store one session
made by `benchlang run` of a spec whose command reports its own value
(benchmarks/sim_diff_sessions.py: a log-normal trial draw, sigma 2%, times the session's level
read from a file written before the run, times a slowdown of tool=slow). The levels are fixed
here, so every outcome is seeded."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from sim_diff_sessions import cli, make_session

pytestmark = pytest.mark.xdist_group("test_diff_sessions")
"""Its sessions (16 runs, 8 of them a second apart) made once under pytest -n, not once per
worker."""
LEVELS_A = (1.04, 0.95, 1.01)
LEVELS_B = (0.98, 1.06, 0.97)
LEVELS_H = (0.98, 0.99, 1.01, 1.02, 1.00, 0.99, 1.01, 1.03)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> Path:
    """a0..a2 before; b0..b2 after with tool=slow x1.25; 'renamed' (benchmark work2),
    'other' (another experiment), 'extra' (a third tool); h0..h7 unchanged sessions in the history h.sqlite."""
    root = tmp_path_factory.mktemp("sessions")
    jobs = [(f"a{i}", level, 11 + i, 1.0, {}) for i, level in enumerate(LEVELS_A)]
    jobs += [(f"b{i}", level, 21 + i, 1.25, {}) for i, level in enumerate(LEVELS_B)]
    jobs += [("renamed", 1.0, 31, 1.0, {"benchmark": "work2"})]
    jobs += [("other", 1.0, 41, 1.0, {"experiment": "other"})]
    jobs += [("extra", 1.0, 45, 1.0, {"tools": ("fast", "slow", "mid")})]
    jobs += [(f"h{i}", level, 51 + i, 1.0, {}) for i, level in enumerate(LEVELS_H)]
    for name, level, salt, slow, names in jobs:
        if name.startswith("h"):  # each history run in a second of its own (dates: seconds)
            time.sleep(1.01 - time.time() % 1.0)
        make_session(root, name, level, salt, slow, **names)
    for i in range(len(LEVELS_H)):
        status, out, err = cli(["history", "add", str(root / f"h{i}/s.sqlite"),
                                "--history", str(root / "h.sqlite"), "--commit", f"c{i}"])  # fmt: skip
        assert status == 0, out + err
    return root


def _sides(a: int, b: int) -> list[str]:
    return ["--base", *(f"a{i}/s.sqlite" for i in range(a)), "--new"] + [
        f"b{i}/s.sqlite" for i in range(b)
    ]


def test_one_session_per_side_decides_nothing_on_within_session_noise(sessions, cli_in_process):
    status, out, err = cli_in_process(
        ["diff", "a0/s.sqlite", "b0/s.sqlite", "--margin", "2%"], cwd=sessions
    )
    assert status == 0, out + err
    assert "spread: within session only (one session per side)" in out
    slow = next(line for line in out.splitlines() if line.startswith("work[tool=slow]"))
    assert slow.rstrip().endswith("inconclusive (within session: worse)")
    assert "one session per side: the spread between sessions is unknown" in out
    assert "at least 3 sessions per side" in out and "one session" in out
    status, text, _ = cli_in_process(
        ["diff", "a0/s.sqlite", "b0/s.sqlite", "--margin", "2%", "--json"], cwd=sessions
    )
    doc = json.loads(text)
    assert doc["spread"] == "within session only" and doc["sessions"] == [1, 1]
    rows = {r["label"]: r for r in doc["metrics"][0]["rows"]}
    assert rows["work[tool=slow]"]["within_verdict"] == "worse"
    assert rows["work[tool=slow]"]["gate"]["verdict"] == "inconclusive"
    assert all(r["spread"] == "within session only" for r in rows.values())


def test_three_sessions_per_side_find_the_regression_between_sessions(sessions, cli_in_process):
    status, out, err = cli_in_process(["diff", *_sides(3, 3), "--margin", "2%"], cwd=sessions)
    assert status == 1, out + err
    assert "spread: between sessions (3 and 3 sessions" in out
    assert "90% simultaneous over 2 rows (Bonferroni-t, 95% each)" in out
    assert "REGRESSION beyond 2%: v work[tool=slow]" in out
    fast = next(line for line in out.splitlines() if line.startswith("work[tool=fast]"))
    assert not fast.rstrip().endswith("worse")
    status, text, _ = cli_in_process(
        ["diff", *_sides(3, 3), "--margin", "2%", "--json"], cwd=sessions
    )
    doc = json.loads(text)
    assert doc["spread"] == "between sessions" and doc["family"]["rows"] == 2
    slow = next(r for r in doc["metrics"][0]["rows"] if r["label"] == "work[tool=slow]")
    interval = slow["interval"]
    assert interval["units"] == [3, 3] and interval["spread"] == "between sessions"
    assert interval["lower"] <= 1.25 * np.mean(LEVELS_B) / np.mean(LEVELS_A) <= interval["upper"]
    assert len(doc["independence"]) == 6 and {c["side"] for c in doc["independence"]} == {"A", "B"}


def test_one_session_a_side_borrows_the_spread_of_a_history(sessions, cli_in_process):
    argv = ["diff", "a0/s.sqlite", "b0/s.sqlite", "--margin", "2%", "--history", "h.sqlite"]
    status, out, err = cli_in_process(argv, cwd=sessions)
    assert status == 1, out + err
    assert (
        "spread: between sessions, borrowed from the spread of history h.sqlite (8 runs on " in out
    )
    assert ", lag 1)" in out  # both stores were made before the history's runs: neighbours
    assert "REGRESSION beyond 2%: v work[tool=slow]" in out and "one session per side" not in out
    doc = json.loads(cli_in_process([*argv, "--json"], cwd=sessions)[1])
    assert doc["spread"] == "between sessions"
    for row in doc["metrics"][0]["rows"]:
        assert row["spread"] == "between sessions" and "8 runs on" in row["interval"]["method"]
    status, out, _ = cli_in_process(["diff", *_sides(3, 3), "--history", "h.sqlite"], cwd=sessions)
    assert status == 0 and "--history h.sqlite not used: the sessions' own spread decides" in out


def test_two_sessions_per_side_say_a_verdict_needs_three(sessions, cli_in_process):
    status, out, err = cli_in_process(["diff", *_sides(2, 2), "--margin", "2%"], cwd=sessions)
    assert status == 0, out + err
    assert "a verdict needs at least 3 sessions per side (2 and 2 here)" in out
    assert "spread: within session only (sessions pooled)" in out


def test_a_renamed_benchmark_fails_closed_unless_allowed(sessions, cli_in_process):
    status, out, err = cli_in_process(["diff", "a0/s.sqlite", "renamed/s.sqlite"], cwd=sessions)
    assert status == 2 and out == "" and "Traceback" not in err
    assert "work[tool=fast] is not in renamed/s.sqlite" in err and "--allow-missing" in err
    status, out, err = cli_in_process(
        ["diff", "a0/s.sqlite", "renamed/s.sqlite", "--allow-missing"], cwd=sessions
    )
    assert status == 2 and "nothing to compare" in err, "no configuration in common"
    status, out, err = cli_in_process(["diff", "a0/s.sqlite", "extra/s.sqlite"], cwd=sessions)
    assert status == 2 and "work[tool=mid] is not in a0/s.sqlite" in err
    argv = ["diff", "a0/s.sqlite", "extra/s.sqlite", "--allow-missing", "--json"]
    status, out, err = cli_in_process(argv, cwd=sessions)
    assert status == 0, err
    doc = json.loads(out)
    assert doc["left_out"] == ["work[tool=mid]"]
    assert [r["label"] for r in doc["metrics"][0]["rows"]] == ["work[tool=fast]", "work[tool=slow]"]
    status, out, _ = cli_in_process(argv[:-1], cwd=sessions)
    assert "left out (not in every store): work[tool=mid]" in out
    status, out, err = cli_in_process(
        ["diff", "--base", "a0/s.sqlite", "a1/s.sqlite", "--new", "b0/s.sqlite", "other/s.sqlite"],
        cwd=sessions,
    )
    assert status == 2 and "different experiments" in err and "other/s.sqlite: other" in err


def test_usage_errors_name_both_forms(sessions, cli_in_process):
    for argv in (["diff", "a0/s.sqlite"], ["diff", "a0/s.sqlite", "b0/s.sqlite", "--new", "b1"]):
        status, _, err = cli_in_process(argv, cwd=sessions)
        assert status == 2 and "--base A1 A2 A3 --new B1 B2 B3" in err and "Traceback" not in err


def test_the_session_interval_is_welch_on_log_kpis_with_bonferroni():
    from scipy import stats

    from benchlang.stats.sessions import between_sessions

    a, b = np.array([1.0, 1.1, 0.95, 1.02]), np.array([1.2, 1.3, 1.26])
    r = between_sessions(a, b, confidence=90.0, rows=3)
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / 4, lb.var(ddof=1) / 3
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 2)
    half = stats.t.ppf(1 - 0.10 / 3 / 2, df) * math.sqrt(va + vb)
    d = lb.mean() - la.mean()
    assert r.confidence == pytest.approx(100 - 10 / 3)
    assert (r.lower, r.upper) == pytest.approx((math.exp(d - half), math.exp(d + half)))
    assert r.df == pytest.approx(df) and r.spread == "between sessions"
    two = between_sessions(a[:2], b, confidence=90.0, rows=1)
    assert (
        two.descriptive_only and math.isnan(two.lower) and "at least 3 sessions" in two.reasons[0]
    )


def _recorded_class(store: Path, cpu: str) -> None:
    """The store's hosts as if measured on another kind of machine (the CPU model its facts
    hold), the machine class ``history add`` and ``diff --history`` read."""
    import sqlite3

    with sqlite3.connect(store) as db:
        for host, facts in db.execute("SELECT host, facts FROM hosts").fetchall():
            db.execute(
                "UPDATE hosts SET facts = ? WHERE host = ?",
                (json.dumps(json.loads(facts) | {"cpu_model": cpu}), host),
            )


def _copy(src: Path, dst: Path, cpu: str | None = None) -> str:
    import shutil

    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    if cpu:
        _recorded_class(dst, cpu)
    return str(dst)


def test_history_of_each_machine_class_is_kept_and_sides_must_match(sessions, cli_in_process):
    """Two stores a side on two machine classes: the history's series of both classes are kept
    and pooled (the one of the second class used to overwrite the first's); sides on
    different classes borrow nothing and say why."""
    root = sessions / "classes"
    history = str(root / "h2.sqlite")
    for i in range(len(LEVELS_H)):
        for cpu in (None, "Other CPU"):
            store = _copy(sessions / f"h{i}/s.sqlite", root / f"h{i}-{cpu}/s.sqlite", cpu)
            status, out, err = cli_in_process(
                ["history", "add", store, "--history", history, "--commit", f"c{i}"]
            )
            assert status == 0, out + err
    base = [
        str(sessions / "a0/s.sqlite"),
        _copy(sessions / "a1/s.sqlite", root / "a1.sqlite", "Other CPU"),
    ]
    new = [
        str(sessions / "b0/s.sqlite"),
        _copy(sessions / "b1/s.sqlite", root / "b1.sqlite", "Other CPU"),
    ]
    argv = [
        "diff",
        "--base",
        *base,
        "--new",
        *new,
        "--margin",
        "2%",
        "--history",
        history,
        "--json",
    ]
    status, out, err = cli_in_process(argv)
    doc = json.loads(out)
    assert status in (0, 1), err
    methods = {r["interval"]["method"] for r in doc["metrics"][0]["rows"]}
    assert doc["spread"] == "between sessions", doc["warnings"]
    for method in methods:
        assert "pooled over the classes" in method and method.count("8 runs on") == 2, method
    argv = ["diff", "a0/s.sqlite", str(root / "b1.sqlite"), "--history", history, "--json"]
    status, out, err = cli_in_process(argv, cwd=sessions)
    doc = json.loads(out)
    assert status == 0 and doc["spread"] == "within session only", err
    assert any("the sides ran on different machine classes" in w for w in doc["warnings"])


def test_a_history_of_another_design_lends_no_spread(sessions, cli_in_process):
    """The history's points were made of 25 trials a configuration; stores of 40 (8 runs a
    series) do not borrow their spread, and the diff says so."""
    root = sessions / "design"
    a = make_session(root, "a", 1.0, 71, runs=8)
    b = make_session(root, "b", 1.0, 72, runs=8)
    argv = ["diff", str(a), str(b), "--history", str(sessions / "h.sqlite"), "--json"]
    status, out, err = cli_in_process(argv)
    doc = json.loads(out)
    assert status == 0 and doc["spread"] == "within session only", err
    notes = [w for w in doc["warnings"] if "its points were made of 25 trials" in w]
    assert len(notes) == 2 and all("stores' of 40" in w for w in notes), doc["warnings"]


def test_the_spread_borrowed_is_the_history_s_at_the_sessions_lag(sessions, cli_in_process):
    """h2 and h5 are three runs apart in the history (each made in a second of its own, since
    dates are to the second): the spread is its semivariogram at their lag
    (Matheron's estimator on the log levels, computed here from the history's points), not the
    lag-1 one; a session made after every run of the history against one made before all of
    them is 8 runs apart, which 8 runs cannot show (not borrowed, said)."""
    import re

    from benchlang.app.history.runs import open_history
    from benchlang.history.series import read_series

    argv = ["diff", "h2/s.sqlite", "h5/s.sqlite", "--history", "h.sqlite", "--json"]
    status, out, err = cli_in_process(argv, cwd=sessions)
    assert status in (0, 1), err
    rows = {r["label"]: r["interval"] for r in json.loads(out)["metrics"][0]["rows"]}
    with open_history(str(sessions / "h.sqlite")) as h:
        series = {s.configuration: s for s in read_series(h)}
    for label, interval in rows.items():
        assert "(8 runs on " in interval["method"], interval["method"]
        lag = int(re.search(r", lag (\d+)\)", interval["method"])[1])
        dates = series[label].dates
        assert lag == sum(dates[2] < d <= dates[5] for d in dates) >= 2
        y = np.log(series[label].values)
        gamma = np.sum((y[lag:] - y[:-lag]) ** 2) / (2 * (y.size - lag))
        assert interval["se"] == pytest.approx(math.sqrt(2 * gamma), rel=1e-9)
    late = make_session(sessions / "late", "s", 1.0, 81)
    argv = ["diff", "a0/s.sqlite", str(late), "--history", "h.sqlite", "--json"]
    status, out, err = cli_in_process(argv, cwd=sessions)
    doc = json.loads(out)
    assert status == 0 and doc["spread"] == "within session only", err
    far = [w for w in doc["warnings"] if "are 8 runs apart in it" in w]
    assert len(far) == 2 and all("fewer than 2 pairs that far apart" in w for w in far)


def test_lag_spread_is_the_mssd_at_lag_1_and_holds_a_drift_at_longer_lags():
    """At lag 1 the semivariogram is von Neumann's MSSD with its Satterthwaite df; on a
    drifting line the spread at lag 5 holds the drift over five runs, which lag 1 misses."""
    from benchlang.stats.sessions import lag_spread

    rng = np.random.default_rng(3)
    y = rng.normal(0.0, 0.02, 12)
    sd, df = lag_spread(np.exp(y), 1)
    assert sd**2 == pytest.approx(np.sum(np.diff(y) ** 2) / (2 * 11))
    assert df == pytest.approx(2 * 11**2 / (3 * 12 - 4))
    line = np.exp(0.02 * np.arange(12) + y)
    near, far = lag_spread(line, 1)[0], lag_spread(line, 5)[0]
    assert far**2 == pytest.approx(np.mean((np.log(line[5:]) - np.log(line[:-5])) ** 2) / 2)
    assert far > 2 * near
    # chains of 12 points 5 apart: two of 3 points, three of 2
    assert lag_spread(line, 5)[1] == pytest.approx(2 * (2 * 2**2 / 5) + 3 * (2 * 1**2 / 2))
    assert all(math.isnan(v) for v in lag_spread(line, 11))
