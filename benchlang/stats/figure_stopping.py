"""The numbers of the stopping rule's figures (Mittal, Bruel, Milojicic, Frachtenberg,
"Adaptive Stopping Rule for Performance Measurements", PMBS '23): Fig. 1 (``stopping-ks``, the
Kolmogorov–Smirnov distance of the first k samples to the whole stream, the threshold, where
the rule stopped and the optimal stop) and Figs. 2/4/5 (``stopping-density``, the densities of
the whole stream, the stopped sample and the optimal one, with their KS); docs/figures.md.

``stopping-synthetic`` (Figs. 4/5 on synthetic ground truth) replays the rule over streams
of known shape. All replay a rule over a stream as ``stats.stopping_eval.evaluate`` does
(§2: the whole stream is the ground truth); the KS curve is ``prefix_ks_distances``, exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.stats.figure_data import FigureData
from benchlang.stats.stopping_eval import (
    MIN_STREAM,
    Rule,
    StreamEvaluation,
    evaluate,
    prefix_ks_distances,
)

PAPER = "Mittal et al., PMBS 2023"
GRID = 200
"""Points of each drawn density."""


@attrs.frozen
class Replay:
    """A rule replayed over one stream: where it stopped (``evaluation``) and the KS distance
    of every prefix x[:k] to the whole stream (``distances[k - 1]``)."""

    evaluation: StreamEvaluation
    distances: np.ndarray = attrs.field(eq=False, repr=False)


def replay(stream: np.ndarray, rule: Rule, ks_threshold: float = 0.1) -> Replay:
    """Replay ``stream`` through ``rule`` sample by sample (Mittal et al. §2)."""
    x = np.asarray(stream, dtype=float).ravel()
    return Replay(evaluate(x, rule, ks_threshold), prefix_ks_distances(x))


def _short(labels: Sequence[str], replays: Sequence[Replay]) -> list[str]:
    """The notes that make a figure descriptive: references shorter than a ground truth (said
    once, naming each configuration's count), a rule that never stopped."""
    few = [
        f"{label} {r.evaluation.n}"
        for label, r in zip(labels, replays, strict=True)
        if r.evaluation.n < MIN_STREAM
    ]
    notes = []
    if few:
        notes.append(
            "descriptive only: each reference (a configuration's trials: "
            + ", ".join(few)
            + f") is shorter than the {MIN_STREAM:,} samples a ground truth needs "
            "(stopping-eval); a prefix's KS to it is small partly because the prefix is much of it"
        )
    notes += [
        f"{label}: the rule did not stop within the {r.evaluation.n} trials"
        for label, r in zip(labels, replays, strict=True)
        if r.evaluation.action == "continue"
    ]
    return notes


def stopping_ks(
    labels: Sequence[str], replays: Sequence[Replay], metric: str, rule: str
) -> FigureData:
    """Fig. 1: per configuration, D_k = KS(x[:k], x) for every k, the threshold, the rule's
    stop and the optimal stop (the smallest k after which every D stays at or below it)."""
    rows: list[tuple[Any, ...]] = []
    for label, r in zip(labels, replays, strict=True):
        e = r.evaluation
        rows += [(label, "curve", k, float(d), "", "") for k, d in enumerate(r.distances, 1)]
        if e.action != "continue":
            rows.append((label, "stop", e.stop_n, e.ks, e.action, e.detected_class or e.rule))
        optimal = float(r.distances[e.optimal_n - 1])
        rows.append((label, "optimal", e.optimal_n, optimal, "", ""))
    threshold = replays[0].evaluation.ks_threshold if replays else math.nan
    caption = (
        f"Kolmogorov–Smirnov distance of the first k trials' {metric} to all the "
        "configuration's trials (the reference, in trial order, every series pooled), against "
        f"k; the threshold {threshold:g} (dashed), where the {rule} rule stops on this stream "
        "(solid line, its class) and the optimal stop (dotted: the smallest k after which every "
        f"longer prefix stays within the threshold). After {PAPER} Fig. 1."
    )
    return FigureData(
        "stopping-ks",
        f"{PAPER} Fig. 1",
        caption,
        ("configuration", "part", "k", "ks", "action", "class"),
        rows,
        _short(labels, replays),
        {"threshold": threshold, "x_label": "first k trials", "y_label": "KS distance"},
    )


def kde(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Gaussian kernel density of ``values`` on ``grid``, bandwidth by Silverman's rule of
    thumb 0.9·min(sd, IQR/1.34)·n^(-1/5) (Silverman, *Density Estimation*, 1986, Eq. 3.31);
    a constant sample gets a bandwidth of 1% of the grid's span."""
    v = np.asarray(values, dtype=float).ravel()
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    q1, q3 = np.percentile(v, [25, 75])
    spread = min(sd, (q3 - q1) / 1.34) or sd
    h = 0.9 * spread * v.size ** (-0.2)
    if not h > 0:
        h = max(float(grid[-1] - grid[0]) / 100, 1e-12)
    out = np.zeros(grid.size)
    for s in range(0, v.size, 4096):
        z = (grid[:, None] - v[None, s : s + 4096]) / h
        out += np.exp(-0.5 * z * z).sum(axis=1)
    density: np.ndarray = out / (v.size * h * math.sqrt(2 * math.pi))
    return density


def stopping_density(
    labels: Sequence[str],
    streams: Sequence[np.ndarray],
    replays: Sequence[Replay],
    metric: str,
    unit: str,
) -> FigureData:
    """Figs. 2/4/5: per configuration, the kernel densities of the whole stream (reference),
    of the sample where the rule stopped and of the optimal stop's sample, each with its KS
    distance to the reference, on the reference's 0.5th–99.5th percentile range."""
    rows: list[tuple[Any, ...]] = []
    for label, x, r in zip(labels, streams, replays, strict=True):
        x = np.asarray(x, dtype=float)
        e = r.evaluation
        lo, hi = np.percentile(x, [0.5, 99.5])
        if hi <= lo:
            lo, hi = lo - 0.5 * abs(lo or 1), hi + 0.5 * abs(hi or 1)
        grid = np.linspace(lo, hi, GRID)
        samples = [("reference", x.size, 0.0)]
        if e.action != "continue":
            samples.append(("stopped", e.stop_n, e.ks))
        samples.append(("optimal", e.optimal_n, float(r.distances[e.optimal_n - 1])))
        for name, n, ks in samples:
            density = kde(x[:n], grid)
            rows += [
                (label, name, float(g), float(d), n, ks) for g, d in zip(grid, density, strict=True)
            ]
    caption = (
        f"Kernel density of {metric} (Gaussian, Silverman's bandwidth) of all the "
        "configuration's trials (the reference, shaded), of the first trials up to where the "
        "rule stops (solid) and up to the optimal stop (dashed), each with n and its "
        "Kolmogorov–Smirnov distance to the reference; x spans the reference's 0.5th to 99.5th "
        f"percentile. After {PAPER} Figs. 2, 4 and 5."
    )
    return FigureData(
        "stopping-density",
        f"{PAPER} Figs. 2, 4, 5",
        caption,
        ("configuration", "sample", "x", "density", "n", "ks"),
        rows,
        _short(labels, replays),
        {"x_label": f"{metric} ({unit})" if unit else metric, "y_label": "density"},
    )


def stopping_synthetic(
    names: Sequence[str],
    streams: Sequence[np.ndarray],
    replays: Sequence[Replay],
    criteria: Sequence[str],
    ks_limit: float,
    unit: str,
    rule: str,
) -> FigureData:
    """Figs. 4/5 on synthetic ground truth: the rule replayed over streams of known shape
    (``stats.stopping_eval.synthetic_streams``, one generator per distribution class the
    meta-rule tells apart, §3), a panel per generator with the densities of the whole stream,
    the stopped and the optimal sample (``stopping_density``'s rows) and the verdict by the
    stream's criterion (``StreamEvaluation.passed``: KS, mean error or a warning)."""
    data = stopping_density(names, streams, replays, "value", unit)
    verdicts = {
        name: bool(r.evaluation.passed(c, ks_limit=ks_limit))  # type: ignore[arg-type]
        for name, r, c in zip(names, replays, criteria, strict=True)
    }
    said = [
        f"{name}: {'pass' if verdicts[name] else 'FAIL'} by {c}"
        f" (stop {r.evaluation.stop_n}, optimal {r.evaluation.optimal_n})"
        for name, r, c in zip(names, replays, criteria, strict=True)
    ]
    n = replays[0].evaluation.n if replays else 0
    caption = (
        f"The {rule} rule replayed over {len(names)} synthetic streams of {n:,} samples "
        "(the ground truth, known by construction), a panel per generator: the kernel density "
        "of the whole stream (shaded), of the samples up to the rule's stop (solid) and up to "
        "the optimal stop (dashed), each with n and its KS distance to the stream. Judged as "
        f"stopping-eval judges (KS ≤ {ks_limit:g} and stop within 0.5-2x optimal; mean error "
        "≤ 1% for a near-constant stream; a warning for a drifting one): "
        + "; ".join(said)
        + f". After {PAPER} Figs. 4 and 5."
    )
    return attrs.evolve(
        data,
        name="stopping-synthetic",
        paper=f"{PAPER} Figs. 4, 5",
        caption=caption,
        meta={
            **data.meta,
            "verdicts": verdicts,
            "criteria": dict(zip(names, criteria, strict=True)),
        },
    )
