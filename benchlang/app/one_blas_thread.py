"""Imported first by a command that does no linear algebra (``benchlang import``): numpy is
loaded with OpenBLAS on one thread.

OpenBLAS starts a thread a core when numpy is imported and they spin while waiting for work:
0.1-0.12 CPU s of a 100,000-row `import` that runs no BLAS routine (docs/benchmarks.md, "The
import's fixed costs"). The setting is read once, when the library loads, so it is made only
then and taken back at once: commands the process runs later inherit the environment as it
was. A user's own ``OPENBLAS_NUM_THREADS`` stands; numpy already loaded (a test, an embedding
program) is left as it is.
"""

from __future__ import annotations

import os
import sys


def load_numpy() -> None:
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


load_numpy()
