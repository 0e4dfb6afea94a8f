"""Change points in a series of KPIs over commits, each point weighted by its own uncertainty.

The search follows Apache Otava's design (E-divisive means with a t-test: Matteson & James, JASA
109, 2014; Daly et al., ICPE 2020; Fleming et al., "Hunter", ICPE 2023): hierarchical splitting
at the most different pair of segments, then a merge step that drops the weakest change point
and re-tests its neighbours until every one left is significant (Fleming et al. §3.3). What
benchlang adds is what it knows per point:

- the statistic is the inverse-variance weighted difference of the segments' mean log KPI
  (Cochran 1954), each point's variance its interval's plus the between-point spread
  (DerSimonian & Laird 1986), so a noisy point weighs less than a precise one;
- its p-value accounts for the search over every split point: the tail of the maximum of a
  standardized Brownian bridge (James, James & Siegmund, Biometrika 1987), so that a series with
  no change shows a false change point in at most ``alpha`` of series (benchmarks/
  bench_changepoints_otava.py measures it), where a per-split t-test would not;
- the noise scale is re-estimated from the weighted residuals (Hartung & Knapp 2001), first
  around a local level, then within the segments found, so that points whose intervals
  understate their noise do not make false alarms;
- a point far from a running median weighs less (Huber weights; Huber 1964, Tukey 1977), so
  that isolated outliers are not segments, and adds no information to its segment's mean: the
  mean's variance is a Huber sandwich sum psi^2 / (sum psi')^2 (Huber & Ronchetti 2009, §3.2;
  stats._changepoint_scan.Sums.mean), the larger of the segment's own (a down-weighted
  point adds its psi^2 = c^2) and the series' pooled one, so that neither outliers crowded
  into one stretch nor short segments without any make false alarms (docs/history.md);
- a change is placed where the weighted least-squares fit of two levels puts it (Bai 1994;
  Sums.locate), and the Huber weights come from the nearest median of the windows that hold a
  point (Sums, huber_var), so the last point before a step is not taken for an outlier;
- a change with fewer than ``min_size`` runs after it is not a change point at a commit but
  ``possible``: "a possible change in the last N runs, M more to confirm"
  (stats._changepoint_checks.recent);
- points correlated from commit to commit: the variances are scaled by the long-run factor of
  the lag-1 autocorrelation of the residuals, and a short history whose independence check
  has little power says so (stats._changepoint_checks);
- changes of the points' own noise (their intervals' width) are searched apart (``spread``),
  each family at ``alpha`` / 2;
- the size of a shift is a ratio of the segments' geometric-mean levels with an interval at
  ``confidence`` (normal on the log scale). The interval is conditional on the change point's
  place: it ignores the uncertainty of the place and the selection of the largest statistic, so
  a change barely significant has an interval that tends to be too far from 1.

Values that are not all positive are analysed on their own scale (differences; the ratio's
interval by the delta method) and the result says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.stats._changepoint_checks import (
    PossibleChange,
    lag1,
    long_run_factor,
    recent,
    serial_notes,
)
from benchlang.stats._changepoint_scan import (
    Dispersion,
    Noise,
    Sums,
    huber_capped,
    huber_info,
    huber_var,
    local_dispersion,
    noise,
    point_sd,
    segment_dispersion,
)
from benchlang.stats._special import rankdata

METHOD = "weighted binary segmentation + merge (max-type p-value)"
ROUNDS = 3  # re-estimations of the dispersion given the change points found


def _named(result: object, names: str) -> dict[str, Any]:
    """The result's attributes ``names`` (space-separated), in that order: a JSON object's
    plain fields."""
    return {name: getattr(result, name) for name in names.split()}


@attrs.frozen
class ChangePoint:
    """A shift of level at ``index`` (the first point after it, 0-based).

    ``before``/``after``: the levels of the neighbouring segments (weighted geometric means of
    the KPIs; arithmetic means on the linear scale); ``ratio`` = after /
    before with [``ratio_low``, ``ratio_high``] at the result's confidence; ``p_value`` is the
    probability of a statistic at least this large anywhere in the two segments if they had no
    change; ``statistic`` the weighted z.
    """

    index: int
    before: float
    after: float
    ratio: float
    ratio_low: float
    ratio_high: float
    p_value: float
    statistic: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        """Strict JSON: an undefined ratio (a level of 0 or below) is null with the reason."""
        fields = _named(self, "index before after ratio ratio_low ratio_high p_value statistic")
        return undefined(fields, {"*": "the level before the change is not positive"})


@attrs.frozen
class ChangePoints:
    """Every change point of one series, in index order.

    ``scale`` is "log" (ratios of positive KPIs) or "linear"; ``noise_cv`` the between-point
    spread found (a coefficient of variation on the log scale); ``note`` says why the result is
    empty or descriptive only (too few points, a constant series). ``spread``: changes of the
    points' own noise (their intervals' width) where the intervals are known, kept apart from
    the level's ``points``; with intervals each family is tested at ``alpha`` / 2, so a series
    without change shows either kind in at most ``alpha`` of series (Bonferroni).
    ``possible``: a change in the last runs, fewer than ``min_size``, not yet a change point
    (its ``describe()`` is the line a history prints; also in ``note``); ``serial`` the lag-1
    autocorrelation of the residuals from the segments (nan when there are none), whose
    long-run factor the test allowed for when positive.
    """

    points: tuple[ChangePoint, ...]
    method: str
    alpha: float
    n: int = 0
    confidence: float = 95.0
    min_size: int = 5
    scale: str = "log"
    noise_cv: float = math.nan
    weighted: bool = False
    note: str | None = None
    spread: tuple[ChangePoint, ...] = ()
    possible: PossibleChange | None = None
    serial: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        fields = {
            **_named(self, "method alpha n confidence min_size scale noise_cv weighted note"),
            "points": [p.to_dict() for p in self.points],
            "spread": [p.to_dict() for p in self.spread],
            "possible": None if self.possible is None else self.possible.to_dict(),
            "serial": self.serial,
        }
        return undefined(
            fields,
            {"serial": "no segments", "noise_cv": self.note or "not defined for these values"},
        )


def detect_changes(
    values: Sequence[float] | np.ndarray,
    lower: Sequence[float] | np.ndarray | None = None,
    upper: Sequence[float] | np.ndarray | None = None,
    *,
    alpha: float = 0.05,
    confidence: float = 95.0,
    min_size: int = 3,
    interval_confidence: float = 95.0,
) -> ChangePoints:
    """Change points of ``values`` (a series' KPI per point, in commit order).

    ``lower``/``upper``: each point's interval bounds at ``interval_confidence`` percent (None,
    or nan for a point, when unknown); a one-sided KPI gives one of them. ``alpha`` is the
    chance, on a series without change, of reporting any change point; ``min_size`` the fewest
    points of a segment (3: Otava's test series have segments of 3 and 4 points), and the runs
    a change at the end of the series needs after it to be a change point rather than
    ``possible``. The noise model and the dispersion are estimated over the whole
    series, so a new point moves every statistic a little: there is no exact update from the
    result for ``values[:-1]``, and a history stores each answer instead (history.stored;
    benchmarks/bench_history_incremental.py times it).
    """
    y = np.asarray(values, dtype=np.float64)
    lo = None if lower is None else np.asarray(lower, dtype=np.float64)
    hi = None if upper is None else np.asarray(upper, dtype=np.float64)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if min_size < 2:
        raise ValueError(f"min_size must be at least 2, got {min_size!r}")
    result = partial(
        ChangePoints,
        method=METHOD,
        alpha=alpha,
        n=int(y.size),
        confidence=confidence,
        min_size=min_size,
    )
    if y.size < 2 * min_size or not np.all(np.isfinite(y)):
        why = (
            f"too few points for a change point ({y.size} < {2 * min_size}: two segments of "
            f"min_size {min_size})"
            if np.all(np.isfinite(y))
            else "the series has undefined values; drop them first"
        )
        return result(points=(), note=why)
    log = bool(np.all(y > 0))
    if log:
        with np.errstate(divide="ignore", invalid="ignore"):
            z, lo, hi = np.log(y), _log(lo), _log(hi)
    else:
        z = y
    sd = point_sd(z, lo, hi, interval_confidence)
    weighted = bool(np.isfinite(sd).any())
    level_alpha = alpha / 2.0 if weighted else alpha
    found = _segments(z, sd, min_size, level_alpha, log)
    if found is None:
        return result(
            points=(), note="the series is constant", scale="log" if log else "linear",
        )  # fmt: skip
    sums, cuts, model, serial, possible, added = found
    points = tuple(
        _point(
            sums, cuts, k, added if added and k == len(cuts) - 1 else
            _local(sums, cuts, k, min_size), confidence, log,
        )
        for k in range(len(cuts))
    )  # fmt: skip
    notes = [] if log else ["values not all positive: analysed as differences"]
    notes += serial_notes(serial, z.size, bool(points))
    notes += [] if possible is None else [possible.describe()]
    phi = sums.dispersion.phi / long_run_factor(serial, z.size, len(cuts) + 1)
    return result(
        points=points,
        scale="log" if log else "linear",
        noise_cv=math.sqrt(model.tau2 * phi) if log else math.nan,
        weighted=weighted,
        note="; ".join(notes) or None,
        spread=_spread(sd, min_size, alpha / 2.0, confidence) if weighted else (),
        possible=possible,
        serial=serial,
    )


Segments = tuple[Sums, list[int], Noise, float, PossibleChange | None, tuple[float, float] | None]
"""``_segments``' sums, cuts, noise model, lag-1 autocorrelation, possible last change and
the (z, p) of an added change point."""


def _segments(
    z: np.ndarray, sd: np.ndarray, m: int, alpha: float, log: bool | None = None
) -> Segments | None:
    """The change points of ``z``, the sums they were judged with, the noise model, the lag-1
    autocorrelation of the residuals, a possible change in the last runs and the (z, p) of a
    change point :func:`recent` added (with ``log`` the scale, else no check of the last runs);
    None for a constant series. The search is run once as if the points were independent;
    where their residuals from the segments then found are positively correlated (r > 0,
    stats._changepoint_checks.lag1), once more with every variance times the long-run factor
    (1 + r) / (1 - r) (stats._changepoint_checks.long_run_factor): a drift from commit to
    commit makes a segment's mean vary more than independent points would, and a test that
    ignores it found changes in 20% of series of 50 AR(1) points at 0.3 where it allows 5%
    (docs/history.md). r is taken after the last runs are checked, so that a change there
    that the search missed is not read as correlation."""
    model = noise(z, sd)
    if not np.all(model.var > 0):
        return None
    var = huber_var(z, model.var, m)
    full = var <= model.var
    base = Sums(z, var, huber_info(model.var, var), huber_capped(model.var, var))
    factor, r = 1.0, 0.0
    for _ in range(2):
        sums, cuts = _fit(base, var, z, full, m, alpha, factor)
        possible = added = None
        if log is not None:
            cuts, possible, added = recent(z, model.var, sums.dispersion, cuts, m, alpha, log)
        if factor > 1.0:
            break
        r = lag1(z, sums.w, cuts)
        factor = long_run_factor(r, z.size, len(cuts) + 1)
        if factor == 1.0:
            break
    return sums, cuts, model, r, possible, added


def _fit(
    base: Sums, var: np.ndarray, z: np.ndarray, full: np.ndarray, m: int, alpha: float,
    factor: float,
) -> tuple[Sums, list[int]]:  # fmt: skip
    """A search under the dispersion seen around each point, then again under the dispersion
    within the segments found, until they agree (at most ``ROUNDS`` times); every dispersion
    times ``factor``. When the first finds nothing while the points scatter around their local
    levels more than the noise model says (phi > 1: on a short series every point is near a
    step, Otava's series of 11 points with two), the first search is run again under the noise
    model's own scale, the MAD of successive differences (robust to the steps; Fryzlewicz, Ann.
    Stat. 42, 2014, §3.1), and the rounds then judge what it found under the dispersion within
    its segments."""
    local = _times(local_dispersion(var, z, m, full), factor)
    sums = base.tuned(local)
    cuts = _search(sums, m, alpha)
    if not cuts and local.phi > factor:
        robust = attrs.evolve(local, phi=factor, pooled=local.pooled * factor / local.phi)
        cuts = _search(base.tuned(robust), m, alpha)
    for _ in range(ROUNDS):
        if not cuts:
            break
        sums = base.tuned(_times(segment_dispersion(var, z, cuts, full), factor))
        again = _search(sums, m, alpha)
        if again == cuts:
            break
        cuts = again
    return sums, cuts


def _times(d: Dispersion, factor: float) -> Dispersion:
    return d if factor == 1.0 else attrs.evolve(d, phi=d.phi * factor, pooled=d.pooled * factor)


def _spread(sd: np.ndarray, m: int, alpha: float, confidence: float) -> tuple[ChangePoint, ...]:
    """Changes of the points' own noise (their intervals' width), so that "the benchmark got
    twice as noisy at this commit" is found where the level did not move. The search runs on
    the normal scores of the ranks of log standard errors (van der Waerden; a rank CUSUM in
    the manner of Pettitt, Appl. Stat. 28, 1979): under no change they are exchangeable with
    a known normal margin, whatever the mix of quiet and busy points. ``before``/``after``
    are the geometric-mean standard errors of the segments (relative to the KPI), ``ratio``
    theirs with its interval from the segments' spread of log standard errors; ``p_value``
    and ``statistic`` are the rank search's."""
    from benchlang.stats._special import ndtri

    known = np.flatnonzero(np.isfinite(sd) & (sd > 0))
    if known.size < 2 * m:
        return ()
    x = np.log(sd[known])
    scores = np.asarray(ndtri((rankdata(x) - 0.5) / x.size))
    found = _segments(scores, np.full(x.size, np.nan), m, alpha)
    if found is None or not found[1]:
        return ()
    ranks, cuts = found[:2]
    ones = np.ones(x.size)
    logs = Sums(x, ones).tuned(segment_dispersion(ones, x, cuts))
    out = []
    for k in range(len(cuts)):
        size = _point(logs, cuts, k, _local(ranks, cuts, k, m), confidence, True)
        out.append(attrs.evolve(size, index=int(known[cuts[k]])))
    return tuple(out)


