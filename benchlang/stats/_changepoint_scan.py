"""The weighted scan a change-point search runs on one segment, and its max-type p-value.

Model: a point's value on the log scale is its segment's level plus noise of variance
``phi * (tau^2 + s_i^2)``: ``s_i`` the point's own uncertainty (from its KPI interval), ``tau^2``
the spread between points that no interval shows (commit to commit, host to host). This is the
random-effects weighting of DerSimonian & Laird (Controlled Clinical Trials 7, 1986, Eq. 8-10)
and the inverse-variance weights of Cochran (Biometrics 10, 1954): a noisy point weighs less,
and when ``tau^2`` dominates every point weighs the same. Both scales come from successive
differences, robust to the level shifts being searched and to outliers (the MAD of differences,
Fryzlewicz, Ann. Stat. 42, 2014, §3.1; Hampel, JASA 69, 1974).
"""

from __future__ import annotations

import copy
import math

import attrs
import numpy as np

Index = int | slice
"""A point of the series, or (in a scan) a run of them."""
Values = float | np.ndarray
"""A value for one split, or (in a scan) one per split."""
Parts = tuple[Values, Values | None, Values | None]
"""``Sums._parts``: a side's variance terms A, B and P."""

MAD_NORMAL = 0.6744897501960817  # median |Z| of a standard normal Z
HUBER_C = 3.0  # residuals beyond 3 sd weigh less (Huber 1964)


@attrs.frozen
class Noise:
    """Per-point variances ``var`` (log scale), ``tau2`` the between-point part, ``phi`` the
    dispersion of the first pass (the MAD of standardized successive differences)."""

    var: np.ndarray = attrs.field(eq=False)
    tau2: float
    phi: float


def point_sd(
    y: np.ndarray, lower: np.ndarray | None, upper: np.ndarray | None, confidence: float
) -> np.ndarray:
    """Each point's standard error from its interval at ``confidence`` percent: the width of a
    two-sided interval over 2 z_{(1+c)/2}, a one-sided bound's distance over z_c (a normal
    approximation of the KPI's sampling distribution, as Cochran 1954 reads reported
    intervals); nan where unknown."""
    from benchlang.stats._special import ndtri

    c = confidence / 100.0
    lo = np.full_like(y, np.nan) if lower is None else lower
    hi = np.full_like(y, np.nan) if upper is None else upper
    both = (hi - lo) / (2.0 * ndtri((1.0 + c) / 2.0))
    one = np.where(np.isfinite(hi), hi - y, y - lo) / ndtri(c)
    sd = np.where(np.isfinite(both), both, one)
    return np.where(np.isfinite(sd) & (sd >= 0), sd, np.nan)


def noise(y: np.ndarray, sd: np.ndarray) -> Noise:
    """The variance model from successive differences: Var(y_i - y_{i-1}) = 2 tau^2 + s_i^2 +
    s_{i-1}^2 gives ``tau2`` (moment form of DerSimonian & Laird, floored at 0); the MAD of the
    differences each divided by its model standard deviation gives ``phi``."""
    known = np.isfinite(sd)
    s2 = np.where(known, sd * sd, np.median(sd[known] ** 2) if known.any() else 0.0)
    d = np.diff(y)
    pair = s2[1:] + s2[:-1]
    spread = _robust_var(d)
    tau2 = max(0.0, spread / 2.0 - float(np.median(pair)) / 2.0)
    var = tau2 + s2
    model = var[1:] + var[:-1]
    ok = model > 0
    phi = _robust_var(d[ok] / np.sqrt(model[ok])) if ok.any() else 0.0
    if not phi > 0:
        phi = 1.0
    return Noise(var=phi * var, tau2=tau2 * phi, phi=phi)


@attrs.frozen
class Dispersion:
    """``phi`` the factor on the variance of every point that kept its full Huber weight,
    ``pooled`` the whole series' sandwich numerator per unit weight (phi when no point is
    down-weighted; :meth:`Sums.mean`), ``df`` the effective degrees of freedom, ``kurtosis``
    the excess kurtosis of a standardized point (0 for normal noise)."""

    phi: float = 1.0
    df: float = math.inf
    kurtosis: float = 0.0
    pooled: float = 1.0


