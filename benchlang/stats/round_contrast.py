"""A contrast of builds measured in the same rounds of one session, on the log scale.

Interleaving the builds in random order within rounds (randomized multiple interleaved trials,
Abedi & Brecht, "Conducting Repeatable Experiments in Highly Variable Cloud Computing
Environments", ICPE 2017, §4) puts every build under the same drift of the machine; the
within-round difference of log values cancels the round's (and the session's) level, so the
rounds' contrasts are independent estimates of one log ratio. Their mean gets Student's t
interval with R - 1 degrees of freedom (the paired t interval, e.g. Montgomery, *Design and
Analysis of Experiments*, 8th ed., §2.5.1; Jain, *The Art of Computer Systems Performance
Analysis*, 1991, §13.4.1 for ratios of times on the log scale).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from benchlang.stats._special import t_ppf


@attrs.frozen
class RoundContrast:
    """The mean within-round contrast of log values with its two-sided interval; ``rounds``
    counts the rounds with every build measured (nan when fewer than two)."""

    estimate: float
    lower: float
    upper: float
    rounds: int
    confidence: float

    @property
    def ratio(self) -> tuple[float, float, float]:
        """The contrast as a ratio with its interval (exp of the log scale)."""
        return (math.exp(self.estimate), math.exp(self.lower), math.exp(self.upper))


def round_contrasts(values: np.ndarray, weights: np.ndarray | tuple[float, ...]) -> np.ndarray:
    """``values``: rounds x builds (positive; nan for a missing trial); the contrast
    sum_b w_b log x_rb of each complete round (rounds missing a build the contrast uses are
    dropped)."""
    x = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    used = x[:, w != 0]
    keep = np.all(np.isfinite(used) & (used > 0), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        contrasts: np.ndarray = (
            np.log(np.where(x[keep] > 0, x[keep], np.nan))[:, w != 0] @ w[w != 0]
        )
    return contrasts


def round_contrast(
    values: np.ndarray, weights: np.ndarray | tuple[float, ...], confidence: float = 95.0
) -> RoundContrast:
    """``values``: rounds x builds (positive; nan for a missing trial); the contrast
    sum_b w_b log x_rb of each complete round, their mean and its t interval at
    ``confidence`` percent. Rounds missing a build the contrast uses are dropped."""
    per_round = round_contrasts(values, weights)
    n = int(per_round.size)
    if n < 2:
        return RoundContrast(math.nan, math.nan, math.nan, n, confidence)
    mean = float(per_round.mean())
    se = float(per_round.std(ddof=1)) / math.sqrt(n)
    half = t_ppf(1.0 - (1.0 - confidence / 100.0) / 2.0, n - 1) * se
    return RoundContrast(mean, mean - half, mean + half, n, confidence)
