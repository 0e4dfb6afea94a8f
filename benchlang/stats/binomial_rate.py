"""A rate counted over independent runs (false positives of A/A experiments, simulated or real)
with its exact binomial interval, and the band an honest test's rate falls in.

Clopper & Pearson, "The use of confidence or fiducial limits illustrated in the case of the
binomial", Biometrika 26(4), 1934: the interval inverts two one-sided binomial tests, so it
covers at least its confidence for every rate (conservative where the Wilson interval is not).
Bakshy & Frachtenberg (WWW 2015, §6, Fig. 8) judge the empirical Type I error of A/A runs
against the binomial band of the nominal level.
"""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen
class RateInterval:
    """``count`` of ``runs`` with the Clopper–Pearson interval of the rate at ``confidence``."""

    count: int
    runs: int
    rate: float
    low: float
    high: float
    confidence: float

    def to_dict(self) -> dict[str, float | int | str]:
        """JSON-ready; ``confidence`` in percent, as every other interval's in benchlang's JSON."""
        return {
            "count": self.count,
            "runs": self.runs,
            "rate": self.rate,
            "low": self.low,
            "high": self.high,
            "confidence": round(100 * self.confidence, 10),
            "method": "Clopper-Pearson",
        }


def clopper_pearson(count: int, runs: int, confidence: float = 0.95) -> RateInterval:
    """The exact interval of a binomial rate (Clopper & Pearson 1934): the ``(1-c)/2`` quantile
    of Beta(k, n-k+1) and the ``(1+c)/2`` quantile of Beta(k+1, n-k); 0 and 1 at the ends."""
    from scipy.stats import beta

    if int(runs) != runs or int(count) != count or runs < 1 or not 0 <= count <= runs:
        raise ValueError("need whole numbers 0 <= count <= runs and runs >= 1")
    count, runs = int(count), int(runs)
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie in (0, 1)")
    tail = (1 - confidence) / 2
    low = 0.0 if count == 0 else float(beta.ppf(tail, count, runs - count + 1))
    high = 1.0 if count == runs else float(beta.ppf(1 - tail, count + 1, runs - count))
    return RateInterval(count, runs, count / runs, low, high, confidence)


def binomial_band(runs: np.ndarray | int, rate: float, confidence: float = 0.95) -> np.ndarray:
    """The central ``confidence`` range of the observed rate of ``runs`` independent runs whose
    true rate is ``rate`` (Binomial quantiles / runs), shape ``(..., 2)``: an honest test at
    level ``rate`` lands inside it with at least that probability (Bakshy & Frachtenberg Fig. 8).
    """
    from scipy.stats import binom

    n = np.asarray(runs, dtype=float)
    if n.size == 0 or not (np.isfinite(n).all() and (n >= 1).all() and (n == np.floor(n)).all()):
        raise ValueError("runs must be whole numbers >= 1")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must lie in [0, 1], got {rate!r}")
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie in (0, 1)")
    tail = (1 - confidence) / 2
    low = binom.ppf(tail, n, rate) / n
    high = binom.ppf(1 - tail, n, rate) / n
    return np.stack([low, high], axis=-1)
