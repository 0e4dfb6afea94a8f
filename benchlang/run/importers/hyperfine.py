"""hyperfine's ``--export-json``: every run's wall time and exit code per command.

hyperfine (https://github.com/sharkdp/hyperfine) runs each command's runs back to back, so the
import keeps that execution order: one round per command, its runs at positions 0..n-1, a
fixed order; a command's parameters (``-P``/``-L``) are in its text, its label. The file holds user and
system time as means only, so they are not per-trial measures (said in the notes); newer
hyperfine versions' per-run ``memory_usage_byte`` becomes ``max_rss`` (KiB). An exit code of
``null`` (hyperfine's ``None``: the run was killed by a signal) is a failed run (-1). A time
that cannot be (not a number, negative, infinite or NaN), an exit-code or memory list whose
length is not the number of times, a field of the wrong JSON type are refused, naming the
field and its index (docs/importing.md).
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
    load_json,
    measurements,
    whole_numbers,
)

NOT_HYPERFINE = "an export of hyperfine --export-json"
HINT = "export with hyperfine --export-json (hyperfine 1.11 or later)"


def _load(path: Path) -> list[Any]:
    data = load_json(path, NOT_HYPERFINE, HINT)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ImportFileError(f"{path}: no 'results' list; not {NOT_HYPERFINE}", HINT)
    return data["results"]


class HyperfineImporter:
    name: ClassVar[str] = "hyperfine"
    description: ClassVar[str] = "hyperfine --export-json (every run's time and exit code)"

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
        return text.startswith(b"{") and b'"results"' in text

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        labels, times, codes, memory, rounds, positions = [], [], [], [], [], []
        missing_codes = 0
        for block, result in enumerate(_load(path)):
            where = f"{path}: results[{block}]"
            result = fields(result, where)
            command, runs = result.get("command"), result.get("times")
            if not isinstance(command, str) or runs is None:
                raise ImportFileError(f"{where} has no 'command' or 'times' list", HINT)
            runs = measurements(runs, f"{where}.times")
            n = runs.size
            if result.get("exit_codes") is None:
                missing_codes += 1
                exits = np.zeros(n, dtype=np.int64)
            else:
                exits = whole_numbers(
                    result["exit_codes"], f"{where}.exit_codes", length=n, none=-1
                )
            rss = np.full(n, np.nan)
            if result.get("memory_usage_byte") is not None:
                rss = measurements(result["memory_usage_byte"], f"{where}.memory_usage_byte")
                if rss.size != n:
                    raise ImportFileError(
                        f"{where}.memory_usage_byte has {rss.size} entries for {n} runs: refused"
                    )
                rss = rss / 1024.0
            labels.append(np.full(n, command, dtype=object))
            times.append(runs)
            codes.append(exits)
            memory.append(rss)
            rounds.append(np.full(n, block, dtype=np.int64))
            positions.append(np.arange(n, dtype=np.int64))
        label = np.concatenate(labels) if labels else np.empty(0, dtype=object)
        measures = {"time": np.concatenate(times) if times else np.empty(0)}
        rss_all = np.concatenate(memory) if memory else np.empty(0)
        if not np.all(np.isnan(rss_all)):
            measures["max_rss"] = rss_all
        return ImportedTrials(
            tool="hyperfine",
            source=path.name,
            labels=label,
            measures=measures,
            metrics=(ImportedMetric("time", "s", "lower"),),
            rounds=np.concatenate(rounds) if rounds else np.empty(0, dtype=np.int64),
            positions=np.concatenate(positions) if positions else np.empty(0, dtype=np.int64),
            series=np.zeros(label.size),
            orders=np.full(label.size, "fixed", dtype=object),
            exit_statuses=np.concatenate(codes) if codes else np.empty(0, dtype=np.int64),
            notes=(
                "user and system time are per-command means in hyperfine's file: not imported",
                *(
                    [
                        f"{missing_codes} commands without exit codes (hyperfine < 1.11): "
                        "their runs counted as successes"
                    ]
                    if missing_codes
                    else []
                ),
            ),
        )
