"""Suites that time each benchmark in one block: a benchmark's samples become one round.

pytest-benchmark, Google Benchmark, criterion.rs and asv run all samples of one benchmark,
then all of the next (asv in a few processes, interleaved across benchmarks, which its file
does not record). Each sample is the mean of one timed batch of iterations, as the tool
reports it. The import keeps that: one round per benchmark, its samples at positions
0..n-1 in a fixed order, the per-iteration time in seconds as ``time`` and the batch size
as ``iterations``; comparing benchmarks then assumes no drift between their blocks
(docs/importing.md, as for hyperfine).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import numpy as np

from benchlang.run.importers.base import ImportedMetric, ImportedTrials, ImportFileError

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


@attrs.frozen
class Block:
    """One benchmark's samples in the order it ran them: per-iteration seconds, the number
    of iterations each sample timed (NaN when the file does not say), failed samples."""

    label: str
    seconds: np.ndarray
    iterations: np.ndarray
    failed: np.ndarray
    cpu_seconds: np.ndarray | None = None


def block_trials(
    tool: str,
    path: Path,
    blocks: Sequence[Block],
    notes: Sequence[str],
    *,
    host: str = "imported",
    facts: Mapping[str, str] | None = None,
    hint: str | None = None,
) -> ImportedTrials:
    """The table of trials for benchmarks timed in blocks: one round per block."""
    blocks = [b for b in blocks if b.seconds.size]
    if not blocks:
        raise ImportFileError(f"{path}: no samples of any benchmark: nothing to import", hint)
    sizes = [b.seconds.size for b in blocks]
    measures = {
        "time": np.concatenate([b.seconds for b in blocks]),
        "iterations": np.concatenate([b.iterations for b in blocks]),
    }
    if any(b.cpu_seconds is not None for b in blocks):
        measures["cpu_time"] = np.concatenate(
            [b.cpu_seconds if b.cpu_seconds is not None else np.full(n, np.nan)
             for b, n in zip(blocks, sizes, strict=True)]
        )  # fmt: skip
    n = sum(sizes)
    failed = np.concatenate([b.failed for b in blocks])
    return ImportedTrials(
        tool=tool,
        source=path.name,
        labels=np.repeat(np.array([b.label for b in blocks], dtype=object), sizes),
        measures=measures,
        metrics=(ImportedMetric("time", "s", "lower"),),
        rounds=np.repeat(np.arange(len(blocks)), sizes),
        positions=np.concatenate([np.arange(k) for k in sizes]),
        series=np.zeros(n),
        orders=np.full(n, "fixed", dtype=object),
        exit_statuses=np.where(failed, 1, 0),
        host=host,
        facts=dict(facts or {}),
        notes=tuple(notes),
    )


def per_iteration(totals: np.ndarray, iterations: np.ndarray, where: str) -> np.ndarray:
    """A batch's total divided by its iteration count, refusing a count that is not a
    positive whole number (a sample of zero iterations measured nothing)."""
    bad = ~((iterations >= 1) & (iterations == np.round(iterations)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ImportFileError(
            f"{where}[{i}] is {iterations[i]:g}, not a positive whole number of iterations: refused"
        )
    return totals / iterations
