"""Before/after: the same configurations in stores of one experiment, each metric's ratio B/A.

Each store is one **session** (one ``benchlang run`` and its resumes, on one machine in one
state). With at least ``MIN_SESSIONS`` sessions per side the ratio's interval is the one
*between sessions* (``stats.sessions``: session KPIs as clusters, Welch t, Bonferroni over the
diff's rows), and the gate decides on it. With fewer, the only interval is the one *within
session* (a stratified cluster bootstrap, ``stats.two_sample``), which knows nothing of how
much a session's level moves: it is shown, but the verdict stays ``inconclusive`` and the
diff says what would decide it. Rendering: ``report.diff_text``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from benchlang.report.data import ExperimentData
from benchlang.report.table import metric_scale
from benchlang.stats.contract import to_plain
from benchlang.stats.equivalence import Equivalence, equivalence, tost_confidence
from benchlang.stats.run_independence import metric_tests, run_verdict
from benchlang.stats.sessions import (
    BETWEEN,
    MIN_SESSIONS,
    WITHIN,
    SessionInterval,
    between_sessions,
    borrowed_spread,
    family_confidence,
    session_kpis,
)
from benchlang.stats.two_sample import RatioInterval, ratio_of_percentiles


@attrs.frozen
class ConfigurationDiff:
    label: str
    n: tuple[int, int]
    interval: RatioInterval | SessionInterval
    gate: Equivalence | None
    spread: str = WITHIN
    """The spread the interval carries: ``between sessions`` or ``within session only``."""
    within_verdict: str | None = None
    """What the within-session interval alone would say, where it may not decide."""


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
class SessionCheck:
    """One store's run-level independence check (``stats.run_independence``)."""

    side: str
    store: str
    passed: bool
    tested: bool
    summary: str


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
    stores: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    spread: str = WITHIN
    family: dict = attrs.field(factory=dict)
    """The family of the diff's rows: ``rows``, ``method``, ``confidence`` (simultaneous),
    ``row_confidence`` (each row's)."""
    independence: tuple[SessionCheck, ...] = ()
    left_out: tuple[str, ...] = ()
    undecided: str = ""
    """Why no verdict could be reached, and what would decide it ("" when one could)."""

    @property
    def sessions(self) -> tuple[int, int]:
        return (len(self.stores[0]), len(self.stores[1]))

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
        return {"schema": 1, "kind": "benchlang.diff", "sessions": list(self.sessions)} | (
            to_plain(fields)
        )


def labels_of(data: ExperimentData) -> list[str]:
    return [label for _, label, _, _ in data.configurations()]


def _pooled(
    datas: Sequence[ExperimentData], metric: str, label: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One side's values of a configuration, their cluster levels (host, series of the
    session, round) and their session's number."""
    values, hosts, series, rounds, session = [], [], [], [], []
    offset = 0
    for g, data in enumerate(datas):
        t = data.table
        mask = (t.label == label) & t.ok & np.isfinite(data.metrics[metric].values)
        values.append(data.metrics[metric].values[mask])
        hosts.append(t.host[mask].astype(str))
        series.append(t.series[mask] + offset)
        rounds.append(t.round[mask])
        session.append(np.full(int(mask.sum()), g))
        offset += int(t.series.max(initial=0)) + 1
    host = np.unique(np.concatenate(hosts), return_inverse=True)[1].ravel()
    clusters = np.stack([host, np.concatenate(series), np.concatenate(rounds)], axis=1)
    return np.concatenate(values), clusters, np.concatenate(session)


def session_check(
    data: ExperimentData, side: str, store: str, metrics: Sequence[str]
) -> SessionCheck:
    """The run-level independence family of one session (every compared metric, Holm)."""
    table = data.table
    ok = table.ok
    span = bool(data.experiment.design.span)
    tests = []
    for name in metrics:
        tests += metric_tests(
            name,
            data.metrics[name].values[ok],
            table.configuration[ok],
            table.series[ok],
            table.trial[ok],
            span=span,
            seed=data.plan.seed or 0,
        )
    verdict = run_verdict(tests)
    tested = bool(verdict.made)
    return SessionCheck(side, store, verdict.passed, tested, verdict.summary())


