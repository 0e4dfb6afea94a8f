"""Start-up budget: the quick commands never load the heavy libraries.

Each command runs in a fresh interpreter through ``benchlang.cli.main``; at exit the wrapper
lists which heavy top-level packages are in ``sys.modules``. Deterministic: no timing.
benchmarks/bench_cli.py measures the time these budgets buy.
"""

from __future__ import annotations

import json
import os
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


def loaded_by(*argv: str) -> dict[str, object]:
    """Run ``benchlang ARGV`` in a fresh interpreter; the heavy packages it left loaded."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER.format(heavy=HEAVY), *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
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
    assert loaded_by(*argv)["heavy"] == []


@pytest.mark.parametrize("argv", [["--version"], ["--help"]], ids=" ".join)
def test_version_and_help_import_only_the_cli_package(argv):
    assert loaded_by(*argv)["benchlang"] == ["benchlang", "benchlang.cli"]


def test_help_imports_no_command_module():
    """`benchlang --help` is built from the lazy table alone."""
    probe = (
        "import sys, contextlib, io\n"
        "from benchlang.cli import COMMANDS, main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "print(sorted(c.module for c in COMMANDS.values() if c.module in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


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
