"""The numbers of Perflab's Fig. 6 (Bakshy & Frachtenberg, "Design and Analysis of
Benchmarking Experiments for Distributed Internet Services", WWW 2015, §6): the bootstrap
distribution of one experiment's estimated difference beside the distribution of the estimates
of experiments simulated from a known model. The paper's solid curve is the estimates of 10,000
simulations of its model; here the model is the one fitted to the user's store (its variance
components of Eq. 3-4 by moments, made conservative; its estimated difference as the effect),
simulated on the store's own design (versions, requests, hosts, batches). When the bootstrap is
honest, its spread matches the model's; a narrower bootstrap under-states the SE (the paper's
case for clustering by host).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from benchlang.stats.ab.bootstrap import cluster_sums, replicate_differences
from benchlang.stats.ab.designs import VarianceComponents
from benchlang.stats.ab.simulate import ABDesign
from benchlang.stats.figure_data import NAN, FigureData
from benchlang.stats.figure_stopping import kde

PAPER = "Perflab (Bakshy & Frachtenberg, WWW 2015)"
SIMULATIONS = 10_000
"""Experiments simulated from the fitted model: the paper's 10,000 (§6, Fig. 6)."""
REPLICATES = 10_000
"""Bootstrap replicates of the store's estimate."""
WORK = 4_000_000
"""Random effects (experiments x levels) drawn at once: the simulations run in chunks."""
GRID = 200


@attrs.frozen
class ModelCheck:
    """The store's estimate, its bootstrap replicates and the estimates simulated from the
    fitted model, with the model's exact SE for this design (``model_se``)."""

    estimate: float
    bootstrap: np.ndarray = attrs.field(eq=False, repr=False)
    simulated: np.ndarray = attrs.field(eq=False, repr=False)
    model_se: float
    cluster: str
    clusters: int
    dropped: int = 0
    """Replicates that left a version without weight (every one of its clusters drawn 0)."""


def _weights(design: ABDesign) -> np.ndarray:
    """Each trial's weight in the difference of version means: 1/n_1 (treatment), -1/n_0."""
    v = np.asarray(design.version)
    return np.where(v == 1, 1.0 / max(1, int((v == 1).sum())), -1.0 / max(1, int((v == 0).sum())))


def _level_weights(design: ABDesign) -> dict[str, np.ndarray]:
    """Per random term of Eq. 3-4, the sum of the trial weights of each of its levels."""
    w = _weights(design)
    return {name: np.bincount(codes, weights=w) for name, codes in design.factors().items()}


def model_se(design: ABDesign, components: VarianceComponents) -> float:
    """The exact SD of the difference of version means under Eq. 3-4 on this design: with
    weights w_i = 1/n_1 (treatment) or -1/n_0 (control), Var = σ²_ε Σ w_i² + Σ_terms σ²_term
    Σ_levels (Σ_{i in level} w_i)² (each random term's level shared by its trials)."""
    w = _weights(design)
    var = components.residual * float(np.sum(w * w))
    for name, c in _level_weights(design).items():
        var += getattr(components, name) * float(np.sum(c * c))
    return float(np.sqrt(var))


