"""pyperf's JSON (``pyperf ... -o FILE``): every value of every worker run, with metadata.

pyperf (https://github.com/psf/pyperf) runs each benchmark in several worker processes
("runs"), each yielding a few values after its warm-ups. The import makes each benchmark a
configuration, each worker run a round and its values the trials at positions 0..n-1 (a
fixed order, as pyperf ran them). Warm-ups and calibration runs (runs without values) are
left out and counted in the notes. The suite's metadata (CPU model, count and frequency,
platform, Python, ASLR, ...) become host facts. Values are seconds for ``unit: second``
(metric ``time``), else the metric is ``value`` in pyperf's unit. A value that cannot be (not
a number, infinite or NaN, negative unless the unit is ``integer``) or a field of the wrong
JSON type is refused, naming the field and its index (docs/importing.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchlang.run.importers.base import (
    ImportedMetric,
    ImportedTrials,
    ImportFileError,
    fields,
    listed,
    load_json,
    measurements,
    text,
)

_FACTS = {  # pyperf's metadata key -> benchlang's host fact (backends' names where they exist)
    "cpu_model_name": "cpu_model",
    "cpu_count": "cores",
    "cpu_freq": "cpu_freq",
    "cpu_config": "cpu_config",
    "platform": "platform",
    "python_implementation": "python_implementation",
    "python_version": "python_version",
    "python_compiler": "python_compiler",
    "aslr": "aslr",
    "timer": "timer",
    "perf_version": "pyperf_version",
}


class PyperfImporter:
    name: ClassVar[str] = "pyperf"
    description: ClassVar[str] = "pyperf JSON (benchmarks, worker runs, values, metadata)"

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
        return text.startswith(b"{") and b'"benchmarks"' in text

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        hint = "write it with pyperf's -o FILE (gzip files: gunzip them first)"
        suite = load_json(path, "a pyperf JSON file", hint)
        if not isinstance(suite, dict) or "benchmarks" not in suite:
            raise ImportFileError(f"{path}: no 'benchmarks': not a pyperf JSON file", hint)
        benchmarks = listed(suite["benchmarks"], f"{path}: benchmarks", optional=False)
        common = fields(suite.get("metadata") or {}, f"{path}: metadata")
        labels: list[str] = []
        values: list[np.ndarray] = []
        rounds: list[int] = []
        positions: list[int] = []
        units = set()
        skipped_runs = warmups = 0
        round_index = 0
        for number, benchmark in enumerate(benchmarks):
            where = f"{path}: benchmarks[{number}]"
            benchmark = fields(benchmark, where)
            meta = {**common, **fields(benchmark.get("metadata") or {}, f"{where}.metadata")}
            name = text(meta.get("name") or f"benchmark{number + 1}", f"{where}: name")
            unit = text(meta.get("unit", "second"), f"{where}: unit")
            units.add(unit)
            for r, run in enumerate(listed(benchmark.get("runs"), f"{where}.runs")):
                run = fields(run, f"{where}.runs[{r}]")
                warmups += len(listed(run.get("warmups"), f"{where}.runs[{r}].warmups"))
                run_values = measurements(
                    listed(run.get("values"), f"{where}.runs[{r}].values"),
                    f"{where}.runs[{r}].values",
                    negative=unit == "integer",
                )
                if not run_values.size:
                    skipped_runs += 1
                    continue
                labels.extend([name] * run_values.size)
                values.append(run_values)
                rounds.extend([round_index] * run_values.size)
                positions.extend(range(run_values.size))
                round_index += 1
        if len(units) > 1:
            raise ImportFileError(f"{path}: benchmarks in several units {sorted(units)}")
        unit = units.pop() if units else "second"
        metric = "time" if unit == "second" else "value"
        notes = [f"{warmups} warm-up values left out (pyperf's warmups)"]
        if skipped_runs:
            notes.append(f"{skipped_runs} calibration runs without values left out")
        return ImportedTrials(
            tool="pyperf",
            source=path.name,
            labels=tuple(labels),
            measures={metric: np.concatenate(values) if values else np.empty(0)},
            metrics=(ImportedMetric(metric, "s" if unit == "second" else unit, "lower"),),
            rounds=rounds,
            positions=positions,
            series=np.zeros(len(labels)),
            orders=("fixed",) * len(labels),
            exit_statuses=np.zeros(len(labels)),
            host=text(common.get("hostname") or "imported", f"{path}: metadata.hostname"),
            facts={
                fact: str(common[key])
                for key, fact in _FACTS.items()
                if isinstance(common.get(key), (str, int, float))
            },
            notes=tuple(notes),
        )