def _log(bounds: np.ndarray | None) -> np.ndarray | None:
    if bounds is None:
        return None
    return np.where(bounds > 0, np.log(np.where(bounds > 0, bounds, 1.0)), np.nan)


def _search(sums: Sums, m: int, alpha: float) -> list[int]:
    return _merge(sums, _split(sums, m, alpha), m, alpha)


def _split(sums: Sums, m: int, alpha: float) -> list[int]:
    """Binary segmentation: split every segment at its largest |z| while the max-type p-value
    is below ``alpha`` (Vostrikova 1981; Matteson & James 2014 §2.2 with a mean statistic)."""
    cuts: list[int] = []
    todo = [(0, sums.w.size)]
    while todo:
        a, b = todo.pop()
        if b - a < 2 * m:
            continue
        t, z = sums.scan(a, b, m)
        best = int(np.argmax(np.abs(z)))
        x = sums.normal(a, b, int(t[best]), float(z[best]))
        if sums.significant(a, b, m, x, alpha):
            cut = sums.locate(a, b, m)
            cuts.append(cut)
            todo += [(a, cut), (cut, b)]
    return sorted(cuts)


def _merge(sums: Sums, cuts: list[int], m: int, alpha: float) -> list[int]:
    """Fleming et al.'s merge step (ICPE 2023 §3.3): re-test each change point between its
    neighbours, drop the one with the largest p-value while it is at least ``alpha``; then
    move each to the largest |z| between its neighbours (a local refinement)."""
    cuts = list(cuts)
    ps = [_local(sums, cuts, k, m)[1] for k in range(len(cuts))]
    while cuts:
        worst = int(np.argmax(ps))
        if ps[worst] < alpha:
            break
        del cuts[worst], ps[worst]
        for k in (worst - 1, worst):
            if 0 <= k < len(cuts):
                ps[k] = _local(sums, cuts, k, m)[1]
    for k in range(len(cuts)):
        a, b = _bounds(sums, cuts, k)
        cuts[k] = sums.locate(a, b, m)
    return cuts


