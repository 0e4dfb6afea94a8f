"""Ratios across sessions: each session's KPI is one cluster (docs/statistics.md, "Across
sessions (diff)").

A session (one ``benchlang run`` and its resumes, on one machine in one state) carries a level
of its own: another runner, a reboot, a warmer room move every trial of it together. Trials of
one session are therefore not independent replicates of the machine's level; the sessions are.
Following Donald & Lang ("Inference with difference-in-differences and other panel data",
Rev. Econ. Stat. 89(2), 2007, §2) the data are aggregated to one number per cluster (here the
configuration's KPI statistic in each session, on the log scale) and the two sides are compared
with Student's t on those G_a + G_b numbers: Welch's interval with Welch–Satterthwaite degrees of
freedom (Welch, Biometrika 34, 1947; Satterthwaite, Biometrics Bull. 2(6), 1946), the unpaired
form of ``stats.ab.fewclusters`` (Imbens & Kolesár, Rev. Econ. Stat. 98(4), 2016, §III: its
standard error is HC2's on the cluster values). Its spread is the one between sessions, which
already holds each session's own within-session noise.

The rows of one diff are one family: Bonferroni-t simultaneous intervals (Dunn, JASA 56, 1961),
each at ``1 - (1 - c)/m`` for m rows, so that a verdict on any row holds family-wise.
``MIN_SESSIONS`` per side is the fewest at which the interval is offered (the coverage table of
``fewclusters.MIN_CLUSTERS_T``: from 3 clusters on; with 2 per side Welch's df can fall to 1).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.stats.ab.fewclusters import MIN_CLUSTERS_T, cluster_t_pairs

MIN_SESSIONS = MIN_CLUSTERS_T["unpaired"]
"""Fewest sessions per side for an interval between sessions (and so for a verdict)."""

BETWEEN = "between sessions"
WITHIN = "within session only"


@attrs.frozen
class SessionInterval:
    """``ratio`` = exp(mean log KPI of B's sessions - that of A's), its two-sided interval at
    ``confidence`` percent (Bonferroni's per-row level of a family of ``family_rows`` at
    ``family_confidence``), Welch–Satterthwaite ``df``; nan bounds when ``descriptive_only``."""

    ratio: float
    lower: float
    upper: float
    confidence: float
    statistic_a: float
    statistic_b: float
    units: tuple[int, int]
    unit_level: tuple[str, str]
    descriptive_only: bool
    reasons: tuple[str, ...]
    df: float
    se: float
    family_confidence: float
    family_rows: int
    spread: str = BETWEEN
    method: str = "session KPIs as clusters: Welch t on log KPIs (Donald & Lang 2007), Bonferroni"

    def to_dict(self) -> dict[str, Any]:
        why = "; ".join(self.reasons) or "descriptive only"
        return undefined(attrs.asdict(self), {"*": why})


def session_kpis(
    values: np.ndarray, session: np.ndarray, sessions: int, percentile: float
) -> np.ndarray:
    """The ``percentile`` of each session's positive finite values (nan for a session with
    none): one number per session, the cluster value of the interval."""
    v = np.asarray(values, dtype=float).ravel()
    s = np.asarray(session, dtype=np.int64).ravel()
    keep = np.isfinite(v) & (v > 0)
    out = np.full(sessions, np.nan)
    for g in np.unique(s[keep]):
        out[g] = np.percentile(v[keep & (s == g)], percentile)
    return out


def family_confidence(confidence: float, rows: int) -> float:
    """Bonferroni's per-row confidence (percent) for ``rows`` simultaneous intervals."""
    return 100.0 - (100.0 - confidence) / max(rows, 1)


def between_sessions(
    kpis_a: np.ndarray, kpis_b: np.ndarray, *, confidence: float, rows: int
) -> SessionInterval:
    """The ratio B/A of one configuration from its session KPIs (positive; nan sessions left
    out), with the row's Bonferroni interval in a family of ``rows`` at ``confidence``."""
    a = np.asarray(kpis_a, dtype=float).ravel()
    b = np.asarray(kpis_b, dtype=float).ravel()
    a, b = a[np.isfinite(a) & (a > 0)], b[np.isfinite(b) & (b > 0)]
    level = family_confidence(confidence, rows)
    units = (int(a.size), int(b.size))
    stat_a = float(np.exp(np.log(a).mean())) if a.size else math.nan
    stat_b = float(np.exp(np.log(b).mean())) if b.size else math.nan
    ratio = stat_b / stat_a if a.size and b.size else math.nan
    common = (units, ("session", "session"))
    if min(units) < MIN_SESSIONS:
        why = (
            f"an interval between sessions needs at least {MIN_SESSIONS} sessions per side "
            f"({units[0]} and {units[1]} here)"
        )
        nan = math.nan
        return SessionInterval(
            ratio,
            nan,
            nan,
            level,
            stat_a,
            stat_b,
            *common,
            True,
            (why,),
            nan,
            nan,
            confidence,
            rows,
        )
    y = np.concatenate([a, b])[None, :]
    side = np.repeat([0, 1], units)
    t = cluster_t_pairs(y, side, np.arange(y.shape[1]), [(1, 0)], "ratio", level)
    lower, upper = float(t["ci_low"][0, 0]), float(t["ci_high"][0, 0])
    return SessionInterval(
        ratio,
        lower,
        upper,
        level,
        stat_a,
        stat_b,
        *common,
        False,
        (),
        float(t["df"][0]),
        float(t["se"][0, 0]),
        confidence,
        rows,
    )


