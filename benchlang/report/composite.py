"""``benchlang composite``: one weighted effect over a store's benchmarks (or the levels of a
factor, e.g. a layout's requests), with Perflab's footnote-11 SE and the joint cluster
bootstrap SE side by side, and the correlation between the benchmarks' effects that the joint
bootstrap found (stats.composite; docs/statistics.md, "A composite across benchmarks").

The composite is its own test, outside the run's family of ``compare`` items (app.
comparisons): it is asked for after the run, with weights the spec does not hold, so it is
one planned test at its own confidence; a reader who also reads the per-benchmark compares reads
it as one more test."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang import model
from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table
from benchlang.stats.composite import CompositeResult

CLUSTERS = ("host", "host_block", "series", "round")
"""What one bootstrap weight covers: a host (Perflab's default), a host block (hosts that ran
the same requests, §5.2), a series, or a round."""


@attrs.frozen
class CompositeReport:
    """The composite of ``metric`` by ``by`` (control, treatment) over the levels of ``over``."""

    metric: str
    by: str
    control: Any
    treatment: Any
    over: str
    trials: int
    result: CompositeResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "by": self.by,
            "control": self.control,
            "treatment": self.treatment,
            "over": self.over,
            "trials": self.trials,
            **self.result.to_dict(),
        }


def _codes(values: Any) -> np.ndarray:
    return np.unique(np.asarray([repr(v) for v in values]), return_inverse=True)[1]


def composite_of(
    data: ExperimentData,
    metric: str,
    by: str,
    *,
    over: str = "benchmark",
    weights: Mapping[str, float] | None = None,
    cluster: str = "host",
    replicates: int = 10_000,
    confidence: float = 95.0,
    log: bool = False,
) -> CompositeReport:
    """The trials of the first two levels of ``by`` (control, treatment), grouped by ``over``
    (``benchmark`` or a factor), clustered by ``cluster``, through stats.composite. Raises
    ValueError with a sentence for a person when the data cannot give it."""
    from benchlang.stats.ab.bootstrap import host_blocks
    from benchlang.stats.composite import composite_bootstrap

    if cluster not in CLUSTERS:
        raise ValueError(f"unknown cluster {cluster!r}; expected one of {', '.join(CLUSTERS)}")
    factor = next((f for f in data.experiment.factors if f.name == by), None)
    if factor is None or len(factor.levels) < 2:
        raise ValueError(f"'{by}' is not a factor with two levels (control, treatment)")
    control, treatment = factor.levels[0], factor.levels[1]
    if metric not in data.metrics:
        raise ValueError(f"no metric '{metric}'; metrics: {', '.join(data.metrics)}")
    t = data.table
    y = data.metrics[metric].values
    level = [lv.get(by) for lv in t.levels]
    version = np.array([1 if x == treatment else 0 if x == control else -1 for x in level])
    keep = t.ok & np.isfinite(y) & (version >= 0)
    if over == "benchmark":
        group = np.asarray(t.benchmark, dtype=object)
    elif over != by and any(over in lv for lv in t.levels):
        group = np.array([str(lv.get(over)) for lv in t.levels], dtype=object)
    else:
        known = sorted({k for lv in t.levels for k in lv} - {by})
        others = f" or one of {', '.join(known)}" if known else ""
        raise ValueError(f"composite over '{over}': expected benchmark{others}")
    factor_over = next((f for f in data.experiment.factors if f.name == over), None)
    declared = (
        [b.name for b in data.experiment.benchmarks]
        if over == "benchmark"
        else [str(x) for x in factor_over.levels]
        if factor_over is not None
        else list(dict.fromkeys(str(x) for x in group[keep]))
    )
    seen = {str(x) for x in group[keep]}
    names = tuple(n for n in declared if n in seen)
    if len(names) < 2:
        raise ValueError(f"a composite needs at least two {over} levels; this store has {names}")
    component = np.array([names.index(str(x)) for x in group[keep]], dtype=np.int64)
    w = None
    if weights:
        unknown = sorted(set(weights) - set(names))
        if unknown:
            raise ValueError(f"weights for unknown {over} {', '.join(unknown)}; known: {names}")
        absent = [n for n in names if n not in weights]
        if absent:
            raise ValueError(f"no weight for {', '.join(absent)}: give one for every {over}")
        w = np.array([weights[n] for n in names], dtype=np.float64)
    host = _codes(t.host[keep])
    if cluster == "host":
        codes = host
    elif cluster == "host_block":
        blocks = [
            (b, tuple(sorted((k, repr(v)) for k, v in lv.items() if k != by)))
            for b, lv in zip(
                t.benchmark[keep], np.asarray(t.levels, dtype=object)[keep], strict=True
            )
        ]
        codes = host_blocks(_codes(blocks), host)
    elif cluster == "series":
        codes = np.asarray(t.series[keep], dtype=np.int64)
    else:
        codes = _codes(list(zip(t.series[keep].tolist(), t.round[keep].tolist(), strict=True)))
    result = composite_bootstrap(
        y[keep],
        version[keep],
        component,
        codes,
        w,
        names=names,
        cluster=cluster,
        replicates=replicates,
        confidence=confidence,
        log=log,
        seed=data.experiment.seed,
    )
    if len(factor.levels) > 2:
        left = ", ".join(map(str, factor.levels[2:]))
        result = attrs.evolve(
            result,
            notes=(
                *result.notes,
                f"'{by}' has {len(factor.levels)} levels: {treatment} - {control} compared, "
                f"{left} left out (--by a two-level factor, or the first two levels are taken)",
            ),
        )
    return CompositeReport(metric, by, control, treatment, over, int(keep.sum()), result)


def _f(x: float) -> str:
    return f"{x:.4g}" if np.isfinite(x) else "undefined"


def render_composite(report: CompositeReport, stream: TextIO | None = None) -> None:
    """The components, the composite with both SEs and intervals, and the correlations."""
    out = stream or sys.stdout
    r = report.result
    scale = "mean log" if r.log else "mean"
    render_table(
        [report.over, "weight", f"effect ({scale})", "SE"],
        [
            (n, w, e, s)
            for n, w, e, s in zip(r.names, r.weights, r.effects, r.effect_se, strict=True)
        ],
        title=(
            f"composite of {report.metric}: {report.treatment} - {report.control} by {report.by}, "
            f"{report.trials} trials, {r.clusters} {r.cluster} clusters, {r.replicates} replicates; "
            f"intervals estimate ± t({r.df}) SE"
        ),
        stream=out,
    )
    none = (float("nan"), float("nan"))
    ind, joint = (none, none) if r.descriptive_only else (r.ci_independent, r.ci_joint)
    conf = f"{r.confidence:g}%"
    out.write(f"composite effect {_f(r.estimate)}\n")
    out.write(
        f"  SE if independent (Perflab footnote 11)  {_f(r.se_independent):<10} "
        f"{conf} interval [{_f(ind[0])}, {_f(ind[1])}]\n"
    )
    out.write(
        f"  SE by joint {r.cluster} bootstrap".ljust(43) + f"{_f(r.se_joint):<10} "
        f"{conf} interval [{_f(joint[0])}, {_f(joint[1])}]  p {_f(r.p_value)}\n"
    )
    k = len(r.names)
    if k <= 6:
        pairs = [
            f"{r.names[i]}~{r.names[j]} {_f(r.correlation[i][j])}"
            for i in range(k)
            for j in range(i + 1, k)
        ]
        out.write(f"correlation between the effects (joint bootstrap): {', '.join(pairs)}\n")
    else:
        off = np.asarray(r.correlation)[~np.eye(k, dtype=bool)]
        off = off[np.isfinite(off)]
        if off.size:
            out.write(
                f"correlation between the effects (joint bootstrap): mean {_f(r.mean_correlation)}, "
                f"from {_f(float(off.min()))} to {_f(float(off.max()))} over {k * (k - 1) // 2} pairs\n"
            )
    if r.descriptive_only:
        out.write(f"descriptive only: {r.descriptive_only}\n")
    else:
        verdict = "differs from 0" if r.significant else "does not differ from 0"
        out.write(f"verdict (joint SE): the composite {verdict} at {conf}\n")
    if np.isfinite(r.se_joint) and r.se_independent > 0:
        ratio = r.se_joint / r.se_independent
        if ratio > 1.1:
            out.write(
                f"note: the effects covary: the independent formula understates the SE by "
                f"{100 * (1 - 1 / ratio):.0f}%; read the joint SE\n"
            )
    for note in r.notes:
        out.write(f"note: {note}\n")


def default_roles(experiment: model.Experiment) -> tuple[str | None, str | None]:
    """The metric and factor of the spec's first two-level comparison (None when it has none)."""
    c = next((c for c in experiment.comparisons if c.method != "anova"), None)
    return (c.metric, c.by) if c is not None else (None, None)
