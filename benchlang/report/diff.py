"""Before/after: the same configurations in two stores, each metric's ratio B/A with a
stratified cluster-bootstrap interval (stats.two_sample) and, with a margin, the TOST and
regression verdicts (stats.equivalence). Text, Markdown (for a pull request) and JSON."""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from benchlang.jsonout import dumps
from benchlang.report.data import ExperimentData
from benchlang.report.table import format_quantity, metric_scale, scale_for
from benchlang.stats.contract import to_plain
from benchlang.stats.equivalence import Equivalence, equivalence, tost_confidence
from benchlang.stats.two_sample import RatioInterval, ratio_of_percentiles


@attrs.frozen
class ConfigurationDiff:
    label: str
    n: tuple[int, int]
    interval: RatioInterval
    gate: Equivalence | None


@attrs.frozen
class MetricDiff:
    metric: str
    unit: str | None
    better: str
    percentile: float
    rows: tuple[ConfigurationDiff, ...]
    scale: tuple[str | None, float] | None = None
    """A's display unit of the metric (``report.table.metric_scale``): the unit every view of
    store A shows it in."""


@attrs.frozen
class StoreDiff:
    names: tuple[str, str]
    experiments: tuple[str, str]
    plans: tuple[str, str]
    confidence: float
    margin: float | None
    metrics: tuple[MetricDiff, ...]
    only: tuple[tuple[str, ...], tuple[str, ...]]
    warnings: tuple[str, ...]

    @property
    def regressions(self) -> list[tuple[str, str]]:
        """(metric, configuration) pairs worse beyond the margin with confidence."""
        return [
            (m.metric, r.label)
            for m in self.metrics
            for r in m.rows
            if r.gate is not None and r.gate.verdict == "worse"
        ]

    def to_dict(self) -> dict:
        """JSON-ready (schema 1); the intervals and verdicts through their own ``to_dict``, so
        an interval not computed is null with its reasons in ``null_reasons``."""
        fields = {f.name: getattr(self, f.name) for f in attrs.fields(StoreDiff)}
        return {"schema": 1, "kind": "benchlang.diff", **to_plain(fields)}


def _clusters(data: ExperimentData) -> np.ndarray:
    host = np.unique(data.table.host.astype(str), return_inverse=True)[1]
    return np.stack([host.ravel(), data.table.series, data.table.round], axis=1)


def _labels(data: ExperimentData) -> list[str]:
    return [label for _, label, _, _ in data.configurations()]


def diff(
    a: ExperimentData,
    b: ExperimentData,
    names: tuple[str, str],
    *,
    margin: float | None = None,
    confidence: float = 95.0,
    replicates: int = 2000,
) -> StoreDiff:
    """Every metric of A's spec that B also has, per configuration present in both.

    With a margin, intervals are at the TOST level ``1 - 2 alpha`` (90% for a 95% gate), the
    level at which the one-sided "worse beyond the margin" and TOST decisions are exact
    (Schuirmann 1987); without, two-sided at ``confidence``.
    """
    alpha = (100.0 - confidence) / 100.0
    level = tost_confidence(alpha) if margin is not None else confidence
    percentiles = {k.metric: k.percentile for k in a.experiment.kpis}
    warnings = []
    if a.experiment.name != b.experiment.name:
        warnings.append(
            f"the stores hold different experiments ({a.experiment.name}, {b.experiment.name})"
        )
    if a.plan.plan_hash != b.plan.plan_hash:
        warnings.append("the plans differ (spec or seed changed): configurations matched by label")
    labels_a, labels_b = _labels(a), _labels(b)
    common = [x for x in labels_a if x in set(labels_b)]
    clusters = (_clusters(a), _clusters(b))
    metrics = []
    for name, mv in a.metrics.items():
        if name not in b.metrics:
            warnings.append(f"metric {name} is not in B's spec")
            continue
        p = percentiles.get(name, 50.0)
        rows = []
        for label in common:
            picks = []
            for data, cl in zip((a, b), clusters, strict=True):
                mask = (data.table.label == label) & data.table.ok
                mask &= np.isfinite(data.metrics[name].values)
                picks.append((data.metrics[name].values[mask], cl[mask]))
            interval = ratio_of_percentiles(
                picks[0][0],
                picks[0][1],
                picks[1][0],
                picks[1][1],
                percentile=p,
                confidence=level,
                replicates=replicates,
            )
            gate = (
                equivalence(
                    interval.lower, interval.upper, margin, alpha=alpha, better=mv.metric.better
                )
                if margin is not None
                else None
            )
            rows.append(
                ConfigurationDiff(label, (picks[0][0].size, picks[1][0].size), interval, gate)
            )
        scale = metric_scale(mv.values[a.table.ok], mv.metric.unit)
        metrics.append(MetricDiff(name, mv.metric.unit, mv.metric.better, p, tuple(rows), scale))
    return StoreDiff(
        names,
        (a.experiment.name, b.experiment.name),
        (a.plan.plan_hash, b.plan.plan_hash),
        level,
        margin,
        tuple(metrics),
        (
            tuple(x for x in labels_a if x not in set(labels_b)),
            tuple(x for x in labels_b if x not in set(labels_a)),
        ),
        tuple(warnings),
    )


