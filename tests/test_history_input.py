"""History input, through the real CLI: ``history add`` finds the spec's
repository from the store's recorded spec path and refuses a run without a commit unless told;
every ``history`` command uses one default history; ``history import`` reads the dates Apache
Otava's own CSVs use and writes a file whole or not at all, naming the line and column of a
bad cell."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.testing.synthetic import synthetic_store

SPEC = """benchlang 1
experiment app {
  seed 1
  benchmark b {
    run "true"
    measure time = wall_time
  }
  metric time { measure mean unit "s" better lower }
  kpi time { percentile 50 confidence 95% }
  design { runs 10 series 1 }
}
"""


def git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=where, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def project(root: Path, repository: bool) -> tuple[Path, str | None]:
    """A spec, in a git repository or not, and a store whose recorded spec path is relative
    (``run`` started in the spec's folder)."""
    root.mkdir()
    (root / "app.bench").write_text(SPEC)
    head = None
    if repository:
        git(root, "init", "-q", "-b", "trunk")
        git(root, "config", "user.email", "t@example.org")
        git(root, "config", "user.name", "t")
        git(root, "add", "app.bench")
        git(root, "commit", "-q", "-m", "x")
        head = git(root, "rev-parse", "HEAD")
    rng = np.random.default_rng(1)
    with _chdir(root):
        synthetic_store("app.bench", "run.sqlite",
                        lambda p, t: {"time": 0.01 * float(np.exp(rng.normal(0, 0.01)))})  # fmt: skip
    with sqlite3.connect(root / "run.sqlite") as db:
        assert db.execute("SELECT spec_path FROM plans").fetchone()[0] == "app.bench"
    return root / "run.sqlite", head


class _chdir:
    def __init__(self, where: Path):
        self.where, self.old = where, Path.cwd()

    def __enter__(self) -> None:
        import os

        os.chdir(self.where)

    def __exit__(self, *exc: object) -> None:
        import os

        os.chdir(self.old)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_add_from_another_directory_finds_the_repository(tmp_path, capsys, monkeypatch):
    store, head = project(tmp_path / "project", repository=True)
    elsewhere = tmp_path / "ci"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, _ = cli(capsys, "history", "add", str(store))
    assert code == 0 and out.startswith("1 run(s) added to benchlang-history.sqlite")
    code, out, _ = cli(capsys, "history", "list", "--json")  # the same default history
    (run,) = json.loads(out)["runs"]
    assert (run["commit"], run["branch"]) == (head, "trunk")
    code, out, _ = cli(capsys, "history", "check")
    assert code == 0 and "not judged" in out
    with pytest.raises(SystemExit):
        main(["history", "--help"])
    out = capsys.readouterr().out
    assert "benchlang-history.sqlite in the current directory" in " ".join(out.split())


def test_add_refuses_a_run_without_a_commit(tmp_path, capsys, monkeypatch):
    store, _ = project(tmp_path / "loose", repository=False)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "history", "add", str(store))
    assert code == 2 and "no commit for this run" in err and "is in no git repository" in err
    assert "--no-commit" in err
    assert not (tmp_path / "benchlang-history.sqlite").exists()
    (tmp_path / "loose" / "app.bench").unlink()
    code, _, err = cli(capsys, "history", "add", str(store))
    assert code == 2 and "'app.bench' is not found" in err
    code, out, _ = cli(capsys, "history", "add", str(store), "--no-commit")
    assert code == 0 and out.startswith("1 run(s) added")
    code, out, _ = cli(capsys, "history", "list", "--json")
    assert json.loads(out)["runs"][0]["commit"] is None
    with pytest.raises(SystemExit) as usage:
        main(["history", "add", str(store), "--no-commit", "--commit", "ab12"])
    assert usage.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


OTAVA = """time,commit,metric1,metric2
2024.01.01 3:00:00 +0100,aaa0,154023,10.43
2024.01.02 3:00:00 +0100,aaa1,138455,10.23
2024.01.03 3:00:00 +0100,aaa2,143112,10.29
2024.01.04 3:00:00 +0100,aaa3,149190,10.91
"""


def test_import_reads_otavas_dates(tmp_path, capsys):
    forms = {
        "sample.csv": OTAVA,
        "semicolons.csv": OTAVA.replace(",", ";"),
        "unix.csv": "time,metric1,metric2\n1704074400,154023,10.43\n1704160800,138455,10.23\n",
    }
    for name, text in forms.items():
        (tmp_path / name).write_text(text)
        history = str(tmp_path / f"{name}.sqlite")
        code, out, err = cli(capsys, "history", "import", str(tmp_path / name), "--history",
                             history)  # fmt: skip
        assert code == 0, err
        code, out, _ = cli(capsys, "history", "list", "--history", history, "--json")
        listing = json.loads(out)
        assert listing["runs"][0]["date"] == "2024-01-01T02:00:00+00:00"
        assert {s["metric"] for s in listing["series"]} == {"metric1", "metric2"}
    assert listing["runs"][1]["date"] == "2024-01-02T02:00:00+00:00"
    branches = tmp_path / "branches.csv"  # Otava's sample_multi_branch.csv layout
    branches.write_text("time,commit,branch,metric1\n2024.01.01 3:00:00 +0100,aaa0,main,154023\n"
                        "2024.01.02 3:00:00 +0100,aaa1,feature-x,138455\n")  # fmt: skip
    history = str(tmp_path / "branches.sqlite")
    assert cli(capsys, "history", "import", str(branches), "--history", history)[0] == 0
    listing = json.loads(cli(capsys, "history", "list", "--history", history, "--json")[1])
    assert [r["branch"] for r in listing["runs"]] == ["main", "feature-x"]
    assert [s["metric"] for s in listing["series"]] == ["metric1"]


def test_import_is_one_transaction_and_names_the_bad_cell(tmp_path, capsys):
    csv, history = tmp_path / "sample.csv", str(tmp_path / "h.sqlite")
    bad = OTAVA + "2024.01.05 3:00:00 +0100,aaa4,151000,10.2\n2024.13.06 3:00:00 +0100,aaa5,1,2\n"
    csv.write_text(bad)
    code, _, err = cli(capsys, "history", "import", str(csv), "--history", history)
    assert code == 2 and f"{csv}:7: column 'time': '2024.13.06 3:00:00 +0100' is not a date" in err
    assert "--date" not in err and not Path(history).exists()
    csv.write_text(OTAVA)
    assert cli(capsys, "history", "import", str(csv), "--history", history)[0] == 0
    csv.write_text(OTAVA + "2024.01.05 3:00:00 +0100,aaa4,151000,10.2\n"
                   "2024.01.06 3:00:00 +0100,aaa5,15x,10.3\n")  # fmt: skip
    code, _, err = cli(capsys, "history", "import", str(csv), "--history", history)
    assert code == 2 and f"{csv}:7: column 'metric1': '15x' is not a number" in err
    code, out, _ = cli(capsys, "history", "list", "--history", history, "--json")
    assert len(json.loads(out)["runs"]) == 4  # the good row before the bad one: not written
