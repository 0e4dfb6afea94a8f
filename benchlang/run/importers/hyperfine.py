"""hyperfine's ``--export-json``: every run's wall time and exit code per command.

hyperfine (https://github.com/sharkdp/hyperfine) runs each command's runs back to back, so the
import keeps that execution order: one round per command, its runs at positions 0..n-1, a
fixed order; a command's parameters (``-P``/``-L``) are in its text, its label. The file holds user and
system time as means only, so they are not per-trial measures (said in the notes); newer
hyperfine versions' per-run ``memory_usage_byte`` becomes ``max_rss`` (KiB).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchlang.run.importers.base import ImportedMetric, ImportedTrials, ImportFileError


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ImportFileError(f"{path}: not a JSON file: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ImportFileError(
            f"{path}: no 'results' list; not an export of hyperfine --export-json"
        )
    return data


class HyperfineImporter:
    name: ClassVar[str] = "hyperfine"
    description: ClassVar[str] = "hyperfine --export-json (every run's time and exit code)"

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        text = head.lstrip()
        return text.startswith(b"{") and b'"results"' in text

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        results = _load(path)["results"]
        labels: list[str] = []
        times: list[float] = []
        codes: list[int] = []
        memory: list[float] = []
        rounds: list[int] = []
        positions: list[int] = []
        for block, result in enumerate(results):
            try:
                command = str(result["command"])
                runs = [float(t) for t in result["times"]]
            except (KeyError, TypeError, ValueError):
                raise ImportFileError(
                    f"{path}: result {block + 1} has no 'command' or 'times' list",
                    "export with hyperfine --export-json (hyperfine 1.11 or later)",
                ) from None
            exits = result.get("exit_codes") or [0] * len(runs)
            rss = result.get("memory_usage_byte")
            for i, seconds in enumerate(runs):
                labels.append(command)
                times.append(seconds)
                code = exits[i] if i < len(exits) else None
                codes.append(0 if code is None else int(code))
                memory.append(rss[i] / 1024.0 if rss and i < len(rss) else np.nan)
                rounds.append(block)
                positions.append(i)
        measures = {"time": np.array(times)}
        if not np.all(np.isnan(memory)):
            measures["max_rss"] = np.array(memory)
        return ImportedTrials(
            tool="hyperfine",
            source=path.name,
            labels=tuple(labels),
            measures=measures,
            metrics=(ImportedMetric("time", "s", "lower"),),
            rounds=rounds,
            positions=positions,
            series=np.zeros(len(labels)),
            orders=("fixed",) * len(labels),
            exit_statuses=codes,
            notes=("user and system time are per-command means in hyperfine's file: not imported",),
        )
