"""Does the order of trials change the results? Fixed baseline order vs random orders.

Source: Duplyakin et al., "Avoiding the Ordering Trap in Systems Performance Measurement",
USENIX ATC 2023 (OrderSage), §3 (methodology, steps 1–5) and Algorithm 2. The median
confidence intervals follow Le Boudec, "Performance Evaluation of Computer and Communication
Systems" (EPFL Press 2010), §2.2.1, Theorem 2.1 (order-statistic CI of the median).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Literal, cast

import attrs
import numpy as np
from numpy.typing import ArrayLike

from benchlang.jsonout import undefined
from benchlang.stats._groups import group_codes, order_statistic, sorted_groups
from benchlang.stats.rank_exact import kruskal_exact_p
from benchlang.stats.session_strata import (
    align_sessions,
    aligned_ranks,
    session_count,
    stratified_location,
)

Better = Literal["higher", "lower"]
ORDERS = ("fixed", "random")
_REL_TOL = 1e-12


def median_ci_ranks(n: ArrayLike, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1-based ranks ``(j, k)`` with ``[X_(j), X_(k)]`` a distribution-free CI of the median.

    Le Boudec, Theorem 2.1: for n i.i.d. samples and 1 <= j < k <= n,
    P(X_(j) <= median <= X_(k)) >= B(k-1) - B(j-1), with B the Binomial(n, 1/2) CDF.
    We take the symmetric pair k = n + 1 - j with the largest j such that
    B(j-1) <= (1 - level)/2, i.e. the shortest symmetric interval whose exact coverage
    1 - 2 B(j-1) is at least ``level``. When even [min, max] does not reach the level
    (n small: 2^(1-n) > 1 - level) the ranks fall back to (1, n) and the returned achieved
    level says so. Vectorised over ``n``; returns ``(j, k, achieved_level)`` (the ranks
    alone, without scipy: :func:`median_ci_rank_pairs`).
    """
    j, k = median_ci_rank_pairs(n, level)
    cdf, _ = _binomial_half()
    n = np.asarray(n, dtype=np.int64)
    achieved = np.where(k > j, 1.0 - 2.0 * cdf(j - 1, n), 0.0)
    return j, k, achieved


