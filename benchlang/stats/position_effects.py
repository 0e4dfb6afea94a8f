"""Order effects seen from random-order rounds alone: position in the round, and carry-over.

OrderSage (Duplyakin et al., USENIX ATC 2023, §3) needs fixed-order rounds as a baseline.
These two views need only random-order rounds, so a plain ``order random`` experiment can
warn about order effects without the doubled cost (benchlang's extension; the tests are
standard: Spearman's rank correlation and Kruskal–Wallis, Kruskal & Wallis, JASA 1952;
Mann & Whitney, Ann. Math. Stat. 1947; Bonferroni correction as in OrderSage §3 step 2).
Over several sessions both are stratified by session (aligned ranks, Hodges & Lehmann 1962;
``stats.session_strata``).
"""

from __future__ import annotations

from typing import cast

import attrs
import numpy as np
from numpy.typing import ArrayLike

from benchlang.stats._groups import finite_median, group_codes
from benchlang.stats._special import rankdata
from benchlang.stats.order_dependence import (
    eta_squared_h,
    kruskal_h,
    trial_arrays,
)
from benchlang.stats.rank_exact import EXACT_MAX_N, spearman_exact_p
from benchlang.stats.rank_tests import mann_whitney_splits, spearman
from benchlang.stats.session_strata import (
    align_sessions,
    aligned_ranks,
    session_count,
    session_rounds,
    stratified_correlation,
    stratified_location,
)

START = "(round start)"


