"""Stein's two-stage procedure: the number of rounds sized from a pilot's spread, fixed before
the comparison's data is judged, with an interval whose coverage holds exactly.

Stein, "A two-sample test for a linear hypothesis whose power is independent of the variance",
*Annals of Mathematical Statistics* 16(3), 1945, pp. 243-258: a pilot of n0 observations gives
the variance s0^2 (n0 - 1 degrees of freedom); the total n is a function of s0 alone; the mean of
all n observations then satisfies (mean - mu) sqrt(n) / s0 ~ t with n0 - 1 degrees of freedom
exactly (for normal data the mean of the second stage and the pilot's mean are independent of
s0), whatever n was chosen. The size for a one-sided test at alpha with power 1 - beta against
a shift delta is n = max(n0, ceil((t_{1-alpha, n0-1} + t_{1-beta, n0-1})^2 s0^2 / delta^2))
(Stein 1945, §2; in this power form: Hahn & Meeker, *Statistical Intervals*, 1991, §8.4;
Desu & Raghavarao, *Sample Size Methodology*, 1990, §3.2). A cap on n keeps the coverage (n
still depends on s0 alone) and gives up only power. Nothing looks at the estimate: no stopping
on the verdict (optional stopping).

Two guards where Stein's normal, stationary model fails (found by a second reader): a measure
that rarely changes (a count) can give a pilot with no spread at all, and a second stage run
later on a shared machine can be noisier than the pilot. The interval used is the wider of
Stein's and the ordinary paired t over all n rounds (n - 1 df); the wider of two intervals
covers at least as often as either, so Stein's exact coverage is kept where it holds, and a
zero pilot spread never gives a zero-width interval when the later rounds moved. The equivalence
verdict (TOST) needs both one-sided tests to pass, so its power is sized with beta split over
the two sides: t_{1-beta/2} in place of t_{1-beta} (Schuirmann 1987; Chow & Liu, *Design and
Analysis of Bioavailability and Bioequivalence Studies*, 3rd ed. 2008, §5.3).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from benchlang.stats._special import t_ppf
from benchlang.stats.round_contrast import RoundContrast


@attrs.frozen
class TwoStageSize:
    """The rounds Stein's procedure chose from the pilot: ``required`` before the cap,
    ``rounds`` after it (at least the pilot's), ``capped`` when the cap bound it."""

    pilot: int
    sd: float
    """The largest pilot standard deviation over the rows (the rows share the rounds)."""
    delta: float
    alpha: float
    power: float
    required: int
    rounds: int
    cap: int | None
    capped: bool


def stein_rounds(
    pilot_sd: np.ndarray | float,
    pilot: int,
    delta: float,
    alpha: float,
    power: float = 0.8,
    cap: int | None = None,
) -> TwoStageSize:
    """Rounds for the one-sided tests at ``alpha`` (per row: the family's share) with
    ``power`` against a shift ``delta`` (log scale) and for the equivalence verdict (both
    one-sided tests passing, so beta split over two sides: module docstring), from the rows'
    pilot standard deviations (``pilot`` rounds each; the largest governs, so every row gets
    at least its power). ``cap``: the most rounds allowed (the pilot's included)."""
    sd = np.asarray(pilot_sd, dtype=np.float64).reshape(-1)
    sd = sd[np.isfinite(sd)]
    worst = float(sd.max()) if sd.size else math.nan
    if pilot < 2 or not math.isfinite(worst):
        required = pilot
    else:
        t = t_ppf(1.0 - alpha, pilot - 1) + t_ppf(1.0 - (1.0 - power) / 2.0, pilot - 1)
        required = max(pilot, math.ceil((t * worst / delta) ** 2 - 1e-9))
    rounds = required if cap is None else max(pilot, min(required, cap))
    return TwoStageSize(pilot, worst, delta, alpha, power, required, rounds, cap, rounds < required)


def stein_interval(per_round: np.ndarray, pilot: int, confidence: float = 95.0) -> RoundContrast:
    """The two-sided interval at ``confidence`` percent for the mean of ``per_round`` (the
    contrasts of all rounds, the pilot's first): the mean of all of them with the standard
    error s0 / sqrt(n), s0 from the first ``pilot`` only, and t with pilot - 1 degrees of
    freedom (Stein 1945); widened to the paired t over all n rounds where that is wider (the
    module's guards). A pilot under 2 rounds, or n under 2, gives nan."""
    x = np.asarray(per_round, dtype=np.float64)
    n = int(x.size)
    first = x[: min(pilot, n)]
    if first.size < 2 or n < 2:
        return RoundContrast(math.nan, math.nan, math.nan, n, confidence)
    mean = float(x.mean())
    upper = 1.0 - (1.0 - confidence / 100.0) / 2.0
    stein = t_ppf(upper, first.size - 1) * float(first.std(ddof=1))
    paired = t_ppf(upper, n - 1) * float(x.std(ddof=1))
    half = max(stein, paired) / math.sqrt(n)
    return RoundContrast(mean, mean - half, mean + half, n, confidence)
