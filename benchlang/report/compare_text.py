"""Comparisons as terminal text: the two-version bootstrap table (Bakshy & Frachtenberg §5),
the k-level ratios (clustered bootstrap or, with few clusters, the cluster-level t of Donald &
Lang 2007), any method's generic outcome, mixed effects and ANOVA (DataMill §5); the record's
line per bootstrap comparison."""

from __future__ import annotations

import math
import sys
from typing import TextIO

from benchlang.report.comparison_data import compare
from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table
from benchlang.stats.comparison import TOP_LEVEL, ComparisonResult
from benchlang.stats.contract import ComparisonOutcome


def _better(r: ComparisonResult) -> str | None:
    note = next((n for n in r.notes if n.endswith(("better lower", "better higher"))), None)
    return note.rsplit(" ", 1)[-1] if note else None


def _f(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _ratio_words(estimate: float, better: str | None) -> str:
    if not math.isfinite(estimate) or estimate <= 0:
        return "-"
    if better == "higher":
        return f"{100 * (estimate - 1):+.3g}% ({'better' if estimate > 1 else 'worse'})"
    return f"{100 * (estimate - 1):+.3g}% ({'better' if estimate < 1 else 'worse'})"


def render_comparisons(results: list[ComparisonResult], stream: TextIO | None = None) -> None:
    """Every comparison's tables and notes: the two-version bootstrap (§5), the k-level
    ratios (bootstrap or cluster-level t), the generic outcomes, mixed effects and ANOVA."""
    out = stream or sys.stdout
    boot = [r for r in results if r.bootstrap is not None]
    if boot:
        rows = []
        for r in boot:
            b = r.bootstrap
            rel = f"{100 * b.relative_effect:+.3g}%" if b.relative_effect is not None else "-"
            rows.append(
                [
                    r.comparison.metric,
                    f"{r.comparison.by}: {r.treatment} - {r.control}",
                    _f(b.estimate),
                    rel,
                    _f(b.se),
                    f"[{b.ci_low:.4g}, {b.ci_high:.4g}]",
                    f"{b.confidence:g}% {b.interval}",
                    f"{b.cluster} ({b.clusters})",
                    "yes" if b.significant else "no",
                ]
            )
        render_table(
            [
                "metric",
                "difference",
                "estimate",
                "relative",
                "SE",
                "CI",
                "interval",
                "clusters",
                "significant",
            ],
            rows,
            title="comparisons: reweighting bootstrap (Bakshy & Frachtenberg §5)",
            stream=out,
        )
        for r in boot:
            if r.bootstrap.clusters < 20 and r.bootstrap.cluster != "none":
                out.write(
                    f"note: {r.comparison.metric} by {r.comparison.by}: only {r.bootstrap.clusters} {r.bootstrap.cluster} clusters; with so few the bootstrap interval is somewhat too narrow (docs/ab-designs.md)\n"
                )
    for r in results:
        lv = r.levels
        if lv is not None and lv.refused:
            sep = "/" if lv.scale == "ratio" else "-"
            shown = ", ".join(
                f"{lv.names[p.level]} {sep} {lv.names[p.reference]} = {p.estimate:.4g}"
                for p in lv.pairs
            )
            out.write(
                f"{r.comparison.metric} by {r.comparison.by}: descriptive only (no interval, no significance): {shown}\n"
            )
            continue
        if lv is None or (len(lv.names) == 2 and lv.scale != "ratio" and r.bootstrap is not None):
            continue
        ratio = lv.scale == "ratio"
        rows = []
        for p in lv.pairs:
            words = _ratio_words(p.estimate, _better(r)) if ratio else "-"
            rows.append(
                [
                    f"{lv.names[p.level]} {'/' if ratio else '-'} {lv.names[p.reference]}",
                    f"{p.estimate:.4g}{'x' if ratio else ''}",
                    words,
                    f"[{p.ci_low:.4g}, {p.ci_high:.4g}]",
                    p.clusters,
                    _f(p.p_adjusted),
                    "yes" if p.significant else "no",
                ]
            )
        family = (
            f"{lv.confidence:g}% simultaneous (Bonferroni over {len(lv.pairs)}: {lv.per_pair_confidence:.4g}% each)"
            if len(lv.pairs) > 1
            else f"{lv.confidence:g}%"
        )
        how = (
            "cluster-level t with "
            + ", ".join(sorted({f"{p.df:.3g}" for p in lv.pairs}))
            + " df (Donald & Lang 2007: too few clusters for the bootstrap)"
            if lv.method == "cluster_t"
            else "clustered bootstrap, "
            + (
                "log scale, T(G-1) (Bakshy & Frachtenberg §5; Cameron & Miller 2015)"
                if ratio
                else "T(G-1)"
            )
        )
        render_table(
            [
                "levels",
                "ratio of means" if ratio else "difference of means",
                "change",
                "CI",
                f"{lv.cluster} clusters",
                "p (adjusted)" if len(lv.pairs) > 1 else "p",
                "significant",
            ],
            rows,
            title=(
                f"{r.comparison.metric} by {r.comparison.by}: {'ratios' if ratio else 'differences'} "
                f"of means, {family} intervals; {how}"
            ),
            stream=out,
        )
    generic = [
        r
        for r in results
        if (o := getattr(r, "outcome", None)) is not None and TOP_LEVEL.keys().isdisjoint(o.details)
    ]
    if generic:
        _render_generic(generic, out)
    for r in results:
        for note in r.notes:
            if not note.endswith(("better lower", "better higher")):
                out.write(f"note: {r.comparison.metric} by {r.comparison.by}: {note}\n")
    for r in results:
        outcome = getattr(r, "outcome", None)
        by_host = outcome.details.get("anova_hosts") if outcome is not None else None
        if by_host is not None:
            for h in by_host.tables:
                for note in h.notes:
                    out.write(f"note: {r.comparison.metric}: {note}\n")
                if h.anova is None:
                    out.write(f"{r.comparison.metric} on host {h.host}: no table: {h.problem}\n")
                else:
                    _anova_table(r.comparison.metric, h.anova, out, f" on host {h.host}")
            continue
        if r.comparison.method == "anova" and r.mixed is not None:
            _anova_table(r.comparison.metric, r.mixed, out)
            hosts = r.outcome.details.get("hosts") if r.outcome is not None else None
            if hosts is not None and len(hosts.rows) > 1:
                render_table(
                    ["host", "n", "mean", "sd"],
                    [(h.host, h.n, h.mean, h.sd) for h in hosts.rows],
                    title=f"{r.comparison.metric} per host: {hosts.between_share:.1%} of its variance lies between hosts",
                    stream=out,
                )
            continue
        if r.mixed is not None:
            m = r.mixed
            rows = [[name, _f(v)] for name, v in m.components.items()]
            render_table(
                ["component", "variance"],
                rows,
                title=f"mixed effects ({m.method}): {r.comparison.metric} by {r.comparison.by}: effect {m.effect:.4g} ± {m.effect_se:.3g} (SE)",
                stream=out,
            )
            clipped = getattr(m, "clipped", ())
            if clipped:
                raw = ", ".join(f"{k} {m.raw_components[k]:.3g}" for k in clipped)
                out.write(
                    f"clipped at 0 (negative estimates: the component cannot be told from 0 with these data): {raw}\n"
                )
            if m.not_identifiable:
                out.write(f"not identifiable in this design: {', '.join(m.not_identifiable)}\n")
            if m.icc is not None:
                out.write(f"ICC {m.icc:.3g}, design effect {m.design_effect:.3g}\n")
        if r.problem:
            out.write(f"{r.comparison.metric} by {r.comparison.by}: not compared: {r.problem}\n")
    render_family(results, out)


def _anova_table(metric: str, a, out: TextIO, where: str = "") -> None:
    """DataMill's table (§5, Tables 3 and 4): df, SS, MS, F, p, η², then R² and adjusted R²,
    the aliased terms left out and whether the F tests' assumptions held."""
    render_table(
        ["term", "df", "sum sq", "mean sq", "F", "p", "η²"],
        [(x.term, x.df, x.sum_sq, x.mean_sq, x.f, x.p_value, x.eta_squared) for x in a.rows],
        title=f"ANOVA (DataMill §5): {metric}{where}: {a.formula}, n = {a.n}",
        stream=out,
    )
    out.write(f"R² {a.r_squared:.4g}, adjusted R² {a.adj_r_squared:.4g}\n")
    for note in a.dropped:
        out.write(f"note: {metric}: {note}\n")
    if not a.assumptions_hold:
        out.write(
            f"DESCRIPTIVE ONLY: residuals are not normal (Shapiro-Wilk p = "
            f"{a.residuals_normal_p:.2g}); the F tests' p-values are not trustworthy\n"
        )


def render_family(results: list[ComparisonResult], out: TextIO) -> None:
    """The run's family of tests (app.comparisons.compare_all): its sentence, each test's raw and
    adjusted p-value and verdict, what the intervals beside them are, and what stays outside."""
    parts = [f for r in results if (f := getattr(r, "family", None)) is not None]
    if not parts:
        return
    first = parts[0]
    a = first.adjustment
    adjusted = {"holm": "p (Holm)", "bh": "p (BH)", "none": "p"}[a.correction]
    rows = [
        [t.label, _f(t.p_value), _f(t.p_adjusted), "yes" if t.rejected else "no"]
        if t.answered
        else [t.label, "-", "-", "no answer (counted as p = 1)"]
        for part in parts
        for t in part.tests
    ]
    render_table(
        ["test", "p", adjusted, "significant"],
        rows,
        title=first.sentence,
        stream=out,
    )
    if a.correction == "holm":
        out.write(
            "note: Holm has no simultaneous intervals: the intervals above are Bonferroni's at "
            f"{a.interval_confidence:.4g}% each; Holm may call a test significant whose interval "
            "still covers no change\n"
        )
    elif a.correction == "bh":
        out.write(
            f"note: the intervals above are false-coverage-rate intervals at {a.interval_confidence:.4g}% "
            "(Benjamini & Yekutieli 2005): their guarantee is for the tests Benjamini-Hochberg "
            "selected; FDR control assumes independent or positively dependent tests\n"
        )
    if first.outside:
        out.write(f"outside the family (their own tables): {', '.join(first.outside)}\n")


def _interval_text(o: ComparisonOutcome) -> str:
    if not (math.isfinite(o.ci_low) and math.isfinite(o.ci_high)):
        return "-"
    achieved = (
        f" (achieved {o.achieved_confidence:.4g}%)"
        if math.isfinite(o.achieved_confidence) and abs(o.achieved_confidence - o.confidence) > 1e-9
        else ""
    )
    return f"[{o.ci_low:.4g}, {o.ci_high:.4g}] {o.confidence:g}%{achieved}"


def _render_generic(results: list[ComparisonResult], out: TextIO) -> None:
    """Any method's outcome, in the contract's one shape."""
    rows = []
    for r in results:
        o = r.outcome
        if o is None:  # the caller passes results with an outcome
            continue
        scale = {"ratio": "/", "difference": "-", "shift": "shift"}.get(o.scale, o.scale)
        verdict = o.verdict or (
            "yes" if o.significant else "no" if o.significant is not None else "-"
        )
        rows.append(
            [
                r.comparison.metric,
                f"{r.comparison.by}: {r.treatment} {scale} {r.control}",
                o.method,
                _f(o.estimate),
                _interval_text(o),
                _f(o.p_value),
                "descriptive only" if o.descriptive_only else verdict,
            ]
        )
    render_table(
        ["metric", "compared", "method", "estimate", "CI", "p", "result"],
        rows,
        title="comparisons (statistics methods: benchlang plugins --describe NAME)",
        stream=out,
    )


def record_lines(data: ExperimentData) -> tuple[str, ...]:
    """One line per bootstrap comparison for the reproducibility record: the interval's method,
    its cluster scheme and why, and what it assumes (or why it is descriptive only)."""
    lines = []
    for comparison in data.experiment.comparisons:
        if comparison.method != "bootstrap":
            continue
        r = compare(data, comparison)
        head = f"{comparison.metric} by {comparison.by}: "
        choice = r.detail("cluster_choice")
        lv = r.levels
        setting = comparison.settings.get("cluster", "auto")
        if choice is not None:
            text = f"cluster auto, {choice.method}, {choice.scheme or 'no'} clusters ({choice.why})"
            if choice.assumption:
                text += f"; CONDITIONAL: {choice.assumption}"
        elif lv is not None:
            text = (
                f"cluster {lv.cluster} ({'auto' if setting == 'auto' else 'the spec'}), "
                f"{lv.method}, {'/'.join(map(str, lv.clusters_per_level))} per level"
            )
        else:
            text = "no interval"
        if r.problem:
            text += f"; descriptive only: {r.problem}"
        lines.append(head + text)
    return tuple(lines)
