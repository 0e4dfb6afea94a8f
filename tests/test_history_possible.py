"""A possible change in a series' last runs (stats._changepoint_checks.recent)
reaches every history answer, through the real CLI: ``history changes`` (text and JSON, from
the stored answer and recomputed alike), the gate, which names it without failing on it, and the
dashboard; one more run at the new level makes it a change point at the commit it named."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.history.stored import STAMP


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def write_series(path, n: int, step_at: int, factor: float, seed: int = 3) -> None:
    """Otava's CSV layout: ``n`` runs with 1% lognormal noise, the level times ``factor``
    from run ``step_at`` on."""
    rng = np.random.default_rng(seed)
    lines = ["time,commit,metric1"]
    for i in range(n):
        level = 100.0 * (factor if i >= step_at else 1.0)
        lines.append(f"2024-01-{i + 1:02d} 00:00:00 +0000,c{i:03d}abcdef,"
                     f"{level * np.exp(rng.normal(0.0, 0.01)):.3f}")  # fmt: skip
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def stepped(tmp_path, capsys):
    """A history of 20 runs whose last 2 are 15% slower."""
    csv, history = tmp_path / "s.csv", str(tmp_path / "h.sqlite")
    write_series(csv, 20, 18, 1.15)
    assert cli(capsys, "history", "import", str(csv), "--history", history)[0] == 0
    return csv, history


def test_changes_name_the_possible_change_with_its_commit(stepped, capsys):
    _, history = stepped
    code, out, _ = cli(capsys, "history", "changes", "--history", history)
    assert code == 0
    head, line = out.splitlines()[:2]
    assert head == "0 change point(s) in 1 series, 1 possible in the last runs"
    assert line.startswith("metric1 s: a possible change in the last 2 runs (x1.1")
    assert line.endswith("1 more to confirm (a regression from c018abcdef on)")
    assert out.count("a possible change") == 1  # not again in the note
    document = json.loads(cli(capsys, "history", "changes", "--history", history, "--json")[1])
    series = document["series"][0]
    possible = series["possible"]
    assert series["changes"] == [] and series["note"] is None
    assert (possible["index"], possible["commit"]) == (18, "c018abcdef")
    assert (possible["runs"], possible["to_confirm"], possible["kind"]) == (2, 1, "regression")
    assert possible["ratio"] == pytest.approx(1.15, rel=0.03) and possible["p_value"] < 0.05
    assert possible["message"] == line.split(": ", 1)[1].split(" (a regression")[0]


def test_stored_and_recomputed_answers_agree(stepped, capsys):
    """The stored answer (history.stored) is the recomputation's; one stored by a benchlang
    before the possible change was kept (the stamp ``stored_through``, no ``possible``) is not
    used: it is recomputed, and the next add stores every series anew, under today's stamp."""
    csv, history = stepped
    argv = ("history", "changes", "--history", history, "--json")
    stored = json.loads(cli(capsys, *argv)[1])
    with sqlite3.connect(history) as db:
        (text,) = db.execute("SELECT found FROM stored_changes").fetchone()
        assert json.loads(text)["possible"]["commit"] == "c018abcdef"
        old = json.loads(text)
        del old["possible"]
        db.execute("UPDATE stored_changes SET found = ?", (json.dumps(old),))
        db.execute("UPDATE meta SET key = 'stored_through' WHERE key = ?", (STAMP,))
    assert json.loads(cli(capsys, *argv)[1]) == stored
    write_series(csv, 21, 18, 1.15)
    assert cli(capsys, "history", "import", str(csv), "--history", history)[0] == 0
    with sqlite3.connect(history) as db:
        (text,) = db.execute("SELECT found FROM stored_changes").fetchone()
        stamp = db.execute("SELECT value FROM meta WHERE key = ?", (STAMP,)).fetchone()
    assert json.loads(text)["possible"] is None and stamp == ("21",)


def test_one_more_run_makes_it_a_change_point_at_the_commit_named(stepped, capsys):
    csv, history = stepped
    write_series(csv, 21, 18, 1.15)
    assert cli(capsys, "history", "import", str(csv), "--history", history)[0] == 0
    document = json.loads(cli(capsys, "history", "changes", "--history", history, "--json")[1])
    series = document["series"][0]
    assert series["possible"] is None
    assert [(c["commit_after"], c["kind"]) for c in series["changes"]] == [
        ("c018abcdef", "regression")
    ]


def test_the_gate_names_it_and_says_how_many_runs_decide_it(tmp_path, stepped, capsys):
    _, history = stepped
    code, out, _ = cli(capsys, "history", "check", "--history", history)
    assert code == 1  # the newest run itself is worse beyond the margin
    lines = [x for x in out.splitlines() if "possible change" in x]
    assert len(lines) == 1 and "(a regression from c018abcdef on)" in lines[0]
    assert lines[0].endswith("not a failure on its own until the next 1 run(s) decide it")
    code, out, _ = cli(capsys, "history", "check", "--history", history, "--json")
    check = json.loads(out)["series"][0]
    assert check["verdict"] == "worse" and check["regressions"] == []
    assert (check["possible"]["commit"], check["possible"]["to_confirm"]) == ("c018abcdef", 1)
    summary = tmp_path / "summary.md"
    cli(capsys, "history", "check", "--history", history, "--summary", str(summary))
    assert "- metric1 s: a possible change in the last 2 runs" in summary.read_text()


def test_a_possible_improvement_does_not_fail_the_gate(tmp_path, capsys):
    csv, history = tmp_path / "s.csv", str(tmp_path / "h.sqlite")
    write_series(csv, 20, 18, 0.85, seed=5)
    assert cli(capsys, "history", "import", str(csv), "--history", history)[0] == 0
    code, out, _ = cli(capsys, "history", "check", "--history", history, "--json")
    check = json.loads(out)["series"][0]
    assert code == 0 and check["verdict"] != "worse"
    assert (check["possible"]["kind"], check["possible"]["runs"]) == ("improvement", 2)
    page = tmp_path / "history.html"
    assert cli(capsys, "history", "report", "-o", str(page), "--history", history)[0] == 0
    html = page.read_text()
    assert "<div class='note' role='note'>metric1 s: a possible change in the last 2 runs" in html
    assert "(a improvement from c018abcdef on)" not in html
    assert "(an improvement from c018abcdef on)" in html
