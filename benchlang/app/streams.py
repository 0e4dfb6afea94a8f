"""Judging the adaptive stopping rule on recorded streams (Mittal et al., PMBS '23, §2.1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benchlang.csvrows import read_numeric_column
from benchlang.errors import UserError

if TYPE_CHECKING:
    from benchlang.stats.stopping_eval import StreamEvaluation


def read_stream(path: str | Path, column: str | None = None) -> np.ndarray:
    """One stream from a JSON list of numbers or a CSV column (header row required); every
    sample finite: the whole stream is the ground truth the stopped prefix is judged by."""
    path = Path(path)
    if path.suffix.lower() != ".json":
        return read_numeric_column(path, column, header=True, allow_missing=False)[0]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: invalid JSON: {err}") from None
    if not isinstance(data, list):
        raise UserError(f"{path}: expected a JSON list of numbers")
    try:
        x = np.array([float(v) for v in data], dtype=float)
    except (TypeError, ValueError):
        raise UserError(f"{path}: the list holds a value that is not a number") from None
    if not np.all(np.isfinite(x)):
        raise UserError(f"{path}: the list holds NaN or infinite values")
    return x


def _check(ks: float, min_n: int, max_n: int) -> None:
    if not 0.0 < ks < 1.0:
        raise UserError(f"--ks must lie in (0, 1), got {ks}")
    if not 3 <= min_n <= max_n:
        raise UserError(f"need 3 <= --min <= --max, got {min_n} and {max_n}")


def evaluate_streams(
    paths: list[str], column: str | None, ks: float, min_n: int, max_n: int
) -> list[tuple[Path, StreamEvaluation]]:
    """Replay each stream sample by sample through the adaptive rule; where it stopped, the
    KS distance of the stopped prefix to the whole stream and the optimal stopping point."""
    from benchlang.stats.stopping import AdaptiveStop
    from benchlang.stats.stopping_eval import MIN_STREAM, evaluate

    _check(ks, min_n, max_n)
    rule = AdaptiveStop(ks=ks, min_n=min_n, max_n=max_n)
    results = []
    for name in paths:
        path = Path(name)
        x = read_stream(path, column)
        if x.size < MIN_STREAM:
            raise UserError(
                f"{path}: {x.size} samples; a stream needs at least {MIN_STREAM}",
                hint="the full stream is the ground truth the stopped prefix is compared with",
            )
        results.append((path, evaluate(x, rule, ks)))
    return results


def synthetic(names: str, length: int, seed: int) -> list[tuple[str, np.ndarray]]:
    """``--synthetic``: the named streams of ``stats.stopping_eval.synthetic_streams`` ("all",
    or names separated by commas), ``length`` samples each, seeded: a ground truth known by
    construction instead of a recorded run."""
    from benchlang.stats.stopping_eval import MIN_STREAM, SYNTHETIC_CRITERIA, synthetic_streams

    every = list(SYNTHETIC_CRITERIA)
    wanted = every if names.strip() == "all" else [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in SYNTHETIC_CRITERIA]
    if unknown or not wanted:
        raise UserError(
            f"no synthetic stream named {', '.join(unknown) or repr(names)}",
            hint="--synthetic all, or some of: " + ", ".join(every),
        )
    if length < MIN_STREAM:
        raise UserError(
            f"--length {length}: a synthetic stream needs at least {MIN_STREAM} samples",
            hint="the full stream is the ground truth the stopped prefix is compared with",
        )
    streams = synthetic_streams(seed, length)
    return [(name, streams[name]) for name in wanted]


def evaluate_synthetic(
    names: str, length: int, seed: int, ks: float, min_n: int, max_n: int
) -> list[tuple[str, np.ndarray, StreamEvaluation]]:
    """Replay each synthetic stream through the adaptive rule, as ``evaluate_streams`` does a
    recorded one."""
    from benchlang.stats.stopping import AdaptiveStop
    from benchlang.stats.stopping_eval import evaluate

    _check(ks, min_n, max_n)
    rule = AdaptiveStop(ks=ks, min_n=min_n, max_n=max_n)
    return [(name, x, evaluate(x, rule, ks)) for name, x in synthetic(names, length, seed)]