def local_dispersion(
    var: np.ndarray, y: np.ndarray, half: int, full: np.ndarray | None = None
) -> Dispersion:
    """The dispersion before any change point is known, from each point's residual r_i from
    the weighted mean of its ``half`` neighbours on each side (a local level, so a shift of
    level costs only the points next to it): E[w_i r_i^2] = phi (1 + w_i / W_neighbours).
    ``full``: the points that kept their full Huber weight, the only ones phi is the
    dispersion of (:func:`_dispersion`); all when None."""
    w = 1.0 / var
    i = np.arange(w.size)
    lo, hi = np.maximum(i - half, 0), np.minimum(i + half + 1, w.size)
    cw = np.concatenate(([0.0], np.cumsum(w)))
    cy = np.concatenate(([0.0], np.cumsum(w * y)))
    near = cw[hi] - cw[lo] - w
    level = (cy[hi] - cy[lo] - w * y) / near
    return _dispersion(w, w * (y - level) ** 2, 1.0 + w / near, full)


def segment_dispersion(
    var: np.ndarray, y: np.ndarray, cuts: list[int], full: np.ndarray | None = None
) -> Dispersion:
    """The dispersion given change points ``cuts``: residuals from each segment's weighted
    mean, E[w_i r_i^2] = phi (1 - w_i / W_segment); ``full`` as :func:`local_dispersion`'s."""
    w = 1.0 / var
    edges = np.array([0, *cuts, w.size])
    seg = np.repeat(np.arange(edges.size - 1), np.diff(edges))
    weight = np.add.reduceat(w, edges[:-1])
    level = np.add.reduceat(w * y, edges[:-1]) / weight
    return _dispersion(w, w * (y - level[seg]) ** 2, 1.0 - w / weight[seg], full)


def _dispersion(
    w: np.ndarray, wr2: np.ndarray, expected: np.ndarray, full: np.ndarray | None = None
) -> Dispersion:
    """phi = sum w_i (w_i r_i^2) / sum w_i E[w_i r_i^2 / phi], as Hartung & Knapp (Stat. Med.
    20, 2001, Eq. 6) rescale a weighted mean's variance from its weighted residuals. Weighting
    each standardized residual by w once more makes phi the factor the weighted statistic's
    variance needs (sum w_i^2 sigma_i^2 / W): a point whose interval understates its noise
    weighs much and counts much here too. ``df``: the Kish effective number of these w^2
    weights less one; ``kurtosis``: the weighted excess kurtosis of the standardized
    residuals w_i r_i^2 / E, floored at 0.

    Two factors (:meth:`Sums.mean`): ``phi`` from the ``full`` points only, E[u^2] of the
    points that kept their full Huber weight, the part of a segment's own sandwich numerator
    a model gives (a down-weighted point's part is psi^2 = c^2, known once it is
    down-weighted, so it says nothing about phi); and ``pooled`` from every point, which is
    sum_i w_i^2 r_i^2 / sum_i w_i, the whole series' numerator sum psi^2 / var per unit
    weight (a down-weighted point's w_i^2 r_i^2 is c^2 / var_i). ``df`` and ``kurtosis``
    are every point's."""
    omega = w * expected
    u2 = wr2 / np.maximum(expected, 1e-12)
    spread = omega * u2
    pooled = float(np.sum(spread)) / float(np.sum(omega))
    if not pooled > 0:
        return Dispersion()
    phi = pooled
    if full is not None and 0 < np.count_nonzero(full) < full.size:
        phi = float(np.sum(spread, where=full)) / float(np.sum(omega, where=full))
    w2 = w * w
    df = max(1.0, float(np.sum(w2)) ** 2 / float(np.sum(w2 * w2)) - 1.0)
    total = float(np.sum(w))
    fourth = float(np.sum(w * u2 * u2)) / total / (float(np.sum(w * u2)) / total) ** 2
    return Dispersion(phi if phi > 0 else pooled, df, max(0.0, fourth - 3.0), pooled)


def _robust_var(d: np.ndarray) -> float:
    """(MAD / 0.6745)^2 around 0, or the mean square when more than half the values are 0
    (quantised timings)."""
    if d.size == 0:
        return 0.0
    mad = float(np.median(np.abs(d))) / MAD_NORMAL
    return mad * mad if mad > 0 else float(np.mean(d * d))


