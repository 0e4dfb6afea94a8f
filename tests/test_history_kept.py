"""``benchlang run`` keeps its history points in its store (app/history/kept.py) and ``history
add`` takes them while they are current: the same history rows as compiling the spec and
analysing the trials; points kept before the store's trials changed are never used; stores
without them (written before, or by ``import``) are added as before. And the CLI's exit
without the interpreter's teardown (``cli.leave``) loses nothing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest

from benchlang.app.history import kept as kept_module
from benchlang.app.history import kept_code
from benchlang.app.history.kept import KEY, keep_points, kept_points
from benchlang.app.history.runs import _store_points
from benchlang.cli import main
from benchlang.errors import UserError
from benchlang.run.store import Store, TrialRecord
from benchlang.testing.synthetic import synthetic_store

ROOT = Path(__file__).resolve().parents[1]
DRAW = "awk -v k={k} -v t=$BENCHLANG_TRIAL 'NR == t + 1 {{{{ print k * $1 }}}}' {noise}"
"""A trial prints k times its own line of a seeded table (as tests/test_run_independence.py)."""
SPEC = """benchlang 1
experiment kept {{
  seed 3
  factor k in [1, 2]
  benchmark draw {{
    run "{run}"
    measure v from stdout regex "([0-9.]+)"
  }}
  metric v {{ measure mean unit "s" better lower }}
  kpi v {{ percentile 50 confidence 95% }}
  variability v {{ percentile 25 confidence 75% }}
  design {{ runs 5 series 5 order random }}
}}
"""


def _run(folder: Path) -> Path:
    """A real ``benchlang run`` of SPEC (50 trials of seeded lognormal values) into a store."""
    draws = np.random.default_rng(53).lognormal(0, 0.1, 64)
    noise = folder / "noise.txt"
    noise.write_text("".join(f"{v:.9f}\n" for v in draws))
    spec = folder / "kept.bench"
    spec.write_text(SPEC.format(run=DRAW.format(k="{k}", noise=noise)))
    store = folder / "kept.sqlite"
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    return store


@pytest.fixture
def ran(tmp_path, capsys) -> Path:
    store = _run(tmp_path)
    capsys.readouterr()
    return store


def _history_rows(history: Path) -> dict[str, list[tuple]]:
    """Every row of every table of a history, in a stable order."""
    with sqlite3.connect(history) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: sorted(map(repr, db.execute(f"SELECT * FROM {t}"))) for t in sorted(tables)}


def _add(store: Path, history: Path) -> None:
    argv = ["history", "add", str(store), "--history", str(history), "--no-commit"]
    assert main([*argv, "--date", "2026-01-02T03:04:05Z"]) == 0


def _drop_kept(store: Path) -> None:
    with sqlite3.connect(store) as db:
        assert db.execute("DELETE FROM meta WHERE key LIKE ?", (KEY + "%",)).rowcount == 1


def _compiled(store: Path, monkeypatch) -> tuple:
    """What ``add`` takes from the store by compiling its spec and analysing its trials."""
    with monkeypatch.context() as m:
        m.setattr("benchlang.app.history.runs.kept_points", lambda path: None)
        return _store_points(store)


def test_add_takes_the_kept_points_and_writes_the_rows_the_trials_give(ran, tmp_path, capsys,
                                                                       monkeypatch):  # fmt: skip
    kept = kept_points(ran)
    assert kept is not None and len(kept.points) == 2
    assert {p.interval_kind for p in kept.points} == {"variability"}
    assert repr(_store_points(ran)) == repr(_compiled(ran, monkeypatch))
    with monkeypatch.context() as m:  # the kept points alone: no spec compiled, no trial read
        m.setattr("benchlang.app.stores.load_store", lambda *a, **k: pytest.fail("compiled"))
        _add(ran, tmp_path / "kept.history")
    _drop_kept(ran)
    assert kept_points(ran) is None
    _add(ran, tmp_path / "compiled.history")
    capsys.readouterr()
    kept_rows = _history_rows(tmp_path / "kept.history")
    assert kept_rows["points"] and kept_rows["runs"]
    assert kept_rows == _history_rows(tmp_path / "compiled.history")


def _add_trial(store: Path) -> None:
    """A trial more, as a resumed or extended run writes one (its own transaction)."""
    with Store(store, write=True) as s:
        plan_hash = s.plan().plan_hash
        last = s.connection.execute("SELECT max(trial) FROM trial_rows").fetchone()[0]
        s.record_trial(
            plan_hash,
            TrialRecord(trial=last + 1, series=0, round=0, position=0, host="local",
                        configuration=0, label="draw[k=1]", benchmark="draw",
                        levels={"k": 1}, order_kind="random", status="ok", reason=None,
                        exit_status=0, timed_out=False, started=1.0, ended=2.0, attempts=1,
                        stdout_tail=b"", stderr_tail=b"", measures={"v": 50.0},
                        series_values={}, phase="measured"),
        )  # fmt: skip


def _sql(*statements: str):
    def edit(store: Path) -> None:
        with sqlite3.connect(store) as db:
            for statement in statements:
                assert db.execute(statement).rowcount >= 1, statement

    return edit


EDITS = {
    "a trial added": _add_trial,
    "a measure changed": _sql("UPDATE measure_rows SET value = value * 3 WHERE trial = 4"),
    "a trial deleted": _sql(
        "DELETE FROM measure_rows WHERE trial = 7", "DELETE FROM trial_rows WHERE trial = 7"
    ),
    "a trial's status changed": _sql("UPDATE trial_rows SET status = 'failed' WHERE trial = 2"),
    "the host's facts changed": _sql('UPDATE hosts SET facts = \'{"cores": "64"}\''),
}


@pytest.mark.parametrize("edit", EDITS)
def test_points_kept_before_the_trials_changed_are_not_used(ran, tmp_path, monkeypatch, edit):
    before = kept_points(ran)
    assert before is not None
    EDITS[edit](ran)
    assert kept_points(ran) is None
    run, points = _store_points(ran)
    assert repr((run, points)) == repr(_compiled(ran, monkeypatch))
    assert repr(points) != repr(before.points)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE kinds SET label = 'renamed' WHERE configuration = 0",
        "UPDATE measure_names SET name = 'renamed' WHERE name = 'v'",
        "UPDATE plans SET spec_text = spec_text || ' '",
        "UPDATE rounds SET reset_status = 'failed' WHERE round = 1",
    ],
)
def test_points_kept_before_other_rows_changed_are_not_used(ran, monkeypatch, statement):
    """Rows the points may depend on besides the trials: stale too (``add`` then gives what
    compiling gives, whatever that is for such an edit)."""
    assert kept_points(ran) is not None
    _sql(statement)(ran)
    assert kept_points(ran) is None
    assert _outcome(_store_points, ran) == _outcome(_compiled, ran, monkeypatch)


def _outcome(read, *args) -> str:
    """What reading the store gives: the run and points, or the error said (the measure
    renamed leaves no value)."""
    try:
        return repr(read(*args))
    except UserError as err:
        return f"error: {err.message}"


def test_a_store_without_kept_points_is_added_as_before(tmp_path, capsys, monkeypatch):
    """A store written before points were kept (or by ``import``, or synthetic here)."""
    spec = tmp_path / "kept.bench"
    spec.write_text(SPEC.format(run="echo {k}"))
    rng = np.random.default_rng(5)
    store = tmp_path / "old.sqlite"
    synthetic_store(spec, store, lambda p, t: {"v": float(rng.lognormal(0, 0.1))})
    assert kept_points(store) is None
    _add(store, tmp_path / "h.sqlite")
    assert "1 run(s) added" in capsys.readouterr().out
    rows = _history_rows(tmp_path / "h.sqlite")
    assert len(rows["runs"]) == 1 and len(rows["points"]) == 2


def test_points_are_kept_only_where_add_would_compile_the_spec_analysed(ran):
    """A run continued with a spec that differs in its analysis (its hash) keeps nothing;
    the points of the spec stored with the plan are the ones ``add`` computes."""
    from benchlang.report.analysis import analyze
    from benchlang.report.data import load_data

    _drop_kept(ran)
    with Store(ran, write=True) as s:
        data = load_data(s)
        other = attrs.evolve(data, experiment=attrs.evolve(data.experiment, spec_hash="sha256:x"))
        assert keep_points(s, other, analyze(other)) is False
        assert keep_points(s, data, []) is False
    assert kept_points(ran) is None


def test_kept_points_from_another_schema_or_unreadable_are_not_used(ran):
    with sqlite3.connect(ran) as db:
        (value,) = db.execute("SELECT value FROM meta WHERE key LIKE ?", (KEY + "%",)).fetchone()
        record = json.loads(value)
        db.execute(
            "UPDATE meta SET value = ? WHERE key LIKE ?",
            (json.dumps({**record, "schema": "6"}), KEY + "%"),
        )
    assert kept_points(ran) is None
    with sqlite3.connect(ran) as db:
        db.execute("UPDATE meta SET value = 'not json' WHERE key LIKE ?", (KEY + "%",))
    assert kept_points(ran) is None
    assert kept_module.kept_points(ran.parent / "nothing.sqlite") is None


def test_python_m_benchlang_history_add_leaves_at_once_with_everything_written(ran, tmp_path):
    history = tmp_path / "h.sqlite"
    argv = [sys.executable, "-m", "benchlang", "history", "add", str(ran), "--history",
            str(history), "--no-commit"]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 run(s) added")
    assert len(_history_rows(history)["points"]) == 2
    again = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "0 run(s) added" in again.stdout
    bad = subprocess.run([*argv[:5], str(tmp_path / "none.sqlite")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "no store at" in bad.stderr


def test_leave_flushes_and_runs_the_exit_functions(tmp_path):
    code = (
        "import atexit, sys; from benchlang.cli import leave; "
        "atexit.register(lambda: print('atexit ran')); "
        "f = open(sys.argv[1], 'w'); f.write('kept'); f.close(); "
        "print('answer', end=' '); sys.stderr.write('note'); leave(3)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "f")], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "answer atexit ran\n", "note")
    assert (tmp_path / "f").read_text() == "kept"


def test_leave_waits_for_a_live_thread_as_the_interpreter_does(tmp_path):
    code = (
        "import sys, threading, time; from benchlang.cli import leave; "
        "t = threading.Thread(target=lambda: (time.sleep(0.2), "
        "open(sys.argv[1], 'w').write('done'))); t.start(); leave(0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "f")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "f").read_text() == "done"


def test_a_plan_above_the_size_where_the_stamp_pays_keeps_no_points(ran, tmp_path, capsys,
                                                                    monkeypatch):  # fmt: skip
    """Above ``MAX_TRIALS`` trial rows the stamp costs more than the analysis it saves: ``run``
    keeps nothing, points kept below it are not used, and ``add`` compiles."""
    from benchlang.report.analysis import analyze
    from benchlang.report.data import load_data

    assert kept_points(ran) is not None
    monkeypatch.setattr(kept_module, "MAX_TRIALS", 49)
    assert kept_points(ran) is None
    _drop_kept(ran)
    with Store(ran, write=True) as s:
        data = load_data(s)
        assert keep_points(s, data, analyze(data)) is False
    monkeypatch.setattr(kept_module, "MAX_TRIALS", 50)
    with Store(ran, write=True) as s:
        data = load_data(s)
        assert keep_points(s, data, analyze(data)) is True
    assert kept_points(ran) is not None


def _recorded(store: Path, change) -> None:
    """Edit the kept record's ``code`` (what computed the points) with sqlite3."""
    with sqlite3.connect(store) as db:
        (value,) = db.execute("SELECT value FROM meta WHERE key LIKE ?", (KEY + "%",)).fetchone()
        record = json.loads(value)
        change(record)
        db.execute("UPDATE meta SET value = ? WHERE key LIKE ?", (json.dumps(record), KEY + "%"))


