"""scipy's special functions that commands which never load scipy need, in numpy alone.

Kept only for those commands (``tests/test_import_budget.py`` holds them to it): ``run``'s
closing report (the independence test's ranks, its Ljung-Box chi-square tail and trend t
tail; the headline's t and normal quantiles), ``history`` (the change-point search's normal
CDF and quantile, the prediction bounds' t quantiles) and ``order`` of a random-order store
(``rank_tests``). ``scipy.stats`` costs 0.8-2 s of their start-up and ``scipy.special`` alone
0.3-0.7 s (measured with ``python -X importtime`` on this 2-core machine under load). Each
function has one form here (the scalar ``t_ppf`` is one element of ``stdtrit``), and tests
check each against scipy to 1e-9 or tighter (tests/test_numpy_special.py,
tests/test_rank_tests.py, tests/test_t_quantile.py). A command that loads scipy anyway
calls scipy.

Sources: the chi-square tail with integer degrees of freedom in closed form (Abramowitz &
Stegun, *Handbook of Mathematical Functions*, 1964, 26.4.4-26.4.5); Student's t tail through
the incomplete beta function (26.7.1, 26.5.27, 26.5.8; Press et al., *Numerical Recipes*,
3rd ed. 2007, §6.4); the normal quantile by Wichura's AS 241 (Appl. Stat. 37, 1988), in
Python's ``statistics``.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np


def rankdata(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Ranks from 1, ties given their average rank, along ``axis`` (``scipy.stats.rankdata``)."""
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    flat = x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) if x.ndim else x.reshape(1, 1)
    n = flat.shape[1]
    order = np.argsort(flat, axis=1, kind="stable")
    ordered = np.take_along_axis(flat, order, axis=1)
    new_value = np.ones(flat.shape, bool)
    new_value[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group = np.cumsum(new_value, axis=1) - 1
    group += np.concatenate([[0], np.cumsum(group[:-1, -1] + 1)])[:, None] if n else 0
    position = np.broadcast_to(np.arange(1, n + 1, dtype=np.float64), flat.shape)
    average = np.bincount(group.ravel(), weights=position.ravel()) / np.bincount(group.ravel())
    ranks = np.empty(flat.shape)
    np.put_along_axis(ranks, order, average[group], axis=1)
    return np.moveaxis(ranks.reshape(x.shape), -1, axis)


def chi2_sf(x: np.ndarray | float, df: int) -> np.ndarray:
    """P(chi-square with integer ``df`` > x) (A&S 26.4.4 for odd, 26.4.5 for even df)."""
    if df < 1 or int(df) != df:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    half = np.maximum(np.asarray(x, dtype=np.float64), 0.0) / 2.0
    if df % 2 == 0:
        term = np.exp(-half)
        total = term.copy()
        for i in range(1, df // 2):
            term = term * half / i
            total = total + term
        return np.minimum(total, 1.0)
    root = np.sqrt(half)
    total = np.array([math.erfc(v) for v in root.ravel()]).reshape(root.shape)
    term = 2.0 * root * np.exp(-half) / math.sqrt(math.pi)
    for i in range(1, (df + 1) // 2):
        total = total + term
        term = term * half / (i + 0.5)
    return np.minimum(total, 1.0)


def _beta_fraction(a: float | np.ndarray, b: float | np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction of I_x(a, b) at every element of ``x`` (Lentz's method; the
    elements that have converged keep their value while the others go on); ``a`` and ``b``
    numbers or arrays of ``x``'s shape."""
    tiny = 1e-300

    def guard(v: np.ndarray) -> np.ndarray:
        return np.where(np.abs(v) > tiny, v, tiny)

    a = np.broadcast_to(np.asarray(a, dtype=np.float64), x.shape)
    b = np.broadcast_to(np.asarray(b, dtype=np.float64), x.shape)
    c = np.ones(x.shape)
    d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0))
    h = d.copy()
    active = np.ones(x.shape, bool)
    for m in range(1, 100_000):
        if not active.any():
            break
        xa, ca, da, ha, aa, ba = x[active], c[active], d[active], h[active], a[active], b[active]
        for num in (
            m * (ba - m) * xa / ((aa + 2 * m - 1) * (aa + 2 * m)),
            -(aa + m) * (aa + ba + m) * xa / ((aa + 2 * m) * (aa + 2 * m + 1)),
        ):
            da = 1.0 / guard(1.0 + num * da)
            ca = guard(1.0 + num / ca)
            ha = ha * da * ca
        c[active], d[active], h[active] = ca, da, ha
        active[active] = np.abs(da * ca - 1.0) >= 1e-15
    return h


_LGAMMA = np.frompyfunc(math.lgamma, 1, 1)


def _t_tail(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    """P(T > |t|) elementwise over ``t`` and ``df`` (finite, t >= 0): I_{df/(df+t^2)}(df/2,
    1/2) / 2 (A&S 26.7.1 with 26.5.27), the regularised incomplete beta function by its
    continued fraction (A&S 26.5.8, :func:`_beta_fraction`) used directly for
    x < (a + 1)/(a + b + 2) and through I_x(a, b) = 1 - I_{1-x}(b, a) otherwise, where it
    converges fast (Press et al., *Numerical Recipes*, 3rd ed. 2007, §6.4): both tails keep
    their relative accuracy."""
    a, b = df / 2.0, 0.5
    x = df / (df + t * t)
    out = np.full(t.shape, 0.5)
    inside = x < 1.0
    if inside.any():
        v, av = x[inside], a[inside]
        lg = np.asarray(_LGAMMA(av + b), dtype=np.float64) - np.asarray(
            _LGAMMA(av), dtype=np.float64
        )
        with np.errstate(divide="ignore"):
            log_front = lg - math.lgamma(b) + av * np.log(v) + b * np.log1p(-v)
        direct = v < (av + 1.0) / (av + b + 2.0)
        got = np.empty(v.shape)
        got[direct] = (
            np.exp(log_front[direct]) * _beta_fraction(av[direct], b, v[direct]) / av[direct]
        )
        flip = ~direct
        got[flip] = 1.0 - np.exp(log_front[flip]) * _beta_fraction(b, av[flip], 1.0 - v[flip]) / b
        out[inside] = 0.5 * got
    return out


def stdtrit(df: np.ndarray | float, p: np.ndarray | float) -> np.ndarray | float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom, elementwise over both
    (``scipy.special.stdtrit``; for df >= 1 and 0 < p < 1): Newton's method on the tail
    :func:`_t_tail` from the normal quantile, which lies below the root; the tail is convex
    there, so every step stays below it and the iteration converges monotonically. Each
    element stops where its steps reach 1e-14 or the rounding of the tail and stop shrinking
    (about 1e-12 at df in the thousands, where they never reach 1e-14); p < 1/2 by symmetry."""
    df_, p_ = np.broadcast_arrays(np.asarray(df, dtype=np.float64), np.asarray(p, dtype=np.float64))
    q = np.where(p_ < 0.5, 1.0 - p_, p_)
    out = np.full(q.shape, np.nan)
    ok = (df_ > 0) & (q > 0.5) & (q < 1.0)
    out[ok] = _t_upper(q[ok], df_[ok])
    out[(q == 0.5) & (df_ > 0)] = 0.0
    out[(q == 1.0) & (df_ > 0)] = np.inf
    out = np.where(p_ < 0.5, -out, out)
    return float(out) if out.ndim == 0 else out


def _t_upper(q: np.ndarray, df: np.ndarray) -> np.ndarray:
    log_norm = (
        np.asarray(_LGAMMA((df + 1) / 2), dtype=np.float64)
        - np.asarray(_LGAMMA(df / 2), dtype=np.float64)
        - 0.5 * np.log(df * math.pi)
    )
    t = np.asarray(ndtri(q), dtype=np.float64).copy()
    previous = np.full(t.shape, np.inf)
    active = np.ones(t.shape, bool)
    for _ in range(1_000):
        if not active.any():
            break
        ta, da = t[active], df[active]
        density = np.exp(log_norm[active] - (da + 1) / 2 * np.log1p(ta * ta / da))
        step = (_t_tail(ta, da) - (1.0 - q[active])) / density
        floor = (np.abs(step) <= 1e-9 * np.maximum(1.0, np.abs(ta))) & ~(
            np.abs(step) < np.abs(previous[active])
        )
        moved = np.where(floor, ta, ta + step)
        t[active] = moved
        previous[active] = step
        done = floor | (np.abs(step) <= 1e-14 * np.maximum(1.0, np.abs(moved)))
        active[active] = ~done
    return t


def t_sf(t: np.ndarray | float, df: np.ndarray | float) -> np.ndarray | float:
    """P(T > t) for Student's t with ``df`` degrees of freedom, for a number or elementwise
    over both: I_{df/(df+t^2)}(df/2, 1/2) / 2 (A&S 26.7.1 with 26.5.27) by :func:`_t_tail`,
    the form :func:`stdtrit`'s Newton steps use (``scipy.stats.t.sf``)."""
    ts, dfs = np.broadcast_arrays(np.asarray(t, dtype=np.float64), np.asarray(df, dtype=np.float64))
    size = np.abs(ts)
    tail = np.zeros(ts.shape)
    finite = np.isfinite(size)
    tail[finite] = _t_tail(size[finite], dfs[finite])
    out = np.where(ts >= 0, tail, 1.0 - tail)
    out = np.where(np.isnan(ts), np.nan, out)
    return float(out) if out.ndim == 0 else out


@functools.lru_cache(maxsize=256)
def t_ppf(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t for 0.5 <= q < 1 (``scipy.special.stdtrit``): one
    element of :func:`stdtrit`, the package's one t quantile. Cached: a figure's intervals
    share their few (q, df)."""
    if not 0.5 <= q < 1.0:
        raise ValueError(f"q must lie in [0.5, 1), got {q!r}")
    return float(stdtrit(df, q))


def norm_ppf(q: float) -> float:
    """The ``q`` quantile of the standard normal (``scipy.special.ndtri``; Wichura's AS 241
    in Python's ``statistics``)."""
    return NormalDist().inv_cdf(q)


_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)
_INV_CDF = np.frompyfunc(NormalDist().inv_cdf, 1, 1)


def ndtr(x: np.ndarray | float) -> np.ndarray | float:
    """The standard normal CDF, elementwise (``scipy.special.ndtr``, in its form: 1/2 + erf/2
    near 0, erfc in the tails, which keep their relative accuracy; Cephes ``ndtr.c``)."""
    xs = np.asarray(x, dtype=np.float64)
    w = xs / math.sqrt(2.0)
    with np.errstate(invalid="ignore"):
        near = np.abs(w) < math.sqrt(0.5)
    tail = 0.5 * np.asarray(_ERFC(np.abs(w)), dtype=np.float64)
    centre = 0.5 + 0.5 * np.asarray(_ERF(w), dtype=np.float64)
    out = np.where(near, centre, np.where(w > 0, 1.0 - tail, tail))
    return float(out) if out.ndim == 0 else out


def ndtri(p: np.ndarray | float) -> np.ndarray | float:
    """The standard normal quantile, elementwise (``scipy.special.ndtri``; Wichura's AS 241,
    Appl. Stat. 37, 1988, in Python's ``statistics``); -inf/inf at 0/1, nan outside."""
    ps = np.asarray(p, dtype=np.float64)
    inside = (ps > 0.0) & (ps < 1.0)
    out = np.where(ps == 0.0, -np.inf, np.where(ps == 1.0, np.inf, np.nan))
    if inside.any():
        out[inside] = np.asarray(_INV_CDF(ps[inside]), dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def norm_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z (``scipy.special.ndtr(-z)``)."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def tie_counts(x: np.ndarray) -> np.ndarray:
    """How many times each distinct value occurs (the t of tie corrections)."""
    return np.unique(np.asarray(x, dtype=np.float64), return_counts=True)[1]