def _statistic(p: float) -> str:
    return "median" if p == 50 else f"p{p:g}"


def _change(r: RatioInterval) -> str:
    if not math.isfinite(r.ratio):
        return "-"
    return f"{(r.ratio - 1) * 100:+.1f}%"


def _interval(r: RatioInterval) -> str:
    if r.descriptive_only:
        return "descriptive only"
    return f"[{r.lower:.4g}, {r.upper:.4g}]"


def _verdict(row: ConfigurationDiff) -> str:
    if row.gate is not None:
        return row.gate.verdict
    r = row.interval
    if r.descriptive_only:
        return "-"
    return "changed" if r.lower > 1 or r.upper < 1 else "no clear change"


def table_rows(d: StoreDiff, m: MetricDiff) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one metric's table (shared by text and Markdown)."""
    scale = m.scale or scale_for(
        next(
            (r.interval.statistic_a for r in m.rows if math.isfinite(r.interval.statistic_a)), None
        ),
        m.unit,
    )
    stat = _statistic(m.percentile)
    verdict = f"verdict (margin {d.margin * 100:g}%)" if d.margin is not None else "verdict"
    header = [
        "configuration",
        f"A {stat}",
        f"B {stat}",
        "B/A",
        "change",
        f"{d.confidence:g}% interval",
        verdict,
    ]
    rows = [
        [
            r.label,
            format_quantity(r.interval.statistic_a, m.unit, scale=scale),
            format_quantity(r.interval.statistic_b, m.unit, scale=scale),
            f"{r.interval.ratio:.4g}" if math.isfinite(r.interval.ratio) else "-",
            _change(r.interval),
            _interval(r.interval),
            _verdict(r),
        ]
        for r in m.rows
    ]
    return header, rows


def _intro(d: StoreDiff) -> list[str]:
    gate = (
        f"; margin {d.margin * 100:g}%: worse = the whole interval above {1 + d.margin:.4g}, "
        f"equivalent = inside [{1 / (1 + d.margin):.4g}, {1 + d.margin:.4g}] (TOST, Schuirmann 1987)"
        if d.margin is not None
        else ""
    )
    return [
        f"diff: A = {d.names[0]} ({d.experiments[0]}, plan {d.plans[0][:19]}), "
        f"B = {d.names[1]} ({d.experiments[1]}, plan {d.plans[1][:19]})",
        f"B/A of each configuration's statistic, {d.confidence:g}% stratified cluster-bootstrap "
        f"interval{gate}",
    ]


def _tail(d: StoreDiff) -> list[str]:
    lines = []
    for m in d.metrics:
        for r in m.rows:
            if r.interval.reasons:
                lines.append(f"{m.metric} {r.label}: " + "; ".join(r.interval.reasons))
    for side, only in zip("AB", d.only, strict=True):
        if only:
            lines.append(f"only in {side}: {', '.join(only)}")
    lines += [f"warning: {w}" for w in d.warnings]
    if d.margin is not None:
        worse = d.regressions
        lines.append(
            f"REGRESSION beyond {d.margin * 100:g}%: " + ", ".join(f"{m} {c}" for m, c in worse)
            if worse
            else f"no configuration is worse beyond {d.margin * 100:g}% with confidence"
        )
    return lines


def diff_text(d: StoreDiff) -> str:
    out = _intro(d)
    for m in d.metrics:
        header, rows = table_rows(d, m)
        out.append("")
        out.append(f"metric {m.metric}, {m.better} is better")
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
        right = [0 < i < len(header) - 1 for i in range(len(header))]  # numbers to the right
        for row in (header, ["-" * w for w in widths], *rows):
            cells = zip(row, widths, right, strict=True)
            out.append(
                "  ".join(str(c).rjust(w) if r else str(c).ljust(w) for c, w, r in cells).rstrip()
            )
    tail = _tail(d)
    return "\n".join(out + ([""] if tail else []) + tail) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", r"\|")


def diff_markdown(d: StoreDiff) -> str:
    out = [f"**benchlang diff** {_md(' — '.join(_intro(d)))}", ""]
    for m in d.metrics:
        header, rows = table_rows(d, m)
        out.append(f"*{m.metric}*, {m.better} is better")
        out.append("")
        out.append("| " + " | ".join(_md(h) for h in header) + " |")
        out.append("| --- | " + " | ".join("---:" for _ in header[1:]) + " |")
        out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
        out.append("")
    out += [f"- {_md(line)}" for line in _tail(d)]
    return "\n".join(out).rstrip() + "\n"


def diff_json(d: StoreDiff) -> str:
    return dumps(d.to_dict()) + "\n"


def render(d: StoreDiff, form: str) -> str:
    forms = {"text": diff_text, "markdown": diff_markdown, "json": diff_json}
    return forms[form](d)


__all__: Sequence[str] = ["StoreDiff", "diff", "render"]