CODE_EDITS = {
    "numpy another version": lambda r: r["code"]["libraries"].update(numpy="1.26.4"),
    "scipy another version": lambda r: r["code"]["libraries"].update(scipy="1.11.0"),
    "benchlang's built-ins another version": lambda r: r["code"]["statistics"].update(
        benchlang="0.0.9"
    ),
    "another statistics distribution": lambda r: r["code"]["statistics"].update(other="1.0"),
    "benchlang's sources changed": lambda r: r["code"]["sources"].update(benchlang="0" * 64),
    "another Python": lambda r: r["code"].update(python="3.10.0"),
    "kept before the code was recorded": lambda r: r.pop("code"),
    "a method another entry point": lambda r: r["code"]["methods"].update(
        variability="benchlang.stats.methods:KPI_WIDTH"
    ),
}


def test_the_seal_spares_the_read_of_the_distributions_and_decides_nothing(ran, tmp_path,
                                                                           monkeypatch):  # fmt: skip
    """With the ``sys.path`` directories that held distributions as they were (another
    entry holding none may come and go: ``python -m``'s current directory), ``add`` does not
    read the installed distributions again (the seal); with a directory holding one more,
    or without the seal, it reads them, and the same code keeps the points current."""
    from benchlang import entrypoints

    read = []
    quick = entrypoints.quick_declared
    monkeypatch.setattr(entrypoints, "quick_declared", lambda g: read.append(g) or quick(g))
    assert kept_points(ran) is not None and read == []
    (tmp_path / "empty").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "empty"))
    assert kept_points(ran) is not None and read == []
    (tmp_path / "empty" / "unrelated-1.0.dist-info").mkdir()
    assert kept_points(ran) is not None and read == [kept_code.STATISTICS]
    monkeypatch.undo()
    entrypoints.rescan()
    _recorded(ran, lambda r: r.pop("seal"))
    assert kept_points(ran) is not None


