"""Run-level independence: one calibrated verdict per run instead of one test per series.

TriScale (Jacob et al., JSys 1(1) 2021, §4.5) tests every series' metric values, and the KPIs
across series, for stationarity and autocorrelation. Applied to every series of every
configuration, that is a family of dozens of tests each at 5%: on i.i.d. data most runs then
raise a false alarm somewhere, while five values per series carry almost no power against a
real drift. Here the evidence is combined over the run and the family is the run:

- trend over the run: a stratified rank correlation between each value and its time (the
  trial's index in the plan), summed over strata (the configurations; with a ``span``,
  configuration x series, TriScale §4.6). Within a stratum the values' ranks are scaled by
  1/(n_s + 1), van Elteren's (1960) weights for combining rank statistics across strata
  (locally most powerful for a common effect), and the stratum statistics are summed as Page
  (1963) sums rank statistics against an ordered alternative; with one stratum it is Spearman's
  test of trend (Daniels; Kendall & Gibbons 1990, ch. 4);
- autocorrelation within series: the lag-1 serial covariance of the same rank scores, demeaned
  within each series of a configuration (consecutive trials of one configuration in one
  series), pooled over series and configurations: a rank form of Wald & Wolfowitz's (1943)
  serial-correlation test of randomness (Bartels, JASA 77(377), 1982, studies the rank form);
  lag 1 because short-memory dependence sits there (Ljung & Box, Biometrika 65(2), 1978, take
  more lags at the cost of power against it).

Both are permutation tests: under independence the values of a stratum (a series) are
exchangeable, so the statistic is referred to its distribution over permutations within
strata (series). With at most ``MONTE_CARLO_MAX`` values that distribution is sampled
(``PERMUTATIONS`` seeded permutations, p = (b + 1)/(B + 1): Phipson & Smyth, Stat. Appl.
Genet. Mol. Biol. 9(1), 2010, exact-valid for any B); above it the statistic is standardised
with its exact permutation mean and variance and referred to the normal distribution (the sum
of many independent stratum terms; Hajek's permutation CLT). Beyond ``SUBSAMPLE_ABOVE`` values
the tests use whole series chosen evenly (every k-th), a selection independent of the values, so
a million-trial store is tested in milliseconds; the power there is complete anyway.

The family (every test of every metric with a KPI) is controlled by Holm's (1979) step-down
procedure at ``RUN_ALPHA``: on i.i.d. data the run raises an independence flag with probability
at most ``RUN_ALPHA`` (benchmarks/sim_independence_family.py; docs/statistics.md).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.stats._stratified import arrange, labels, ranks_within, runs, serial, trend

RUN_ALPHA = 0.05
PERMUTATIONS = 4999
MONTE_CARLO_MAX = 100
SUBSAMPLE_ABOVE = 1 << 16
_CHUNK = 1024  # longest piece of one series the subsample keeps whole

TREND = "trend over the run"
AUTOCORRELATION = "autocorrelation within series"
KPI_TREND = "trend of the KPIs across series"


@attrs.frozen
class IndependenceTest:
    """One test of the run-level family: ``p`` is None when it could not be made (``note``
    says why); ``level`` is the Holm level it was compared with, ``rejected`` its outcome."""

    name: str
    metric: str
    p: float | None
    z: float | None
    method: str
    strata: int
    values: int
    level: float = math.nan
    rejected: bool = False
    note: str = ""

    def describe(self) -> str:
        """ "trend over the run: stratified rank trend p = 0.003 (3 configurations)": a linear
        rank statistic in trial order, Spearman's only when trials are evenly spaced."""
        if self.p is None:
            return f"{self.name}: not tested ({self.note})"
        what = "stratified rank trend" if "trend" in self.name else "lag-1 rank serial correlation"
        return f"{self.name}: {what} p = {self.p:.2g} ({self.note})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "metric": self.metric,
            "p": self.p,
            "z": self.z,
            "method": self.method,
            "strata": self.strata,
            "values": self.values,
            "level": None if math.isnan(self.level) else self.level,
            "rejected": self.rejected,
            "note": self.note,
        }


