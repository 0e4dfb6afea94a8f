"""Start-up budget: the quick commands never load the heavy libraries.

Each command runs in a fresh interpreter through ``benchlang.cli.main``; at exit the wrapper
lists which heavy top-level packages are in ``sys.modules``. Deterministic: no timing.
benchmarks/bench_cli.py measures the time these budgets buy.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("scipy", "statsmodels", "pandas", "rich", "asyncssh", "matplotlib")

WRAPPER = """
import atexit, json, sys
heavy = {heavy!r}
def report():
    loaded = sorted(m for m in heavy if m in sys.modules)
    ours = sorted(m for m in sys.modules if m.startswith("benchlang"))
    sys.stderr.write("\\nBUDGET " + json.dumps({{"heavy": loaded, "benchlang": ours}}) + "\\n")
atexit.register(report)
from benchlang.cli import main
sys.exit(main(sys.argv[1:]))
"""


@functools.cache
def started(*argv: str) -> dict[str, object]:
    """``loaded_by`` of a command that reads no file the tests write: one interpreter per
    command for the module (``--version`` and ``--help`` serve three tests)."""
    return loaded_by(*argv)


def loaded_by(
    *argv: str, ok: tuple[int, ...] = (0,), heavy: tuple[str, ...] = HEAVY
) -> dict[str, object]:
    """Run ``benchlang ARGV`` in a fresh interpreter; the ``heavy`` modules it left loaded."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER.format(heavy=heavy), *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode in ok, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("BUDGET "), done.stderr
    return json.loads(line.removeprefix("BUDGET "))


QUICK = [
    ["--version"],
    ["--help"],
    ["check", "specs/quickstart.bench"],
    ["plan", "specs/quickstart.bench"],
    ["plan", "--help"],
    ["size", "--percentile", "95", "--confidence", "95"],
]


@pytest.mark.parametrize("argv", QUICK, ids=" ".join)
def test_quick_commands_load_no_heavy_library(argv):
    assert started(*argv)["heavy"] == []


@pytest.mark.parametrize("argv", [["--version"], ["--help"]], ids=" ".join)
def test_version_and_help_import_only_the_cli_package(argv):
    assert started(*argv)["benchlang"] == ["benchlang", "benchlang.cli"]


def test_help_imports_no_command_module():
    """`benchlang --help` is built from the lazy table alone."""
    from benchlang.cli import COMMANDS

    loaded = set(started("--help")["benchlang"])
    assert sorted(c.module for c in COMMANDS.values() if c.module in loaded) == []


def test_the_wrapper_does_see_heavy_libraries(tmp_path):
    """Guards the budget test itself: a command that needs scipy is seen loading it."""
    data = tmp_path / "load.csv"
    data.write_text("".join(f"{(i % 12) + 0.1 * (i % 5)}\n" for i in range(120)))
    loaded = loaded_by("profile", str(data), "--period", "1h", "--json")["heavy"]
    assert {"scipy", "statsmodels"} <= set(loaded)


def test_a_run_and_its_closing_report_load_no_scipy(tmp_path):
    """`run` of a KPI spec (plan, trials, store, results, KPI, independence, headline, record)
    needs none of the heavy libraries: the order statistics, ranks and Ljung-Box tail are
    numpy (benchmarks/bench_run_fixed_cost.py measures what this buys)."""
    spec = tmp_path / "noop.bench"
    spec.write_text(
        'benchlang 1\nexperiment noop {\n  seed 1\n  benchmark b {\n    run "true"\n'
        '    measure time = wall_time\n  }\n  metric time { measure mean unit "s" better lower }\n'
        "  kpi time { percentile 50 confidence 95% }\n  design { runs 5 }\n}\n"
    )
    loaded = loaded_by("run", str(spec), "--store", str(tmp_path / "s.sqlite"))
    assert loaded["heavy"] == []


