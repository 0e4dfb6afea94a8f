"""Google Benchmark's JSON (``--benchmark_out=F --benchmark_out_format=json``, or
``--benchmark_format=json``), best with ``--benchmark_repetitions=N``.

Google Benchmark (https://github.com/google/benchmark, ``src/json_reporter.cc``) writes one
row per repetition (``run_type: "iteration"``, its ``repetition_index``) and, with
repetitions, rows of aggregates (``run_type: "aggregate"``: mean, median, stddev, cv, BigO,
RMS). The import keeps the repetitions and drops the aggregates (statistics of the same
values). ``real_time`` and ``cpu_time`` are per iteration already (``GetAdjustedRealTime``
divides by ``iterations``), in ``time_unit``: they become ``time`` and ``cpu_time`` in
seconds, ``iterations`` beside them. Without ``--benchmark_enable_random_interleaving`` a
benchmark's repetitions run back to back: one block (round) per benchmark. A file of
aggregates only (``--benchmark_report_aggregates_only``) holds no repetition to analyse:
refused. A repetition with ``error_occurred`` is a failed trial.
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

HINT = (
    "run the benchmark with --benchmark_repetitions=N --benchmark_out=F --benchmark_out_format=json"
)


_FACTS = {"num_cpus": "cores", "mhz_per_cpu": "cpu_mhz", "library_build_type": "library_build_type"}


def _number(row: Mapping[str, Any], key: str, where: str) -> float:
    value = row.get(key)
    if value is None:
        return float("nan")
    return float(measurements([value], f"{where}.{key}")[0])


class GoogleBenchmarkImporter:
    name: ClassVar[str] = "google-benchmark"
    description: ClassVar[str] = "Google Benchmark JSON (every repetition; aggregates dropped)"

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        return b'"context"' in head and (
            b'"library_build_type"' in head or b'"run_type"' in head or b'"mhz_per_cpu"' in head
        )

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        from benchlang.run.importers.blocks import UNITS, Block, block_trials

        suite = load_json(path, "a Google Benchmark JSON file", HINT)
        if not isinstance(suite, dict) or "benchmarks" not in suite:
            raise ImportFileError(f"{path}: no 'benchmarks': not a Google Benchmark file", HINT)
        context = fields(suite.get("context") or {}, f"{path}: context")
        rows: dict[str, list[tuple[float, float, float, bool]]] = {}
        aggregates = errors = 0
        summarized: set[str] = set()
        repeated: set[str] = set()
        for number, row in enumerate(listed(suite["benchmarks"], f"{path}: benchmarks")):
            where = f"{path}: benchmarks[{number}]"
            row = fields(row, where)
            kind = row.get("run_type", "iteration")
            if kind == "aggregate":
                aggregates += 1
                summarized.add(str(row.get("run_name")))
                continue
            if kind != "iteration":
                raise ImportFileError(f"{where}.run_type is {text(kind, where)!r}: refused")
            name = text(row.get("name"), f"{where}.name")
            repeated.add(str(row.get("run_name", name)))
            unit = text(row.get("time_unit", "ns"), f"{where}.time_unit")
            if unit not in UNITS:
                raise ImportFileError(f"{where}.time_unit is {unit!r}, not one of ns, us, ms, s")
            failed = row.get("error_occurred") is True
            errors += failed
            real = np.nan if failed else _number(row, "real_time", where) * UNITS[unit]
            cpu = np.nan if failed else _number(row, "cpu_time", where) * UNITS[unit]
            rows.setdefault(name, []).append((real, cpu, _number(row, "iterations", where), failed))
        alone = sorted(summarized - repeated)
        if not rows or alone:
            raise ImportFileError(
                f"{path}: aggregate rows and no repetition"
                f"{f' of {alone[0]}' if rows else ''}: made with "
                "--benchmark_report_aggregates_only, which leaves only statistics of the "
                "repetitions: refused",
                "run again without --benchmark_report_aggregates_only (the console can keep "
                "--benchmark_display_aggregates_only)",
            )
        blocks = [
            Block(
                name,
                np.array([r[0] for r in reps]),
                np.array([r[2] for r in reps]),
                np.array([r[3] for r in reps]),
                np.array([r[1] for r in reps]),
            )
            for name, reps in rows.items()
        ]
        notes = [
            f"{aggregates} aggregate rows (mean, median, stddev, ...) dropped; each repetition "
            "is one trial: its time per iteration, as Google Benchmark reported it"
        ]
        if errors:
            notes.append(f"{errors} repetitions reported an error: failed trials")
        host = context.get("host_name")
        return block_trials(
            "google-benchmark",
            path,
            blocks,
            notes,
            host=host if isinstance(host, str) and host else "imported",
            facts={
                fact: str(context[key])
                for key, fact in _FACTS.items()
                if isinstance(context.get(key), (str, int, float))
            },
            hint=HINT,
        )
