"""Vectorised A/A and A/B simulation of the four layouts (Bakshy & Frachtenberg, WWW 2015, §4.2, §6).

Outcomes follow Eq. 3–4 (:mod:`benchlang.stats.ab.designs`). Random effects are drawn per level:
request, host, request x batch and host x batch, where a batch is one service instance of one
version on one host. Because the two versions always run in separate instances, a request's
(host's) batch effect is drawn per version run even in the one-batch layouts. Many experiments
are simulated at once as an (experiments x trials) matrix.
"""

from __future__ import annotations

import attrs
import numpy as np

from benchlang.design.layouts import LayoutSchedule, layout_schedule
from benchlang.stats.ab.bootstrap import (
    MIN_CLUSTERS,
    bootstrap_se_many,
    cluster_codes,
    clusters_per_version,
)
from benchlang.stats.ab.designs import VarianceComponents, layout_se

SCHEMES = ("none", "request", "host", "host_block")


@attrs.frozen(eq=False)
class ABDesign:
    """The measured trials of a two-version experiment: per-trial version, request, host, batch."""

    version: np.ndarray
    request: np.ndarray
    host: np.ndarray
    batch: np.ndarray

    @classmethod
    def from_schedule(cls, schedule: LayoutSchedule) -> ABDesign:
        m = schedule.measured
        return cls(schedule.version[m], schedule.request[m], schedule.host[m], schedule.batch[m])

    @property
    def size(self) -> int:
        return int(self.version.size)

    def factors(self) -> dict[str, np.ndarray]:
        """Dense level ids of each random term; a request batch is (request, host, batch)."""

        def dense(*cols: np.ndarray) -> np.ndarray:
            return np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].ravel()

        return {
            "request": dense(self.request),
            "host": dense(self.host),
            "request_batch": dense(self.request, self.host, self.batch),
            "host_batch": dense(self.host, self.batch),
        }


def simulate_outcomes(
    design: ABDesign,
    components: VarianceComponents,
    experiments: int,
    rng: np.random.Generator,
    effect: float = 0.0,
) -> np.ndarray:
    """``(experiments, trials)`` outcomes from Eq. 3–4 with treatment effect ``effect``."""
    y = rng.standard_normal((experiments, design.size)) * np.sqrt(components.residual)
    for name, codes in design.factors().items():
        sd = np.sqrt(getattr(components, name))
        if sd > 0:
            y += (rng.standard_normal((experiments, int(codes.max()) + 1)) * sd)[:, codes]
    return np.asarray(y + effect * design.version)


@attrs.frozen
class SchemeResult:
    """Type I error (or power) of one bootstrap cluster scheme over the simulated experiments.

    The rate counts only experiments whose bootstrap gave an SE (``tested``): one whose every
    replicate left a version without weight has no test, and counting it "not rejected" would
    understate the rate. A scheme with one cluster per version has no rate at all (NaN): the
    cluster weight cancels in each version's weighted mean, so every replicate gives the same
    difference and the SE is 0 up to rounding (``bootstrap.TooFewClusters``)."""

    cluster: str
    clusters: int
    rejection_rate: float
    mean_se: float
    estimates: np.ndarray = attrs.field(factory=lambda: np.empty(0), eq=False, repr=False)
    """Each simulated experiment's estimate (treatment - control), for figures and --json."""
    ses: np.ndarray = attrs.field(factory=lambda: np.empty(0), eq=False, repr=False)
    """Each experiment's bootstrap SE under this scheme (NaN where it has none)."""
    clusters_per_version: tuple[int, ...] = ()
    """Distinct clusters holding each version's trials (control, treatment)."""

    @property
    def tested(self) -> int:
        """Experiments the scheme could test: a finite SE, and more than one cluster per version."""
        if self.degenerate:
            return 0
        return int(np.count_nonzero(np.isfinite(self.ses)))

    @property
    def rejections(self) -> int:
        return round(self.rejection_rate * self.tested) if self.tested else 0

    @property
    def degenerate(self) -> bool:
        """One cluster holds all of a version's trials: the bootstrap sees no variation."""
        return bool(self.clusters_per_version) and min(self.clusters_per_version) < 2

    @property
    def below_floor(self) -> bool:
        """Fewer clusters per version than benchlang's analysis needs for an interval
        (``bootstrap.MIN_CLUSTERS``): the rate shows what a bootstrap would do regardless."""
        return bool(self.clusters_per_version) and min(self.clusters_per_version) < MIN_CLUSTERS


@attrs.frozen
class AAResult:
    """A/A (or A/B with ``effect``) simulation of one layout: spread of the estimate, rates per scheme."""

    layout: str
    hosts: int
    requests: int
    repetitions: int
    experiments: int
    replicates: int
    alpha: float
    effect: float
    analytic_se: float
    simulated_sd: float
    schemes: tuple[SchemeResult, ...]

    def rate(self, cluster: str) -> float:
        return next(s.rejection_rate for s in self.schemes if s.cluster == cluster)


def simulate_aa(
    layout: str,
    H: int,
    R: int,
    T: int,
    components: VarianceComponents,
    experiments: int = 2000,
    replicates: int = 200,
    seed: int = 0,
    *,
    schemes: tuple[str, ...] = SCHEMES,
    weights: str = "poisson",
    alpha: float = 0.05,
    effect: float = 0.0,
) -> AAResult:
    """Simulate experiments of a layout and the rejection rate of each bootstrap scheme (§6, Table 3).

    Every experiment draws fresh random effects; each scheme runs its own reweighting bootstrap
    with ``replicates`` replicates and a two-sided CLT test at level ``alpha``. With ``effect=0``
    the rates are Type I errors, otherwise powers. A scheme with one cluster per version gets
    no rate (NaN, :attr:`SchemeResult.degenerate`); below ``MIN_CLUSTERS`` per version it gets
    one, flagged (:attr:`SchemeResult.below_floor`): Table 3's point is how such schemes reject.
    """
    from scipy.stats import norm

    if experiments < 2:
        raise ValueError("experiments must be >= 2")
    rng = np.random.default_rng(seed)
    schedule = layout_schedule(layout, H, R, T, seed=seed)
    design = ABDesign.from_schedule(schedule)
    Y = simulate_outcomes(design, components, experiments, rng, effect)
    z = norm.ppf(1 - alpha / 2)
    results = []
    est = None
    for cluster in schemes:
        codes = cluster_codes(cluster, design.size, design.request, design.host)
        est, se = bootstrap_se_many(Y, design.version, codes, replicates, weights, rng)
        per_version = clusters_per_version(design.version, codes)
        tested = np.isfinite(se)
        defined = min(per_version) >= 2 and tested.any()
        results.append(
            SchemeResult(
                cluster=cluster,
                clusters=int(codes.max()) + 1,
                rejection_rate=(
                    float(np.mean(np.abs(est[tested]) > z * se[tested])) if defined else np.nan
                ),
                mean_se=float(np.mean(se[tested])) if defined else np.nan,
                estimates=est,
                ses=se,
                clusters_per_version=per_version,
            )
        )
    if est is None:
        est = Y[:, design.version == 1].mean(axis=1) - Y[:, design.version == 0].mean(axis=1)
    return AAResult(
        layout=layout,
        hosts=H,
        requests=R,
        repetitions=T,
        experiments=experiments,
        replicates=replicates,
        alpha=alpha,
        effect=effect,
        analytic_se=layout_se(layout, H, R, T, components),
        simulated_sd=float(np.std(est - effect, ddof=1)),
        schemes=tuple(results),
    )