def _undecided(sessions: tuple[int, int], within: Sequence[str], mixed: bool) -> str:
    """The line that says why rows ``within`` got no verdict and what would decide them."""
    decide = (
        f"to decide: at least {MIN_SESSIONS} sessions per side (--base A1 A2 A3 --new B1 B2 B3), "
        "a history of this machine class with their series (--history H), "
        "or both builds in one session, interleaved in random rounds (benchlang compare "
        "'CMD_A' 'CMD_B', or the builds as levels of one factor in a spec)"
    )
    if mixed:
        return (
            f"the history holds no run-to-run spread of {', '.join(within)} on this machine "
            f"class: within session only, no verdict; {decide}"
        )
    if sessions == (1, 1):
        return (
            "one session per side: the spread between sessions is unknown, so no configuration "
            f"is called worse or equivalent on within-session noise alone; {decide}"
        )
    return (
        f"a verdict needs at least {MIN_SESSIONS} sessions per side ({sessions[0]} and "
        f"{sessions[1]} here): the spread between sessions is not estimated; {decide}"
    )


def _within_verdict(r: RatioInterval, margin: float | None, alpha: float, better: str) -> str:
    if r.descriptive_only:
        return "-"
    if margin is not None:
        return equivalence(r.lower, r.upper, margin, alpha=alpha, better=better).verdict
    return "changed" if r.lower > 1 or r.upper < 1 else "no clear change"


