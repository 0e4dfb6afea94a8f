"""`benchlang import`'s parser is built without numpy: numpy and the importers load when the
command runs, at a shallow stack (cli/import_data.py; docs/benchmarks.md, "The import at 10k
rows within 3x")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PARSE = """
import argparse, sys
from benchlang.cli import import_data
parser = argparse.ArgumentParser()
import_data.configure(parser)
args = parser.parse_args(["trials.csv", "--store", "s.sqlite", "--round-column", "r"])
print(args.round, args.configuration, "numpy" in sys.modules)
"""


def test_the_import_parser_loads_no_numpy_and_keeps_its_defaults():
    done = subprocess.run(
        [sys.executable, "-c", PARSE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["r", "test", "False"]


def test_a_csv_imports_through_the_command(tmp_path):
    rows = ["test,order,run_seq,position,value"]
    rows += [f"c{p},fixed,{r},{p},{1 + 0.01 * (r + p)}" for r in range(6) for p in range(2)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "import", "t.csv", "--store", "s.sqlite"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported 12 trials of 2 configurations in 6 rounds from csv")