MIN_HISTORY_RUNS = 5
"""Fewest runs of a history's series to borrow its run-to-run spread from (df about 3)."""


def lag_spread(levels: np.ndarray, lag: int) -> tuple[float, float]:
    """The spread of the difference between two sessions ``lag`` runs apart in a history, as an
    SD per session, and its degrees of freedom: the classical semivariogram estimator
    γ(L) = Σ_i (y_{i+L} − y_i)² / (2 (n − L)) on the log levels (Matheron, *Traité de
    géostatistique appliquée*, 1962; Cressie, *Statistics for Spatial Data*, Wiley 1993, §2.4,
    (2.4.2)), so that Var(y_B − y_A) = 2 γ(L), what ``borrowed_spread``'s se = sd · √2 uses.

    At lag 1 it is the mean square successive difference (von Neumann, Kent, Bellinson & Hart,
    Ann. Math. Stat. 12(2), 1941), used before for every pair: under a drifting level that is
    the spread between neighbouring sessions and misses the one between distant sessions,
    which the variogram at their lag holds (docs/statistics.md, the drift table). The pairs at
    lag L form L interleaved chains; each chain of c points contributes Satterthwaite's
    2(c − 1)² / (3c − 4) degrees of freedom of its successive differences (ibid.; independent
    levels), summed over the chains. nan when fewer than 2 pairs lie ``lag`` apart."""
    y = np.log(np.asarray(levels, dtype=float).ravel())
    y = y[np.isfinite(y)]
    n, lag = y.size, max(1, int(lag))
    if n - lag < 2:
        return math.nan, math.nan
    d = y[lag:] - y[:-lag]
    gamma = float(np.sum(d * d) / (2.0 * d.size))
    chains = np.bincount(np.arange(n) % lag, minlength=lag)
    chains = chains[chains >= 2].astype(float)
    df = float(np.sum(2.0 * (chains - 1.0) ** 2 / (3.0 * chains - 4.0)))
    return math.sqrt(gamma), df


def borrowed_spread(
    kpis_a: np.ndarray,
    kpis_b: np.ndarray,
    sd: float,
    df: float,
    *,
    confidence: float,
    rows: int,
    source: str,
) -> SessionInterval:
    """The ratio B/A of one configuration from few sessions with the run-to-run SD ``sd`` of a
    history of this machine class (``lag_spread``): se = sd · sqrt(1/G_A + 1/G_B), Student's
    t with the history's df, Bonferroni over ``rows``. ``source`` names the history."""
    a = np.asarray(kpis_a, dtype=float).ravel()
    b = np.asarray(kpis_b, dtype=float).ravel()
    a, b = a[np.isfinite(a) & (a > 0)], b[np.isfinite(b) & (b > 0)]
    if not a.size or not b.size:  # no session of a side has a KPI: nothing to compare
        nan = math.nan
        why = "no session of one side has a KPI of this configuration"
        units = (int(a.size), int(b.size))
        return SessionInterval(
            nan, nan, nan, confidence, nan, nan, units, ("session", "session"), True, (why,),
            nan, nan, confidence, rows,
        )  # fmt: skip
    from scipy.stats import t as student_t

    level = family_confidence(confidence, rows)
    la, lb = np.log(a), np.log(b)
    theta = float(lb.mean() - la.mean())
    se = sd * math.sqrt(1.0 / a.size + 1.0 / b.size)
    half = float(student_t.ppf(1.0 - (1.0 - level / 100.0) / 2.0, df)) * se
    return SessionInterval(
        math.exp(theta),
        math.exp(theta - half),
        math.exp(theta + half),
        level,
        float(np.exp(la.mean())),
        float(np.exp(lb.mean())),
        (int(a.size), int(b.size)),
        ("session", "session"),
        False,
        (),
        float(df),
        se,
        confidence,
        rows,
        BETWEEN,
        f"the spread of {source} (semivariogram at the sessions' lag: Matheron 1962, "
        "Cressie 1993 §2.4), Student's t, Bonferroni",
    )
