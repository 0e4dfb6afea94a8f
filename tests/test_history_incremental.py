"""The change points a history keeps (benchlang/history/stored.py):
after every add they are the ones a recomputation from the points gives, on SQLite and on a
real PostgreSQL server; ``history changes`` reads them; changes of noise are shown with their
kind. Seeded synthetic series, no timing (benchmarks/bench_history_incremental.py times it)."""

from __future__ import annotations

import json
import math
import re

import attrs
import numpy as np
import pytest

from benchlang.app.history.runs import history_changes, open_history
from benchlang.cli import main
from benchlang.history import series_copy
from benchlang.history.points import Point, Run
from benchlang.history.series import add_run, read_series
from benchlang.history.stored import store_changes, stored_before, stored_changes
from benchlang.history.verdicts import changes
from tests.test_history import history, server  # noqa: F401  (the two engines)


def _point(value: float, half: float, metric: str = "time") -> Point:
    return Point(metric, "size=1", "unknown", "s", "lower", 50.0, value, value * (1 - half),
                 value * (1 + half), "order", (), math.nan, 10, "passed")  # fmt: skip


def _run(i: int, second: int | None = None) -> Run:
    d = i if second is None else second
    date = f"2026-01-01T00:{d // 60:02d}:{d % 60:02d}+00:00"
    return Run(f"run-{i:04d}", "app", None, f"{i:040x}", "main", date, "generated", {}, {})


