"""The fuzz and property tests with their large numbers of cases (``BENCHLANG_FUZZ=full``,
tests/fuzz_budget.py): the suite runs a small seeded number of each; this runs thousands,
for a change to the language, the formatter or the language server.

    python benchmarks/fuzz_full.py            # every fuzz file, two workers
    python benchmarks/fuzz_full.py -k fmt     # pytest's own options after the script's name
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    "tests/test_fmt_properties.py",
    "tests/test_lang_fuzz.py",
    "tests/test_lsp_fuzz.py",
    "tests/test_lsp_incremental.py",
    "tests/test_lsp_hostile.py",
    "tests/test_hostile_imports.py",
]


def main() -> int:
    env = {**os.environ, "BENCHLANG_FUZZ": "full"}
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--timeout", "3600", *FILES]
    return subprocess.call([*argv, *sys.argv[1:]], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
