"""How much of a metric's spread lies between sessions: the variance components of a one-way
random-effects model on log values, session as the random factor.

A campaign is several sessions of one experiment (days, nodes, CI jobs: OrderSage pooled months
of runs, Duplyakin et al., ATC 2023, §5; TriScale's sequels over a span, Jacob et al., JSys
2021, §4.3). Each session's level moves with the machine's state, so trials of one session are
correlated and the between-session component is what a comparison across sessions must carry.

Sources:

* Searle, Casella & McCulloch, *Variance Components*, Wiley 1992, §3.5 (Eq. 3.24-3.29 for the
  unbalanced one-way classification): the ANOVA (method-of-moments) estimators
  ``s2_within = MSW`` and ``s2_between = (MSB - MSW) / n0`` with
  ``n0 = (N - sum n_i^2 / N) / (a - 1)``, the negative estimate truncated at 0, and the F test
  ``MSB / MSW`` on (a - 1, N - a) degrees of freedom of "no session effect".
* Bakshy & Frachtenberg, "Design and Analysis of Benchmarking Experiments for Distributed
  Internet Services", WWW 2015, §3: the intraclass correlation ``ICC = s2_between / (s2_between +
  s2_within)`` as the share of variance between clusters, and the design effect
  ``1 + (m - 1) ICC`` by which clustering inflates the variance of a mean of ``m`` trials per
  cluster.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np


@attrs.frozen
class SessionShare:
    """The between-session share of one configuration's log values.

    ``icc`` is nan with fewer than two sessions that hold two values or more; ``p_value`` is the
    F test of no session effect (nan then too). ``design_effect`` is for a session's mean of
    ``per_session`` (the average trials per session)."""

    sessions: int
    trials: int
    within: float
    between: float
    icc: float
    p_value: float
    per_session: float

    @property
    def design_effect(self) -> float:
        if not math.isfinite(self.icc):
            return math.nan
        return 1.0 + (self.per_session - 1.0) * self.icc

    def to_dict(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["design_effect"] = self.design_effect
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in out.items()
        }


def session_share(values: np.ndarray, session: np.ndarray) -> SessionShare:
    """The variance components of ``log(values)`` with ``session`` (integer codes) as the
    random factor (Searle et al. 1992, §3.5); non-positive and missing values are left out."""
    from scipy.stats import f as f_dist

    v = np.asarray(values, dtype=float)
    s = np.asarray(session)
    keep = np.isfinite(v) & (v > 0)
    logs, s = np.log(v[keep]), s[keep]
    codes, s = np.unique(s, return_inverse=True)
    a, n_total = int(codes.size), int(logs.size)
    counts = np.bincount(s, minlength=a).astype(float)
    nan = math.nan
    if a < 2 or n_total - a < 1:
        within = float(np.var(logs, ddof=1)) if n_total > 1 else nan
        return SessionShare(a, n_total, within, nan, nan, nan, n_total / max(a, 1))
    means = np.bincount(s, weights=logs, minlength=a) / counts
    grand = float(logs.mean())
    ssb = float(np.sum(counts * (means - grand) ** 2))
    ssw = float(np.sum((logs - means[s]) ** 2))
    msb, msw = ssb / (a - 1), ssw / (n_total - a)
    n0 = (n_total - float(np.sum(counts**2)) / n_total) / (a - 1)
    between = max(0.0, (msb - msw) / n0)
    total = between + msw
    icc = between / total if total > 0 else nan
    p = float(f_dist.sf(msb / msw, a - 1, n_total - a)) if msw > 0 else nan
    return SessionShare(a, n_total, msw, between, icc, p, n_total / a)
