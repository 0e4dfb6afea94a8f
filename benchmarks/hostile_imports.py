"""The hostile-import corpus of tests/test_hostile_imports.py, counted (issue 49 items 3, 4).

Imports every input of the seeded corpus (hyperfine, pyperf, CSV) with the benchlang found on
PYTHONPATH (give an older checkout's tree to count it before a change: ``git archive HEAD
benchlang | tar -x -C /tmp/old``, then ``--pythonpath /tmp/old``) and prints, per reader, how
many inputs ended in an exception (a traceback for a user), were refused in one line, in
more lines, or imported; and how many imports stored a value that cannot be (a negative or
non-finite time, or a trial count other than the file's values).

    python3 benchmarks/hostile_imports.py [--count 300] [--seed 49] [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sqlite3
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_hostile_imports import corpus, expected_trials, run_corpus


def classify(row: list) -> str:
    path, tool, store, status, kind, err = row
    if kind is not None:
        return f"exception ({kind})"
    if status == 2:
        lines = [x for x in err.splitlines() if x.strip()]
        return "refused, one line" if len(lines) <= 2 else "refused, several lines"
    if status != 0:
        return f"exit {status}"
    with contextlib.closing(sqlite3.connect(store)) as db:
        values = [v for (v,) in db.execute("SELECT value FROM measures")]
        trials = db.execute("SELECT count(*) FROM trials").fetchone()[0]
    bad = any(v is not None and (v < 0 or not math.isfinite(v)) for v in values)
    try:
        wrong_count = trials != expected_trials(path, tool)
    except (ValueError, KeyError, TypeError):
        wrong_count = True
    return "imported a value that cannot be" if bad or wrong_count else "imported"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="inputs per reader")
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--pythonpath", help="the benchlang tree to count (default: this one)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    inputs = corpus(args.seed, args.count)
    with tempfile.TemporaryDirectory() as tmp:
        rows = run_corpus(inputs, Path(tmp), env)
        counts = Counter((row[1], classify(row)) for row in rows)
    outcomes = sorted({o for _, o in counts})
    print(f"{len(inputs)} inputs (seed {args.seed}), benchlang from {args.pythonpath or 'here'}")
    print(f"| reader | {' | '.join(outcomes)} |")
    print(f"|---|{'---|' * len(outcomes)}")
    for tool in ("hyperfine", "pyperf", "csv"):
        print(f"| {tool} | {' | '.join(str(counts[tool, o]) for o in outcomes)} |")


if __name__ == "__main__":
    main()
