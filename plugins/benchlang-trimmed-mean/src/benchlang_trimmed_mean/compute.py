"""The ratio of two levels' trimmed means with a percentile bootstrap interval, each level
resampled on its own (Wilcox 2017, §5.3; Efron & Tibshirani 1993, §13.3).

Assumptions: the trials of a level are independent (no clustering is modelled: a spec with
few hosts or rounds should prefer ``median_ratio``); values are positive (else the outcome is
descriptive only).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from benchlang.stats.contract import ComparisonOutcome, ComparisonSample


def trimmed_mean(values: np.ndarray, trim: float, axis: int = -1) -> np.ndarray:
    """Mean of the values left after cutting ``floor(trim * n)`` from each tail (Tukey &
    McLaughlin 1963), along ``axis``."""
    x = np.sort(np.asarray(values, dtype=np.float64), axis=axis)
    n = x.shape[axis]
    g = math.floor(trim * n)
    kept = np.take(x, np.arange(g, n - g), axis=axis)
    return kept.mean(axis=axis)


def trimmed_mean_ratio(sample: ComparisonSample, settings: Mapping[str, Any]) -> ComparisonOutcome:
    trim = float(settings.get("trim", 10.0)) / 100.0
    confidence = float(settings.get("confidence", 95.0))
    replicates = int(settings.get("replicates", 2000))
    ref = sample.reference
    other = next(i for i in range(len(sample.names)) if i != ref)
    a = np.asarray(sample.y[sample.level == ref], dtype=np.float64)
    b = np.asarray(sample.y[sample.level == other], dtype=np.float64)
    notes = (f"{100 * trim:g}% trimmed from each tail",)
    if trim >= 0.5:
        return ComparisonOutcome(
            "trimmed_mean",
            math.nan,
            "ratio",
            notes=notes,
            descriptive_only="trim must be below 50%: nothing would be left",
        )
    ta, tb = float(trimmed_mean(a, trim)), float(trimmed_mean(b, trim))
    estimate = tb / ta if ta > 0 else math.nan
    if (a <= 0).any() or (b <= 0).any():
        return ComparisonOutcome(
            "trimmed_mean",
            estimate,
            "ratio",
            notes=notes,
            descriptive_only="some values are not positive: a ratio has no interval",
        )
    rng = np.random.default_rng(sample.seed)
    boot_a = trimmed_mean(a[rng.integers(0, a.size, (replicates, a.size))], trim)
    boot_b = trimmed_mean(b[rng.integers(0, b.size, (replicates, b.size))], trim)
    tail = (100.0 - confidence) / 200.0
    low, high = np.quantile(boot_b / boot_a, [tail, 1.0 - tail])
    return ComparisonOutcome(
        "trimmed_mean",
        estimate,
        "ratio",
        ci_low=float(low),
        ci_high=float(high),
        confidence=confidence,
        significant=bool(low > 1.0 or high < 1.0),
        notes=notes,
        details={
            "trimmed_means": {"control": ta, "treatment": tb},
            "n": [int(a.size), int(b.size)],
        },
    )
