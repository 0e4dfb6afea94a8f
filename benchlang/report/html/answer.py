"""The report's answer, first on the page: per ranked metric an HTML table with one row per
configuration (the statistic the ranking compares, in the metric's one display unit; its ratio
to the best with the ranking's joint interval; the same in words), then what was checked and
what the intervals assume, once.

The numbers are the headline's (``report.headline.headline``: ``stats.headline`` and
``stats.simultaneous``), the words the terminal's short answer's (``report.short_answer``); the
full headline (series KPIs, variability, confidences) is a table in the details below.
"""

from __future__ import annotations

import math

from benchlang.report.headline import MetricHeadline, RankingGroup
from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import esc, table, warning
from benchlang.report.table import format_quantity


def statistic_name(h: MetricHeadline) -> str:
    return "median" if h.kpi_percentile == 50 else f"p{h.kpi_percentile:g}"


def display(h: MetricHeadline) -> tuple[str | None, float]:
    """The metric's one display unit on the page (``report.table.metric_scale``)."""
    return h.display if h.display is not None else (h.unit, 1.0)


def ratio_cell(comparison) -> str:
    """ "1.21× [1.17, 1.29]", or the ratio alone when the ranking has no interval."""
    r = f"{comparison.ratio:.2f}×"
    if math.isfinite(comparison.lower) and math.isfinite(comparison.upper):
        return f"{r} [{comparison.lower:.2f}, {comparison.upper:.2f}]"
    return r


def group_rows(h: MetricHeadline, g: RankingGroup) -> list[dict]:
    """One row per configuration, best first: name, label, statistic (display unit), ratio to
    the best with its interval, and the ranking in words (``short_answer.ratio_words``)."""
    from benchlang.report.short_answer import ratio_words

    rk = g.ranking
    _unit, factor = display(h)
    rows = []
    for place, j in enumerate(rk.order, start=1):
        comparison = next((c for c in rk.comparisons if c.worse == j), None)
        if place == 1:
            words = "best" if len(rk.order) > 1 else ""
        elif comparison is None:
            words = "no value"
        else:
            words = ratio_words(h, g.names[comparison.better], comparison)
        rows.append(
            {
                "place": place,
                "name": g.names[j],
                "label": g.labels[j],
                "statistic": rk.statistics[j] / factor,
                "ratio": None if comparison is None else comparison.ratio,
                "lower": None if comparison is None else _finite(comparison.lower),
                "upper": None if comparison is None else _finite(comparison.upper),
                "clear": None if comparison is None else comparison.clear,
                "ratio_text": _ratio_text(place, comparison),
                "words": words,
            }
        )
    return rows


def _ratio_text(place: int, comparison) -> str:
    if place == 1:
        return "1 (best)"
    return ratio_cell(comparison) if comparison is not None else "-"


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def group_caption(h: MetricHeadline, g: RankingGroup) -> str:
    """ "time: median (ms), lower is better, by tool; intervals hold jointly at 95% over 2
    comparisons"."""
    unit, _ = display(h)
    scope = f", by {g.factor}" if g.factor is not None else ""
    held = ", ".join(f"{k}={v}" for k, v in g.held if k != "benchmark")
    scope += f" ({held})" if held else ""
    rk = g.ranking
    if rk.descriptive_only:
        how = "no interval (descriptive only, below)"
    else:
        n = rk.family.comparisons or len(rk.comparisons)
        how = f"intervals hold jointly at {rk.confidence:g}% over {n} comparison" + "s" * (n != 1)
        levels, units = tuple(getattr(rk, "levels", ())), tuple(getattr(rk, "units", ()))
        if levels[:1] == ("session",) and units[:1] and units[0] > 1:
            how += (
                f"; {units[0]} sessions are the top clusters (the spread between them is carried)"
            )
    return (
        f"{h.metric}: {statistic_name(h)}{f' ({unit})' if unit else ''}, "
        f"{h.better} is better{scope}; {how}"
    )


def answer_html(inputs: ReportInputs) -> list[str]:
    """The headline tables, then one line each for what was checked and assumed; then the
    spec's comparisons, one row each (an A/B layout's answer: it has no ranking)."""
    return headline_tables(inputs.headline) + comparisons_table(inputs)