def _series(seed: int, n: int):
    """A 12% step at 2n/5 in 2% lognormal noise, intervals of about +-3%, and a point in ten
    with twice that noise and interval (a busy machine), a second metric without change."""
    rng = np.random.default_rng(seed)
    busy = rng.random(n) < 0.1
    sd = np.where(busy, 0.04, 0.02)
    level = np.where(np.arange(n) >= 2 * n // 5, np.log(1.12), 0.0)
    values = np.exp(level + sd * rng.standard_normal(n))
    return values, 1.5 * sd * np.exp(rng.normal(0.0, 0.2, n)), np.exp(rng.normal(0.0, 0.02, n))


def _same(stored, fresh) -> None:
    assert [f.series.key for f in stored] == [f.series.key for f in fresh]
    for a, b in zip(stored, fresh, strict=True):
        assert a.to_dict() == b.to_dict()
        assert a.series.commits == b.series.commits and a.series.dates == b.series.dates
        assert a.series.run_keys == b.series.run_keys and a.series.trials == b.series.trials
        for name in ("values", "lower", "upper"):
            np.testing.assert_array_equal(getattr(a.series, name), getattr(b.series, name))


def _found_text(found) -> str:
    return json.dumps([attrs.asdict(c) for c in found])


def _same_before(target: str, dropped: set | frozenset = frozenset()) -> None:
    """What the history keeps of each series without its newest point is what the gate would
    find on it (history.gate._baseline); kept for every series of 2 points or more but those
    ``dropped`` (a point added before the series' newest)."""
    with open_history(target) as h:
        kept = stored_before(h, 0.05, 95.0)
        every = read_series(h)
    assert set(kept) == {s.key for s in every if len(s) >= 2} - dropped
    for s in every:
        if s.key in kept:
            n, found = kept[s.key]
            assert n == len(s) - 1
            assert _found_text(found) == _found_text(changes(s.head(n)).changes)


def _recomputed(target: str) -> list:
    with open_history(target) as h:
        found = [changes(s) for s in read_series(h)]
    return sorted(found, key=lambda c: (not c.regressions, c.series.name))


@pytest.mark.parametrize("seed", [301, 302])
def test_stored_change_points_equal_a_recomputation_after_every_add(history, seed, monkeypatch):  # noqa: F811
    """Property: after each add, the stored answer == the full recomputation from the points,
    including a run added with an earlier date (inserted before the newest point: the copy
    is read back from the points) and a point without a value; the copy in rows of 7 points
    here, so that appends fill rows and start new ones."""
    monkeypatch.setattr(series_copy, "CHUNK", 7)
    n = 60
    values, half, flat = _series(seed, n)
    values[17] = math.nan
    with open_history(history, create=True) as h:
        for i in range(n):
            day = i - 3 if i == 45 else i + 1  # run 45 dated before run 44
            points = [_point(values[i], half[i]), _point(flat[i], 0.02, "memory")]
            assert add_run(h, _run(i, day), points, then=store_changes)
            if i >= 8:
                with open_history(history) as r:
                    assert stored_changes(r, 0.05, 95.0) is not None
                _same(history_changes(history), _recomputed(history))
                _same_before(history, {p.key for p in points} if i == 45 else set())
    time = next(f for f in history_changes(history) if f.series.metric == "time")
    assert [c.kind for c in time.changes] == ["regression"]
    assert abs(time.changes[0].index - 2 * n // 5) <= 1


def test_a_history_without_stored_change_points_is_recomputed(history):  # noqa: F811
    """Runs added without the table (as by a benchlang before it): nothing stored is used;
    the next add stores the whole series' answer from the points. A run added without them
    later makes every stored answer stale (``changes`` recomputes), and the next add, though
    it touches another series, stores every series anew, the one with the foreign point
    included."""
    values, half, _ = _series(303, 40)
    with open_history(history, create=True) as h:
        for i in range(39):
            add_run(h, _run(i), [_point(values[i], half[i])])
        assert stored_changes(h, 0.05, 95.0) is None
        add_run(h, _run(39), [_point(values[39], half[39])], then=store_changes)
        assert stored_changes(h, 0.05, 95.0) is not None
        add_run(h, _run(40, 200), [_point(1.0, 0.03)])  # a point the table does not know
        assert stored_changes(h, 0.05, 95.0) is None
        assert stored_changes(h, 0.10, 90.0) is None  # another level: found anew
        _same(history_changes(history), _recomputed(history))
        add_run(h, _run(41, 201), [_point(2.0, 0.03, "memory")], then=store_changes)
        assert stored_changes(h, 0.05, 95.0) is not None
        assert stored_before(h, 0.05, 95.0)
    _same(history_changes(history), _recomputed(history))
    _same_before(history)
    assert {len(f.series) for f in history_changes(history)} == {1, 41}


def test_the_gate_reads_the_kept_answer_and_says_the_same(tmp_path, capsys):
    """``history check`` judges the newest run against the change points the history kept
    for the series without it; its text and JSON are those of a check that finds them anew
    (the kept rows deleted), and those of another level, which the history does not keep."""
    target = str(tmp_path / "h.sqlite")
    values, half, _ = _series(304, 80)
    values[-1] *= 1.1  # a newest run worse than its segment
    with open_history(target, create=True) as h:
        for i in range(80):
            add_run(h, _run(i), [_point(values[i], half[i])], then=store_changes)
        assert stored_before(h, 0.05, 95.0)
    shown = []
    for argv in (["--json"], []):
        assert main(["history", "check", "--history", target, *argv]) == 1
        shown.append(capsys.readouterr().out)
    with open_history(target) as h, h.write():
        h.execute("DELETE FROM stored_before")
    for argv, kept in zip((["--json"], []), shown, strict=True):
        assert main(["history", "check", "--history", target, *argv]) == 1
        assert capsys.readouterr().out == kept
    assert json.loads(shown[0])["series"][0]["verdict"] == "worse"


def test_a_noise_change_is_shown_with_its_kind(history, capsys):  # noqa: F811
    """The trials got twice as noisy at point 60 (the intervals double, the values scatter
    twice as much; the level stays): ``history changes`` shows "spread 2.xx" noisier, in
    text and JSON, and the gate's baseline still starts at the first point."""
    rng = np.random.default_rng(39)
    n = 120
    noisy = np.arange(n) >= 60
    sd = np.where(noisy, 0.02, 0.01)
    values = np.exp(sd * rng.standard_normal(n))
    half = 2.0 * sd * np.exp(rng.normal(0.0, 0.3, n))
    with open_history(history, create=True) as h:
        for i in range(n):
            add_run(h, _run(i), [_point(values[i], half[i])], then=store_changes)
    assert main(["history", "changes", "--history", history]) == 0
    text = capsys.readouterr().out
    assert text.startswith("0 change point(s) in 1 series, 1 change(s) of noise (spread)")
    row = next(line for line in text.splitlines() if "spread" in line and "noisier" in line)
    assert "spread 2" in row or "spread 1.9" in row
    assert main(["history", "changes", "--history", history, "--json"]) == 0
    series = json.loads(capsys.readouterr().out)["series"][0]
    assert series["changes"] == [] and len(series["spread"]) == 1
    spread = series["spread"][0]
    assert spread["kind"] == "spread" and abs(spread["index"] - 60) <= 2
    assert spread["ratio_low"] < 2.0 < spread["ratio_high"] and spread["ratio_low"] > 1.0
    assert main(["history", "check", "--history", history]) == 0
    assert "since the start" in capsys.readouterr().out


def test_the_dashboard_marks_a_noise_change(tmp_path, capsys):
    """The dashboard lists the noise change with its size as a ratio of standard errors."""
    target = str(tmp_path / "h.sqlite")
    rng = np.random.default_rng(39)
    sd = np.where(np.arange(120) >= 60, 0.02, 0.01)
    values = np.exp(sd * rng.standard_normal(120))
    half = 2.0 * sd * np.exp(rng.normal(0.0, 0.3, 120))
    with open_history(target, create=True) as h:
        for i in range(120):
            add_run(h, _run(i), [_point(values[i], half[i])], then=store_changes)
    page = tmp_path / "history.html"
    assert main(["history", "report", "--history", target, "-o", str(page)]) == 0
    html = page.read_text()
    assert re.search(r"spread (1\.[6-9]|2(\.[0-4])?)x", html), "the noise change's size"
    assert "1 series, 0 with a regression" in html and "<td>spread</td>" in html


def test_a_drifting_series_is_said_descriptive_only(tmp_path, capsys):
    """Imported KPIs that wander together from commit to commit (AR(1), 0.7): ``changes``
    says the independence the p-values assume does not hold, in text and JSON."""
    rng = np.random.default_rng(42)
    drift = np.zeros(400)
    for i in range(1, 400):
        drift[i] = 0.7 * drift[i - 1] + rng.normal(0.0, 0.02)
    csv = tmp_path / "drift.csv"
    rows = ["time,latency"] + [
        f"2026-01-01T{i // 60:02d}:{i % 60:02d}:00Z,{float(np.exp(d)):.6f}"
        for i, d in enumerate(drift)
    ]
    csv.write_text("\n".join(rows) + "\n")
    target = str(tmp_path / "h.sqlite")
    assert main(["history", "import", str(csv), "--history", target]) == 0
    capsys.readouterr()
    assert main(["history", "changes", "--history", target]) == 0
    text = capsys.readouterr().out
    assert "latency drift: the points are correlated from commit to commit" in text
    assert main(["history", "changes", "--history", target, "--json"]) == 0
    note = json.loads(capsys.readouterr().out)["series"][0]["note"]
    assert "descriptive only" in note
