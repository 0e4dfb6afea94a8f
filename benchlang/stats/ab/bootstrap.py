"""Clustered bootstrap by reweighting for A/B differences (Bakshy & Frachtenberg, WWW 2015, §5).

Each replicate gives every *cluster* one random weight with mean 1 and variance 1 (§5.1; Owen &
Eckles 2012), and recomputes the two versions' weighted means. Clusters (§5.2):

- ``none``: every trial is its own cluster (the iid bootstrap);
- ``request``: all trials of a request, under both versions, share a weight;
- ``host``: all trials of a host share a weight;
- ``host_block``: hosts that executed the same requests share a weight (connected components
  of the host–request graph; pairs of hosts in the request-balanced layout).

Vectorised: per-cluster sums and counts are formed once, then a (replicates x clusters) weight
matrix turns them into replicate means with two matrix products; no loop over replicates or
trials (a loop over blocks of clusters bounds memory when there are very many clusters).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

CLUSTERS = ("none", "request", "host", "host_block")
MIN_CLUSTERS = 5
"""Fewest clusters holding trials of each version for a bootstrap interval (see
:class:`TooFewClusters`)."""
WEIGHTS = ("poisson", "exponential", "double_or_nothing")
_BLOCK = 1 << 22  # weights drawn per block: replicates x clusters x experiments elements


class TooFewClusters(ValueError):
    """A version is measured in fewer than ``MIN_CLUSTERS`` clusters: no bootstrap interval.

    With a single cluster per version the cluster weight cancels in the version's weighted
    mean, so every replicate gives the same difference: SE 0, a zero-width interval and a
    spurious "significant". With a handful of clusters the cluster bootstrap still
    underestimates the variance and over-rejects badly: Cameron, Gelbach & Miller,
    "Bootstrap-based improvements for inference with clustered errors", Rev. Econ. Stat.
    90(3), 2008, §IV (Monte Carlo with G = 5 ... 30 clusters: the pairs cluster bootstrap and
    CRVE Wald tests reject a true null far above the nominal 5% at G = 5-10; rejection rates
    approach nominal only from G ≈ 20-30); Field & Welsh, JRSS B 69(3) 2007 (consistency only as
    the number of clusters grows). Five per version is the floor below which benchlang gives no
    interval at all; between 5 and 20 the interval is given with a note that it is likely too
    narrow (docs/ab-designs.md).
    """

    def __init__(self, message: str, per_version: tuple[int, ...]):
        super().__init__(message)
        self.per_version = per_version


def clusters_per_version(version: np.ndarray, codes: np.ndarray) -> tuple[int, ...]:
    """How many distinct clusters hold trials of each version (0, 1, ...)."""
    version = np.asarray(version, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    k = int(version.max()) + 1 if version.size else 0
    return tuple(int(np.unique(codes[version == v]).size) for v in range(k))


@attrs.frozen
class ABBootstrapResult:
    """Difference treatment - control (of means, or of mean logs) with a bootstrap interval."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    confidence: float
    interval: str
    cluster: str
    clusters: int
    replicates: int
    dropped: int
    weights: str
    log: bool
    mean_control: float
    mean_treatment: float

    @property
    def relative_effect(self) -> float | None:
        """``exp(estimate) - 1`` for a log-scale comparison: the relative change of the treatment."""
        return math.expm1(self.estimate) if self.log else None

    clusters_per_version: tuple[int, ...] = ()

    @property
    def significant(self) -> bool:
        """The interval excludes 0, and it has a width: an SE of 0 (or nan) is never significant."""
        if not (math.isfinite(self.se) and self.se > 0.0):
            return False
        return not (self.ci_low <= 0.0 <= self.ci_high)

    def to_dict(self) -> dict[str, Any]:
        """The fields with the derived ``significant`` (for the JSON of a comparison)."""
        return {**attrs.asdict(self, recurse=False), "significant": self.significant}


