"""One-dimensional Gaussian mixtures fitted by EM, vectorised over samples, components and
models: the adaptive stopping rule's test for multimodality (Mittal et al., PMBS '23, §2.1)
compares their BIC across numbers of components.
"""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen
class MixtureGrid:
    """The grid of 1-D Gaussian mixtures fitted at once (per-component or shared variance).

    Components of all models are stacked in one flat array; ``starts`` indexes the first
    component of each model. Parameters are in standardised units of the data they were fitted on.
    """

    sizes: np.ndarray
    tied: np.ndarray
    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.sizes)[:-1]))

    @property
    def owner(self) -> np.ndarray:
        return np.repeat(np.arange(self.sizes.size), self.sizes)

    def n_parameters(self) -> np.ndarray:
        k = self.sizes
        return 2 * k - 1 + np.where(self.tied, 1, k)


def mixture_grid(max_components: int) -> tuple[np.ndarray, np.ndarray]:
    sizes, tied = [1], [False]
    for k in range(2, max_components + 1):
        sizes += [k, k]
        tied += [False, True]
    return np.array(sizes), np.array(tied)


def initial_mixtures(z: np.ndarray, max_components: int) -> MixtureGrid:
    """Deterministic start: means at the (i + 1/2)/K quantiles, equal weights, variance 1/K²."""
    sizes, tied = mixture_grid(max_components)
    k = np.repeat(sizes, sizes)
    i = np.concatenate([np.arange(s) for s in sizes])
    means = np.quantile(z, (i + 0.5) / k)
    return MixtureGrid(sizes, tied, 1.0 / k, means, 1.0 / k**2)


def log_densities(z: np.ndarray, g: MixtureGrid) -> tuple[np.ndarray, np.ndarray]:
    """Per-component log(w·φ) (C × n) and per-model log-likelihood of each sample (M × n)."""
    logp = (
        np.log(g.weights)[:, None]
        - 0.5 * np.log(2 * np.pi * g.variances)[:, None]
        - (z[None, :] - g.means[:, None]) ** 2 / (2 * g.variances[:, None])
    )
    starts, owner = g.starts, g.owner
    top = np.maximum.reduceat(logp, starts, axis=0)
    lse = top + np.log(np.add.reduceat(np.exp(logp - top[owner]), starts, axis=0))
    return logp, lse


def fit_mixtures(
    z: np.ndarray,
    start: MixtureGrid,
    max_iter: int = 200,
    tol: float = 1e-6,
    reg: float = 1e-6,
) -> tuple[MixtureGrid, np.ndarray]:
    """EM for every model of the grid at once (Dempster, Laird & Rubin 1977; Bishop, PRML §9.2).

    ``z`` are standardised samples. Returns the fitted grid and each model's per-sample
    log-likelihood (M × n). ``reg`` floors the variances as sklearn's ``reg_covar`` does.
    """
    n = z.size
    g = start
    previous = None
    for _ in range(max_iter):
        logp, lse = log_densities(z, g)
        mean_ll = lse.mean(axis=1)
        if previous is not None and np.max(np.abs(mean_ll - previous)) < tol:
            return g, lse
        previous = mean_ll
        starts, owner = g.starts, g.owner
        resp = np.exp(logp - lse[owner])
        nk = resp.sum(axis=1) + 10 * np.finfo(float).eps
        means = resp @ z / nk
        scatter = (resp * (z[None, :] - means[:, None]) ** 2).sum(axis=1)
        shared = np.add.reduceat(scatter, starts) / n
        variances = np.where(g.tied[owner], shared[owner], scatter / nk) + reg
        g = MixtureGrid(g.sizes, g.tied, nk / n, means, variances)
    return g, log_densities(z, g)[1]
