"""pytest-benchmark's ``--benchmark-json FILE``: every round of every benchmark.

pytest-benchmark (https://github.com/ionelmc/pytest-benchmark) runs a benchmark's rounds back
to back; each round times ``stats.iterations`` calls and ``stats.data`` holds every round's
time already divided by those iterations (its ``stats.py``, ``Metadata.update``:
``self.stats.update(duration / self.iterations)``). The import keeps the values as they are (no second division):
a benchmark (``fullname``, which holds its parameters) is a configuration, its rounds one
block at positions 0..n-1, ``iterations`` stored beside each value. Warm-up rounds are not in
the file. A file saved with ``--benchmark-save`` without ``--benchmark-save-data`` holds
only the summary statistics: refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchlang.run.importers.base import (
    ImportedTrials,
    ImportFileError,
    fields,
    listed,
    load_json,
    measurements,
    text,
)

HINT = "write it with pytest --benchmark-json FILE (or --benchmark-save-data)"
_FACTS = {"processor": "cpu_model", "machine": "machine", "python_version": "python_version",
          "python_implementation": "python_implementation", "system": "platform"}  # fmt: skip


class PytestBenchmarkImporter:
    name: ClassVar[str] = "pytest-benchmark"
    description: ClassVar[str] = "pytest-benchmark --benchmark-json (every round's time)"

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        return b'"machine_info"' in head

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        from benchlang.run.importers.blocks import Block, block_trials

        suite = load_json(path, "a pytest-benchmark JSON file", HINT)
        if not isinstance(suite, dict) or "benchmarks" not in suite:
            raise ImportFileError(f"{path}: no 'benchmarks': not a pytest-benchmark file", HINT)
        machine = fields(suite.get("machine_info") or {}, f"{path}: machine_info")
        blocks = []
        for number, bench in enumerate(listed(suite["benchmarks"], f"{path}: benchmarks")):
            where = f"{path}: benchmarks[{number}]"
            bench = fields(bench, where)
            label = text(bench.get("fullname") or bench.get("name"), f"{where}.fullname")
            stats = fields(bench.get("stats"), f"{where}.stats")
            if "data" not in stats:
                raise ImportFileError(
                    f"{where}.stats has no 'data' (the rounds' times): summary statistics only",
                    HINT,
                )
            values = measurements(stats["data"], f"{where}.stats.data")
            iterations = stats.get("iterations", np.nan)
            if iterations is not None and not isinstance(iterations, (int, float)):
                raise ImportFileError(f"{where}.stats.iterations is not a number: refused")
            blocks.append(
                Block(
                    label,
                    values,
                    np.full(values.size, np.nan if iterations is None else float(iterations)),
                    np.zeros(values.size, dtype=bool),
                )
            )
        host = machine.get("node")
        return block_trials(
            "pytest-benchmark",
            path,
            blocks,
            [
                "each value is one round's time divided by its iterations, as pytest-benchmark "
                "stored it (stats.data); warm-up rounds are not in the file",
            ],
            host=host if isinstance(host, str) and host else "imported",
            facts={
                fact: str(machine[key])
                for key, fact in _FACTS.items()
                if isinstance(machine.get(key), (str, int, float)) and machine.get(key) != ""
            },
            hint=HINT,
        )