def huber_var(y: np.ndarray, var: np.ndarray, m: int) -> np.ndarray:
    """Each point's variance divided by its Huber weight min(1, c / |u_i|): one step of Huber's
    M-estimator by iteratively reweighted least squares (Huber 1964; Holland & Welsch, Commun.
    Stat. 6, 1977), so that an outlier's pull on a segment's mean is at most c standard
    deviations and one outlier cannot pass for a segment. u_i is the point's residual in
    standard deviations from a centred running median of 2 max(``m``, 5) + 1 points (a median
    smoother keeps steps sharp, Tukey, EDA 1977, ch. 7; ends padded by reflection), robust to a
    burst of outliers in one stretch. Next to a step that median can be the other side's (the
    last point before a step was taken for an outlier and the change placed a commit early), so
    where the levels on the two sides of a point differ by more than c deviations (the medians
    of its 2 max(``m``, 5) - 1 neighbours on each side, as many as the centred window's, so
    that a dense burst rarely tips one; a side without neighbours counts as different)
    u_i is the smaller of that and its residual from the nearest median of the windows of 2
    ``m`` - 1 consecutive points that hold it (shifted windows, as Kuwahara et al.'s
    edge-preserving smoother picks the window beside a point that straddles no edge; Kuwahara,
    Hachimura, Eiho & Kinoshita, Digital Processing of Biomedical Images, 1976). A run of
    ``m`` points between two different levels (a segment) keeps its weight; a run back to the
    level it left (a burst of outliers) does not. Weights, not clipped values: a value pulled to
    a median would copy its neighbours' noise and make segment means vary more than their
    residuals show. These weights are not inverse variances: :class:`Sums` takes the
    information of each point apart (``info``)."""
    from benchlang.stats._running import median_filter_mirror

    n = y.size
    if n < 3:
        return var
    sd = np.sqrt(var)
    centred = median_filter_mirror(y, 2 * max(m, 5) + 1)
    u = np.abs(y - centred) / sd
    h = min(2 * m - 1, n)
    level = np.median(np.lib.stride_tricks.sliding_window_view(y, h), axis=1)
    near = np.full(n, np.inf)
    count = level.size
    for k in range(h):  # point j + k is the k-th of window j
        np.minimum(near[k : k + count], np.abs(y[k : k + count] - level), out=near[k : k + count])
    left, right = _sides(y, min(2 * max(m, 5) - 1, n))
    step = ~(np.abs(right - left) <= HUBER_C * sd)  # nan (an end) counts as a step
    u = np.where(step, np.minimum(u, near / sd), u)
    inflated: np.ndarray = var * np.maximum(1.0, u / HUBER_C)
    return inflated


def _sides(y: np.ndarray, h: int) -> tuple[np.ndarray, np.ndarray]:
    """The medians of the ``h`` points before and after each point (fewer at the ends; nan for
    an end's own side)."""
    n = y.size
    level = np.median(np.lib.stride_tricks.sliding_window_view(y, h), axis=1)
    left, right = np.full(n, np.nan), np.full(n, np.nan)
    left[h:] = level[: n - h]  # the h points before i: window i - h
    right[: n - h] = level[1:]  # the h points after i: window i + 1
    for i in range(1, h):
        left[i] = np.median(y[:i])
        right[n - 1 - i] = np.median(y[n - i :])
    return left, right


def huber_info(var: np.ndarray, weighted: np.ndarray) -> np.ndarray:
    """Each point's information in a segment's Huber mean, psi'(u_i) / var_i: 1 / var_i where
    the point kept its full weight, 0 where :func:`huber_var` down-weighted it (psi' = 0 beyond
    c). The mean's variance is then the sandwich sum psi_i^2 / (sum psi'_i)^2 (Huber, Ann.
    Math. Stat. 35, 1964, §4; Huber & Ronchetti, Robust Statistics, 2009, §3.2), not
    1 / sum w_i: a down-weighted point's contribution is capped at c deviations whatever its
    value, so it adds spread but no information about the level. Read as inverse variances
    the weights made segment means look more precise than they are when the points' noise
    has heavy tails (KPIs without intervals, one in five from a busy machine: 5.7% false
    alarms at alpha 5%; benchmarks/bench_changepoints_otava.py --calibration)."""
    return np.where(weighted > var, 0.0, 1.0 / var)


