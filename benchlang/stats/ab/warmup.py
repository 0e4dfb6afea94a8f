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
  each host batch, pooled over batches, at lags 1..k, with the large-sample white-noise bound
  ``1.96 sqrt(pairs_l) / n`` per lag (Bartlett 1946; Box, Jenkins & Reinsel, *Time Series
  Analysis*, §2.1.6): a warm-up shows as positive low-lag autocorrelation; the same lags of the
  fit's residuals (position effects removed) say whether neighbouring trials still influence
  each other once the warm-up is accounted for (then the bootstrap's clusters must hold them).
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


def _dense(*cols: np.ndarray) -> np.ndarray:
    return np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].ravel()


def _within_noise_from(effect: np.ndarray, se: np.ndarray, z: float) -> int:
    """The first position after which every effect is within ``z`` SEs (0 when all are)."""
    outside = np.flatnonzero(np.abs(effect) > z * se)
    return int(outside[-1]) + 1 if outside.size else 0


def pooled_acf(resid: np.ndarray, run: np.ndarray, max_lag: int) -> tuple[np.ndarray, np.ndarray]:
    """Autocorrelation at lags 1..max_lag of residuals in execution order (``run`` sorted:
    consecutive entries of one batch), pooled over batches, and the white-noise bound per lag."""
    total = float(np.sum(resid**2))
    acf, bound = np.zeros(max_lag), np.zeros(max_lag)
    for lag in range(1, max_lag + 1):
        same = run[lag:] == run[:-lag]
        pairs = int(same.sum())
        if total > 0 and pairs:
            acf[lag - 1] = float(np.sum(resid[lag:][same] * resid[:-lag][same]) / total)
        bound[lag - 1] = 1.96 * np.sqrt(pairs) / max(resid.size, 1)
    return acf, bound


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
    acf, bound = pooled_acf((y - a[cell])[order], run[order], lags)
    acf_after, _ = pooled_acf(resid[order], run[order], lags)
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
    )