def median_ci_rank_pairs(n: ArrayLike, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The ranks ``(j, k)`` of :func:`median_ci_ranks`, the same integers, from the
    Binomial(n, 1/2) CDF in numpy (:func:`_half_binomial_cdf`): an analysis that needs no
    other scipy function does not pay ``scipy.special``'s start-up (0.15-0.25 s of CPU).
    Where numpy's CDF lies within 1e-7 (relative) of the bound that decides a rank, so that
    its rounding could decide it, the rank comes from scipy's kernels as before."""
    n = np.asarray(n, dtype=np.int64)
    if np.any(n < 1):
        raise ValueError("median_ci_ranks needs n >= 1 samples")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level!r}")
    tail = (1.0 - level) / 2.0
    bound = tail * (1 + _REL_TOL)
    distinct, inverse = np.unique(n, return_inverse=True)
    t_of = np.empty(distinct.size, dtype=np.int64)
    for i, size in enumerate(distinct.tolist()):
        table = _half_binomial_cdf(size)
        t = int(np.searchsorted(table, bound, side="right")) - 1
        near = [table[x] for x in (t, t + 1) if 0 <= x < table.size]
        if any(abs(b - bound) <= _DECIDED * bound for b in near):
            t = _scipy_rank(size, tail)
        t_of[i] = t
    j = np.clip(t_of[inverse.reshape(n.shape)] + 1, 1, (n + 1) // 2)
    return j, n + 1 - j


_DECIDED = 1e-7
"""How far (relative) numpy's Binomial(n, 1/2) CDF must lie from a bound for its comparison
to stand without scipy's: their difference is below 1e-10 up to n = 10^7 (tests)."""


def _scipy_rank(n: int, tail: float) -> int:
    """The largest t with B(t) <= tail (1 + ``_REL_TOL``) by scipy's kernels (-1 if none)."""
    cdf, ppf = _binomial_half()
    size = np.array([n])
    t = ppf(tail, size).astype(np.int64)
    return int(np.where(cdf(t, size) <= tail * (1 + _REL_TOL), t, t - 1)[0])


@functools.lru_cache(maxsize=32)
def _half_binomial_cdf(n: int) -> np.ndarray:
    """B(i) = P(Binomial(n, 1/2) <= i) for i = 0..min(n, n//2 + 1) (a symmetric CI's lower
    rank lies below n/2): the pmf at the top, C(n, K)/2^n (exact integers up to n = 2,000,
    else ``math.lgamma``), down by the ratios pmf(i)/pmf(i+1) = (i+1)/(n-i), summed from the
    smallest term up. Read-only, cached: an analysis has few distinct group sizes."""
    top = min(n, n // 2 + 1)
    if n <= 2_000:
        pmf_top = math.comb(n, top) / 2**n
    else:  # log C(n, K) - n log 2 by Stirling's series, its n log n terms cancelled by hand
        a = (2 * top - n) / n
        rest = n - top
        log_pmf = (
            -(top * math.log1p(a) + rest * math.log1p(-a))
            + 0.5 * math.log(n / (2.0 * math.pi * top * rest))
            + _stirling_tail(n)
            - _stirling_tail(top)
            - _stirling_tail(rest)
        )
        pmf_top = math.exp(log_pmf)
    i = np.arange(top - 1, -1, -1, dtype=np.float64)
    pmf = np.empty(top + 1)
    pmf[top] = pmf_top
    pmf[:top] = (pmf_top * np.cumprod((i + 1.0) / (n - i)))[::-1]
    table = np.cumsum(pmf)
    table.flags.writeable = False
    return table


def _stirling_tail(x: int) -> float:
    """log x! - (x log x - x + log(2 pi x)/2): Stirling's series to the x^-5 term (Abramowitz
    & Stegun 6.1.41), below 1e-19 for x > 1,000."""
    return 1.0 / (12.0 * x) - 1.0 / (360.0 * x**3) + 1.0 / (1260.0 * x**5)


def achieved_level(ranks: tuple[int, int], n: int) -> float:
    """The exact coverage 1 - 2 B(j - 1) of the ranks ``(j, k)`` of ``n`` values (0 when
    k <= j, nan without values), from scipy's Binomial(n, 1/2) kernels (Le Boudec, Thm 2.1)."""
    if n == 0:
        return float("nan")
    j, k = ranks
    if k <= j:
        return 0.0
    cdf, _ = _binomial_half()
    return float(1.0 - 2.0 * cdf(np.array(j - 1), np.array(n)))


def below_level(ranks: tuple[int, int], n: int, level: float) -> bool:
    """``achieved_level(ranks, n) < level``, decided by numpy's CDF
    (:func:`_half_binomial_cdf`) unless the two lie within ``_DECIDED`` of each other."""
    j, k = ranks
    if n == 0:
        return False
    if k <= j:
        return True
    table = _half_binomial_cdf(n)
    tail = (1.0 - level) / 2.0
    if j - 1 < table.size and abs(table[j - 1] - tail) > _DECIDED * tail:
        return bool(table[j - 1] > tail)
    return achieved_level(ranks, n) < level


def _binomial_half() -> tuple[Callable[..., np.ndarray], Callable[..., np.ndarray]]:
    """The Binomial(n, 1/2) CDF and quantile function: the compiled kernels behind
    ``scipy.stats.binom`` (the same numbers, its support handled as it does: 0 below 0, 1
    from n on) without importing ``scipy.stats``, a second of start-up of which half parses
    docstrings; ``scipy.stats.binom`` itself where a scipy lacks them."""
    try:
        from scipy.special._ufuncs import _binom_cdf, _binom_ppf
    except ImportError:  # pragma: no cover - an older or newer scipy
        from scipy.stats import binom

        return (lambda k, n: binom.cdf(k, n, 0.5)), (lambda q, n: binom.ppf(q, n, 0.5))

    def cdf(k: np.ndarray, n: np.ndarray) -> np.ndarray:
        k = np.floor(np.asarray(k, dtype=float))
        inside = _binom_cdf(np.clip(k, 0, n), n, 0.5)
        return np.where(k < 0, 0.0, np.where(k >= n, 1.0, inside))

    def ppf(q: float, n: np.ndarray) -> np.ndarray:
        return np.asarray(_binom_ppf(q, n, 0.5), dtype=float)

    return cdf, ppf


def eta_squared_h(h: float, n: int, k: int) -> tuple[float, bool]:
    """Effect size from the Kruskal–Wallis H: eta^2 = (H - k + 1)/(n - k), clipped at 0.

    Tomczak & Tomczak, Trends in Sport Sciences 21(1) 2014, Eq. 5, as used by OrderSage
    (Duplyakin et al. 2023, §3 step 3). Returns ``(eta_squared, clipped)``.
    """
    if n <= k or not np.isfinite(h):
        return float("nan"), False
    raw = (h - k + 1.0) / (n - k)
    return (0.0, True) if raw < 0 else (float(raw), False)


def kruskal_h(*groups: np.ndarray) -> tuple[float, float]:
    """The tie-corrected Kruskal–Wallis H (``stats.rank_tests.kruskal``, equal to scipy's);
    H = 0, p = 1 when every value is identical.

    The p-value is exact (the permutation distribution of the rank sums, Kruskal & Wallis
    1952 §6; :func:`benchlang.stats.rank_exact.kruskal_exact_p`) when the groups admit at
    most 20,000 splits (e.g. 2 groups of 8, 3 groups of 3 and 4), else the chi-square
    approximation with k - 1 degrees of freedom."""
    from benchlang.stats.rank_tests import kruskal

    pooled = np.concatenate(groups)
    if pooled.size == 0 or np.all(pooled == pooled[0]):
        return 0.0, 1.0
    h, p = kruskal(*groups)
    exact = kruskal_exact_p(*groups)
    return float(h), float(p if exact is None else exact)


def ci_case(
    median_a: float, low_a: float, high_a: float, median_b: float, low_b: float, high_b: float
) -> int:
    """CI-overlap case of Duplyakin et al. 2023, §3 step 5.

    1: the two CIs are disjoint (conclusions can change with order);
    2: at least one side's median lies inside the other side's CI (order unlikely to change
    conclusions; the paper's text and its tables use this "or", its Algorithm 2 writes "and");
    3: otherwise (the CIs overlap but neither median is inside the other CI: inconclusive).
    """
    if high_a < low_b or high_b < low_a:
        return 1
    if low_b <= median_a <= high_b or low_a <= median_b <= high_a:
        return 2
    return 3


def format_percent(value: float, signed: bool = False) -> str:
    """A percentage as people read it: "-1,442%", "43.1%", "0.43%" (three significant digits
    below 100, whole numbers with thousands separators above), never "-1e+03"; "n/a" if
    undefined. The one formatter of Δ% in text, tables and figures."""
    if not np.isfinite(value):
        return "n/a"
    sign = "+" if signed else ""
    return f"{value:{sign},.0f}%" if abs(value) >= 100 else f"{value:{sign}.3g}%"


def explain_delta(delta_percent: float, better: Better | None) -> str:
    """What the sign of Δ% = (mean_fixed - mean_random)/mean_fixed x 100 means for this metric."""
    if not np.isfinite(delta_percent):
        return "Δ% undefined (mean of fixed-order trials is 0 or missing)"
    if delta_percent == 0:
        return "fixed and random order give the same mean"
    size = format_percent(abs(delta_percent))
    higher_in_fixed = delta_percent > 0
    side = "higher" if higher_in_fixed else "lower"
    if better is None:
        return f"mean is {size} {side} in fixed order than in random order"
    fixed_looks_better = higher_in_fixed == (better == "higher")
    verdict = "better" if fixed_looks_better else "worse"
    return f"fixed order looks {verdict} by {size} (mean {side} in fixed order; {better} is better)"


@attrs.frozen
class ConfigurationOrder:
    """Fixed-vs-random comparison of one configuration (one row of the paper's Tables 3–5)."""

    configuration: str
    n_fixed: int
    n_random: int
    compared: bool
    h_statistic: float
    p_value: float
    threshold: float
    significant: bool
    eta_squared: float
    eta_squared_clipped: bool
    mean_fixed: float
    mean_random: float
    delta_percent: float
    better: Better | None
    delta_meaning: str
    median_fixed: float
    median_random: float
    ci_level: float
    ci_fixed_low: float
    ci_fixed_high: float
    ci_random_low: float
    ci_random_high: float
    ci_ranks_fixed: tuple[int, int]
    ci_ranks_random: tuple[int, int]
    ci_case: int | None

    @property
    def ci_level_achieved_fixed(self) -> float:
        """The exact coverage of the fixed-order median CI (``achieved_level``)."""
        return achieved_level(self.ci_ranks_fixed, self.n_fixed)

    @property
    def ci_level_achieved_random(self) -> float:
        """The exact coverage of the random-order median CI (``achieved_level``)."""
        return achieved_level(self.ci_ranks_random, self.n_random)

    @property
    def ci_short_of_level(self) -> bool:
        """Whether either median CI covers less than ``ci_level`` (too few trials: [min,
        max] was used), without computing the coverages where the ranks decide it."""
        return below_level(self.ci_ranks_fixed, self.n_fixed, self.ci_level) or below_level(
            self.ci_ranks_random, self.n_random, self.ci_level
        )

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready values; an undefined number is None, with why in ``null_reasons``."""
        out = {f.name: getattr(self, f.name) for f in attrs.fields(type(self))}
        case = out.pop("ci_case")
        out["ci_level_achieved_fixed"] = self.ci_level_achieved_fixed
        out["ci_level_achieved_random"] = self.ci_level_achieved_random
        out["ci_case"] = case
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}
        counts = f"{self.n_fixed} fixed-order and {self.n_random} random-order trials"
        test = "not compared" if not self.compared else "undefined"
        return undefined(
            out,
            {
                "*": f"too few trials for this interval ({counts})",
                "h_statistic": f"{test}: {counts}",
                "p_value": f"{test}: {counts}",
                "eta_squared": f"{test}: {counts}",
                "delta_percent": self.delta_meaning,
                "mean_fixed": "no fixed-order trial",
                "mean_random": "no random-order trial",
                "median_fixed": "no fixed-order trial",
                "median_random": "no random-order trial",
            },
        )


@attrs.frozen
class OrderTally:
    """How many configurations order affects: OrderSage's "significant tests (% of total)"
    (Duplyakin et al., ATC 2023, Table 2) and the number in each CI-overlap case (Fig. 6).

    ``compared`` is m (configurations with 2 or more trials on each side), ``significant``
    k of them with Kruskal-Wallis p below alpha/m; ``cases`` counts the compared
    configurations per case 1, 2, 3; ``not_compared`` the configurations left out."""

    compared: int
    significant: int
    cases: tuple[tuple[int, int], ...]
    not_compared: int

    @property
    def percent(self) -> float:
        """k / m x 100; nan when nothing was compared."""
        return 100.0 * self.significant / self.compared if self.compared else float("nan")

    def sentence(self) -> str:
        """ "k of m configurations significant (x%)", as Table 2 counts them."""
        if not self.compared:
            return "0 configurations compared (none has 2 or more trials on each side)"
        return (
            f"{self.significant} of {self.compared} configurations significant "
            f"({self.percent:.3g}%)"
        )

    def to_dict(self) -> dict[str, object]:
        return undefined(
            {
                "compared": self.compared,
                "significant": self.significant,
                "percent_significant": self.percent,
                "cases": {str(case): count for case, count in self.cases},
                "not_compared": self.not_compared,
            },
            {"percent_significant": "no configuration compared"},
        )


@attrs.frozen
class OrderDependence:
    """Experiment-level result: order matters if any configuration's p is below alpha/m."""

    alpha: float
    m: int
    threshold: float
    ci_level: float
    order_matters: bool
    configurations: tuple[ConfigurationOrder, ...]
    sessions: int = 1
    """Sessions pooled; above 1 each session's level was removed first (``stats.session_strata``)."""

    @property
    def significant(self) -> tuple[str, ...]:
        return tuple(c.configuration for c in self.configurations if c.significant)

    @property
    def tally(self) -> OrderTally:
        """k of m significant and the count per CI case (OrderSage Table 2, Fig. 6)."""
        compared = [c for c in self.configurations if c.compared]
        return OrderTally(
            compared=len(compared),
            significant=sum(c.significant for c in compared),
            cases=tuple((case, sum(c.ci_case == case for c in compared)) for case in (1, 2, 3)),
            not_compared=len(self.configurations) - len(compared),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "alpha": self.alpha,
            "m": self.m,
            "threshold": self.threshold,
            "ci_level": self.ci_level,
            "order_matters": self.order_matters,
            "configurations": [c.to_dict() for c in self.configurations],
            "tally": self.tally.to_dict(),
            "sessions": self.sessions,
        }


def trial_arrays(
    values: ArrayLike, configuration: ArrayLike, *others: ArrayLike
) -> tuple[np.ndarray, ...]:
    """Flat per-trial arrays of equal length: float values (finite), str labels, the rest as given."""
    v = np.asarray(values, dtype=float).ravel()
    c = np.asarray(configuration).astype(str).ravel()
    rest = [np.asarray(o).ravel() for o in others]
    if any(a.shape != v.shape for a in (c, *rest)):
        raise ValueError(
            "values, configuration and the other per-trial arrays must match in length"
        )
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite numbers (drop failed trials first)")
    return v, c, *rest


def _better_for(better: Mapping[str, str] | str | None, configuration: str) -> Better | None:
    value = better.get(configuration) if isinstance(better, Mapping) else better
    if value not in (None, "higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {value!r} for {configuration}")
    return cast(Better | None, value)


def order_dependence(
    values: ArrayLike,
    configuration: ArrayLike,
    order: ArrayLike,
    alpha: float = 0.05,
    better: Mapping[str, str] | str | None = None,
    *,
    session: ArrayLike | None = None,
) -> OrderDependence:
    """OrderSage's fixed-vs-random analysis, per configuration (Duplyakin et al. 2023, §3).

    ``values``, ``configuration`` and ``order`` ("fixed" or "random") are flat per-trial
    arrays. For each configuration with at least two trials on each side: tie-corrected
    Kruskal–Wallis p (step 2) against the Bonferroni threshold alpha/m, m = configurations
    compared; eta^2 from H with k = 2 groups (step 3); Δ% of the means (step 4); medians with
    order-statistic CIs at level 1 - alpha/m and the CI-overlap case (step 5). ``better``
    ("higher"/"lower", or a mapping per configuration) only changes the Δ% explanation.
    ``session`` (one code per trial) stratifies by session: with two or more, each session x
    configuration level is removed first (aligned ranks, Hodges & Lehmann 1962), so medians,
    means and Δ% are of the aligned values, and H is the Cochran–Mantel–Haenszel mean-score
    statistic permuting within sessions (Landis, Heyman & Koch 1978; ``stats.session_strata``).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    v, c, o = trial_arrays(values, configuration, order)
    o = o.astype(str)
    bad = ~np.isin(o, ORDERS)
    if np.any(bad):
        raise ValueError(f"order must be 'fixed' or 'random', found {o[bad][0]!r}")
    sessions = session_count(session)
    sess = np.asarray(session).ravel() if sessions > 1 else None
    if sess is not None:
        v = align_sessions(v, c, sess)
    names, codes = group_codes(c)
    n_conf = names.size
    is_random = (o == "random").astype(np.int64)
    cell = codes * 2 + is_random
    sorted_v, counts, starts = sorted_groups(v, cell, 2 * n_conf)
    sums = np.bincount(cell, weights=v, minlength=2 * n_conf)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
        medians = (
            order_statistic(sorted_v, starts, counts, (counts + 1) // 2)
            + order_statistic(sorted_v, starts, counts, counts // 2 + 1)
        ) / 2.0
    n_f, n_r = counts[0::2], counts[1::2]
    compared = (n_f >= 2) & (n_r >= 2)
    m = int(compared.sum())
    threshold = alpha / m if m else alpha
    level = 1.0 - threshold
    j, k = median_ci_rank_pairs(np.maximum(counts, 1), level)
    lows = order_statistic(sorted_v, starts, counts, j)
    highs = order_statistic(sorted_v, starts, counts, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = (means[0::2] - means[1::2]) / means[0::2] * 100.0
    delta = np.where(np.isfinite(delta), delta, np.nan)

    rows = []
    for i, name in enumerate(names.tolist()):
        f, r = 2 * i, 2 * i + 1
        if compared[i] and sess is not None:
            mine = codes == i
            h, p, _ = stratified_location(aligned_ranks(v[mine]), is_random[mine], sess[mine])
        elif compared[i]:
            h, p = kruskal_h(
                sorted_v[starts[f] : starts[f] + counts[f]],
                sorted_v[starts[r] : starts[r] + counts[r]],
            )
        if compared[i]:
            eta, clipped = eta_squared_h(h, int(counts[f] + counts[r]), 2)
            case = ci_case(medians[f], lows[f], highs[f], medians[r], lows[r], highs[r])
        else:
            h, p, eta, clipped, case = float("nan"), float("nan"), float("nan"), False, None
        side_better = _better_for(better, name)
        rows.append(
            ConfigurationOrder(
                configuration=name,
                n_fixed=int(n_f[i]),
                n_random=int(n_r[i]),
                compared=bool(compared[i]),
                h_statistic=h,
                p_value=p,
                threshold=threshold,
                significant=bool(compared[i] and p < threshold),
                eta_squared=eta,
                eta_squared_clipped=clipped,
                mean_fixed=float(means[f]),
                mean_random=float(means[r]),
                delta_percent=float(delta[i]),
                better=side_better,
                delta_meaning=explain_delta(float(delta[i]), side_better),
                median_fixed=float(medians[f]),
                median_random=float(medians[r]),
                ci_level=level,
                ci_fixed_low=float(lows[f]),
                ci_fixed_high=float(highs[f]),
                ci_random_low=float(lows[r]),
                ci_random_high=float(highs[r]),
                ci_ranks_fixed=(int(j[f]), int(k[f])),
                ci_ranks_random=(int(j[r]), int(k[r])),
                ci_case=case,
            )
        )
    return OrderDependence(
        alpha=float(alpha),
        m=m,
        threshold=threshold,
        ci_level=level,
        order_matters=any(row.significant for row in rows),
        configurations=tuple(rows),
        sessions=sessions,
    )
