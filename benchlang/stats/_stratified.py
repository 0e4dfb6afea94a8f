"""Kernels of the run-level independence tests (``stats.run_independence``): rank scores
within strata and the two permutation statistics, for R rows of values sharing one design.

A stratified rank trend statistic (van Elteren 1960 weights; Page 1963) and the pooled lag-1
serial covariance of the rank scores within blocks (Wald & Wolfowitz 1943), each against its
permutation distribution within strata (blocks): sampled with ``permutations`` seeded
permutations (Phipson & Smyth 2010), or through its exact permutation mean and variance and
the normal distribution when ``permutations`` is 0.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike


def arrange(strata: np.ndarray, blocks: np.ndarray, time: np.ndarray) -> np.ndarray:
    """The order that makes strata, then blocks inside them, contiguous, each in time order."""
    return np.lexsort((time, blocks, strata))


def ranks_within(v: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Midranks of each row of ``v`` (R x N) within contiguous ``strata`` (non-decreasing)."""
    r, n = v.shape
    by_value = np.argsort(v, axis=1)
    order = np.take_along_axis(
        by_value, np.argsort(strata[by_value], axis=1, kind="stable"), axis=1
    )
    sv = np.take_along_axis(v, order, axis=1)
    ss = strata[order]
    new = np.ones((r, n), bool)
    new[:, 1:] = (sv[:, 1:] != sv[:, :-1]) | (ss[:, 1:] != ss[:, :-1])
    group = np.cumsum(new, axis=1) - 1 + (np.arange(r) * n)[:, None]
    start = np.searchsorted(strata, strata, side="left")  # first index of each value's stratum
    position = np.broadcast_to(np.arange(1, n + 1, dtype=float), (r, n)) - start[order]
    average = np.bincount(group.ravel(), weights=position.ravel(), minlength=r * n)
    counts = np.bincount(group.ravel(), minlength=r * n)
    ranks = np.empty((r, n))
    np.put_along_axis(ranks, order, average[group] / np.maximum(counts[group], 1), axis=1)
    return ranks


def labels(labels: ArrayLike, n: int) -> np.ndarray:
    """``labels`` as non-negative integers: as they are when they already are (and not too
    sparse for ``bincount``), else their index among the distinct labels."""
    a = np.asarray(labels).ravel()
    if a.dtype.kind in "iub" and (a.size == 0 or (a.min() >= 0 and a.max() < 4 * n + 1024)):
        return a.astype(np.int64, copy=False)
    return np.unique(a, return_inverse=True)[1].ravel().astype(np.int64)


def runs(labels: np.ndarray) -> np.ndarray:
    """0, 1, ... numbering the runs of equal consecutive ``labels`` (contiguous groups)."""
    if labels.size == 0:
        return labels.astype(np.int64)
    return np.concatenate([[0], np.cumsum(labels[1:] != labels[:-1])]).astype(np.int64)


def group_sums(x: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Sums of each row's entries per label 0..k-1 (R x k)."""
    r = x.shape[0]
    idx = (labels[None, :] + k * np.arange(r)[:, None]).ravel()
    return np.bincount(idx, weights=x.ravel(), minlength=r * k).reshape(r, k)


def _within_permutations(groups: np.ndarray, b: int, rng: np.random.Generator) -> np.ndarray:
    """``b`` random permutations (b x N) that move positions only within contiguous
    ``groups``."""
    keys = groups[None, :].astype(float) + rng.random((b, groups.size))
    return np.argsort(keys, axis=1)


def _two_sided_mc(observed: np.ndarray, permuted: np.ndarray) -> np.ndarray:
    """Phipson & Smyth's p = (b + 1)/(B + 1), b = #{|permuted| >= |observed|} per row."""
    tol = 1e-9 * np.maximum(1.0, np.abs(observed))[:, None]
    b = (np.abs(permuted) >= np.abs(observed)[:, None] - tol).sum(axis=1)
    p: np.ndarray = (b + 1.0) / (permuted.shape[1] + 1.0)
    return p


def _normal_p(z: np.ndarray) -> np.ndarray:
    return np.array([math.erfc(abs(float(x)) / math.sqrt(2.0)) for x in np.ravel(z)])


def trend(
    u: np.ndarray,
    strata: np.ndarray,
    time: np.ndarray,
    k: int,
    permutations: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Stratified rank-trend statistic of scores ``u`` (R x N, centred in strata) against
    ``time``: z and two-sided p per row, and the number of strata with two or more values."""
    counts = np.bincount(strata, minlength=k).astype(float)
    tmean = np.bincount(strata, weights=time, minlength=k) / np.maximum(counts, 1)
    tc = time - tmean[strata]
    s = u @ tc
    ss_u = group_sums(u * u, strata, k)
    ss_t = np.bincount(strata, weights=tc * tc, minlength=k)
    usable = counts >= 2
    var = (ss_u[:, usable] * ss_t[usable] / (counts[usable] - 1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, s / np.sqrt(var), 0.0)
    if permutations:
        perm = _within_permutations(strata, permutations, rng)
        p = _two_sided_mc(s, u @ tc[perm].T)
    else:
        p = _normal_p(z)
    return z, np.where(var > 0, p, 1.0), int(usable.sum())


def serial(
    u: np.ndarray, blocks: np.ndarray, k: int, permutations: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, int]:
    """Pooled lag-1 serial covariance of ``u`` (R x N) demeaned within contiguous ``blocks``,
    against its permutation distribution within blocks. Exact permutation moments of
    S = sum_i d_i d_(i+1) over a block's n scores d (sum d = 0, P_r = sum d^r):
    E S = -P2/n, E S^2 = (P2^2 - P4)/n + (P2^2 - 2 P4)/(n(n - 1)) (derivation in
    docs/statistics.md)."""
    counts = np.bincount(blocks, minlength=k).astype(float)
    d = u - (group_sums(u, blocks, k) / np.maximum(counts, 1))[:, blocks]
    link = blocks[1:] == blocks[:-1]
    s = (d[:, 1:] * d[:, :-1]) @ link
    p2 = group_sums(d * d, blocks, k)
    p4 = group_sums(d**4, blocks, k)
    usable = counts >= 3
    n = counts[usable]
    p2, p4 = p2[:, usable], p4[:, usable]
    mean = (-p2 / n).sum(axis=1)
    var = ((p2**2 - p4) / n + (p2**2 - 2 * p4) / (n * (n - 1)) - (p2 / n) ** 2).sum(axis=1)
    var = np.maximum(var, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 1e-300, (s - mean) / np.sqrt(var), 0.0)
    if permutations:
        perm = _within_permutations(blocks, permutations, rng)
        permuted = np.empty((d.shape[0], permutations))
        step = max(1, 4_000_000 // max(1, permutations * d.shape[1]))
        for i in range(0, d.shape[0], step):
            dp = d[i : i + step][:, perm]
            permuted[i : i + step] = (dp[..., 1:] * dp[..., :-1]) @ link
        p = _two_sided_mc(s - mean, permuted - mean[:, None])
    else:
        p = _normal_p(z)
    return z, np.where(var > 1e-300, p, 1.0), int(usable.sum())