@pytest.mark.parametrize("edit", CODE_EDITS)
def test_points_kept_by_other_code_are_not_used(ran, tmp_path, capsys, monkeypatch, edit):
    """The kept points hold what computed them (``kept.code``); any difference from what
    ``add`` would compute with now, or none recorded (a store kept before), and ``add``
    compiles: the same history rows as a store without kept points."""
    assert kept_points(ran) is not None
    _recorded(ran, CODE_EDITS[edit])
    assert kept_points(ran) is None
    _add(ran, tmp_path / "stale.history")
    _drop_kept(ran)
    _add(ran, tmp_path / "compiled.history")
    capsys.readouterr()
    assert _history_rows(tmp_path / "stale.history") == _history_rows(tmp_path / "compiled.history")


def test_the_code_record_reads_what_importlib_metadata_finds(ran):
    """The quick read (entry_points.txt and dist-info names, nothing imported) gives the
    versions and the statistics distributions ``importlib.metadata`` gives."""
    from importlib.metadata import version

    from benchlang.entrypoints import entry_points_of
    from benchlang.stats.registry import GROUP

    assert kept_code.STATISTICS == GROUP
    code = kept_code.code()
    assert code is not None
    for name, found in code["libraries"].items():
        assert found == version(name), name
    providers = {ep.dist.name.replace("-", "_"): ep.dist.version for ep in entry_points_of(GROUP)}
    assert code["statistics"] == providers and "benchlang" in providers
    assert code["methods"] == {ep.name: ep.value for ep in entry_points_of(GROUP)}
    with sqlite3.connect(ran) as db:
        (value,) = db.execute("SELECT value FROM meta WHERE key LIKE ?", (KEY + "%",)).fetchone()
    assert json.loads(value)["code"] == code


