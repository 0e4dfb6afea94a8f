"""Order analysis (OrderSage, Duplyakin et al., ATC 2023: fixed vs random distributions, the
p / η² / Δ% / CI-overlap case table, position and carry-over views) and A/B comparisons
(Bakshy & Frachtenberg, WWW 2015: the effect with its interval per method and bootstrap scheme,
variance components, the warm-up curve; DataMill's ANOVA table). Results come from
``stats.order_analysis``, ``stats.comparison`` and ``report.warmup``; this module draws them."""

from __future__ import annotations

import numpy as np

from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import MAX_ROWS, esc, figure, section, table, warning
from benchlang.report.html.plots import Palette, bars, cues, intervals, lines, points, thin
from benchlang.stats.order_dependence import format_percent


def order_section(inputs: ReportInputs) -> str | None:
    rep = inputs.order
    if rep is None or (rep.dependence is None and rep.positions is None):
        return None
    data = inputs.data
    unit, factor = inputs.scale(rep.metric)
    unit = unit or ""
    t = data.table
    values = data.metrics[rep.metric].values / factor
    ok = t.ok & np.isfinite(values)
    body = []
    if rep.note:
        body.append(f"<p class='note'>{esc(rep.note)}</p>")
    dep = rep.dependence
    if dep is not None:
        verdict = (
            f"Order matters: {', '.join(dep.significant)} (Kruskal-Wallis p below "
            f"{dep.threshold:.3g}, Bonferroni over {dep.m})"
            if dep.order_matters
            else f"No configuration's results depend on the order (threshold {dep.threshold:.3g})."
        )
        body.append(warning(verdict) if dep.order_matters else f"<p class='ok'>{esc(verdict)}</p>")
        groups, rows, thinned = [], [], None
        drawn = dep.configurations
        per = max(1, MAX_ROWS // (2 * max(1, len(drawn))))
        labels = t.label.astype(str)
        for c in drawn:
            for kind in ("fixed", "random"):
                sel = ok & (labels == c.configuration) & (t.order_kind == kind)
                groups.append((f"{c.configuration} {kind}", values[sel]))
                keep, cut = thin(int(sel.sum()), per)
                thinned = thinned or cut
                rows += [[c.configuration, kind, v] for v in values[sel][keep].tolist()]
        svg = points(
            groups, "fixed vs random order per configuration", f"{rep.metric} ({unit})", boxes=True
        )
        alt = (
            f"Box plots of {rep.metric} in fixed-order and random-order rounds for each of "
            f"{len(drawn)} configurations"
        )
        note = f"table: at most {per} values per box, evenly spaced" if thinned else None
        body.append(figure(svg, alt, ["configuration", "order", "value"], rows, note=note))
        body.append("<h3>OrderSage table (p, η², Δ%, CI-overlap case)</h3>")
        ranked = sorted(dep.configurations, key=lambda c: (c.p_value, -c.eta_squared))
        body.append(
            table(
                [
                    "configuration",
                    "n fixed",
                    "n random",
                    "KW p",
                    "significant",
                    "η²",
                    "Δ%",
                    "case",
                    f"median fixed ({unit})",
                    f"median random ({unit})",
                ],
                [
                    [
                        c.configuration,
                        c.n_fixed,
                        c.n_random,
                        c.p_value,
                        "YES" if c.significant else "no",
                        c.eta_squared,
                        format_percent(c.delta_percent, signed=True),
                        c.ci_case,
                        c.median_fixed / factor,
                        c.median_random / factor,
                    ]
                    for c in ranked
                ],
                bad={i: "bad" for i, c in enumerate(ranked) if c.significant},
                caption="sorted by p-value; Δ% = (mean fixed − mean random) / mean fixed × 100",
            )
        )
    if rep.positions is not None:
        body += _positions(inputs, rep, values, ok, unit)
    if rep.carry is not None and rep.carry.strongest:
        c = rep.carry
        body.append("<h3>Carry-over: the predecessor that shifts each configuration most</h3>")
        body.append(
            table(
                [
                    "configuration",
                    "after",
                    "n after",
                    f"median after ({unit})",
                    f"median other ({unit})",
                    "shift %",
                    "p",
                    "significant",
                ],
                [
                    [
                        p.configuration,
                        p.predecessor,
                        p.n_after,
                        p.median_after / factor,
                        p.median_other / factor,
                        format_percent(p.shift_percent, signed=True),
                        p.p_value,
                        "YES" if p.significant else "no",
                    ]
                    for p in c.strongest
                ],
                caption=f"Mann-Whitney U, Bonferroni over {c.n_tests} pairs",
            )
        )
    return section("order", "Order analysis (OrderSage)", body)


def _positions(
    inputs: ReportInputs, rep, values: np.ndarray, ok: np.ndarray, unit: str
) -> list[str]:
    """The position test per configuration, and each configuration's median by position in
    random-order rounds, every configuration drawn in its colour and dash of the figures."""
    from benchlang.report.figures import labels as plan_labels

    t = inputs.data.table
    p = rep.positions
    random = ok & (t.order_kind == "random")
    labels = t.label.astype(str)
    palette = Palette(plan_labels(inputs))
    curves, rows, styles = [], [], []
    for row in p.configurations:
        sel = random & (labels == row.configuration)
        where = np.unique(t.position[sel])
        medians = np.array([np.median(values[sel & (t.position == k)]) for k in where])
        curves.append((row.configuration, where.astype(float), medians))
        styles.append(cues(palette, row.configuration))
        rows += [[row.configuration, int(k), float(m)] for k, m in zip(where, medians, strict=True)]
    svg = lines(
        curves,
        "median by position in random-order rounds",
        "position in round",
        f"{rep.metric} ({unit})",
        markers=True,
        styles=styles,
    )
    alt = (
        f"Median {rep.metric} of each of {len(curves)} configurations by its position in "
        "random-order rounds; "
        + ("position matters" if p.position_matters else "no position effect found")
        + f" (Bonferroni threshold {p.threshold:.3g})"
    )
    out = [
        "<h3>Position in the round</h3>",
        figure(svg, alt, ["configuration", "position", "median"], rows),
    ]
    out.append(
        table(
            ["configuration", "n", "positions", "Spearman ρ", "ρ p", "KW p", "η²", "significant"],
            [
                [
                    r.configuration,
                    r.n,
                    r.n_positions,
                    r.spearman_rho,
                    r.spearman_p,
                    r.kruskal_p,
                    r.eta_squared,
                    "YES" if r.significant else "no",
                ]
                for r in p.configurations
            ],
        )
    )
    return out


def ab_section(inputs: ReportInputs) -> str | None:
    if not inputs.comparisons and not inputs.warmup:
        return None
    body = []
    for r in inputs.comparisons:
        body += _comparison(r)
    for w in inputs.warmup:
        body += _warmup(w)
    return section("comparisons", "A/B comparisons", body)


def _effects(r) -> tuple[list[tuple[str, float, float | None, float | None]], float]:
    """(label, estimate, low, high) per method and scheme, and the no-effect reference."""
    items: list[tuple[str, float, float | None, float | None]] = []
    reference = 0.0
    lv = r.levels
    if lv is not None:
        ratio = lv.scale == "ratio"
        reference = 1.0 if ratio else 0.0
        sep = "/" if ratio else "-"
        for p in lv.pairs:
            lo, hi = (None, None) if lv.refused else (p.ci_low, p.ci_high)
            items.append(
                (
                    f"{lv.names[p.level]} {sep} {lv.names[p.reference]} (cluster {lv.cluster})",
                    p.estimate,
                    lo,
                    hi,
                )
            )
    b = r.bootstrap
    if b is not None and not items:
        items.append((f"bootstrap, cluster {b.cluster}", b.estimate, b.ci_low, b.ci_high))
    o = r.outcome
    if o is not None and not items and r.mixed is None and np.isfinite(o.estimate):
        reference = 1.0 if o.scale == "ratio" else 0.0
        finite = bool(np.isfinite(o.ci_low) and np.isfinite(o.ci_high)) and not o.descriptive_only
        label = f"{o.method} ({o.confidence:g}% interval)" if finite else f"{o.method}"
        items.append(
            (label, o.estimate, o.ci_low if finite else None, o.ci_high if finite else None)
        )
    m = r.mixed
    if m is not None and hasattr(m, "effect"):
        items.append(
            (
                f"mixed effects ({m.method}) ±1 SE",
                m.effect,
                m.effect - m.effect_se,
                m.effect + m.effect_se,
            )
        )
    return items, reference


def _anova_table(a, metric: str, where: str = "") -> list[str]:
    """DataMill's table (§5, Tables 3 and 4): df, SS, MS, F, p, η², R² and adjusted R²; the
    model as the spec wrote it (``*`` crosses, ``+`` adds)."""
    rows = [[x.term, x.df, x.sum_sq, x.mean_sq, x.f, x.p_value, x.eta_squared] for x in a.rows]
    out = [
        table(
            ["term", "df", "sum sq", "mean sq", "F", "p", "η²"],
            rows,
            caption=f"ANOVA (DataMill §5){where}: {anova_formula(a, metric)}, n = {a.n}",
        ),
        f"<p>R² {a.r_squared:.4g}, adjusted R² {a.adj_r_squared:.4g}</p>",
    ]
    out += [f"<p class='note'>{esc(note)}</p>" for note in a.dropped]
    if not a.assumptions_hold:
        out.append(warning("DESCRIPTIVE ONLY: " + anova_failure(a)))
    return out


def anova_formula(a, metric: str) -> str:
    """The model with the metric's name: "time ~ tool * level"."""
    return a.formula.replace("metric ~", f"{metric} ~", 1)


def anova_failure(a) -> str:
    return (
        f"residuals are not normal (Shapiro-Wilk p = {a.residuals_normal_p:.2g}); "
        "the F tests' p-values are not trustworthy"
    )


def _hosts(r) -> list[str]:
    """The metric per host beside the table (n, mean, sd; the share between hosts)."""
    hosts = r.outcome.details.get("hosts") if r.outcome is not None else None
    if hosts is None or len(hosts.rows) < 2:
        return []
    caption = (
        f"{r.comparison.metric} per host: {hosts.between_share:.1%} of its variance lies "
        "between hosts"
    )
    return [
        table(
            ["host", "n", "mean", "sd"],
            [[h.host, h.n, h.mean, h.sd] for h in hosts.rows],
            caption=caption,
        )
    ]


def comparison_title(r) -> str:
    """A compare as the spec wrote it; an ANOVA by its model (``*`` where the spec wrote it)."""
    c = r.comparison
    a = r.mixed if c.method == "anova" else None
    by_host = r.outcome.details.get("anova_hosts") if r.outcome is not None else None
    if by_host is not None:
        a = next((h.anova for h in by_host.tables if h.anova is not None), None)
    if a is not None:
        return f"anova {anova_formula(a, c.metric)}" + (" by host" if by_host else "")
    return f"compare {c.metric} by {c.by} with {c.method}"


def _comparison(r) -> list[str]:
    c = r.comparison
    title = comparison_title(r)
    out = [f"<h3>{esc(title)}</h3>"]
    if r.problem:
        out.append(warning(f"no interval: {r.problem}"))
    for note in r.notes:
        out.append(f"<p class='note'>{esc(note)}</p>")
    by_host = r.outcome.details.get("anova_hosts") if r.outcome is not None else None
    if by_host is not None:
        for h in by_host.tables:
            out += [f"<p class='note'>{esc(note)}</p>" for note in h.notes]
            if h.anova is None:
                out.append(warning(f"host {h.host}: no table: {h.problem}"))
            else:
                out += _anova_table(h.anova, c.metric, f" on host {h.host}")
        return out
    if c.method == "anova" and r.mixed is not None:
        return out + _anova_table(r.mixed, c.metric) + _hosts(r)
    o = r.outcome
    if o is not None and o.verdict is not None and not o.descriptive_only:
        out.append(f"<p>{esc(o.method)}: <strong>{esc(o.verdict)}</strong></p>")
    items, reference = _effects(r)
    if items:
        svg = intervals(items, title, "effect", reference=reference)
        alt = f"Effect of {c.by} on {c.metric} with its interval: " + "; ".join(
            f"{label} {est:.4g}"
            + (f" [{lo:.4g}, {hi:.4g}]" if lo is not None else " (no interval)")
            for label, est, lo, hi in items
        )
        out.append(figure(svg, alt, ["estimate", "value", "low", "high"], [list(i) for i in items]))
    m = r.mixed
    if m is not None and hasattr(m, "components"):
        names = list(m.components)
        vals = [float(m.components[n]) for n in names]
        svg = bars(names, vals, "variance components", f"variance of {c.metric}")
        alt = "Variance components: " + ", ".join(
            f"{n} {v:.3g}" for n, v in zip(names, vals, strict=True)
        )
        rows = [[n, v, m.component_se.get(n)] for n, v in zip(names, vals, strict=True)]
        out.append(figure(svg, alt, ["component", "variance", "SE"], rows))
        if m.icc is not None:
            out.append(f"<p>ICC {m.icc:.3g}, design effect {m.design_effect:.3g}</p>")
        if m.not_identifiable:
            out.append(
                f"<p class='note'>not identifiable in this design: "
                f"{esc(', '.join(m.not_identifiable))}</p>"
            )
    return out


def _warmup(w) -> list[str]:
    s = w.suggestion
    if s is None:
        return [warning(f"warm-up advice for {w.metric}: {w.problem}")]
    pos = np.arange(s.position_mean.size, dtype=float)
    mean, se = np.asarray(s.position_mean, float), np.asarray(s.position_se, float)
    vlines = []
    if s.warmup:
        vlines.append((f"suggested warm-up: {s.warmup}", s.warmup - 0.5))
    if s.cooldown:
        vlines.append((f"suggested cool-down: {s.cooldown}", pos.size - s.cooldown - 0.5))
    svg = lines(
        [("mean by position", pos, mean)],
        f"warm-up curve: {w.metric}",
        "position in host batch",
        "mean residual vs request median",
        bands=[("±1 SE", pos, mean - se, mean + se)],
        vlines=vlines,
        markers=True,
    )
    alt = (
        f"Warm-up curve of {w.metric} over {s.batches} host batches: suggested warm-up "
        f"{s.warmup} and cool-down {s.cooldown} (spec: {w.given_warmup} and {w.given_cooldown})"
    )
    rows = [[int(p), float(a), float(b)] for p, a, b in zip(pos, mean, se, strict=True)]
    return [figure(svg, alt, ["position", "mean", "SE"], rows)]
