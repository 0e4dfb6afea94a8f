"""How many cases the fuzz and property tests try: a small seeded number in the suite, each
enough for the bug class its test guards, and the large number when ``BENCHLANG_FUZZ=full``
(``python benchmarks/fuzz_full.py`` runs those tests so; CI does not)."""

from __future__ import annotations

import os

FULL = os.environ.get("BENCHLANG_FUZZ") == "full"


def cases(suite: int, full: int) -> int:
    """``suite`` cases in the suite, ``full`` under ``BENCHLANG_FUZZ=full``."""
    return full if FULL else suite
