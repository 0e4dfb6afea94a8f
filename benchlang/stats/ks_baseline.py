"""The background floor of the adaptive stopping rule (Mittal et al., PMBS 2023, §2).

The stopping rule is judged by the Kolmogorov-Smirnov distance between the stopped prefix and
a large ground-truth sample. Two independent long runs of the same benchmark already differ by
some KS distance: the background (other load, frequency, placement) and sampling. No stopping
point can promise a distance to *another* run below that floor, so §2 reads it as what the
threshold can mean. Here: the two-sample KS distance ``D = sup |F_a - F_b|`` (Smirnov 1939),
its p-value (``scipy.stats.ks_2samp``; exact for small samples, asymptotic beyond), and the
critical distance at ``alpha`` from Kolmogorov's limiting law (``c(alpha) sqrt((n+m)/(nm))``):
a D above it says the two runs differ beyond sampling (the background moved between them).
"""

from __future__ import annotations

import math

import attrs
import numpy as np


@attrs.frozen
class KSBaseline:
    """Two long runs' KS distance, its p-value and critical value, against the rule's ``ks``."""

    n_a: int
    n_b: int
    distance: float
    p_value: float
    critical: float
    alpha: float
    threshold: float

    @property
    def differ(self) -> bool:
        """The runs differ beyond sampling at ``alpha`` (the background moved between them)."""
        return self.p_value < self.alpha

    @property
    def attainable(self) -> bool:
        """The rule's threshold lies above the floor: a stop can promise it against another run."""
        return self.threshold > self.distance

    def to_dict(self) -> dict:
        return {
            **attrs.asdict(self),
            "differ": self.differ,
            "attainable": self.attainable,
        }


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """``sup_x |F_a(x) - F_b(x)|``, evaluated at every sample value (the CDFs jump only there)."""
    a, b = np.sort(np.asarray(a, dtype=np.float64)), np.sort(np.asarray(b, dtype=np.float64))
    x = np.concatenate([a, b])
    fa = np.searchsorted(a, x, side="right") / a.size
    fb = np.searchsorted(b, x, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def ks_baseline(
    a: np.ndarray, b: np.ndarray, threshold: float = 0.1, alpha: float = 0.05
) -> KSBaseline:
    """The KS floor of two long runs ``a`` and ``b`` (module docstring)."""
    from scipy.stats import ks_2samp, kstwobign

    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.size < 2 or b.size < 2:
        raise ValueError("each run needs at least two values")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("the runs hold NaN or infinite values")
    n, m = a.size, b.size
    return KSBaseline(
        n_a=int(n),
        n_b=int(m),
        distance=ks_distance(a, b),
        p_value=float(ks_2samp(a, b).pvalue),
        critical=float(kstwobign.isf(alpha) * math.sqrt((n + m) / (n * m))),
        alpha=float(alpha),
        threshold=float(threshold),
    )
