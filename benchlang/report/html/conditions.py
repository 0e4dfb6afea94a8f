"""Stopping (Mittal et al., PMBS '23: where the rule stopped each series and configuration)
and profile (TriScale §4.6: the seasonal periods of the condition data) as tables; their plots
are the figures ``stopping-ks``, ``stopping-density`` and ``profile`` (one drawing path)."""

from __future__ import annotations

from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import section, table, warning


def stopping_section(inputs: ReportInputs) -> str | None:
    """Per stopped (series, configuration): after how many trials, what the rule did, and why."""
    if not inputs.stops:
        return None
    data = inputs.data
    stop = data.experiment.stop
    labels = {index: label for index, label, _b, _l in data.configurations()}
    body = [
        table(
            ["configuration", "series", "stopped after", "action", "rule", "class", "reason"],
            [[labels.get(c, c), s, n, a, r, k, why] for s, c, n, a, r, k, why in inputs.stops],
            caption=f"stopping rule: {stop.kind if stop else '-'}",
        )
    ]
    warned = [s for s in inputs.stops if s[3] == "stop_warn"]
    if warned:
        body.append(warning(f"{len(warned)} configuration(s) stopped with a warning (see table)"))
    body.append(
        "<p class='note'>The Kolmogorov–Smirnov curve of each configuration's trials and the "
        "densities at the stop are the figures <a href='#fig-stopping-ks'>stopping-ks</a> and "
        "<a href='#fig-stopping-density'>stopping-density</a> above (Mittal et al., Figs. 1, "
        "2/4/5).</p>"
    )
    return section("stopping", "Stopping", body)


def profile_section(inputs: ReportInputs) -> str | None:
    """Each profile's periods in the units ``profile`` prints ("1w"), its recommended span,
    or why it is missing; its autocorrelation is the figure ``profile`` (TriScale Fig. 5)."""
    if not inputs.profiles:
        return None
    from benchlang.report.record import format_duration

    rows, body = [], []
    for view in inputs.profiles:
        if view.result is None:
            body.append(warning(f"profile {view.name} ({view.path}): not computed: {view.problem}"))
            continue
        p = view.result
        span = p.recommended_span
        rows.append(
            [
                view.name,
                view.path,
                p.n,
                format_duration(p.period),
                ", ".join(format_duration(q * p.period) for q in p.periods) or "none",
                format_duration(span) if span else "-",
            ]
        )
    if rows:
        headers = ["profile", "data", "samples", "every", "seasonal periods", "recommended span"]
        body.insert(0, table(headers, rows, caption="profiles of the conditions (TriScale §4.6)"))
        body.append(
            "<p class='note'>The autocorrelation by lag is the figure "
            "<a href='#fig-profile'>profile</a> above (TriScale Fig. 5).</p>"
        )
    return section("profile", "Profile of the conditions", body)