def _bounds(sums: Sums, cuts: list[int], k: int) -> tuple[int, int]:
    return (cuts[k - 1] if k else 0), (cuts[k + 1] if k + 1 < len(cuts) else sums.w.size)


def _local(sums: Sums, cuts: list[int], k: int, m: int) -> tuple[float, float]:
    """The z at change point k between its neighbours and its max-type p-value there."""
    a, b = _bounds(sums, cuts, k)
    z = sums.z_at(a, b, cuts[k])
    return z, sums.max_p(a, b, m, sums.normal(a, b, cuts[k], z))


def _point(
    sums: Sums, cuts: list[int], k: int, test: tuple[float, float], confidence: float, log: bool
) -> ChangePoint:
    """Change point k's size from ``sums``, with ``test`` its (z, p-value)."""
    from benchlang.stats._special import ndtri

    a, b = _bounds(sums, cuts, k)
    z, p = test
    left, vl = sums.mean(a, cuts[k])
    right, vr = sums.mean(cuts[k], b)
    half = float(ndtri((1.0 + confidence / 100.0) / 2.0))
    if log:
        se = math.sqrt(vl + vr)
        shift = right - left
        low, high = math.exp(shift - half * se), math.exp(shift + half * se)
        return ChangePoint(
            cuts[k], math.exp(left), math.exp(right), math.exp(shift), low, high, p, z
        )
    ratio = right / left if left > 0 else math.nan
    se = abs(ratio) * math.sqrt(vl / left**2 + vr / right**2) if left > 0 and right else math.nan
    return ChangePoint(cuts[k], left, right, ratio, ratio - half * se, ratio + half * se, p, z)
