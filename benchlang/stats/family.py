"""One family of tests per run: multiplicity adjustments of p-values and the matching levels of
the intervals printed beside them (docs/statistics.md, "One family per run").

- Holm, Scand. J. Statist. 6(2) 1979, 65-70: the step-down adjustment, family-wise error
  (FWER) at most alpha under any dependence. It has no simultaneous intervals of its own, so
  the intervals printed beside its verdicts are Bonferroni's at 1 - alpha/m (Dunn, JASA 56,
  1961), which Holm's verdicts include: Holm may reject where such an interval covers no change.
- Benjamini & Hochberg, JRSS B 57(1) 1995, 289-300: the step-up adjustment, false discovery
  rate (FDR) at most alpha for independent tests and for positively dependent ones (PRDS:
  Benjamini & Yekutieli, Ann. Statist. 29(4) 2001, Theorem 1.2); not guaranteed under negative
  dependence. Its intervals are the false-coverage-rate intervals of Benjamini & Yekutieli,
  JASA 100(469) 2005, §3 (Definition 1): the R selected tests at level 1 - R alpha/m.
- ``none``: each test at alpha, no control across the family (said so).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

CORRECTIONS = ("holm", "bh", "none")
"""The family's p-value corrections; holm is the default."""


@attrs.frozen
class FamilyAdjustment:
    """A family of ``m`` tests: raw and adjusted p-values, which are rejected at ``alpha``
    (a fraction) and the confidence (percent) of every test's interval. ``interval`` names that
    interval (Bonferroni simultaneous, FCR, or each at its own level)."""

    correction: str
    alpha: float
    p_values: tuple[float, ...]
    p_adjusted: tuple[float, ...]
    rejected: tuple[bool, ...]
    interval_confidence: float
    interval: str

    @property
    def m(self) -> int:
        return len(self.p_values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "correction": self.correction,
            "alpha": self.alpha,
            "tests": self.m,
            "p_values": list(self.p_values),
            "p_adjusted": list(self.p_adjusted),
            "rejected": list(self.rejected),
            "interval_confidence": self.interval_confidence,
            "interval": self.interval,
        }


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979): sorted p_(i) times (m - i + 1), running
    maximum, capped at 1."""
    p = np.asarray(p, dtype=np.float64)
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * (m - np.arange(m))
    stepped = np.minimum(np.maximum.accumulate(ranked, axis=-1), 1.0)
    out = np.empty_like(stepped)
    np.put_along_axis(out, order, stepped, axis=-1)
    return out


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (1995): sorted p_(i) times m / i, running
    minimum from the largest, capped at 1."""
    p = np.asarray(p, dtype=np.float64)
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * m / np.arange(1, m + 1)
    stepped = np.minimum(np.flip(np.minimum.accumulate(np.flip(ranked, -1), axis=-1), -1), 1.0)
    out = np.empty_like(stepped)
    np.put_along_axis(out, order, stepped, axis=-1)
    return out


def bonferroni_confidence(alpha: float, m: int) -> float:
    """The per-test confidence (percent) of Bonferroni's simultaneous intervals, 1 - alpha/m."""
    return 100.0 * (1.0 - alpha / max(m, 1))


def fcr_confidence(alpha: float, m: int, selected: int) -> float:
    """The confidence (percent) of Benjamini & Yekutieli's (2005) FCR intervals for ``selected``
    of ``m`` tests, 1 - R alpha/m; with nothing selected none is needed and Bonferroni's
    level is returned."""
    return 100.0 * (1.0 - max(selected, 1) * alpha / max(m, 1))


def adjust(p_values: np.ndarray, correction: str = "holm", alpha: float = 0.05) -> FamilyAdjustment:
    """Adjust one family's p-values (a missing one counts as 1: never rejected) and give the
    level of the intervals that agree with the verdicts (see the module docstring)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; corrections: {CORRECTIONS}")
    p = np.asarray(p_values, dtype=np.float64)
    p = np.where(np.isfinite(p), np.clip(p, 0.0, 1.0), 1.0)
    m = int(p.size)
    if correction == "holm":
        adjusted = holm(p) if m else p
        confidence, interval = bonferroni_confidence(alpha, m), "Bonferroni simultaneous"
    elif correction == "bh":
        adjusted = benjamini_hochberg(p) if m else p
        r = int((adjusted <= alpha).sum())
        confidence = fcr_confidence(alpha, m, r)
        interval = f"false-coverage-rate (Benjamini & Yekutieli 2005, R = {r})"
    else:
        adjusted, confidence, interval = p, 100.0 * (1.0 - alpha), "each at its own level"
    return FamilyAdjustment(
        correction,
        float(alpha),
        tuple(float(x) for x in p),
        tuple(float(x) for x in adjusted),
        tuple(bool(x) for x in adjusted <= alpha),
        float(confidence),
        interval,
    )