def huber_capped(var: np.ndarray, weighted: np.ndarray) -> np.ndarray:
    """Each down-weighted point's term of the sandwich's numerator, psi(u_i)^2 / var_i =
    h_i^2 u_i^2 / var_i = c^2 / var_i (h_i = c / |u_i|, so h_i u_i = c), 0 for the others
    (whose term is phi / var_i, :meth:`Sums.mean`): the empirical psi^2 of the consistent
    sandwich sum psi^2 / (sum psi')^2 (Huber & Ronchetti, Robust Statistics, 2009, §3.2, the
    asymptotic variance int psi^2 dF / (int psi' dF)^2 with F the points' empirical
    distribution). Counted as its weight h_i / var_i instead (W / I^2 with a pooled phi), a
    point at 10 deviations added 0.3 phi / var_i where its psi^2 is 9 / var_i."""
    return np.where(weighted > var, HUBER_C * HUBER_C / var, 0.0)


class Sums:
    """Cumulative weights, weighted sums, squared weights, information (``info``, the weights
    when None; :func:`huber_info`) and the down-weighted points' numerator terms (``capped``,
    none when None; :func:`huber_capped`): any segment's weighted mean and its variance, and
    every split's statistic, in O(1) each. ``dispersion`` gives the variance's two factors
    (:meth:`tuned`). A segment's shifts and their sides' weights do not depend on the
    dispersion, so they are kept and shared by the tuned copies: the search re-tests the same
    segments under each dispersion and in its merge step (the variance terms are recomputed
    from slices of the cumulative sums, about as fast as keeping six arrays a segment)."""

    def __init__(
        self,
        y: np.ndarray,
        var: np.ndarray,
        info: np.ndarray | None = None,
        capped: np.ndarray | None = None,
    ) -> None:
        self.w = 1.0 / var
        self.cw = np.concatenate(([0.0], np.cumsum(self.w)))
        self.cy = np.concatenate(([0.0], np.cumsum(self.w * y)))
        self.cq = np.concatenate(([0.0], np.cumsum(self.w * self.w)))
        self.ci = self.cw if info is None else np.concatenate(([0.0], np.cumsum(info)))
        self.cc: np.ndarray | None = None
        if capped is not None and bool(capped.any()):
            self.cc = np.concatenate(([0.0], np.cumsum(capped)))
        self.dispersion = Dispersion()
        self._scans: dict[tuple[int, int, int], tuple[np.ndarray, ...]] = {}
        self._mus: dict[tuple[int, int, int], np.ndarray] = {}

    def tuned(self, dispersion: Dispersion) -> Sums:
        """The same sums under another dispersion (no new pass over the points)."""
        other = copy.copy(self)
        other.dispersion = dispersion
        return other

    def _parts(self, a: Index, b: Index, weight: Values | None = None) -> Parts:
        """[a, b)'s weighted mean's variance terms: A = 1 / I (I its information), B = C / I^2
        (C its down-weighted points' psi^2 / var), P = W / I^2 (W its weights, ``weight``
        when the caller has them); B and P are None without down-weighted points (then I = W
        and the variance is phi A). A side without information (every point down-weighted)
        has infinite terms: its z is 0."""
        if weight is None:
            weight = self.cw[b] - self.cw[a]
        info = weight if self.ci is self.cw else self.ci[b] - self.ci[a]
        with np.errstate(divide="ignore"):
            inverse = 1.0 / info
        if self.cc is None:
            return inverse, None, None
        square = inverse * inverse
        return inverse, (self.cc[b] - self.cc[a]) * square, weight * square

    def _var(self, a_part: Values, b_part: Values | None, p_part: Values | None) -> Values:
        """max(phi A + B, pooled P) (:meth:`mean`), phi A without down-weighted points."""
        d = self.dispersion
        if b_part is None or p_part is None:  # both None together (:meth:`_parts`)
            return d.phi * a_part
        own = d.phi * a_part
        own += b_part
        return np.maximum(own, d.pooled * p_part, out=own if isinstance(own, np.ndarray) else None)

    def _z(self, shift: Values, left: Parts, right: Parts) -> Values:
        """shift / sqrt(Var_left + Var_right), the same operations for one split and a scan."""
        return shift / np.sqrt(self._var(*left) + self._var(*right))

    def mean(self, a: int, b: int) -> tuple[float, float]:
        """Weighted mean of [a, b) and its variance, the larger of two sandwiches sum psi^2 /
        (sum psi')^2 (Huber & Ronchetti, Robust Statistics, 2009, §3.2): the segment's own,
        (phi I + C) / I^2, where each point that kept its full weight adds phi / var_i and
        each down-weighted one its psi^2 / var_i = c^2 / var_i (:func:`huber_capped`), and
        the pooled one, pooled W / I^2, the whole series' numerator per unit weight spread
        over the segment's weights (:class:`Dispersion`); phi / W without down-weighted
        points. The own one is right for a segment whatever its share of down-weighted
        points; the pooled one where that share is the series' and the own one falls short:
        on a short segment without down-weighted points its phi, estimated over points
        selected by a shared running median, understates their mean's spread (z^2 1.12 on
        average at a side of 5 such points in heavy-tailed noise). Taking the larger is a
        conservative rule chosen by simulation, not part of the cited estimator. docs/history.md measures
        both and their maximum."""
        weight = self.cw[b] - self.cw[a]
        return (self.cy[b] - self.cy[a]) / weight, float(self._var(*self._parts(a, b)))

    def scan(self, a: int, b: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidates t in [a + m, b - m] and the weighted two-sample z of [a, t) vs [t, b),
        (mean_right - mean_left) / sqrt(Var_left + Var_right) (:meth:`mean`'s variances)."""
        kept = self._scans.get((a, b, m))
        if kept is None:
            t = np.arange(a + m, b - m + 1)
            at = slice(a + m, b - m + 1)  # t as a view: no gather from the cumulative sums
            wl = self.cw[at] - self.cw[a]
            wr = self.cw[b] - self.cw[at]
            yl = self.cy[at] - self.cy[a]
            yr = self.cy[b] - self.cy[at]
            kept = self._scans[(a, b, m)] = (t, yr / wr - yl / wl, wl, wr)
        t, shift, wl, wr = kept
        at = slice(a + m, b - m + 1)
        return t, np.asarray(self._z(shift, self._parts(a, at, wl), self._parts(at, b, wr)))

    def locate(self, a: int, b: int, m: int) -> int:
        """The split of [a, b) that the weighted least-squares fit of two levels puts the
        change at: the largest |shift| sqrt(W_left W_right / W) (Bai, J. Time Ser. Anal. 15,
        1994, for a shift in mean; with Huber weights, one IRLS step of its M-estimator). Not
        the largest |z| of :meth:`scan`: its sandwich variance grows on a side that holds a
        down-weighted point, so |z| peaked a commit after a noisy point next to a step."""
        t, _ = self.scan(a, b, m)
        shift, wl, wr = self._scans[(a, b, m)][1:]
        return int(t[int(np.argmax(np.abs(shift) * np.sqrt(wl * wr / (wl + wr))))])

    def z_at(self, a: int, b: int, t: int) -> float:
        """The z of :meth:`scan` at the one split ``t`` (the same operations, so the same
        number), for a change point re-tested between its neighbours."""
        shift = (self.cy[b] - self.cy[t]) / (self.cw[b] - self.cw[t]) - (
            self.cy[t] - self.cy[a]
        ) / (self.cw[t] - self.cw[a])
        return float(self._z(shift, self._parts(a, t), self._parts(t, b)))

    def normal(self, a: int, b: int, t: int, z: float) -> float:
        """The normal equivalent x of the z at split ``t`` of [a, b) (:func:`normal_equivalent`)."""
        cw, cq = self.cw, self.cq
        sides = (cw[t] - cw[a], cw[b] - cw[t], cq[t] - cq[a], cq[b] - cq[t])
        return float(normal_equivalent(np.float64(z), *sides, self.dispersion))

    def max_p(self, a: int, b: int, m: int, x: float) -> float:
        """P(max_t |X_t| >= |x|) over the candidates t of [a, b) (:meth:`scan`'s, ``m`` the
        fewest points a side) when [a, b) has no change, ``x`` the normal-equivalent statistic
        (:meth:`normal`) where |z| is largest (the place; at most the largest |X_t|, so the
        test keeps its level).

        Z_t is a standardized Brownian bridge in weight time u = W_left / W; its maximum over
        a grid has the tail 2 b phi(b) sum_t mu_t nu(b sqrt(2 mu_t)), mu_t = du / (2 u (1-u))
        (James, James & Siegmund, Biometrika 74, 1987, Eq. 3.3; Siegmund, Int. Stat. Rev. 56,
        1988; the overshoot factor nu of Siegmund & Yakir, The Statistics of Gene Mapping,
        2007, Eq. 4.35). The tail is bounded above by Bonferroni's and below by the single
        test's.
        """
        b_ = abs(x)
        single = math.erfc(b_ / math.sqrt(2.0))
        size = b - a - 2 * m + 1
        if single * size <= 1e-12:
            return single * size
        mu = self._mus.get((a, b, m))
        if mu is None:
            t = slice(a + m, b - m + 1)
            total = self.cw[b] - self.cw[a]
            u = (self.cw[t] - self.cw[a]) / total
            mu = self._mus[(a, b, m)] = self.w[t] / total / (2.0 * u * (1.0 - u))
        bridge = 2.0 * b_ * _phi(b_) * float(np.sum(mu * _nu(b_ * np.sqrt(2.0 * mu))))
        return min(1.0, max(single, min(single * size, bridge)))

    def significant(self, a: int, b: int, m: int, x: float, alpha: float) -> bool:
        """Whether :meth:`max_p` < ``alpha``, from its bounds when they decide (the single
        test's tail from below, Bonferroni's from above) without summing the bridge."""
        single = math.erfc(abs(x) / math.sqrt(2.0))
        if single >= alpha:
            return False
        if single * (b - a - 2 * m + 1) < alpha:
            return True
        return self.max_p(a, b, m, x) < alpha


def normal_equivalent(
    z: Values, wl: Values, wr: Values, ql: Values, qr: Values, dispersion: Dispersion
) -> Values:
    """x: z taken as Student's t with the kurtosis of z matched (a Pearson type VII fit by
    moments; Johnson, Kotz & Balakrishnan, Continuous Univariate Distributions 2, 1995, ch.
    28) and mapped to the normal by Wallace's approximation (Ann. Math. Stat. 30, 1959, Eq.
    2.6: x = (8 nu + 1) / (8 nu + 3) sqrt(nu log(1 + z^2 / nu))). z is a weighted sum of
    points of excess kurtosis k, so its own is k (Q_L / W_L^4 + Q_R / W_R^4) / (1/W_L +
    1/W_R)^2 (W the sides' weights, Q their squared weights), large when a side has few
    points; the estimated scale adds 6 / (df - 4). A t with nu degrees of freedom has excess
    kurtosis 6 / (nu - 4). So a short segment's mean of heavy-tailed points is not taken for
    normal."""
    k, df = dispersion.kurtosis, dispersion.df
    excess: Values = 6.0 / (df - 4.0) if df > 5.0 else 6.0
    if k > 0:
        spread = 1.0 / wl + 1.0 / wr
        excess = excess + k * (ql / wl**4 + qr / wr**4) / spread**2
    nu = 4.0 + 6.0 / excess
    x = (8.0 * nu + 1.0) / (8.0 * nu + 3.0) * np.sqrt(nu * np.log1p(z * z / nu))
    return np.copysign(x, z)


def _phi(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _nu(x: np.ndarray) -> np.ndarray:
    """Siegmund's overshoot correction for a discrete maximum, nu(x) ~ (2/x)(Phi(x/2) - 1/2)
    / ((x/2) Phi(x/2) + phi(x/2)) (Siegmund & Yakir 2007, Eq. 4.35); nu(0) = 1."""
    from benchlang.stats._special import ndtr

    h = np.maximum(x / 2.0, 1e-12)
    dens = np.exp(-0.5 * h * h) / math.sqrt(2.0 * math.pi)
    return (ndtr(h) - 0.5) / h / (h * ndtr(h) + dens)
