"""pyperf's JSON (``pyperf ... -o FILE``): every value of every worker run, with metadata.

pyperf (https://github.com/psf/pyperf) runs each benchmark in several worker processes
("runs"), each yielding a few values after its warm-ups. The import makes each benchmark a
configuration, each worker run a round and its values the trials at positions 0..n-1 (a
fixed order, as pyperf ran them). Warm-ups and calibration runs (runs without values) are
left out and counted in the notes. The suite's metadata (CPU model, count and frequency,
platform, Python, ASLR, ...) become host facts. Values are seconds for ``unit: second``
(metric ``time``), else the metric is ``value`` in pyperf's unit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchlang.run.importers.base import ImportedMetric, ImportedTrials, ImportFileError

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
        text = head.lstrip()
        return text.startswith(b"{") and b'"benchmarks"' in text

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        try:
            suite = json.loads(path.read_text(encoding="utf-8"))
            benchmarks = suite["benchmarks"]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as err:
            raise ImportFileError(
                f"{path}: not a pyperf JSON file ({type(err).__name__}: {err})",
                "write it with pyperf's -o FILE (gzip files: gunzip them first)",
            ) from None
        common = suite.get("metadata") or {}
        labels: list[str] = []
        values: list[float] = []
        rounds: list[int] = []
        positions: list[int] = []
        units = set()
        skipped_runs = warmups = 0
        round_index = 0
        for number, benchmark in enumerate(benchmarks):
            meta = {**common, **(benchmark.get("metadata") or {})}
            name = str(meta.get("name") or f"benchmark{number + 1}")
            units.add(str(meta.get("unit", "second")))
            for run in benchmark.get("runs") or []:
                warmups += len(run.get("warmups") or [])
                run_values = run.get("values") or []
                if not run_values:
                    skipped_runs += 1
                    continue
                for i, value in enumerate(run_values):
                    labels.append(name)
                    values.append(float(value))
                    rounds.append(round_index)
                    positions.append(i)
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
            measures={metric: np.array(values)},
            metrics=(ImportedMetric(metric, "s" if unit == "second" else unit, "lower"),),
            rounds=rounds,
            positions=positions,
            series=np.zeros(len(labels)),
            orders=("fixed",) * len(labels),
            exit_statuses=np.zeros(len(labels)),
            host=str(common.get("hostname") or "imported"),
            facts={fact: str(common[key]) for key, fact in _FACTS.items() if key in common},
            notes=tuple(notes),
        )