def diff_sessions(
    base: Sequence[ExperimentData],
    new: Sequence[ExperimentData],
    names: tuple[Sequence[str], Sequence[str]],
    *,
    margin: float | None = None,
    confidence: float = 95.0,
    replicates: int = 2000,
    labels: Sequence[str] | None = None,
    borrowed: Mapping[tuple[str, str], tuple[float, float, str]] | None = None,
) -> StoreDiff:
    """Every metric of the first base store's spec that every store has, per configuration in
    ``labels`` (default: those every store holds).

    With a margin, intervals are at the TOST level ``1 - 2 alpha`` (90% for a 95% gate), the
    level at which the one-sided "worse beyond the margin" and TOST decisions are exact
    (Schuirmann 1987); without, two-sided at ``confidence``. Between sessions that level is the
    family's, over all rows (Bonferroni)."""
    alpha = (100.0 - confidence) / 100.0
    level = tost_confidence(alpha) if margin is not None else confidence
    a, b = base[0], new[0]
    everyone = [*base, *new]
    percentiles = {k.metric: k.percentile for k in a.experiment.kpis}
    warnings = []
    experiments = sorted({d.experiment.name for d in everyone})
    if len(experiments) > 1:
        warnings.append(f"the stores hold different experiments ({', '.join(experiments)})")
    if len({d.plan.plan_hash for d in everyone}) > 1:
        warnings.append("the plans differ (spec or seed changed): configurations matched by label")
    side_labels = [
        [x for d in side for x in labels_of(d)] for side in (base, new)
    ]  # plan order, with repeats
    if labels is None:
        held = [set(labels_of(d)) for d in everyone]
        labels = [x for x in dict.fromkeys(side_labels[0]) if all(x in h for h in held)]
    metric_names = []
    for name in a.metrics:
        if all(name in d.metrics for d in everyone):
            metric_names.append(name)
        else:
            warnings.append(f"metric {name} is not in every store's spec")
    sessions = (len(base), len(new))
    spread = BETWEEN if min(sessions) >= MIN_SESSIONS else WITHIN
    rows_total = len(metric_names) * len(labels)
    within_level = family_confidence(level, rows_total) if borrowed else level
    metrics = []
    for name in metric_names:
        mv = a.metrics[name]
        p = percentiles.get(name, 50.0)
        rows = []

        def gate_of(interval, better=mv.metric.better):
            """TOST against the margin on a between-session interval; with none (within a
            session only) the equivalence test has no interval to decide on."""
            if margin is None:
                return None
            lower, upper = (
                (math.nan, math.nan) if interval is None else (interval.lower, interval.upper)
            )
            return equivalence(lower, upper, margin, alpha=alpha, better=better)

        for label in labels:
            (va, ca, sa), (vb, cb, sb) = (_pooled(side, name, label) for side in (base, new))
            n = (int(va.size), int(vb.size))
            if spread == BETWEEN:
                interval = between_sessions(
                    session_kpis(va, sa, sessions[0], p),
                    session_kpis(vb, sb, sessions[1], p),
                    confidence=level,
                    rows=rows_total,
                )
                rows.append(ConfigurationDiff(label, n, interval, gate_of(interval), BETWEEN))
                continue
            if borrowed and (name, label) in borrowed:
                sd, df, source = borrowed[(name, label)]
                interval = borrowed_spread(
                    session_kpis(va, sa, sessions[0], p),
                    session_kpis(vb, sb, sessions[1], p),
                    sd,
                    df,
                    confidence=level,
                    rows=rows_total,
                    source=source,
                )
                rows.append(ConfigurationDiff(label, n, interval, gate_of(interval), BETWEEN))
                continue
            within = ratio_of_percentiles(
                va, ca, vb, cb, percentile=p, confidence=within_level, replicates=replicates
            )
            said = _within_verdict(within, margin, alpha, mv.metric.better)
            rows.append(ConfigurationDiff(label, n, within, gate_of(None), WITHIN, said))
        scale = metric_scale(mv.values[a.table.ok], mv.metric.unit)
        metrics.append(MetricDiff(name, mv.metric.unit, mv.metric.better, p, tuple(rows), scale))
    undecided = [f"{m.metric} {r.label}" for m in metrics for r in m.rows if r.spread == WITHIN]
    spreads = {r.spread for m in metrics for r in m.rows}
    if len(spreads) == 1:
        spread = spreads.pop()
    elif spreads:
        spread = "mixed"
    family = (
        {
            "rows": rows_total,
            "method": "Bonferroni-t (Dunn 1961) over the diff's rows",
            "confidence": level,
            "row_confidence": family_confidence(level, rows_total),
        }
        if spread != WITHIN
        else {"rows": rows_total, "method": "none: no verdict within session only"}
    )
    checks = tuple(
        session_check(d, side, str(store), metric_names)
        for side, datas, stores in (("A", base, names[0]), ("B", new, names[1]))
        for d, store in zip(datas, stores, strict=True)
    )
    only_a = tuple(x for x in dict.fromkeys(side_labels[0]) if x not in set(side_labels[1]))
    only_b = tuple(x for x in dict.fromkeys(side_labels[1]) if x not in set(side_labels[0]))
    left = tuple(x for x in dict.fromkeys(side_labels[0] + side_labels[1]) if x not in labels)
    return StoreDiff(
        (", ".join(map(str, names[0])), ", ".join(map(str, names[1]))),
        (a.experiment.name, b.experiment.name),
        (a.plan.plan_hash, b.plan.plan_hash),
        level,
        margin,
        tuple(metrics),
        (only_a, only_b),
        tuple(warnings),
        (tuple(map(str, names[0])), tuple(map(str, names[1]))),
        spread,
        family,
        checks,
        left,
        _undecided(sessions, undecided, spread == "mixed") if undecided else "",
    )


def diff(
    a: ExperimentData,
    b: ExperimentData,
    names: tuple[str, str],
    *,
    margin: float | None = None,
    confidence: float = 95.0,
    replicates: int = 2000,
) -> StoreDiff:
    """One session per side (``replicate``, ``bisect``): the within-session intervals."""
    return diff_sessions(
        [a], [b], ([names[0]], [names[1]]), margin=margin, confidence=confidence,
        replicates=replicates,
    )  # fmt: skip


__all__: Sequence[str] = ["StoreDiff", "diff", "diff_sessions", "labels_of"]
