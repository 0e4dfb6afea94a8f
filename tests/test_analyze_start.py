"""`analyze`'s start and exit (docs/benchmarks.md, "`analyze` against its floor"): its
start-up objects left out of the collector's walks once its modules are loaded, the exit
without the interpreter's teardown (``cli.leave``) with every output whole, and the modules
a store's analysis loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchlang.cli import build_parser, main
from tests.test_import_budget import loaded_by

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store `import` writes from a per-trial CSV: 3 configurations in 200 rounds, every
    other round in the fixed order (so analyze adds the order report; each carry-over pair
    has more than 8 trials, the normal approximation's), seeded values."""
    import numpy as np

    root = tmp_path_factory.mktemp("analyze-start")
    rng = np.random.default_rng(53)
    rows = []
    for r in range(200):
        order = [0, 1, 2] if r % 2 == 0 else rng.permutation(3).tolist()
        for p, c in enumerate(order):
            kind = "fixed" if r % 2 == 0 else "random"
            rows.append(f"t{c},{kind},{r},{p},{rng.lognormal(-3 + 0.1 * c, 0.1):.6g}\n")
    data = root / "trials.csv"
    data.write_text("test,order,run_seq,position,value\n" + "".join(rows))
    path = root / "s.sqlite"
    assert main(["import", str(data), "--store", str(path)]) == 0
    return path


def _command(*argv: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchlang", *argv],
        cwd=ROOT,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_analyze_leaves_at_once_with_its_output_whole(store, tmp_path, capsys, json_out):
    """`analyze` exits through cli.leave (it writes nothing; the store is closed when its
    analysis returns): what it prints to a pipe and to a file is what ``main`` prints in
    process, byte for byte, and the exit status is the command's."""
    argv = ["analyze", str(store), *(["--json"] if json_out else [])]
    assert build_parser().parse_args(argv).exit_at_once is True
    assert main(argv) == 0
    expected = capsys.readouterr().out
    assert "Order dependence" in expected or json_out
    piped = _command(*argv)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == expected
    out = tmp_path / "out.txt"
    with out.open("w") as handle:
        done = _command(*argv, stdout=handle.fileno())
    assert done.returncode == 0, done.stderr
    assert out.read_text() == expected
    if json_out:
        assert json.loads(out.read_text())["kind"] == "benchlang.analyze"


def test_analyze_into_a_closed_pipe_exits_quietly(store):
    """A reader that leaves at once (``| head``): no traceback, status 0, as before the exit
    went through cli.leave (the flush that fails hands the exit back to the interpreter)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "analyze", str(store), "--json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err


def test_a_usage_error_keeps_its_status(tmp_path):
    done = _command("analyze", str(tmp_path / "missing.sqlite"))
    assert done.returncode == 2
    assert done.stderr.startswith("benchlang: error:")


FROZEN = """
import gc, sys
import benchlang.process
benchlang.process.command = sys.argv[1] == "command"
import benchlang.app.blas_threads
numpy_only = gc.get_freeze_count()
import benchlang.cli.analyze
print(numpy_only, gc.get_freeze_count())
"""


@pytest.mark.parametrize("kind", ["command", "library"])
def test_analyze_freezes_its_modules_only_in_its_own_process(kind):
    """In `analyze`'s own process the objects its modules made (the spec compiler's, the
    store's, the model's) join numpy's out of the collector's walks (``blas_threads.started``);
    a program importing benchlang as a library keeps its collector as it was."""
    done = subprocess.run(
        [sys.executable, "-c", FROZEN, kind], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    numpy_only, after = map(int, done.stdout.split())
    if kind == "command":
        assert after > numpy_only + 5_000
    else:
        assert numpy_only == after == 0


def test_analyze_of_a_store_loads_only_what_it_uses(store):
    """The analysis of a store with fixed and random rounds loads neither scipy (the order
    report's median CIs from numpy's Binomial CDF) nor the plan compiler (no spec given),
    the record, the package metadata scan, the figures, or the CSV reader (``--data`` only)."""
    watched = (
        "csv",
        "scipy",
        "importlib.metadata",
        "benchlang.app.plan",
        "benchlang.report.record",
        "benchlang.report.figures",
        "matplotlib",
    )
    loaded = loaded_by("analyze", str(store), heavy=watched)
    assert loaded["heavy"] == []
    assert "benchlang.report.order" in loaded["benchlang"]