def draw_weights(kind: str, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Cluster weights with mean 1 and variance 1 (§5.1).

    ``poisson``: Poisson(1), the default (integer weights: a resample). ``exponential``:
    Exp(1), the Bayesian bootstrap. ``double_or_nothing``: 0 or 2 with probability 1/2 (the
    bounded alternative). The paper's Uniform(0, 2) has variance 1/3 and would understate the SE
    by sqrt(3); rescaled to variance 1 it takes negative values, so it is not offered.
    """
    if kind == "poisson":
        return _poisson1(size, rng)
    if kind == "exponential":
        return rng.standard_exponential(size)
    if kind == "double_or_nothing":
        return 2.0 * rng.integers(0, 2, size, dtype=np.int8)
    raise ValueError(f"unknown weights {kind!r}; expected one of {', '.join(WEIGHTS)}")


# Poisson(1) by inversion of its CDF on 32-bit uniforms: value k when u >= ceil(F(k-1) 2^32).
# Probabilities are exact to 2^-32; values above 12 (probability 6.4e-11) are merged into 12.
_POISSON1_THRESHOLDS = np.array(
    [
        t
        for t in (
            math.ceil(F * 2.0**32)
            for F in np.cumsum([math.exp(-1) / math.factorial(k) for k in range(13)])
        )
        if t < 2**32
    ],
    dtype=np.uint32,
)


def _poisson1(size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Poisson(1) draws as float64, several times faster than ``Generator.poisson``."""
    u = rng.integers(0, 2**32, size, dtype=np.uint32)
    k = np.zeros(size, dtype=np.uint8)
    step = np.empty(size, dtype=bool)
    for t in _POISSON1_THRESHOLDS:
        np.greater_equal(u, t, out=step)
        k += step.view(np.uint8)
    return k.astype(np.float64)


def host_blocks(request: np.ndarray, host: np.ndarray) -> np.ndarray:
    """Per-trial block id: hosts linked by a shared request form one block (§5.2)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    h = np.unique(np.asarray(host), return_inverse=True)[1]
    r = np.unique(np.asarray(request), return_inverse=True)[1]
    nh, nr = h.max() + 1, r.max() + 1
    edges = sp.coo_matrix((np.ones(h.size), (h, nh + r)), shape=(nh + nr, nh + nr))
    labels = connected_components(edges, directed=False)[1]
    return np.unique(labels[:nh], return_inverse=True)[1][h]


def cluster_codes(
    cluster: str,
    n: int,
    request: np.ndarray | None = None,
    host: np.ndarray | None = None,
) -> np.ndarray:
    """Dense cluster ids 0..C-1 per trial for one of :data:`CLUSTERS`."""
    if cluster == "none":
        return np.arange(n)
    if cluster == "request" and request is not None:
        return np.unique(np.asarray(request), return_inverse=True)[1]
    if cluster == "host" and host is not None:
        return np.unique(np.asarray(host), return_inverse=True)[1]
    if cluster == "host_block" and host is not None and request is not None:
        return host_blocks(request, host)
    if cluster not in CLUSTERS:
        raise ValueError(f"unknown cluster {cluster!r}; expected one of {', '.join(CLUSTERS)}")
    raise ValueError(
        f"cluster {cluster!r} needs the {'request and host' if cluster == 'host_block' else cluster} of every trial"
    )


def cluster_sums(
    y: np.ndarray, version: np.ndarray, codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-(version, cluster) sums ``(..., 2, C)`` of y (1-D, or experiments x trials) and counts ``(2, C)``."""
    C = int(codes.max()) + 1
    col = np.asarray(version, dtype=np.int64) * C + codes
    counts = np.bincount(col, minlength=2 * C).reshape(2, C).astype(np.float64)
    if y.ndim == 1:
        return np.bincount(col, weights=y, minlength=2 * C).reshape(2, C), counts
    import scipy.sparse as sp

    ind = sp.csr_matrix((np.ones(col.size), (col, np.arange(col.size))), shape=(2 * C, col.size))
    sums = np.asarray((ind @ y.T).T)
    return sums.reshape(y.shape[0], 2, C), counts


def replicate_differences(
    sums: np.ndarray,
    counts: np.ndarray,
    replicates: int,
    weights: str,
    rng: np.random.Generator,
) -> np.ndarray:
    """Replicate differences of weighted means, ``(..., replicates)``; NaN where a version got weight 0.

    ``sums`` is ``(2, C)`` or ``(E, 2, C)`` (E experiments with the same design, independent weights).
    """
    squeeze = sums.ndim == 2
    s = sums[None] if squeeze else sums
    E, _, C = s.shape
    num = np.zeros((E, 2, replicates))
    den = np.zeros((E, 2, replicates))
    e_step = max(1, _BLOCK // max(1, replicates * C))
    c_step = max(1, _BLOCK // (replicates * min(E, e_step)))
    for e0 in range(0, E, e_step):
        e1 = min(E, e0 + e_step)
        for c0 in range(0, C, c_step):
            c1 = min(C, c0 + c_step)
            w = draw_weights(weights, (e1 - e0, replicates, c1 - c0), rng)
            num[e0:e1] += np.matmul(s[e0:e1, :, c0:c1], w.transpose(0, 2, 1))
            den[e0:e1] += np.matmul(counts[:, c0:c1], w.transpose(0, 2, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(den > 0, num / den, np.nan)
    diff = means[:, 1] - means[:, 0]
    return diff[0] if squeeze else diff


def _check_inputs(y: np.ndarray, version: np.ndarray, log: bool) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=np.float64)
    version = np.asarray(version)
    if y.shape[-1] != version.size:
        raise ValueError("y and version must have one entry per trial")
    if not np.isin(version, (0, 1)).all() or np.unique(version).size != 2:
        raise ValueError("version must be 0 (control) or 1 (treatment), with trials of both")
    return outcomes_on_scale(y, log), version.astype(np.int64)


def outcomes_on_scale(y: np.ndarray, log: bool) -> np.ndarray:
    """The outcomes checked finite, on the log scale when ``log`` (ratios, §4.1)."""
    if not np.isfinite(y).all():
        raise ValueError("outcomes must be finite")
    if log:
        if (y <= 0).any():
            raise ValueError("log outcomes need strictly positive values")
        y = np.log(y)
    return y


def ab_bootstrap(
    y: np.ndarray,
    version: np.ndarray,
    *,
    request: np.ndarray | None = None,
    host: np.ndarray | None = None,
    cluster: str = "host",
    replicates: int = 10_000,
    weights: str = "poisson",
    log: bool = False,
    interval: str = "clt",
    confidence: float = 95.0,
    seed: int | np.random.Generator = 0,
    min_clusters: int = MIN_CLUSTERS,
    codes: np.ndarray | None = None,
) -> ABBootstrapResult:
    """Treatment - control difference in means with a clustered reweighting bootstrap (§5.1–5.2).

    ``interval="clt"`` gives ``estimate ± z * sd(replicates)`` (the paper's choice);
    ``"percentile"`` the replicate quantiles. ``log=True`` compares mean log outcomes, whose
    difference ``d`` is a relative effect ``exp(d) - 1``. ``codes`` (cluster ids per trial)
    overrides ``cluster``'s own codes, for clusters the caller forms (rounds, series);
    ``cluster`` then only names them.

    Raises :class:`TooFewClusters` when a version has trials in fewer than ``min_clusters``
    clusters (Cameron, Gelbach & Miller 2008): one cluster per version would give SE 0.
    """
    if min_clusters < 2:
        raise ValueError("min_clusters must be >= 2")
    if interval not in ("clt", "percentile"):
        raise ValueError("interval must be 'clt' or 'percentile'")
    if not 0 < confidence < 100:
        raise ValueError("confidence must be in (0, 100) percent")
    if replicates < 2:
        raise ValueError("replicates must be >= 2")
    y, version = _check_inputs(y, version, log)
    if codes is None:
        codes = cluster_codes(cluster, y.size, request, host)
    else:
        codes = np.unique(np.asarray(codes), return_inverse=True)[1].ravel()
        if codes.size != y.size:
            raise ValueError("codes must have one entry per trial")
    per_version = clusters_per_version(version, codes)
    if min(per_version) < min_clusters:
        raise TooFewClusters(
            f"cluster {cluster}: {' and '.join(str(c) for c in per_version)} clusters hold the "
            f"two versions' trials; a bootstrap interval needs at least {min_clusters} per version "
            "(with one, every replicate gives the same difference: SE 0)",
            per_version,
        )
    sums, counts = cluster_sums(y, version, codes)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    reps = replicate_differences(sums, counts, replicates, weights, rng)
    valid = reps[np.isfinite(reps)]
    if valid.size < 2:
        raise ValueError("too few clusters: almost every replicate left a version without weight")
    m0, m1 = (sums[v].sum() / counts[v].sum() for v in (0, 1))
    est = float(m1 - m0)
    se = float(valid.std(ddof=1))
    if interval == "clt":
        from scipy.stats import norm

        z = norm.ppf(0.5 + confidence / 200)
        lo, hi = est - z * se, est + z * se
    else:
        lo, hi = np.quantile(valid, [0.5 - confidence / 200, 0.5 + confidence / 200])
    return ABBootstrapResult(
        estimate=est,
        se=se,
        ci_low=float(lo),
        ci_high=float(hi),
        confidence=confidence,
        interval=interval,
        cluster=cluster,
        clusters=int(codes.max()) + 1,
        replicates=int(valid.size),
        dropped=int(reps.size - valid.size),
        weights=weights,
        log=log,
        mean_control=float(m0),
        mean_treatment=float(m1),
        clusters_per_version=per_version,
    )


def bootstrap_se_many(
    Y: np.ndarray,
    version: np.ndarray,
    codes: np.ndarray,
    replicates: int,
    weights: str,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Estimates and bootstrap SEs of E experiments on one design at once (for A/A simulation, §6)."""
    sums, counts = cluster_sums(Y, version, codes)
    est = sums[:, 1].sum(axis=1) / counts[1].sum() - sums[:, 0].sum(axis=1) / counts[0].sum()
    reps = replicate_differences(sums, counts, replicates, weights, rng)
    kept = np.isfinite(reps).sum(axis=1)
    se = np.full(est.shape, np.nan)
    some = kept >= 2
    se[some] = np.nanstd(reps[some], axis=1, ddof=1)
    return est, se