@attrs.frozen
class RunIndependence:
    """The run-level verdict: the family's tests, Holm at ``alpha``. ``passed`` is False when
    a test rejected or none could be made."""

    alpha: float
    tests: tuple[IndependenceTest, ...]
    family_size: int = -1
    """Tests made in the whole family (every metric); -1: those in ``tests``."""

    @property
    def made(self) -> tuple[IndependenceTest, ...]:
        return tuple(t for t in self.tests if t.p is not None)

    @property
    def passed(self) -> bool:
        return bool(self.made) and not any(t.rejected for t in self.tests)

    def family(self) -> str:
        """The family in words: "run-level, 2 tests, Holm at 5% (first step 2.5%)": Holm's
        step-down compares the smallest p with alpha/m, the next with alpha/(m-1), ..."""
        m = self.family_size if self.family_size >= 0 else len(self.made)
        level = f"{100 * self.alpha:.3g}%"
        if m <= 1:
            return f"run-level, {m} test at {level}"
        return f"run-level, {m} tests, Holm at {level} (first step {100 * self.alpha / m:.3g}%)"

    def for_metric(self, metric: str) -> RunIndependence:
        mine = tuple(t for t in self.tests if t.metric == metric)
        size = self.family_size if self.family_size >= 0 else len(self.made)
        return RunIndependence(self.alpha, mine, size)

    def reason(self) -> str:
        """Why the run is descriptive only ("" when it passed)."""
        if self.passed:
            return ""
        failed = [t.describe() for t in self.tests if t.rejected]
        if not failed:
            return "independence not tested: " + "; ".join(t.note for t in self.tests)
        return "not independent: " + "; ".join(failed) + f" ({self.family()})"

    def summary(self) -> str:
        """One line: "independence (run-level, 2 tests, Holm at 5% (first step 2.5%)): passed (...)"."""
        if not self.passed:
            return self.reason()
        parts = "; ".join(
            f"{t.name} p = {t.p:.2g}" if t.p is not None else f"{t.name} not tested"
            for t in self.tests
        )
        return f"independence ({self.family()}): passed ({parts})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family(),
            "alpha": self.alpha,
            "passed": self.passed,
            "reason": self.reason(),
            "tests": [t.to_dict() for t in self.tests],
        }


