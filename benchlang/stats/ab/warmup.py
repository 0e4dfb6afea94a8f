"""Warm-up and cool-down lengths from repeated requests (Bakshy & Frachtenberg, WWW 2015, §2.2).

A freshly started service instance is slow at first (JIT compilation, cold caches) and may drift
at the end of a batch. Repeating requests makes this visible, and §2.2 reads it two ways, both
shown here:

- **The position effect.** A two-way fixed-effects fit ``y = a_cell + b_position + e``, the cell
  being the (host batch, request) pair (so request, host and batch effects are removed) and the
  position counted from the start of the batch for its first ``max_fraction`` and from its end
  for its last; the middle of the batch is the baseline (b = 0). Fitted by least squares with
  the cells absorbed (the Schur complement of the normal equations, a (2m x 2m) system for m
  positions tested at each end), so ``se_p = s sqrt([(X'X)^-1]_pp)`` is the exact OLS standard
  error. A position's effect is within noise when ``|b_p| <= z se_p``, z Bonferroni's over the
  tested positions at ``alpha`` (Dunn, JASA 56, 1961): on data without a transient the advice
  asks for nothing with probability about 1 - alpha. The recommended warm-up is the first
  position after which every effect is within noise (the cool-down likewise from the end).
- **The autocorrelation of the per-request residuals** ``y - a_cell`` in execution order within
  each host batch, pooled over batches, at lags 1..k: a warm-up shows as positive low-lag
  autocorrelation; the same lags of the fit's residuals (position effects removed) say whether
  neighbouring trials still influence each other once the warm-up is accounted for (then the
  bootstrap's clusters must hold them). Residuals of a fit are not white noise even when the
  errors are: a request's repetitions in one batch share its cell mean, so they correlate
  negatively (-1/(r - 1) for r repetitions), which pulls every lag below 0 (by about -0.04 in a
  batch of 5 requests x 4 repetitions). Each lag is therefore judged against its expectation
  under independent errors, ``-tr(H A_l) / (n - rank)`` for the fit's hat matrix H and the lag-l
  pair matrix A_l (``E[e'MAMe] = s^2 tr(MA)``, M = I - H; the ratio's expectation is the
  ratio of expectations for least-squares residuals: Durbin & Watson, Biometrika 37, 1950, §3),
  with its exact SD under independent normal errors from the same moments (``_null_sd``;
  Bartlett's ``sqrt(pairs_l) / n``, Box, Jenkins & Reinsel, *Time Series Analysis*, §2.1.6,
  overstates it by about 1.4 when the cells hold 4 repetitions), and the k lags as one family
  (Bonferroni's z at ``alpha``): on independent errors the advice says "neighbouring trials
  influence each other" in at most about ``alpha`` of pilots (benchmarks/sim_warmup_lags.py;
  docs/ab-designs.md), not in most (78-93% with each lag at 5% around 0).
"""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen(eq=False)
class WarmupSuggestion:
    """Suggested warm-up (``warmup``) and cool-down (``cooldown``) trials per host batch, the
    fitted position effects (``position_mean``, from the start for the first half of the batch
    and from its end for the second) with their SEs, and the autocorrelations at ``lags``."""

    warmup: int
    cooldown: int
    position_mean: np.ndarray
    position_se: np.ndarray
    autocorrelation: float
    batches: int
    tested: int = 0
    """Positions tested at each end (the rest of the batch is the baseline)."""
    z: float = 0.0
    lags: np.ndarray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64))
    acf: np.ndarray = attrs.field(factory=lambda: np.zeros(0))
    """Autocorrelation of the per-request residuals (warm-up included) at each lag."""
    acf_after: np.ndarray = attrs.field(factory=lambda: np.zeros(0))
    """The same of the fit's residuals (the position effects removed)."""
    acf_bound: np.ndarray = attrs.field(factory=lambda: np.zeros(0))
    """Half-width per lag around the expectation: Bonferroni's z over the lags x the null SD."""
    acf_null: np.ndarray = attrs.field(factory=lambda: np.zeros(0))
    """Expected autocorrelation of ``acf`` under independent errors (the cell means' pull)."""
    acf_null_after: np.ndarray = attrs.field(factory=lambda: np.zeros(0))
    """The same of ``acf_after`` (cell means and position effects absorbed)."""
    lag_z: float = 0.0

    @property
    def dependent_lags(self) -> np.ndarray:
        """Lags whose autocorrelation after the position effects lies beyond its bound."""
        beyond = np.abs(self.acf_after - self.acf_null_after) > self.acf_bound
        return np.asarray(self.lags[beyond])


def _dense(*cols: np.ndarray) -> np.ndarray:
    return np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].ravel()


def _within_noise_from(effect: np.ndarray, se: np.ndarray, z: float) -> int:
    """The first position after which every effect is within ``z`` SEs (0 when all are)."""
    outside = np.flatnonzero(np.abs(effect) > z * se)
    return int(outside[-1]) + 1 if outside.size else 0