def _random_only(order: ArrayLike | None, n: int, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    if order is None:
        return arrays
    o = np.asarray(order).astype(str).ravel()
    if o.shape != (n,):
        raise ValueError("order must have one entry per trial")
    keep = o == "random"
    return tuple(a[keep] for a in arrays)


def _sessions(session: ArrayLike | None, n: int) -> np.ndarray:
    if session is None:
        return np.zeros(n, dtype=np.int64)
    s = np.asarray(session).ravel()
    if s.shape != (n,):
        raise ValueError("session must have one entry per trial")
    return s


class _Plain:
    """``to_dict`` of the rows and results below, one function for all: the fields in order,
    a non-finite float as None, a tuple of rows as their dicts."""

    __slots__ = ()

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for field in attrs.fields(cast(type[attrs.AttrsInstance], type(self))):
            value = getattr(self, field.name)
            if isinstance(value, float) and not np.isfinite(value):
                value = None
            elif isinstance(value, tuple) and all(isinstance(v, _Plain) for v in value):
                value = [v.to_dict() for v in value]
            out[field.name] = value
        return out


@attrs.frozen
class PositionRow(_Plain):
    """Does position in the round predict this configuration's metric?"""

    configuration: str
    n: int
    n_positions: int
    spearman_rho: float
    spearman_p: float
    kruskal_h: float
    kruskal_p: float
    eta_squared: float
    eta_squared_clipped: bool
    threshold: float
    significant: bool


@attrs.frozen
class PositionEffect(_Plain):
    """Per-configuration position tests; Bonferroni over 2 tests x m configurations."""

    alpha: float
    m: int
    threshold: float
    position_matters: bool
    configurations: tuple[PositionRow, ...]
    sessions: int = 1
    """Sessions pooled; above 1 each session's level was removed first."""


def position_effect(
    values: ArrayLike,
    configuration: ArrayLike,
    position: ArrayLike,
    alpha: float = 0.05,
    *,
    order: ArrayLike | None = None,
    session: ArrayLike | None = None,
) -> PositionEffect:
    """Whether a trial's position in its (random-order) round predicts its metric.

    Per configuration, two tests over its trials: Spearman's rho between position and
    value (a monotone drift along the round: warm-up, heating, filling caches) and a
    tie-corrected Kruskal–Wallis across positions (any shape), with eta^2 from H as in
    OrderSage §3 step 3 (k = number of positions seen). A configuration is significant when
    either p is below alpha/(2m), m = configurations tested (at least 2 positions and 3
    trials): Bonferroni over every test made. Pass ``order`` to keep only "random" trials;
    in fixed rounds position is constant per configuration, so nothing can be tested.
    ``session`` (one code per trial) stratifies by session: with two or more, each session x
    configuration level is removed before pooling (Hodges & Lehmann 1962, aligned ranks) and
    both p-values permute within sessions only: the Cochran–Mantel–Haenszel correlation and
    mean-score statistics (Landis, Heyman & Koch 1978, §2.2-2.3; ``stats.session_strata``).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    v, c, pos = trial_arrays(values, configuration, position)
    names, codes = group_codes(c)
    sess = _sessions(session, v.size)
    v, codes, pos, sess = _random_only(order, v.size, v, codes, pos.astype(np.int64), sess)
    sessions = session_count(sess)
    if sessions > 1:
        v = align_sessions(v, codes, sess)
    counts = np.bincount(codes, minlength=names.size)
    idx = np.lexsort((pos, codes))
    v, pos, codes, sess = v[idx], pos[idx], codes[idx], sess[idx]
    bounds = np.concatenate(([0], np.cumsum(counts)))

    tested, results = [], []
    for i in range(names.size):
        pv, pp = v[bounds[i] : bounds[i + 1]], pos[bounds[i] : bounds[i + 1]]
        levels, inverse = np.unique(pp, return_inverse=True)
        ok = levels.size >= 2 and pp.size >= 3
        tested.append(ok)
        if not ok:
            results.append((levels.size, *(float("nan"),) * 5, False))
            continue
        constant = np.all(pv == pv[0])
        if sessions > 1:
            ps, scores = sess[bounds[i] : bounds[i + 1]], aligned_ranks(pv)
            rho, _, p_rho = stratified_correlation(rankdata(pp), scores, ps)
            h, p_kw, _ = stratified_location(scores, inverse, ps)
            eta, clipped = eta_squared_h(h, pp.size, levels.size)
            results.append((levels.size, float(rho), float(p_rho), h, p_kw, eta, clipped))
            continue
        rho, p_rho = (0.0, 1.0) if constant else spearman(pp, pv)
        if not constant and pp.size <= EXACT_MAX_N:
            p_rho = spearman_exact_p(pp, pv)  # exact for small n (Kendall & Gibbons §3.3)
        order_groups = np.argsort(inverse, kind="stable")
        splits = np.cumsum(np.bincount(inverse))[:-1]
        h, p_kw = kruskal_h(*np.split(pv[order_groups], splits))
        eta, clipped = eta_squared_h(h, pp.size, levels.size)
        results.append((levels.size, float(rho), float(p_rho), h, p_kw, eta, clipped))
    m = int(sum(tested))
    threshold = alpha / (2 * m) if m else alpha
    rows = tuple(
        PositionRow(
            configuration=str(name),
            n=int(counts[i]),
            n_positions=int(res[0]),
            spearman_rho=res[1],
            spearman_p=res[2],
            kruskal_h=res[3],
            kruskal_p=res[4],
            eta_squared=res[5],
            eta_squared_clipped=bool(res[6]),
            threshold=threshold,
            significant=bool(tested[i] and min(res[2], res[4]) < threshold),
        )
        for i, (name, res) in enumerate(zip(names.tolist(), results, strict=True))
    )
    return PositionEffect(
        alpha=float(alpha),
        m=m,
        threshold=threshold,
        position_matters=any(r.significant for r in rows),
        configurations=rows,
        sessions=sessions,
    )


@attrs.frozen
class CarryOverPair(_Plain):
    """Trials of ``configuration`` right after ``predecessor`` vs all its other trials."""

    configuration: str
    predecessor: str
    n_after: int
    n_other: int
    median_after: float
    median_other: float
    shift: float
    shift_percent: float
    p_value: float
    threshold: float
    significant: bool


@attrs.frozen
class CarryOver(_Plain):
    """For each configuration, the predecessor that shifts its median most; Bonferroni over all pairs."""

    alpha: float
    n_tests: int
    threshold: float
    carry_over_found: bool
    strongest: tuple[CarryOverPair, ...]
    pairs: tuple[CarryOverPair, ...]
    sessions: int = 1
    """Sessions pooled; above 1 each session's level was removed first, and a predecessor is
    looked up in the trial's own session."""


def predecessors(
    configuration: np.ndarray, round_id: np.ndarray, position: np.ndarray
) -> np.ndarray:
    """The configuration run just before each trial in its round.

    ``START`` for position 0 (right after the reset); ``""`` when the trial at position - 1
    of the same round is missing (e.g. it failed), so no predecessor is known.
    """
    names, codes = group_codes(configuration)
    pred = _predecessor_codes(codes, round_id, position)
    known = np.where(pred == _UNKNOWN, "", names[np.maximum(pred, 0)])
    return np.where(pred == _START, START, known)


_START, _UNKNOWN = -1, -2


def _predecessor_codes(codes: np.ndarray, round_id: ArrayLike, position: np.ndarray) -> np.ndarray:
    """:func:`predecessors` as configuration codes, ``_START`` at position 0 and ``_UNKNOWN``
    for a missing predecessor: integers, not a string per trial."""
    _, round_codes = group_codes(round_id)
    idx = np.lexsort((position, round_codes))
    conf_s, round_s, pos_s = codes[idx], round_codes[idx], position[idx]
    prev_ok = np.zeros(idx.size, dtype=bool)
    prev_ok[1:] = (round_s[1:] == round_s[:-1]) & (pos_s[1:] == pos_s[:-1] + 1)
    prev_conf = np.concatenate(([_UNKNOWN], conf_s[:-1]))
    pred_s = np.where(pos_s == 0, _START, np.where(prev_ok, prev_conf, _UNKNOWN))
    out = np.empty(idx.size, dtype=np.int64)
    out[idx] = pred_s
    return out


def carry_over(
    values: ArrayLike,
    configuration: ArrayLike,
    round_id: ArrayLike,
    position: ArrayLike,
    alpha: float = 0.05,
    *,
    order: ArrayLike | None = None,
    min_trials: int = 3,
    session: ArrayLike | None = None,
) -> CarryOver:
    """Which immediately preceding configuration shifts a configuration's metric most.

    Within random-order rounds (pass ``order`` to filter; in fixed rounds the predecessor
    never varies), each trial's predecessor is the configuration at position - 1 of the same
    round, or ``START`` at position 0. For every configuration X and predecessor Y with at
    least ``min_trials`` trials of X after Y and as many after anything else: the shift of
    medians (after Y minus others) and a two-sided Mann–Whitney U test. Bonferroni over all
    pairs tested (alpha / n_tests), since the strongest predecessor is picked from them.
    ``strongest`` holds, per configuration, the pair with the largest |shift|.
    ``session`` (one code per trial) stratifies by session: rounds are keyed by session and,
    with two or more sessions, each session x configuration level is removed before pooling
    (Hodges & Lehmann 1962, aligned ranks), so medians and shifts are of the aligned values,
    and each p-value permutes within sessions only (the Cochran–Mantel–Haenszel mean-score
    statistic, 1 df; Landis, Heyman & Koch 1978, §2.2).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    v, c, rnd, pos = trial_arrays(values, configuration, round_id, position)
    names, codes = group_codes(c)
    sess = _sessions(session, v.size)
    v, c, codes, rnd, pos, sess = _random_only(
        order, v.size, v, c, codes, rnd, pos.astype(np.int64), sess
    )
    sessions = session_count(sess)
    if sessions > 1:
        v = align_sessions(v, codes, sess)
        rnd = session_rounds(rnd, sess)
    pred = _predecessor_codes(codes, rnd, pos)
    labels = names.tolist()

    def label_of(code: int) -> str:
        return START if code == _START else labels[code]

    raw = []
    for i, name in enumerate(labels):
        mine = codes == i
        xv, xp, xs = v[mine], pred[mine], sess[mine]
        tested = []
        for code in sorted(np.unique(xp[xp != _UNKNOWN]).tolist(), key=label_of):
            after = xp == code
            if after.sum() >= min_trials and (~after).sum() >= min_trials:
                tested.append((label_of(code), after))
        if sessions > 1:
            scores = aligned_ranks(xv)
            p_values = [stratified_location(scores, after, xs)[1] for _, after in tested]
        else:
            p_values = mann_whitney_splits(xv, [after for _, after in tested])
        for (before, after), p in zip(tested, p_values, strict=True):
            a, b = xv[after], xv[~after]
            med_a, med_b = finite_median(a), finite_median(b)
            shift = med_a - med_b
            pct = shift / med_b * 100.0 if med_b != 0 else float("nan")
            raw.append((name, before, a.size, b.size, med_a, med_b, shift, pct, p))
    n_tests = len(raw)
    threshold = alpha / n_tests if n_tests else alpha
    pairs = tuple(
        CarryOverPair(*r, threshold=threshold, significant=r[-1] < threshold) for r in raw
    )
    strongest = []
    for name in names.tolist():
        mine = [p for p in pairs if p.configuration == name]
        if mine:
            strongest.append(max(mine, key=lambda p: abs(p.shift)))
    return CarryOver(
        alpha=float(alpha),
        n_tests=n_tests,
        threshold=threshold,
        carry_over_found=any(p.significant for p in pairs),
        strongest=tuple(strongest),
        pairs=pairs,
        sessions=sessions,
    )


def position_views(
    values: ArrayLike,
    configuration: ArrayLike,
    round_id: ArrayLike,
    position: ArrayLike,
    alpha: float = 0.05,
    *,
    order: ArrayLike | None = None,
    session: ArrayLike | None = None,
) -> tuple[PositionEffect, CarryOver]:
    """The ``position_effects`` method of the statistics registry: both views of random-order
    rounds, the effect of a trial's position and the carry-over from its predecessor
    (OrderSage §5); ``session`` stratifies both by session."""
    positions = position_effect(
        values, configuration, position, alpha, order=order, session=session
    )
    carry = carry_over(
        values, configuration, round_id, position, alpha, order=order, session=session
    )
    return positions, carry
