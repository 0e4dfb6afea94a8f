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
        labels, times, codes, memory, rounds, positions = [], [], [], [], [], []
        for block, result in enumerate(results):
            try:
                command = str(result["command"])
                runs = np.asarray(result["times"], dtype=float).ravel()
            except (KeyError, TypeError, ValueError):
                raise ImportFileError(
                    f"{path}: result {block + 1} has no 'command' or 'times' list",
                    "export with hyperfine --export-json (hyperfine 1.11 or later)",
                ) from None
            n = runs.size
            exits = [0 if c is None else int(c) for c in (result.get("exit_codes") or [])[:n]]
            rss = np.asarray(result.get("memory_usage_byte") or [], dtype=float)[:n] / 1024.0
            labels.append(np.full(n, command, dtype=object))
            times.append(runs)
            codes.append(np.pad(np.asarray(exits, dtype=np.int64), (0, n - len(exits))))
            memory.append(np.pad(rss, (0, n - rss.size), constant_values=np.nan))
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
            notes=("user and system time are per-command means in hyperfine's file: not imported",),
        )
