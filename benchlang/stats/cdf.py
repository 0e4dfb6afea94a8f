"""Confidence band for a whole CDF from order statistics (TriScale §5.4).

Source: Jacob et al., JSys 1(1) 2021, §5.4 (one-sided bounds of Eq. 1-2 for each percentile).
"""

from __future__ import annotations

import functools
from typing import Any

import attrs
import numpy as np

from benchlang.stats._orderstat import _EPS, _cdf_table, check_percent

DEFAULT_PERCENTILES = np.arange(2.0, 99.0)


@attrs.frozen
class CDFBand:
    """Per-percentile bounds: ``lower[i]`` <= x_p and ``upper[i]`` >= x_p, each at C.

    Each bound holds at C for its own percentile (pointwise, as in the paper); nan where N
    is too small for that percentile or the side was not requested.
    """

    percentiles: np.ndarray = attrs.field(eq=False)
    lower: np.ndarray = attrs.field(eq=False)
    upper: np.ndarray = attrs.field(eq=False)
    rank_lower: np.ndarray = attrs.field(eq=False)
    rank_upper: np.ndarray = attrs.field(eq=False)
    confidence: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "percentiles": self.percentiles.tolist(),
            "lower": [None if v != v else v for v in self.lower.tolist()],
            "upper": [None if v != v else v for v in self.upper.tolist()],
            "confidence": self.confidence,
            "n": self.n,
        }


def _upper_ranks(n: int, p: np.ndarray, c: float) -> np.ndarray:
    """Vectorised upper_rank over percentiles; 0 where no rank reaches c. The ranks depend on
    (n, p, c) only, so configurations with as many values share one binomial table."""
    return _ranks_of(n, tuple(np.asarray(p, dtype=float).tolist()), c).copy()


@functools.lru_cache(maxsize=32)
def _ranks_of(n: int, p: tuple[float, ...], c: float) -> np.ndarray:
    cover = _cdf_table(n, np.array(p))[:, :n] >= c - _EPS  # binom_cdf(k, n, p), k = 0..n-1
    return np.where(cover.any(axis=1), cover.argmax(axis=1) + 1, 0)


def cdf_band(
    values: np.ndarray,
    percentiles: np.ndarray | None = None,
    confidence: float = 95.0,
    bound: str = "both",
) -> CDFBand:
    """Lower and/or upper C-level bound of every percentile in ``percentiles`` (default 2..98).

    ``bound`` is "lower", "upper" or "both". Ranks use the same binomial rule as the KPI.
    """
    if bound not in ("lower", "upper", "both"):
        raise ValueError(f"bound must be 'lower', 'upper' or 'both', got {bound!r}")
    c = check_percent("confidence", confidence)
    ps = DEFAULT_PERCENTILES if percentiles is None else np.asarray(percentiles, dtype=float)
    for v in ps:
        check_percent("percentile", v)
    x = np.sort(np.asarray(values, dtype=float).ravel())
    x = x[np.isfinite(x)]
    n = int(x.size)
    pad = np.concatenate([[np.nan], x])
    ru = _upper_ranks(n, ps / 100.0, c) if n and bound != "lower" else np.zeros(ps.size, int)
    ku = _upper_ranks(n, 1.0 - ps / 100.0, c) if n and bound != "upper" else np.zeros(ps.size, int)
    rl = np.where(ku > 0, n + 1 - ku, 0)
    return CDFBand(
        percentiles=ps,
        lower=pad[rl],
        upper=pad[ru],
        rank_lower=rl,
        rank_upper=ru,
        confidence=float(confidence),
        n=n,
    )