def _history(path: Path) -> None:
    """A history of 40 runs of one series with a 12% step (seeded), its change points stored."""
    import math

    import numpy as np

    from benchlang.app.history.runs import open_history
    from benchlang.history.points import Point, Run
    from benchlang.history.series import add_run
    from benchlang.history.stored import store_changes

    rng = np.random.default_rng(53)
    with open_history(str(path), create=True) as h:
        for i in range(40):
            value = math.exp((0.12 if i >= 20 else 0.0) + 0.02 * rng.standard_normal())
            point = Point("time", "size=1", "unknown", "s", "lower", 50.0, value, value * 0.97,
                          value * 1.03, "order", (), math.nan, 10, "passed")  # fmt: skip
            date = f"2026-01-01T00:00:{i:02d}+00:00"
            run = Run(f"run-{i:04d}", "app", None, f"{i:040x}", "main", date, "generated", {}, {})
            add_run(h, run, [point], then=store_changes)


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    """The history of ``_history``, made once for the readers (each reads a copy)."""
    target = tmp_path_factory.mktemp("history") / "h.sqlite"
    _history(target)
    return target


@pytest.mark.parametrize(
    "action", [["changes"], ["changes", "--json"], ["list"], ["check"]], ids=" ".join
)
def test_history_readers_load_neither_heavy_libraries_nor_the_analysis(history, tmp_path, action):
    """`history changes` reads the stored change points, `history list` the runs and `history
    check` judges the newest run against the change points the history keeps for the series
    without it (its prediction bounds in numpy, stats._special): none searches for change
    points, nor loads the spec checker, the store or the analysis (history.points imported the
    report's types at start-up), nor a heavy library."""
    target = Path(shutil.copy(history, tmp_path / "h.sqlite"))
    loaded = loaded_by("history", *action, "--history", str(target), ok=(0, 1))
    assert loaded["heavy"] == []
    prefixes = ("benchlang.lang.check", "benchlang.report.analysis", "benchlang.run.store",
                "benchlang.stats.changepoints")  # fmt: skip
    assert [m for m in loaded["benchlang"] if m.startswith(prefixes)] == []


def test_history_add_loads_no_heavy_library_nor_the_headline(tmp_path):
    """`history add` analyses the store's KPIs (the spec checker and the store are needed) but
    keeps no headline: neither the rankings nor a heavy library are loaded."""
    import numpy as np

    from benchlang.testing.synthetic import synthetic_store

    spec = tmp_path / "app.bench"
    spec.write_text(
        'benchlang 1\nexperiment app {\n  seed 1\n  benchmark b {\n    run "true"\n'
        '    measure time = wall_time\n  }\n  metric time { measure mean unit "s" better lower }\n'
        "  kpi time { percentile 50 confidence 95% }\n  design { runs 10 series 1 }\n}\n"
    )
    noise = np.random.default_rng(53)
    store = tmp_path / "s.sqlite"
    synthetic_store(spec, store, lambda p, t: {"time": 0.01 * float(np.exp(noise.normal(0, 0.02)))})
    target = tmp_path / "h.sqlite"
    loaded = loaded_by("history", "add", str(store), "--history", str(target), "--no-commit")
    assert loaded["heavy"] == []
    assert "benchlang.report.analysis" in loaded["benchlang"]
    assert [m for m in loaded["benchlang"] if m.startswith("benchlang.report.headline")] == []


def test_import_and_analyze_of_a_csv_read_no_package_metadata(tmp_path):
    """`import` of a per-trial CSV and `analyze` of its store find the importers and the
    statistics methods from the distributions' entry_points.txt directly: neither imports
    ``importlib.metadata`` (its import and scan of every installed package cost 20-25 ms, a
    tenth of a 10k-row import); `import` opens the store without the backends' module
    (leases are read only where a store holds them)."""
    data = tmp_path / "trials.csv"
    rows = [f"t{(i * 7) % 3},random,{i // 3},{i % 3},{1 + 0.01 * (i % 11)}\n" for i in range(90)]
    data.write_text("test,order,run_seq,position,value\n" + "".join(rows))
    store = tmp_path / "s.sqlite"
    watched = ("importlib.metadata", "benchlang.backends.base")
    loaded = loaded_by("import", str(data), "--store", str(store), heavy=watched)
    assert loaded["heavy"] == []
    loaded = loaded_by("analyze", str(store), heavy=watched)
    assert "importlib.metadata" not in loaded["heavy"]


