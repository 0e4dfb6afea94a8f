"""The history database on SQLite and on a real PostgreSQL server (the same tests, the server
started by benchlang.testing.postgres; skipped with the reason when it cannot start): add,
list, import, and every bad input answered in one line with exit 2 and nothing half-written."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchlang.app.history.runs import add_stores, list_history
from benchlang.cli import main
from benchlang.errors import UserError
from benchlang.testing.postgres import fresh_database, postgres_missing, postgres_server
from benchlang.testing.synthetic import synthetic_store

SPEC = """benchlang 1
experiment {name} {{
  seed 1
  factor size in [1, 2]
  benchmark b {{
    run "echo {{size}}"
    measure time = wall_time
  }}
  metric time {{ measure mean unit "s" better lower }}
  kpi time {{ percentile 50 confidence 95% }}
  design {{ runs 10 series 1 }}
}}
"""
FACTS = {"local": {"machine": "x86_64", "cpu_model": "AMD EPYC 7B13", "cores": "2"}}


@pytest.fixture(scope="module")
def server():
    why = postgres_missing()
    if why:
        pytest.skip(why)
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    server = request.getfixturevalue("server")
    return fresh_database(server, tmp_path.name.lower().replace("-", "_")[:40])


def make_store(folder: Path, i: int, level: float = 1.0, name: str = "app") -> Path:
    """A store of seeded lognormal times (1% noise) around ``level`` x 10 ms."""
    spec = folder / f"{name}.bench"
    spec.write_text(SPEC.format(name=name))
    rng = np.random.default_rng(i)
    store = folder / f"{name}-{i}.sqlite"
    synthetic_store(
        spec, store, lambda p, t: {"time": 0.01 * level * float(np.exp(rng.normal(0, 0.01)))},
        facts=FACTS,
    )  # fmt: skip
    return store


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_add_list_and_the_same_store_twice(history, tmp_path, capsys):
    stores = [make_store(tmp_path, i) for i in range(2)]
    code, out, _ = cli(capsys, "history", "add", *map(str, stores), "--history", history,
                       "--commit", "a" * 40, "--date", "2026-01-02T03:04:05Z", "--tag", "ci=yes")  # fmt: skip
    assert code == 0 and out.startswith("2 run(s) added")
    code, out, _ = cli(
        capsys, "history", "add", str(stores[0]), "--history", history, "--no-commit"
    )
    assert code == 0 and out.startswith("0 run(s) added") and "1 already there" in out
    code, out, _ = cli(capsys, "history", "list", "--history", history, "--json")
    listing = json.loads(out)
    assert [r["points"] for r in listing["runs"]] == [2, 2]
    assert listing["runs"][0]["commit"] == "a" * 40
    assert listing["runs"][0]["date"] == "2026-01-02T03:04:05+00:00"
    assert listing["runs"][0]["tags"] == {"ci": "yes"}
    assert [(s["configuration"], s["points"]) for s in listing["series"]] == [
        ("b[size=1]", 2),
        ("b[size=2]", 2),
    ]
    assert {s["host_class"] for s in listing["series"]} == {"x86_64 AMD EPYC 7B13 x2"}
    code, out, _ = cli(capsys, "history", "list", "--history", history)
    assert "2 run(s), 2 series" in out and "b[size=2]" in out


def test_commit_and_date_default_to_the_repository_and_the_run(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    store = make_store(project, 0)
    for args in (["init", "-q", "-b", "trunk"], ["config", "user.email", "t@example.org"],
                 ["config", "user.name", "t"], ["add", "app.bench"], ["commit", "-q", "-m", "x"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    monkeypatch.chdir(project)
    target, added = add_stores([store])
    assert Path(target).resolve() == project / "benchlang-history.sqlite"
    run = list_history(target)["runs"][0]
    assert (added[0].commit, run["branch"]) == (head, "trunk")
    assert run["date"] == "2023-11-14T22:13:39+00:00"  # the synthetic run ends at 1.7e9 + 19.5 s


def test_import_otava_csv(history, tmp_path, capsys):
    csv = tmp_path / "otava.csv"
    rows = ["time,commit,throughput,latency"]
    rows += [f"2026-01-{d:02d} 10:00:00,{d:040x},{100 + d % 3},{5.0 + 0.1 * (d % 2)}"
             for d in range(1, 21)]  # fmt: skip
    csv.write_text("\n".join(rows) + "\n")
    code, out, _ = cli(capsys, "history", "import", str(csv), "--history", history,
                       "--higher-is-better", "throughput")  # fmt: skip
    assert code == 0 and out.startswith("20 run(s) added")
    code, out, _ = cli(capsys, "history", "import", str(csv), "--history", history)
    assert out.startswith("0 run(s) added")
    listing = list_history(history)
    assert {(s["metric"], s["better"], s["points"]) for s in listing["series"]} == {
        ("throughput", "higher", 20),
        ("latency", "lower", 20),
    }
    assert listing["runs"][0]["commit"] == f"{1:040x}"


def one_error(capsys, *argv: str) -> str:
    code, out, err = cli(capsys, *argv)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert lines[0].startswith("benchlang: error: ") and "Traceback" not in err
    assert len(lines) <= 2 and all(x.startswith("  hint: ") for x in lines[1:])
    return lines[0]


def points_in(history: str) -> int:
    return sum(s["points"] for s in list_history(history)["series"])


def test_a_store_of_another_experiment(history, tmp_path, capsys):
    cli(capsys, "history", "add", str(make_store(tmp_path, 0)), "--history", history, "--no-commit")
    other = make_store(tmp_path, 1, name="other")
    line = one_error(capsys, "history", "add", str(other), "--history", history, "--no-commit")
    assert "holds experiment 'other'" in line and "tracks 'app'" in line
    assert points_in(history) == 2


def _set_schema(history: str, version: int) -> None:
    if history.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(history, autocommit=True) as db:
            db.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(version),))
    else:
        with sqlite3.connect(history) as db:
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))


def test_a_history_of_a_newer_schema(history, tmp_path, capsys):
    store = make_store(tmp_path, 0)
    cli(capsys, "history", "add", str(store), "--history", history, "--no-commit")
    _set_schema(history, 99)
    line = one_error(capsys, "history", "add", str(make_store(tmp_path, 1)), "--history", history,
                     "--no-commit")  # fmt: skip
    assert "has schema 99; this benchlang reads schema 2" in line
    line = one_error(capsys, "history", "list", "--history", history)
    assert "schema 99" in line
    _set_schema(history, 2)
    assert points_in(history) == 2


def test_two_writers_at_once(history, tmp_path):
    from benchlang.history.db import History

    add_stores([make_store(tmp_path, 0)], history, no_commit=True)
    second = make_store(tmp_path, 1)
    with History(history) as holder, holder.write():  # the other writer, mid-transaction
        holder.execute("UPDATE meta SET value = value WHERE key = 'experiment'")
        with pytest.raises(UserError, match="being written by another benchlang"):
            add_stores([second], history, timeout=0.3, no_commit=True)
    assert points_in(history) == 2
    add_stores([second], history, timeout=5, no_commit=True)
    assert points_in(history) == 4


def test_a_postgresql_server_that_is_down(capsys):
    from benchlang.testing.sshd import free_port

    if postgres_missing() and "psycopg" in (postgres_missing() or ""):
        pytest.skip(postgres_missing())
    url = f"postgresql://bench@127.0.0.1:{free_port()}/history"
    line = one_error(capsys, "history", "list", "--history", url)
    assert line.startswith("benchlang: error: cannot reach the PostgreSQL history")


def test_a_shallow_clone_without_the_commits(history, tmp_path, capsys):
    add_stores([make_store(tmp_path, 0)], history, commit="b" * 40)
    origin = tmp_path / "origin"
    origin.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.org"],
                 ["config", "user.name", "t"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=origin, check=True)
    for i in range(3):
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", str(i)], cwd=origin,
                       check=True)  # fmt: skip
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", origin.as_uri(), str(clone)],
                   check=True)  # fmt: skip
    line = one_error(capsys, "history", "changes", "--history", history, "--since", "HEAD~2",
                     "--repo", str(clone))  # fmt: skip
    assert "shallow" in line


def test_not_a_history(tmp_path, capsys):
    junk = tmp_path / "junk.sqlite"
    with sqlite3.connect(junk) as db:
        db.execute("CREATE TABLE t (x)")
    assert "is not a benchlang history" in one_error(
        capsys, "history", "list", "--history", str(junk)
    )
    assert "no history at" in one_error(
        capsys, "history", "list", "--history", str(tmp_path / "no")
    )


def test_changes_and_check_on_both_engines(history, tmp_path, capsys):
    """A step of +10% at the 16th of 22 commits: one regression between the right commits;
    the gate passes before it and fails on it."""
    shas = [f"{i:02d}" + "c0ffee" * 6 + "ab" for i in range(22)]
    codes = []
    for i, sha in enumerate(shas):
        store = make_store(tmp_path, i, 1.10 if i >= 15 else 1.0)
        add_stores([store], history, commit=sha, date=f"2026-02-{i + 1:02d}")
        if i in (14, 15):
            codes.append(cli(capsys, "history", "check", "--history", history, "--json")[0])
    assert codes == [0, 1]
    code, out, _ = cli(capsys, "history", "changes", "--history", history, "--json")
    assert code == 0
    document = json.loads(out)
    assert (document["kind"], document["action"]) == ("benchlang.history", "changes")
    found = document["series"]
    assert len(found) == 2
    for series in found:
        (change,) = series["changes"]
        assert (change["index"], change["kind"]) == (15, "regression")
        assert (change["commit_before"], change["commit_after"]) == (shas[14], shas[15])
        assert 1.0 < change["ratio_low"] < change["ratio"] < change["ratio_high"]
        assert change["ratio"] == pytest.approx(1.10, abs=0.02)


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_history")


def _to_schema_1(history: str) -> None:
    """What a benchlang of schema 1 wrote: no acks table."""
    if history.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(history, autocommit=True) as db:
            db.execute("DROP TABLE acks")
    else:
        with sqlite3.connect(history) as db:
            db.execute("DROP TABLE acks")
    _set_schema(history, 1)


def test_a_schema_1_history_is_migrated_and_acks_on_both_engines(history, tmp_path, capsys):
    """A history written before acknowledgements is brought to schema 2 when opened; a
    regression is then acknowledged, kept and shown, on SQLite and PostgreSQL alike."""
    shas = [f"{i:02d}" + "beef" * 9 + "ab" for i in range(16)]
    for i, sha in enumerate(shas):
        add_stores([make_store(tmp_path, i, 1.10 if i >= 10 else 1.0)], history, commit=sha,
                   date=f"2026-03-{i + 1:02d}")  # fmt: skip
    _to_schema_1(history)
    code, out, _ = cli(capsys, "history", "check", "--history", history, "--json")
    document = json.loads(out)
    ids = {r["id"] for s in document["series"] for r in s["regressions"] if r["state"] == "open"}
    assert code == 1 and len(ids) == 2
    code, out, _ = cli(capsys, "history", "ack", shas[10][:8], "--history", history,
                       "--reason", "bigger inputs")  # fmt: skip
    assert code == 0 and len(out.splitlines()) == 2
    code, out, _ = cli(capsys, "history", "check", "--history", history)
    assert code == 0 and out.count("acknowledged regression") == 2
    listing = list_history(history)
    assert {a["change_id"] for a in listing["acknowledged"]} == ids
    _set_schema(history, 3)
    assert "this benchlang reads schema 2" in one_error(
        capsys, "history", "list", "--history", history
    )
