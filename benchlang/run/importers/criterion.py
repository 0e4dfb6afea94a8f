"""criterion.rs's saved samples: ``target/criterion/<benchmark>/new/sample.json``.

criterion (https://github.com/bheisler/criterion.rs) saves each benchmark's last measurement
as ``SavedSample { sampling_mode, iters, times }`` (``src/lib.rs``; written by
``src/analysis/mod.rs``): sample ``i`` timed ``iters[i]`` iterations in ``times[i]``
nanoseconds (the default wall-clock measurement). The import divides: ``time`` =
``times[i] / iters[i]`` seconds per iteration, ``iterations`` = ``iters[i]``. In ``Flat``
mode every sample has the same count; in ``Linear`` mode (criterion's default for fast
benchmarks) sample ``i`` runs ``i x d`` iterations, so the samples are blocks of unequal size
whose means vary less as they grow: they are imported as equal trials and the note says so
(criterion itself fits a slope through them instead). ``benchmark.json`` beside the sample
names the benchmark (``full_id``); without it the directory does. A file or a directory
(``target/criterion`` or one benchmark's) is read; the benchmarks' own order is not recorded,
so their blocks are in path order.
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
    load_json,
    measurements,
    text,
)

HINT = "give target/criterion (or a benchmark's new/sample.json) after cargo bench"
MODES = ("Linear", "Flat")


def _samples(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    found = sorted(path.glob("**/new/sample.json"))
    if not found:
        raise ImportFileError(
            f"{path}: no */new/sample.json below it: not criterion's output", HINT
        )
    return found


def _label(sample: Path, root: Path) -> str:
    described = sample.parent / "benchmark.json"
    if described.is_file():
        meta = load_json(described, "criterion's benchmark.json", HINT)
        if isinstance(meta, dict) and isinstance(meta.get("full_id"), str):
            return meta["full_id"]
    bench = sample.parent.parent
    if root.is_dir() and bench != root and root in bench.parents:
        return bench.relative_to(root).as_posix()
    return bench.name or sample.stem


class CriterionImporter:
    name: ClassVar[str] = "criterion"
    description: ClassVar[str] = "criterion.rs target/criterion/*/new/sample.json (iters, times)"

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        if path.is_dir():
            return next(iter(path.glob("**/new/sample.json")), None) is not None
        return b'"iters"' in head and b'"times"' in head

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        from benchlang.run.importers.blocks import Block, block_trials, per_iteration

        blocks, linear = [], []
        for sample in _samples(path):
            where = f"{sample}"
            saved = fields(load_json(sample, "criterion's sample.json", HINT), where)
            if "iters" not in saved or "times" not in saved:
                raise ImportFileError(f"{where}: no 'iters' and 'times': not criterion's", HINT)
            iters = measurements(saved["iters"], f"{where}: iters")
            times = measurements(saved["times"], f"{where}: times")
            if iters.size != times.size:
                raise ImportFileError(
                    f"{where}: {iters.size} iters for {times.size} times: refused",
                    "each sample needs its iteration count",
                )
            mode = saved.get("sampling_mode")
            if mode is not None and text(mode, f"{where}: sampling_mode") not in MODES:
                raise ImportFileError(f"{where}: sampling_mode {mode!r}, not Linear or Flat")
            label = _label(sample, path)
            if mode == "Linear" or (mode is None and np.unique(iters).size > 1):
                linear.append(label)
            seconds = per_iteration(times, iters, f"{where}: iters") * 1e-9
            blocks.append(Block(label, seconds, iters, np.zeros(iters.size, dtype=bool)))
        notes = [
            "each value is one sample's time divided by its iterations (criterion's times "
            "in ns / iters), in seconds; the benchmarks' order is not in the files: "
            "blocks in path order"
        ]
        if linear:
            notes.append(
                f"{len(linear)} benchmarks sampled in linear mode ({linear[0]}"
                f"{', ...' if len(linear) > 1 else ''}): sample i ran i x d iterations, so the "
                "samples are blocks of unequal size, imported as equal trials"
            )
        return block_trials("criterion", path, blocks, notes, hint=HINT)