def test_import_of_a_csv_loads_neither_the_socket_module_nor_the_suites_blocks(tmp_path):
    """`import` of a per-trial CSV loads only what it uses: the store's writer lock names its
    host with ``os.uname`` (``socket``'s import cost 2-3 ms of a 10k-row import), and the
    importers asked whether they recognize the file load the suites' blocks module only when
    one reads (docs/benchmarks.md, "The import at 10k rows")."""
    data = tmp_path / "trials.csv"
    rows = [f"t{(i * 7) % 3},random,{i // 3},{i % 3},{1 + 0.01 * (i % 11)}\n" for i in range(90)]
    data.write_text("test,order,run_seq,position,value\n" + "".join(rows))
    watched = ("socket", "benchlang.run.importers.blocks")
    loaded = loaded_by("import", str(data), "--store", str(tmp_path / "s.sqlite"), heavy=watched)
    assert loaded["heavy"] == []
    assert "benchlang.run.importers.asv" in loaded["benchlang"]  # asked, and said no


def test_import_leaves_without_the_teardown_its_store_closed(tmp_path):
    """`import` exits through cli.leave (the interpreter's teardown cost about 6 ms CPU of a
    10k-row import): its output reaches a pipe whole, and the store it wrote is closed (no
    write-ahead log nor lock file left) and reads back every trial."""
    from benchlang.cli import build_parser
    from benchlang.run.store import Store

    data = tmp_path / "trials.csv"
    rows = [f"t{(i * 7) % 3},random,{i // 3},{i % 3},{1 + 0.01 * (i % 11)}\n" for i in range(90)]
    data.write_text("test,order,run_seq,position,value\n" + "".join(rows))
    store = tmp_path / "s.sqlite"
    argv = ["import", str(data), "--store", str(store)]
    assert build_parser().parse_args(argv).exit_at_once is True
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported 90 trials of 3 configurations in 30 rounds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite", "trials.csv"]
    with Store(store) as opened:
        assert len(opened.finished_trials(opened.plans()[0].plan_hash)) == 90


FROZEN = """
import gc, sys
import benchlang.process
benchlang.process.command = sys.argv[1] != "a library"  # as cli.entry sets it
if sys.argv[1] == "numpy first":
    import numpy
import benchlang.app.importing
import numpy
print(gc.get_freeze_count(), sum(gc.get_count()), numpy.__name__ in sys.modules)
"""


@pytest.mark.parametrize("first", ["the command", "numpy first", "a library"])
def test_start_up_objects_are_frozen_only_where_the_command_loads_numpy(first):
    """In a command's process (``cli.entry``; app/blas_threads.py loads numpy) numpy's
    objects and the command's modules are left out of the collector's walks (``gc.freeze``:
    12-17 ms of a 10k-row import); a process that had numpy first (a test) and a program
    that imports benchlang as a library (numpy not loaded yet) keep their collector as it
    was: a notebook's objects frozen would never be collected when they form cycles."""
    done = subprocess.run(
        [sys.executable, "-c", FROZEN, first],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    frozen, _, loaded = done.stdout.split()
    assert loaded == "True"
    if first == "the command":
        assert int(frozen) > 20_000  # numpy's and the modules' objects (about 35,000)
    else:
        assert int(frozen) == 0


IDLE = """
import importlib, os, sys, time
importlib.import_module(sys.argv[1])
import numpy
a = numpy.ones((512, 512))
a @ a
start = time.process_time()
time.sleep(0.3)
print(time.process_time() - start, "OPENBLAS_THREAD_TIMEOUT" in os.environ)
"""


@pytest.mark.parametrize("module", ["app.importing", "cli.analyze"])
def test_numpy_threads_sleep_when_idle_in_import_and_analyze(module):
    """`import` and `analyze` load numpy with OpenBLAS's idle threads sleeping at once (they
    spun 0.1 CPU s after numpy's load and after each routine: app/blas_threads.py), and the
    setting does not outlive numpy's load. Sleeping 0.3 s after a matrix product OpenBLAS
    splits over its threads costs no CPU time; spinning threads took about 0.1 s."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    done = subprocess.run(
        [sys.executable, "-c", IDLE, f"benchlang.{module}"],  # import loads it in run
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    idle_cpu, still_set = done.stdout.split()
    assert float(idle_cpu) < 0.03 and still_set == "False"


def test_check_of_a_spec_without_hosts_reads_no_package_metadata():
    """`check` of a spec without a ``hosts`` block never asks for a backend: it loads neither
    ``importlib.metadata`` (20-25 ms with its scan) nor the backends' module, and difflib only
    for a misspelt name (docs/benchmarks.md, "Small commands against their floors")."""
    watched = ("importlib.metadata", "benchlang.backends.base", "difflib")
    assert loaded_by("check", "specs/quickstart.bench", heavy=watched)["heavy"] == []