def holm(p: np.ndarray, alpha: float = RUN_ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Holm's (1979) step-down procedure on the last axis of ``p`` (nan: a test not made).

    Returns the rejections and the level each test was compared with (alpha / (m - i) for the
    i-th smallest p, steps ending at the first acceptance; nan for tests never reached)."""
    p = np.atleast_2d(np.asarray(p, dtype=float))
    made = np.isfinite(p)
    m = made.sum(axis=1, keepdims=True)
    order = np.argsort(np.where(made, p, np.inf), axis=1, kind="stable")
    sorted_p = np.take_along_axis(p, order, axis=1)
    step = np.arange(p.shape[1])[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        thresholds = alpha / (m - step)
    below = (sorted_p <= thresholds) & (step < m)
    accepted_before = np.cumsum(~below, axis=1) > 0
    reject_sorted = below & ~accepted_before
    reached = np.concatenate([np.ones_like(below[:, :1]), reject_sorted[:, :-1]], axis=1)
    reached &= step < m
    rejected = np.zeros_like(below)
    levels = np.full(p.shape, np.nan)
    np.put_along_axis(rejected, order, reject_sorted, axis=1)
    np.put_along_axis(levels, order, np.where(reached, thresholds, np.nan), axis=1)
    return rejected, levels


def _subsample(blocks: np.ndarray, time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of whole pieces of series (at most ``_CHUNK`` consecutive values each), every
    k-th piece, so that about ``SUBSAMPLE_ABOVE`` values remain; chosen without the values.
    Also each kept value's block: its piece, so the serial statistic pairs only values that
    were consecutive in the run, never the end of one piece with the start of a later one."""
    n = blocks.size
    k = math.ceil(n / SUBSAMPLE_ABOVE)
    block = blocks
    sizes = np.bincount(block)
    if sizes.max(initial=0) <= _CHUNK and np.count_nonzero(sizes) >= 4 * k:
        used = np.cumsum(sizes > 0) - 1  # the block's number among those with values
        keep = np.flatnonzero(((used % k == 0) & (sizes > 0))[block])
        return keep, block[keep]
    order = np.lexsort((time, block))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank_in_block = np.empty(n, np.int64)
    rank_in_block[order] = np.arange(n) - np.repeat(starts, sizes)
    pieces = np.ceil(sizes / _CHUNK).astype(np.int64)
    first_piece = np.concatenate([[0], np.cumsum(pieces)[:-1]])
    piece = first_piece[block] + rank_in_block // _CHUNK
    keep = np.flatnonzero(piece % k == 0)
    return keep, piece[keep]


def independence_tests(
    values: np.ndarray,
    strata: np.ndarray,
    blocks: np.ndarray,
    time: np.ndarray,
    *,
    seed: int = 0,
) -> dict[str, Any]:
    """The two run-level tests of each row of ``values`` (R x N, no NaN; rows share the
    design), vectorised: ``trend_p``, ``trend_z`` (strata: the configurations, or
    configuration x series with a span), ``serial_p``, ``serial_z`` (blocks: configuration x
    series, nested in strata), ``strata``/``blocks`` (how many could be tested), ``method``.

    ``time`` orders the values (the trial's index in the plan). One row is what a report tests;
    many rows are what a simulation tests, with the same code."""
    v = np.atleast_2d(np.asarray(values, dtype=float))
    n = v.shape[1]
    s_ids, b_ids = labels(strata, n), labels(blocks, n)
    t = np.asarray(time, dtype=float).ravel()
    note = ""
    if n > SUBSAMPLE_ABOVE:
        series = b_ids
        keep, b_ids = _subsample(series, t)
        whole = np.unique(b_ids).size == np.unique(series[keep]).size
        what = "whole series" if whole else f"pieces of at most {_CHUNK} consecutive values"
        note = f", on {keep.size} of {n} values ({what}, evenly chosen)"
        v, s_ids, t = v[:, keep], s_ids[keep], t[keep]
        n = keep.size
    order = arrange(s_ids, b_ids, t)
    v, t = v[:, order], t[order]
    s_ids, b_ids = (
        runs(s_ids[order]),
        runs(b_ids[order] * (s_ids.max(initial=0) + 1) + s_ids[order]),
    )
    ks, kb = int(s_ids.max(initial=-1)) + 1, int(b_ids.max(initial=-1)) + 1
    # rank scores scaled by 1/(n_s + 1) and centred (van Elteren); block ids follow strata order
    counts = np.bincount(s_ids, minlength=ks).astype(float)
    u = ranks_within(v, s_ids) / (counts[s_ids] + 1.0) - 0.5
    mc = n <= MONTE_CARLO_MAX
    rng = np.random.default_rng(seed)
    tz, tp, t_strata = trend(u, s_ids, t, ks, PERMUTATIONS if mc else 0, rng)
    sz, sp, s_blocks = serial(u, b_ids, kb, PERMUTATIONS if mc else 0, rng)
    method = (
        f"Monte Carlo permutation ({PERMUTATIONS} permutations)"
        if mc
        else "normal approximation from exact permutation moments"
    )
    return {
        "trend_p": tp,
        "trend_z": tz,
        "serial_p": sp,
        "serial_z": sz,
        "strata": t_strata,
        "blocks": s_blocks,
        "values": n,
        "method": method + note,
    }


def metric_tests(
    metric: str,
    values: np.ndarray,
    configuration: np.ndarray,
    series: np.ndarray,
    time: np.ndarray,
    *,
    span: bool = False,
    seed: int = 0,
) -> list[IndependenceTest]:
    """The run-level tests of one metric (values of every configuration, NaN left out)."""
    v = np.asarray(values, dtype=float).ravel()
    c = np.asarray(configuration).ravel()
    s = np.asarray(series).ravel()
    t = np.asarray(time, dtype=float).ravel()
    ok = np.isfinite(v)
    if not ok.all():
        v, c, s, t = v[ok], c[ok], s[ok], t[ok]
    blocks = c.astype(np.int64) * (int(s.max(initial=0)) + 1) + s.astype(np.int64)
    if v.size == 0:
        return [
            IndependenceTest(name, metric, None, None, "-", 0, 0, note="no values")
            for name in (TREND, AUTOCORRELATION)
        ]
    res = independence_tests(v[None, :], blocks if span else c, blocks, t, seed=seed)
    configs = int(np.count_nonzero(np.bincount(labels(c, c.size))))
    strata_words = (
        f"{res['strata']} series of {configs} configuration{'s' if configs != 1 else ''}"
        if span
        else f"{res['strata']} configuration{'s' if res['strata'] != 1 else ''}"
    )
    out = []
    for name, key, count, words, need in (
        (TREND, "trend", res["strata"], strata_words, 2),
        (AUTOCORRELATION, "serial", res["blocks"], f"{res['blocks']} series", 3),
    ):
        if count == 0:
            out.append(
                IndependenceTest(
                    name,
                    metric,
                    None,
                    None,
                    str(res["method"]),
                    0,
                    int(v.size),
                    note=f"no {'configuration' if key == 'trend' else 'series'} has {need} values",
                )
            )
            continue
        out.append(
            IndependenceTest(
                name,
                metric,
                float(res[f"{key}_p"][0]),
                float(res[f"{key}_z"][0]),
                str(res["method"]),
                int(count),
                int(res["values"]),
                note=words,
            )
        )
    return out


def kpi_trend_test(
    metric: str, kpis: np.ndarray, configuration: np.ndarray, series: np.ndarray, seed: int = 0
) -> IndependenceTest:
    """With a span, the series' KPIs of each configuration in series order, stratified by
    configuration: TriScale's check of the KPIs before a variability score (§4.5), as one test."""
    k = np.asarray(kpis, dtype=float).ravel()
    ok = np.isfinite(k)
    c = np.asarray(configuration).ravel()[ok]
    s = np.asarray(series, dtype=float).ravel()[ok]
    k = k[ok]
    res = independence_tests(k[None, :], c, c, s, seed=seed) if k.size else None
    if res is None or res["strata"] == 0:
        return IndependenceTest(
            KPI_TREND, metric, None, None, "-", 0, int(k.size), note="no configuration has 2 KPIs"
        )
    configs = int(res["strata"])
    return IndependenceTest(
        KPI_TREND,
        metric,
        float(res["trend_p"][0]),
        float(res["trend_z"][0]),
        str(res["method"]),
        configs,
        int(k.size),
        note=f"{configs} configuration{'s' if configs != 1 else ''}",
    )


def run_verdict(tests: list[IndependenceTest], alpha: float = RUN_ALPHA) -> RunIndependence:
    """Holm over every test of the run (all metrics): the run-level verdict."""
    p = np.array([math.nan if t.p is None else t.p for t in tests])
    if not tests:
        return RunIndependence(alpha, ())
    rejected, levels = holm(p, alpha)
    return RunIndependence(
        alpha,
        tuple(
            attrs.evolve(t, level=float(lv), rejected=bool(r))
            for t, r, lv in zip(tests, rejected[0], levels[0], strict=True)
        ),
    )


def per_series_note(flagged: int, total: int, alpha: float = RUN_ALPHA) -> str:
    """ "1 of 15 series at 5%: 0.75 expected by chance" (TriScale's per-series tests, shown)."""
    return (
        f"{flagged} of {total} series at {100 * alpha:g}%: {alpha * total:.2g} expected by chance"
    )