def model_check(
    y: np.ndarray,
    design: ABDesign,
    components: VarianceComponents,
    codes: np.ndarray,
    cluster: str,
    seed: int = 0,
    replicates: int = REPLICATES,
    simulations: int = SIMULATIONS,
) -> ModelCheck:
    """The store's difference of means (treatment − control), its clustered reweighting
    bootstrap replicates (Poisson weights per cluster, §5.1-5.2) and the estimates of
    ``simulations`` experiments simulated from the fitted model with that difference as the
    effect (§6), seeded and vectorised. Each simulated experiment draws every random effect of
    Eq. 3-4 afresh (a request's, a host's, a batch's, per level); its estimate, a weighted sum
    of its outcomes, is formed from each level's effect times the level's summed weight, and
    the residuals' weighted sum is drawn as the normal it is exactly (σ²_ε Σ w_i²): the same
    distribution as simulating every trial, at a cost of levels, not trials, per experiment."""
    y = np.asarray(y, dtype=float)
    version = np.asarray(design.version, dtype=np.int64)
    codes = np.unique(np.asarray(codes), return_inverse=True)[1].ravel()
    rng = np.random.default_rng(seed)
    sums, counts = cluster_sums(y, version, codes)
    estimate = float(sums[1].sum() / counts[1].sum() - sums[0].sum() / counts[0].sum())
    drawn = replicate_differences(sums, counts, replicates, "poisson", rng)
    reps = drawn[np.isfinite(drawn)]
    simulated = np.full(simulations, estimate)
    for name, c in _level_weights(design).items():
        sd = float(np.sqrt(getattr(components, name)))
        for start in range(0, simulations, max(1, WORK // c.size)):
            stop = min(simulations, start + max(1, WORK // c.size))
            simulated[start:stop] += sd * (rng.standard_normal((stop - start, c.size)) @ c)
    w = _weights(design)
    residual = float(np.sqrt(components.residual * np.sum(w * w)))
    simulated += residual * rng.standard_normal(simulations)
    return ModelCheck(
        estimate,
        reps,
        simulated,
        model_se(design, components),
        cluster,
        int(codes.max()) + 1,
        int(drawn.size - reps.size),
    )


def _sd(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1)) if x.size > 1 else float("nan")


def bootstrap_model(
    check: ModelCheck, meta: Mapping[str, Any], notes: tuple[str, ...] = ()
) -> FigureData:
    """Fig. 6: rows ``(part, x, density)``: each bootstrap replicate and each simulated
    estimate (``x``, density empty), and both distributions' Gaussian kernel densities on one
    grid (Silverman's bandwidth); ``meta`` holds their means and SDs and the model's exact SE."""
    boot, sim = check.bootstrap, check.simulated
    both = np.concatenate([boot, sim])
    lo, hi = np.percentile(both, [0.1, 99.9])
    grid = np.linspace(lo, hi, GRID)
    rows: list[tuple[str, float, float]] = [("bootstrap", float(v), NAN) for v in boot]
    rows += [("model", float(v), NAN) for v in sim]
    for part, x in (("bootstrap density", boot), ("model density", sim)):
        rows += [(part, float(g), float(d)) for g, d in zip(grid, kde(x, grid), strict=True)]
    boot_sd, sim_sd = _sd(boot), _sd(sim)
    if check.dropped:
        notes = (
            *notes,
            f"{check.dropped:,} of {boot.size + check.dropped:,} bootstrap replicates left a "
            "version without weight (all its clusters drawn 0): not drawn",
        )
    factor = float(meta.get("factor") or 1.0)
    unit = str(meta.get("display_unit") or meta.get("unit") or "")
    ratio = boot_sd / sim_sd if sim_sd > 0 else NAN
    caption = (
        f"The bootstrap distribution of this store's estimated difference (treatment − "
        f"control, {check.estimate / factor:.4g} {unit}; {boot.size:,} replicates, clusters: "
        f"{check.cluster}, {check.clusters} of them; histogram and its density, dashed) beside "
        f"the estimates of {sim.size:,} experiments simulated from the model fitted to the "
        "store (Eq. 3-4: its variance components by moments, made conservative, its estimate "
        "as the effect, on its own design; solid), as the paper's solid curve is 10,000 "
        "simulations of a known model; x spans the 0.1th to 99.9th percentiles of both, so "
        f"no rare extreme flattens the rest. Bootstrap SD {boot_sd / factor:.3g}, simulated SD "
        f"{sim_sd / factor:.3g} (the model's exact SE {check.model_se / factor:.3g}): the "
        f"bootstrap's spread is {ratio:.2f} times the model's. After {PAPER} Fig. 6."
    )
    return FigureData(
        "bootstrap-model",
        f"{PAPER} Fig. 6",
        caption,
        ("part", "x", "density"),
        rows,
        notes,
        {
            **meta,
            "estimate": check.estimate,
            "bootstrap_mean": float(boot.mean()),
            "bootstrap_sd": boot_sd,
            "simulated_mean": float(sim.mean()),
            "simulated_sd": sim_sd,
            "model_se": check.model_se,
            "cluster": check.cluster,
            "clusters": check.clusters,
            "dropped": check.dropped,
            "x_view": [float(lo), float(hi)],
        },
    )
