"""asv's results with samples: ``results/<machine>/<hash>-<env>.json`` written by
``asv run --record-samples``.

asv (https://github.com/airspeed-velocity/asv, ``asv/results.py``, results ``version: 2``)
stores one row per benchmark whose columns ``result_columns`` names (``result``,
``params``, ..., ``stats_number``, ``samples``; trailing empty columns are dropped). A
parameterised benchmark has one entry per combination of its parameters, in
``itertools.product`` order of ``params``. ``samples`` holds each combination's timings
per call (asv_runner's ``time.py`` divides each sample by ``number``): they are imported as
they are, in seconds, with ``iterations`` = ``stats_number``. A combination is a
configuration (``name(p1, p2)``); asv ran its samples in ``rounds`` processes interleaved
with other benchmarks, which the file does not record, so each is one block. Benchmarks
without samples (``track_``/``mem_``, or run without ``--record-samples``) are left out and
counted; a file without any samples is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
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

HINT = "run asv with --record-samples and give results/<machine>/<hash>-<env>.json"


def _column(row: Sequence[Any], columns: list[str], name: str) -> Any:
    i = columns.index(name) if name in columns else len(row)
    return row[i] if i < len(row) else None


class AsvImporter:
    name: ClassVar[str] = "asv"
    description: ClassVar[str] = "asv results with samples (asv run --record-samples)"

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        return b'"result_columns"' in head or (b'"commit_hash"' in head and b'"env_name"' in head)

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        from benchlang.run.importers.blocks import Block, block_trials

        data = fields(load_json(path, "an asv results file", HINT), f"{path}")
        if data.get("version") != 2 or "result_columns" not in data:
            raise ImportFileError(
                f"{path}: not an asv results file of version 2 (no 'result_columns')",
                "asv 0.5 or later writes version 2; `asv update` converts older results",
            )
        columns = [
            text(c, f"{path}: result_columns[{i}]")
            for i, c in enumerate(listed(data["result_columns"], f"{path}: result_columns"))
        ]
        if "samples" not in columns:
            raise ImportFileError(f"{path}: result_columns has no 'samples'", HINT)
        blocks, without = [], 0
        for name, row in fields(data.get("results"), f"{path}: results").items():
            where = f"{path}: results[{name!r}]"
            row = listed(row, where, optional=False)
            samples = _column(row, columns, "samples")
            if samples is None:
                without += 1
                continue
            samples = listed(samples, f"{where}.samples")
            params = [
                [str(v) for v in listed(p, f"{where}.params")]
                for p in listed(_column(row, columns, "params"), f"{where}.params")
            ]
            combos = [", ".join(c) for c in itertools.product(*params)] if params else [""]
            if len(combos) != len(samples):
                raise ImportFileError(
                    f"{where}.samples has {len(samples)} entries for {len(combos)} "
                    "parameter combinations: refused"
                )
            number = listed(_column(row, columns, "stats_number"), f"{where}.stats_number")
            for k, (combo, values) in enumerate(zip(combos, samples, strict=True)):
                if values is None:
                    without += 1
                    continue
                values = measurements(values, f"{where}.samples[{k}]")
                n = number[k] if k < len(number) else None
                iters = (
                    float(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else np.nan
                )
                label = f"{name}({combo})" if combo else name
                blocks.append(
                    Block(label, values, np.full(values.size, iters), np.zeros(values.size, bool))
                )
        notes = [
            "each value is one asv sample, its time per call (seconds); asv ran a benchmark's "
            "samples in several processes interleaved with other benchmarks, not recorded in "
            "the file: each benchmark is one block"
        ]
        if without:
            notes.append(f"{without} benchmarks or parameter combinations without samples left out")
        if not blocks:
            raise ImportFileError(f"{path}: no samples (run asv with --record-samples)", HINT)
        commit = data.get("commit_hash")
        return block_trials(
            "asv",
            path,
            blocks,
            notes,
            host=path.parent.name or "imported",
            facts={"commit": commit} if isinstance(commit, str) else {},
            hint=HINT,
        )