def test_a_source_change_in_a_development_tree_makes_add_compile(tmp_path):
    """benchlang imported from a tree on PYTHONPATH (one version string across commits): a
    statistics module touched, then edited, after the run leaves the kept points stale; the
    tree unchanged takes them."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "benchlang", tree / "benchlang",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.copytree(ROOT / "grammars", tree / "grammars")
    env = dict(__import__("os").environ, PYTHONPATH=str(tree))
    draws = np.random.default_rng(53).lognormal(0, 0.1, 64)
    noise = tmp_path / "noise.txt"
    noise.write_text("".join(f"{v:.9f}\n" for v in draws))
    spec, store = tmp_path / "kept.bench", tmp_path / "kept.sqlite"
    spec.write_text(SPEC.format(run=DRAW.format(k="{k}", noise=noise)))

    def benchlang(*argv: str) -> str:
        done = subprocess.run([sys.executable, *argv], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def kept() -> str:
        code = (
            "import sys, benchlang; from benchlang.app.history.kept import kept_points; "
            "print(benchlang.__file__, kept_points(sys.argv[1]) is not None)"
        )
        return benchlang("-c", code, str(store)).split()[1]

    benchlang("-m", "benchlang", "run", str(spec), "--store", str(store), "-q")
    assert kept() == "True"
    module = tree / "benchlang" / "stats" / "kpi.py"
    stat = module.stat()
    __import__("os").utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert kept() == "False"
    __import__("os").utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert kept() == "True"
    module.write_text(module.read_text() + "\n# a fix after the run\n")
    __import__("os").utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert kept() == "False"


def test_no_points_are_kept_where_the_sources_may_have_changed_during_the_run(ran, monkeypatch):
    """A source file newer than the process's start (here: a process started at the epoch)
    may not be the code that computed the points: ``run`` keeps none. Without ``/proc``,
    the plan's first trial is the start."""
    from benchlang.report.analysis import analyze
    from benchlang.report.data import load_data

    _drop_kept(ran)
    monkeypatch.setattr(kept_code, "_started_ns", lambda: 0)
    with Store(ran, write=True) as s:
        data = load_data(s)
        assert keep_points(s, data, analyze(data)) is False
    assert kept_points(ran) is None
    monkeypatch.setattr(kept_code, "_started_ns", lambda: None)
    with Store(ran, write=True) as s:
        data = load_data(s)
        assert keep_points(s, data, analyze(data)) is True
    assert kept_points(ran) is not None


def test_no_points_are_kept_where_a_library_was_installed_during_the_run(ran, tmp_path,
                                                                         monkeypatch):  # fmt: skip
    """A numpy found first on ``sys.path`` installed after the process started (the run
    computed with the numpy it imported): ``run`` keeps none; read again at its end, not
    as the registries found the distributions at its start."""
    from benchlang.entrypoints import installed_paths, rescan
    from benchlang.report.analysis import analyze
    from benchlang.report.data import load_data

    _drop_kept(ran)
    installed_paths(["numpy"])  # the read at the process's start
    site = tmp_path / "site"
    (site / "numpy-9.0.0.dist-info").mkdir(parents=True)
    try:
        monkeypatch.syspath_prepend(str(site))
        with Store(ran, write=True) as s:
            data = load_data(s)
            assert keep_points(s, data, analyze(data)) is False
        assert installed_paths(["numpy"]) == {"numpy": str(site / "numpy-9.0.0.dist-info")}
    finally:
        monkeypatch.undo()
        rescan()
    assert kept_points(ran) is None
