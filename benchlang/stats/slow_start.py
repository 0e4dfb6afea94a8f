"""Whether the first trials of a configuration were far slower than the rest: the cold start a
warm-up would have absorbed.

hyperfine's rule (src/benchmark/mod.rs, src/outlier_detection.rs; Iglewicz & Hoaglin, *How to
Detect and Handle Outliers*, ASQC 1993): the first run is flagged when its modified Z-score
``(x - median) / MAD`` over the command's runs exceeds ``1.4826 · 10``, ten robust standard
deviations, on the raw times. By simulation (benchmarks/sim_slow_start.py) that fires on
i.i.d. log-normal times with sd 1 in 16% of runs of 10 configurations, and sees a first trial
twice as slow (sd 0.1) in under half the runs. Here, calibrated the same way:

* on log values, so that "twice as slow" is equally far at every spread and scale;
* five robust standard deviations (``1.4826 · MAD`` of the logs) above the median;
* and apart from the rest: the leading trials' excess over the median at least twice that of
  every later trial, which a random outlier among many seldom is.

``leading`` counts the consecutive first trials above the threshold (the warm-up to suggest).
Where the MAD is 0 (many equal values) hyperfine divides by machine epsilon, which flags any
first value above a constant rest; here the mean absolute deviation times 1.2533 stands in (its
ratio to the standard deviation for normal data), and no note when that is 0 too. Its rate per
run on i.i.d. values and its power: docs/statistics.md, "Slow first trials".
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

THRESHOLD = 5.0
"""Robust standard deviations of the logs above their median (hyperfine: 10, on raw times)."""
APART = 2.0
"""The leading trials' excess over the median, against every later trial's, at least this."""
MIN_TRIALS = 5
"""Fewer values than this and no note (a median and MAD of fewer say little)."""


@attrs.frozen
class SlowStart:
    """``leading`` first trials (0: none) were far slower than the rest; ``first`` is the first
    trial's value, ``median`` that of every value, ``score`` the first one's robust Z-score."""

    leading: int
    first: float
    median: float
    score: float
    trials: int
    threshold: float = THRESHOLD

    @property
    def flagged(self) -> bool:
        return self.leading > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "leading": self.leading,
            "first": self.first,
            "median": self.median,
            "score": self.score if np.isfinite(self.score) else None,
            "trials": self.trials,
            "threshold": self.threshold,
        }


def leading_slow(
    values: np.ndarray, threshold: float = THRESHOLD, apart: float = APART
) -> tuple[np.ndarray, np.ndarray]:
    """For every row of ``values`` (R, n) (positive, in the order they ran): how many leading
    values are far slower than the rest (0 for none) and the first one's robust Z-score of
    the logs (nan when there is no spread to scale by)."""
    y = np.log(np.atleast_2d(np.asarray(values, dtype=float)))
    median = np.median(y, axis=1, keepdims=True)
    excess = y - median
    dev = np.abs(excess)
    scale = 1.4826 * np.median(dev, axis=1, keepdims=True)
    scale = np.where(scale > 0, scale, 1.2533 * dev.mean(axis=1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(scale > 0, excess / scale, np.nan)
    above = z > threshold
    m = np.where(above.all(axis=1), y.shape[1], np.argmin(above, axis=1))
    position = np.arange(y.shape[1])
    lead = position < m[:, None]
    slowest_lead = np.where(lead, excess, np.inf).min(axis=1)
    rest = np.where(lead, -np.inf, excess).max(axis=1)
    apart_enough = slowest_lead >= apart * np.maximum(rest, 0.0)
    return np.where((m > 0) & apart_enough, m, 0), z[:, 0]


def slow_start(values: np.ndarray) -> SlowStart | None:
    """The slow-start check of one configuration's values in the order they ran (non-finite
    and non-positive values left out); None with fewer than ``MIN_TRIALS`` values."""
    x = np.asarray(values, dtype=float).ravel()
    x = x[np.isfinite(x) & (x > 0)]
    if x.size < MIN_TRIALS:
        return None
    leading, score = leading_slow(x[None, :])
    return SlowStart(int(leading[0]), float(x[0]), float(np.median(x)), float(score[0]), x.size)