def comparisons_table(inputs: ReportInputs) -> list[str]:
    """Each ``compare`` of the spec in one row: the estimate on its scale (a difference or
    shift in the metric's display unit, a ratio as is), its interval or why there is none;
    the details are the section "A/B comparisons"."""
    from benchlang.report.html.comparisons import comparison_title

    rows = []
    for r in inputs.comparisons:
        o = r.outcome
        if o is None or not math.isfinite(o.estimate):
            rows.append([comparison_title(r), "-", "-", "no estimate (why: What failed, below)"])
            continue
        unit, factor = (None, 1.0) if o.scale == "ratio" else inputs.scale(r.comparison.metric)
        suffix = "×" if o.scale == "ratio" else (f" {unit}" if unit else "")

        def num(x: float, f: float = factor, u: str = suffix) -> str:
            return f"{format_quantity(x, None, scale=(None, f))}{u}"

        finite = math.isfinite(o.ci_low) and math.isfinite(o.ci_high) and not o.descriptive_only
        interval = f"[{num(o.ci_low)}, {num(o.ci_high)}] ({o.confidence:g}%)" if finite else "-"
        said = o.verdict
        if o.descriptive_only or r.problem:
            said = "no interval (why: What failed, below)"
        elif said is None and finite and o.significant is not None:
            said = "a change" if o.significant else "no clear change"
        elif said is None and not finite:
            said = "an estimate only (the details below)"
        rows.append([comparison_title(r), f"{o.scale} {num(o.estimate)}", interval, said or ""])
    if not rows:
        return []
    headers = ["comparison", "estimate (treatment vs control)", "interval", "verdict"]
    return [table(headers, rows, caption="the spec's comparisons (details below)", css="answer")]


def headline_tables(headlines: list[MetricHeadline]) -> list[str]:
    """``answer_html`` of these headlines (the notebook's ``headline()`` shows the same)."""
    out: list[str] = []
    for h in headlines:
        unit, factor = display(h)
        stat = f"{statistic_name(h)}{f' ({unit})' if unit else ''}"
        for g in h.groups:
            rows = group_rows(h, g)
            body = [
                [
                    r["name"],
                    format_quantity(r["statistic"], None, scale=(None, 1.0)),
                    r["ratio_text"],
                    r["words"],
                ]
                for r in rows
            ]
            out.append(
                table(
                    ["configuration", stat, "ratio to the best", "in words"],
                    body,
                    caption=group_caption(h, g),
                    css="answer",
                )
            )
            if g.ranking.descriptive_only:
                out.append(warning("No interval: " + "; ".join(g.ranking.reasons)))
        out += _basis(h.groups)
        if not h.groups:
            kpi_rows = [
                [c.label, format_quantity(c.kpi, None, scale=(None, factor))]
                for c in h.configurations
            ]
            out.append(table(["configuration", f"KPI ({stat})"], kpi_rows, caption=h.metric))
    return out


def _basis(groups) -> list[str]:
    answered = [g for g in groups if not g.ranking.descriptive_only]
    lines = dict.fromkeys(f"Checked: {g.check}." for g in answered if g.check)
    lines.update(
        dict.fromkeys(
            f"{g.assumption[0].upper()}{g.assumption[1:]}." for g in answered if g.assumption
        )
    )
    return [f"<p class='basis'>{esc(_plain(text))}</p>" for text in lines]


def _plain(text: str) -> str:
    return text.replace(" (run-level verdict above)", "").replace(" (above)", "")


def full_headline_html(h: MetricHeadline) -> list[str]:
    """The full headline of ``benchlang analyze`` as a table: per configuration its trials,
    KPI (the median of the series' KPIs), the series' KPIs and the variability interval, in
    the metric's display unit; then what the confidences mean."""
    from benchlang.report.headline_confidence import confidence_lines

    unit, factor = display(h)

    def num(x: float | None) -> str:
        return format_quantity(x, None, scale=(None, factor))

    kpi = {"upper": "KPI (upper bound)", "lower": "KPI (lower bound)"}.get(h.bound, "KPI")
    rows = []
    for c in h.configurations:
        series = [num(x) for x in c.series_kpis]
        if c.series_intervals:
            series = [f"[{num(lo)}, {num(hi)}]" for lo, hi in c.series_intervals]
        var = "-"
        if c.lower is not None and c.upper is not None:
            rel = f" ({100 * c.relative:.2g}%)" if c.relative is not None else ""
            var = f"[{num(c.lower)}, {num(c.upper)}]{rel}"
        rows.append([c.label, c.trials, num(c.kpi), " ".join(series), var])
    caption = (
        f"{h.metric} ({unit or 'no unit'}): {h.kpi_confidence:g}% {h.bound} bound on the "
        f"{statistic_name(h)} per series; the KPI is their median"
    )
    headers = ["configuration", "trials", f"{kpi} ({unit or '-'})", "series KPIs", "variability"]
    out = [table(headers, rows, caption=caption)]
    for c in h.configurations:
        if c.reasons:
            out.append(warning(f"{c.label}: DESCRIPTIVE ONLY: " + "; ".join(c.reasons)))
    if h.independence is not None:
        out.append(f"<p class='basis'>{esc(h.independence.summary())}</p>")
    said = " ".join(line.strip() for line in confidence_lines(h))
    if said:
        out.append(f"<p class='basis'>{esc(said)}</p>")
    return out