def _lag_pairs(run: np.ndarray, max_lag: int) -> list[np.ndarray]:
    """Per lag l in 1..max_lag, the indices i of entries whose lag-l neighbour i + l is in the
    same batch (``run`` sorted: consecutive entries of one batch)."""
    return [np.flatnonzero(run[lag:] == run[:-lag]) for lag in range(1, max_lag + 1)]


def pooled_acf(resid: np.ndarray, run: np.ndarray, max_lag: int) -> np.ndarray:
    """Autocorrelation at lags 1..max_lag of residuals in execution order (``run`` sorted:
    consecutive entries of one batch), pooled over batches: lag-l products of neighbours in
    one batch over the sum of squares of all residuals."""
    return _acf(resid, _lag_pairs(run, max_lag))


def _acf(resid: np.ndarray, pairs: list[np.ndarray]) -> np.ndarray:
    total = float(np.sum(resid**2))
    acf = np.zeros(len(pairs))
    for k, i in enumerate(pairs):
        if total > 0 and i.size:
            acf[k] = float(np.sum(resid[i + k + 1] * resid[i]) / total)
    return acf


def _null_acf(
    pairs: list[np.ndarray],
    cell: np.ndarray,
    n_cell: np.ndarray,
    z_cols: np.ndarray,
    inverse: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per lag (trials in execution order): ``tr(P_cell A_l)`` and ``tr(P_cell A_l) + tr(H_pos
    A_l)`` (the hat matrix with the position columns ``z_cols`` = M_cell X added), for the
    expectations of the module docstring."""
    cells, full = np.zeros(len(pairs)), np.zeros(len(pairs))
    projected = z_cols @ inverse  # tr(inv Z'A Z) = sum over pairs of z_i' inv z_j
    for k, i in enumerate(pairs):
        j = i + k + 1
        same = cell[i] == cell[j]
        cells[k] = float(np.sum(1.0 / n_cell[cell[i][same]]))
        full[k] = cells[k] + float(np.einsum("ij,ij->", projected[i], z_cols[j]))
    return cells, full


def _null_sd(
    pairs: list[np.ndarray],
    cell: np.ndarray,
    n_cell: np.ndarray,
    z_cols: np.ndarray,
    inverse: np.ndarray,
) -> np.ndarray:
    """Exact SD per lag of the fit's residual autocorrelation ``r = M e`` when the errors are
    independent normal (trials in execution order).

    ``rho_l = e'M A_l M e / e'M e`` with ``A_l`` the symmetric lag-l pair matrix and M the
    fit's residual projector of rank ``nu``: ``M e / |M e|`` is uniform on the sphere of M's
    range and independent of ``|M e|`` (Koopmans, Ann. Math. Statist. 13, 1942), so ``E[rho^2] =
    E[(e'Be)^2] / E[(e'Me)^2]`` with ``B = M A_l M``, ``E[(e'Be)^2] = tr(B)^2 + 2 tr(B^2)``
    and ``E[(e'Me)^2] = nu^2 + 2 nu`` (Durbin & Watson, Biometrika 37, 1950, §3: the moments
    of a ratio of quadratic forms in least-squares residuals). With ``H = P + Q`` (P the cell
    means' projector ``C D C'``, Q the position columns' ``Z W Z'``, ``P Z = 0``),
    ``tr(MA) = -tr(HA)`` (A has a zero diagonal) and ``tr(MAMA) = tr(A^2) - 2 tr(HA^2) +
    tr(PAPA) + 2 tr(PAQA) + tr(QAQA)``, each a sum over the sparse pairs or a small matrix."""
    from scipy import sparse

    n = cell.size
    cells = n_cell.size
    nu = max(n - cells - z_cols.shape[1], 1)
    C = sparse.csr_matrix((np.ones(n), (np.arange(n), cell)), shape=(n, cells))
    d = 1.0 / n_cell
    W = inverse
    sd = np.zeros(len(pairs))
    for k, i in enumerate(pairs):
        if not i.size:
            continue
        j = i + k + 1
        S = sparse.csr_matrix((np.full(i.size, 0.5), (i, j)), shape=(n, n))
        A = (S + S.T).tocsr()
        AC = (A @ C).tocsc()
        AZ = A @ z_cols
        G = (C.T @ AC).tocoo()
        F = C.T @ AZ
        K = z_cols.T @ AZ
        tr_ha = float(np.sum(d[cell[i]] * (cell[i] == cell[j]))) + float(
            np.einsum("ij,ij->", z_cols[i] @ W, z_cols[j])
        )
        tr_aa = i.size / 2.0
        tr_paa = float(np.asarray(AC.multiply(AC).sum(axis=0)).ravel() @ d)
        tr_qaa = float(np.sum((AZ @ W) * AZ))
        tr_papa = float(np.sum(G.data**2 * d[G.row] * d[G.col]))
        tr_paqa = float(np.sum(((F @ W) * F).sum(axis=1) * d))
        tr_qaqa = float(np.sum((W @ K) * (W @ K).T))
        tr_mama = tr_aa - 2.0 * (tr_paa + tr_qaa) + tr_papa + 2.0 * tr_paqa + tr_qaqa
        mean = -tr_ha / nu
        second = (tr_ha**2 + 2.0 * tr_mama) / (nu * (nu + 2.0))
        sd[k] = np.sqrt(max(second - mean**2, 0.0))
    return sd


def suggest_warmup(
    y: np.ndarray,
    request: np.ndarray,
    batch: np.ndarray,
    position: np.ndarray,
    *,
    alpha: float = 0.05,
    max_fraction: float = 0.25,
    max_lag: int = 10,
) -> WarmupSuggestion:
    """Warm-up and cool-down from the fitted position effects, with the autocorrelation of
    the per-request residuals at lags 1..``max_lag`` (module docstring; §2.2).

    ``batch`` identifies the host batch of each trial (e.g. ``host * 2 + batch``) and
    ``position`` its index in that batch's execution order; every request must run at least
    twice in a batch. At most ``max_fraction`` of a batch is tested at either end.
    """
    from scipy.stats import norm

    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        raise ValueError("no successful trials to read a warm-up from")
    if not np.isfinite(y).all():
        raise ValueError("the values must be finite (leave failed trials out)")
    run = _dense(np.asarray(batch))
    cell = _dense(run, np.asarray(request))
    if np.bincount(cell).min() < 2:
        raise ValueError("every request must be repeated in its host batch to separate warm-up")
    order = np.lexsort((np.asarray(position), run))
    length = np.bincount(run)
    pos = np.empty(y.size, dtype=np.int64)
    pos[order] = np.arange(y.size) - np.r_[0, np.cumsum(length)[:-1]][run[order]]
    back = (length[run] - 1) - pos
    L = int(length.min())
    tested = max(1, int(max_fraction * L))
    if L - 2 * tested < 3:
        raise ValueError(
            "too few trials per host batch: need at least 6 to compare its ends with its middle"
        )
    # index 0..tested-1: from the start; tested..2 tested-1: from the end; 2 tested: the middle
    index = np.where(pos < tested, pos, np.where(back < tested, 2 * tested - 1 - back, 2 * tested))
    p = 2 * tested + 1
    n_index = np.bincount(index, minlength=p).astype(np.float64)
    n_cell = np.bincount(cell).astype(np.float64)
    counts = np.bincount(cell * p + index, minlength=n_cell.size * p).reshape(-1, p)
    cell_mean = np.bincount(cell, weights=y) / n_cell
    info = np.diag(n_index) - counts.T @ (counts / n_cell[:, None])
    inverse = np.linalg.pinv(info[:-1, :-1])
    score = np.bincount(index, weights=y, minlength=p) - counts.T @ cell_mean
    effect = np.r_[inverse @ score[:-1], 0.0]
    a = np.bincount(cell, weights=y - effect[index]) / n_cell
    resid = y - a[cell] - effect[index]
    dof = max(y.size - int(cell.max()) - 1 - 2 * tested, 1)
    floor = 1e-9 * float(np.max(np.abs(y))) if y.size else 0.0  # values exact to rounding
    s = max(float(np.sqrt(np.sum(resid**2) / dof)), floor)
    se = s * np.sqrt(np.diag(inverse))
    z = float(norm.ppf(1.0 - alpha / (2.0 * 2 * tested)))
    front, front_se = effect[:tested], se[:tested]
    rear, rear_se = effect[tested:-1][::-1], se[tested:][::-1]
    lags = min(max_lag, L - 1)
    pairs = _lag_pairs(run[order], lags)
    acf = _acf((y - a[cell])[order], pairs)
    acf_after = _acf(resid[order], pairs)
    z_cols = (index[:, None] == np.arange(p - 1)) - counts[cell, :-1] / n_cell[cell, None]
    cells, full = _null_acf(pairs, cell[order], n_cell, z_cols[order], inverse)
    n_cells = int(cell.max()) + 1
    lag_z = float(norm.ppf(1.0 - alpha / (2.0 * max(lags, 1))))
    bound = lag_z * _null_sd(pairs, cell[order], n_cell, z_cols[order], inverse)
    profile = np.zeros(L)
    profile_se = np.zeros(L)
    profile[:tested], profile_se[:tested] = front, front_se
    profile[L - tested :], profile_se[L - tested :] = rear[::-1], rear_se[::-1]
    profile_se[tested : L - tested] = 0.0  # the baseline: 0 by definition
    return WarmupSuggestion(
        warmup=_within_noise_from(front, front_se, z),
        cooldown=_within_noise_from(rear, rear_se, z),
        position_mean=profile,
        position_se=profile_se,
        autocorrelation=float(acf[0]) if acf.size else 0.0,
        batches=int(length.size),
        tested=tested,
        z=z,
        lags=np.arange(1, lags + 1),
        acf=acf,
        acf_after=acf_after,
        acf_bound=bound,
        acf_null=-cells / max(y.size - n_cells, 1),
        acf_null_after=-full / dof,
        lag_z=lag_z,
    )
