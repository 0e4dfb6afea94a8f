"""The ratio of medians with a clustered interval, and the TOST equivalence gate on it, as
comparison methods: :func:`benchlang.stats.two_sample.ratio_of_percentiles` (the stratified
multistage bootstrap that ``benchlang diff`` uses; Davison & Hinkley 1997, §3.2, §3.8;
Hesterberg 2015, §4.2) on the two levels' trials, each level resampled on its own through its
host, series and round; :func:`benchlang.stats.equivalence.equivalence` (Schuirmann 1987) on
the (1 - 2 alpha) interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from benchlang.stats.contract import ComparisonOutcome, ComparisonSample
from benchlang.stats.equivalence import equivalence as tost
from benchlang.stats.equivalence import tost_confidence
from benchlang.stats.two_sample import RatioInterval, ratio_of_percentiles


def _ratio(
    sample: ComparisonSample, settings: Mapping[str, Any], confidence: float
) -> tuple[RatioInterval, tuple[str, ...]]:
    ref = sample.reference
    other = next(i for i in range(len(sample.names)) if i != ref)
    notes: tuple[str, ...] = ()
    if len(sample.names) > 2:
        notes = (f"{sample.names[other]} against {sample.names[ref]} (two levels compared)",)
    clusters = np.stack([sample.host, sample.series, sample.round], axis=1)
    a, b = sample.level == ref, sample.level == other
    interval = ratio_of_percentiles(
        sample.y[a],
        clusters[a],
        sample.y[b],
        clusters[b],
        percentile=float(settings.get("percentile", 50.0)),
        confidence=confidence,
        replicates=int(settings.get("replicates", 2000)),
        seed=sample.seed,
        min_clusters=int(settings.get("min_clusters", 5)),
    )
    return interval, notes


def _descriptive(interval: RatioInterval) -> str | None:
    if not interval.descriptive_only:
        return None
    return "; ".join(r for r in interval.reasons if "too few" in r) or "too few units"


def median_ratio(sample: ComparisonSample, settings: Mapping[str, Any]) -> ComparisonOutcome:
    """Treatment / control of the median (or ``percentile``), two-sided interval."""
    confidence = float(settings.get("confidence", 95.0))
    r, notes = _ratio(sample, settings, confidence)
    reasons = tuple(x for x in r.reasons if "too few" not in x)
    described = _descriptive(r)
    return ComparisonOutcome(
        "median_ratio",
        r.ratio,
        "ratio",
        ci_low=r.lower,
        ci_high=r.upper,
        confidence=confidence,
        significant=None if described else bool(r.lower > 1.0 or r.upper < 1.0),
        notes=notes + reasons + (f"resampled units: {r.unit_level[0]} / {r.unit_level[1]}",),
        descriptive_only=described,
        details={"ratio": r},
    )


def equivalence(sample: ComparisonSample, settings: Mapping[str, Any]) -> ComparisonOutcome:
    """TOST at level ``alpha`` on the ratio: equivalent when the (1 - 2 alpha) interval lies
    within [1/(1+m), 1+m]; worse/better when it lies wholly beyond the margin."""
    alpha = float(settings.get("alpha", 0.05))
    margin = float(settings["margin"]) / 100.0
    confidence = tost_confidence(alpha)
    r, notes = _ratio(sample, settings, confidence)
    gate = tost(r.lower, r.upper, margin, alpha=alpha, better=sample.better)
    described = _descriptive(r)
    return ComparisonOutcome(
        "equivalence",
        r.ratio,
        "ratio",
        ci_low=r.lower,
        ci_high=r.upper,
        confidence=confidence,
        significant=None if described else gate.verdict == "equivalent",
        verdict=gate.verdict,
        notes=(
            *notes,
            f"margin ±{100 * margin:g}% (ratios in [{1 / (1 + margin):.4g}, {1 + margin:.4g}]), "
            f"TOST at alpha {alpha:g}: the {confidence:g}% interval",
        ),
        descriptive_only=described,
        details={"ratio": r, "gate": gate},
    )


__all__ = ["equivalence", "median_ratio"]
