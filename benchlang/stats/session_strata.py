"""Order tests over several sessions: each session's level removed before pooling.

Sessions of one experiment (stores: days, nodes, CI jobs) sit at different levels (a runner
5-10% slower). Pooled as one sample, trials of one session are correlated, so a rank test that
splits a configuration's trials by position or by predecessor sees the session mix of each
group as an effect: the carry-over test's false claims grow from 5% to far above it
(benchmarks/sim_order_sessions.py). The order tests are therefore stratified by session with
aligned ranks (Hodges & Lehmann, "Rank methods for combination of independent experiments in
analysis of variance", Ann. Math. Statist. 33, 1962, §2): within each session x configuration
cell, the cell's median is removed (a ratio on positive values, a difference otherwise), the
trials are put back on the configuration's pooled median, and the aligned values are ranked
across sessions. The p-values come from the permutation distribution *within* sessions (the
order a round ran in is random within its session, never across): the Cochran–Mantel–Haenszel
mean-score and correlation statistics with those ranks as scores (Landis, Heyman & Koch,
"Average partial association in three-way contingency tables", Int. Stat. Rev. 46, 1978,
§2.2-2.3; Hodges & Lehmann 1962 §3 give the same conditional moments), referred to chi-square.
Pooling the aligned ranks under the plain Mann–Whitney or Kruskal–Wallis null (which permutes
across sessions) is not valid: its false claims reached 11% in the simulation.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from benchlang.stats._groups import group_codes, group_medians
from benchlang.stats._special import chi2_sf, rankdata

STRATIFIED = (
    "stratified by session: each session x configuration median removed (aligned ranks, "
    "Hodges & Lehmann 1962), p-values permuting within sessions only (Cochran-Mantel-Haenszel, "
    "Landis, Heyman & Koch 1978)"
)
"""The one line every order answer over several sessions carries."""


def session_count(session: ArrayLike | None) -> int:
    """How many sessions ``session`` (one code per trial; None: one session) holds."""
    return 1 if session is None else int(np.unique(np.asarray(session).ravel()).size)


def align_sessions(values: ArrayLike, configuration: ArrayLike, session: ArrayLike) -> np.ndarray:
    """Each trial's value with its session x configuration level removed (Hodges & Lehmann
    1962, §2: aligned observations).

    Per configuration, a trial's value is scaled by ``median(configuration) / median(its
    session's trials of it)`` when every value of the configuration is positive (times and
    rates: a session's level is a factor), else shifted by the difference of the two medians.
    Ranks within a cell are unchanged; a configuration's pooled median stays where it was, so
    medians and shifts of the aligned values read in the metric's unit.
    """
    v = np.asarray(values, dtype=float).ravel()
    _, conf = group_codes(np.asarray(configuration).astype(str).ravel())
    _, sess = group_codes(np.asarray(session).ravel())
    if conf.shape != v.shape or sess.shape != v.shape:
        raise ValueError("values, configuration and session must match in length")
    n_conf, n_sess = int(conf.max(initial=-1)) + 1, int(sess.max(initial=-1)) + 1
    cell = conf * n_sess + sess
    positive = np.bincount(conf, weights=(v <= 0).astype(float), minlength=n_conf) == 0
    ratio = positive[conf]
    scale = np.where(ratio, np.log(np.where(ratio, v, 1.0)), v)
    cell_med = group_medians(scale, cell, n_conf * n_sess)
    conf_med = group_medians(scale, conf, n_conf)
    aligned = scale - cell_med[cell] + conf_med[conf]
    return np.asarray(np.where(ratio, np.exp(aligned), aligned))


def session_rounds(round_id: ArrayLike, session: ArrayLike | None) -> np.ndarray:
    """Round keys unique across sessions (each store numbers its rounds from 0), so that a
    trial's predecessor is looked up in its own session's round."""
    rnd = np.asarray(round_id).astype(np.int64).ravel()
    if session is None:
        return rnd
    _, sess = group_codes(np.asarray(session).ravel())
    span = int(rnd.max(initial=0)) - int(rnd.min(initial=0)) + 1
    return sess * span + (rnd - int(rnd.min(initial=0)))


def _strata(stratum: ArrayLike, n: int) -> tuple[np.ndarray, int]:
    _, codes = group_codes(np.asarray(stratum).ravel())
    if codes.shape != (n,):
        raise ValueError("stratum must have one entry per trial")
    return codes, int(codes.max(initial=-1)) + 1


def stratified_location(
    scores: ArrayLike, group: ArrayLike, stratum: ArrayLike
) -> tuple[float, float, int]:
    """(Q, p, df): do the groups' scores differ, permuting only within strata?

    The Cochran–Mantel–Haenszel mean-score statistic (Landis, Heyman & Koch 1978, §2.2):
    T_g = the sum of group g's scores, E_g = sum over strata h of n_gh * mean score_h,
    V = sum_h s2_h (diag(n_h) - n_h n_h' / n_h), s2_h the stratum's score variance with
    divisor n_h - 1; Q = (T - E)' V^- (T - E) ~ chi-square with rank(V) degrees of freedom.
    With one stratum and rank scores Q is the tie-corrected Kruskal–Wallis H. Strata with
    fewer than 2 trials carry no information and are left out.
    """
    a = np.asarray(scores, dtype=float).ravel()
    _, g = group_codes(np.asarray(group).ravel())
    h, n_strata = _strata(stratum, a.size)
    if g.shape != a.shape:
        raise ValueError("scores and group must match in length")
    k = int(g.max(initial=-1)) + 1
    n_h = np.bincount(h, minlength=n_strata).astype(float)
    mean_h = np.bincount(h, weights=a, minlength=n_strata) / np.maximum(n_h, 1)
    dev = a - mean_h[h]
    s2_h = np.bincount(h, weights=dev * dev, minlength=n_strata) / np.maximum(n_h - 1, 1)
    s2_h = np.where(n_h >= 2, s2_h, 0.0)
    n_gh = np.zeros((n_strata, k))
    np.add.at(n_gh, (h, g), 1.0)
    diff = np.bincount(g, weights=dev * (n_h[h] >= 2), minlength=k)
    frac = n_gh / np.maximum(n_h, 1)[:, None]
    v = np.einsum("h,hg->g", s2_h, n_gh)
    cov = np.diag(v) - np.einsum("h,hg,hf->gf", s2_h * n_h, frac, frac)
    df = int(np.linalg.matrix_rank(cov, tol=1e-9 * max(float(np.abs(cov).max(initial=0)), 1e-300)))
    if df == 0:
        return 0.0, 1.0, 0
    q = float(diff @ np.linalg.pinv(cov, hermitian=True) @ diff)
    return q, float(chi2_sf(q, df)), df


def stratified_correlation(
    x: ArrayLike, scores: ArrayLike, stratum: ArrayLike
) -> tuple[float, float, float]:
    """(r, Q, p): are x and the scores correlated, permuting only within strata?

    The Cochran–Mantel–Haenszel nonzero-correlation statistic (Landis, Heyman & Koch 1978,
    §2.3): T = sum over strata of the within-stratum cross-products S_xa,h, Var T = sum_h
    S_xx,h S_aa,h / (n_h - 1), Q = T^2 / Var T ~ chi-square with 1 degree of freedom
    (two-sided). r = T / sqrt(sum S_xx,h sum S_aa,h) is the pooled within-stratum correlation
    (Spearman's rho when x and the scores are ranks within one stratum).
    """
    xv = np.asarray(x, dtype=float).ravel()
    a = np.asarray(scores, dtype=float).ravel()
    h, n_strata = _strata(stratum, a.size)
    if xv.shape != a.shape:
        raise ValueError("x and scores must match in length")
    n_h = np.bincount(h, minlength=n_strata).astype(float)
    dx = xv - (np.bincount(h, weights=xv, minlength=n_strata) / np.maximum(n_h, 1))[h]
    da = a - (np.bincount(h, weights=a, minlength=n_strata) / np.maximum(n_h, 1))[h]
    s_xx = np.bincount(h, weights=dx * dx, minlength=n_strata)
    s_aa = np.bincount(h, weights=da * da, minlength=n_strata)
    t = float(np.sum(dx * da))
    var = float(np.sum(np.where(n_h >= 2, s_xx * s_aa / np.maximum(n_h - 1, 1), 0.0)))
    if var <= 0:
        return 0.0, 0.0, 1.0
    r = t / float(np.sqrt(s_xx.sum() * s_aa.sum()))
    q = t * t / var
    return r, q, float(chi2_sf(q, 1))


def aligned_ranks(values: ArrayLike) -> np.ndarray:
    """Ranks (average for ties) of one configuration's aligned values across its sessions:
    the scores of the stratified tests (Hodges & Lehmann 1962, §2)."""
    return rankdata(np.asarray(values, dtype=float).ravel())
