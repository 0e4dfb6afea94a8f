"""Imported first by the commands whose cost is mostly start-up (`import`, `analyze`, the
`history` commands): numpy is
loaded with OpenBLAS's idle threads sleeping at once instead of spinning.

OpenBLAS starts a thread a core when numpy is loaded, and a thread without work busy-waits
about 2^28 cycles before it sleeps (``OPENBLAS_THREAD_TIMEOUT``, 2^n cycles, default n = 28):
0.1-0.2 CPU s of a 10k-row `import` or `analyze`, more than their own work (docs/benchmarks.md,
"The import's fixed costs"). With n = 4 the threads are the same (as many, splitting the same
routines the same way, so every result is the same to the bit) and sleep when idle; a routine
wakes them. OpenBLAS reads the setting once, when the library loads, so it is made only for
numpy's import and taken back at once: commands the process runs later (a benchmark's) see
the environment as it was. A user's own setting stands; numpy already loaded (a test, an
embedding program) is left as it is.
"""

from __future__ import annotations

import os
import sys

SETTING = "OPENBLAS_THREAD_TIMEOUT"


def load_numpy() -> None:
    if "numpy" in sys.modules or SETTING in os.environ:
        return
    os.environ[SETTING] = "4"
    try:
        import numpy  # noqa: F401
    finally:
        os.environ.pop(SETTING, None)


load_numpy()
