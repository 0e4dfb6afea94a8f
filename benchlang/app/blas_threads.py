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

In a command's own process (``cli.entry``: ``benchlang.process``), numpy's modules, types and
functions live as long as the process, so the cyclic garbage collector is paused while they
are made and then leaves them out of its walks (``gc.freeze``): it walked them in a dozen
collections during the import and again in the full collections at exit, 12-15 ms CPU of
every command that imports this module, about a tenth of a 10k-row `import`
(docs/benchmarks.md). A command's app module calls ``started`` once its own modules are
loaded, for the same reason (4 ms more of the `import`). Never in a program that imports
benchlang as a library, nor where numpy was loaded already: a program's objects frozen would
not be collected when they form cycles. In a command, the few hundred objects the imports
leave unreachable stay (finding them is a full walk, 5 ms); reference counting frees every
object without a cycle as before, and objects made later are collected as before.
"""

from __future__ import annotations

import gc
import os
import sys

from benchlang import process

SETTING = "OPENBLAS_THREAD_TIMEOUT"
LOADS_NUMPY = "numpy" not in sys.modules
"""Whether this module loads numpy (not a program that had it already)."""
FREEZES = LOADS_NUMPY and process.command
"""Whether start-up objects are frozen: only in a ``benchlang`` command's own process, never
in a program that imports benchlang as a library (``benchlang.process``)."""


def load_numpy() -> None:
    if not LOADS_NUMPY or "numpy" in sys.modules:
        return
    ours = SETTING not in os.environ
    if ours:
        os.environ[SETTING] = "4"
    collecting = gc.isenabled() and FREEZES
    if collecting:
        gc.disable()
    try:
        import numpy  # noqa: F401
    finally:
        if ours:
            os.environ.pop(SETTING, None)
        if collecting:
            gc.freeze()
            gc.enable()


def started() -> None:
    """The command's modules are loaded: leave what they made out of the collector's walks."""
    if FREEZES:
        gc.freeze()


load_numpy()
