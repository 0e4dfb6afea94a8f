"""The composite across benchmarks of a stored run (report.composite; stats.composite)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from benchlang.app.stores import load_store
from benchlang.errors import UserError

if TYPE_CHECKING:
    from benchlang.report.composite import CompositeReport


def parse_weights(text: str | None) -> dict[str, float] | None:
    """``a=0.5,b=0.3,c=0.2`` as a mapping; None for equal weights."""
    if not text:
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not name.strip() or not number >= 0:
            raise UserError(
                f"--weights: {part!r} is not NAME=SHARE with a non-negative share",
                "--weights feed=0.5,search=0.3,photos=0.2 (traffic shares; equal when omitted)",
            )
        out[name.strip()] = number
    return out


def composite_of_store(
    store: str | Path,
    *,
    metric: str | None = None,
    by: str | None = None,
    over: str = "benchmark",
    weights: Mapping[str, float] | None = None,
    cluster: str = "host",
    replicates: int = 10_000,
    confidence: float = 95.0,
    log: bool = False,
    plan_hash: str | None = None,
) -> CompositeReport:
    """The weighted effect over ``over``'s levels of a stored plan; the metric and factor
    default to the spec's first ``compare``."""
    from benchlang.report.composite import composite_of, default_roles

    if not 0.0 < confidence < 100.0:
        raise UserError(f"--confidence must lie in (0, 100), got {confidence:g}")
    if replicates < 100:
        raise UserError(f"--replicates must be at least 100, got {replicates}")
    data = load_store(store, plan_hash, every_measure=False)
    spec_metric, spec_by = default_roles(data.experiment)
    metrics = [m.name for m in data.experiment.metrics]
    metric = metric or spec_metric or (metrics[0] if len(metrics) == 1 else None)
    by = by or spec_by
    if metric is None or by is None:
        raise UserError(
            "which metric and factor? the spec has no 'compare METRIC by FACTOR'",
            "benchlang composite STORE --metric time --by version",
        )
    try:
        return composite_of(
            data,
            metric,
            by,
            over=over,
            weights=weights,
            cluster=cluster,
            replicates=replicates,
            confidence=confidence,
            log=log,
        )
    except ValueError as err:
        hint = None
        if "clusters hold" in str(err) and cluster != "round":
            hint = "--cluster round: one weight per round, when the trials ran on few hosts"
        raise UserError(str(err), hint) from None
