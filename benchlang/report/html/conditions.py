"""Stopping (Mittal et al., PMBS '23: the KS curve and the stop point per configuration) and
profile (TriScale §4.6: the autocorrelation of condition data with its detected periods)."""

from __future__ import annotations

import numpy as np

from benchlang.report.html import plots
from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import esc, figure, section, table, warning

MAX_STOPS = 12


def stopping_section(inputs: ReportInputs) -> str | None:
    """Per stopped (series, configuration): the exact KS distance of every prefix of its stored
    values to all of them (``stats.stopping_eval.prefix_ks_distances``), the stop point and the
    rule's KS threshold. The run kept nothing after the stop, so the reference is the stopped
    sample: the curve shows how settled the distribution was when the rule stopped."""
    if not inputs.stops:
        return None
    from benchlang.stats.stopping_eval import prefix_ks_distances

    data = inputs.data
    stop = data.experiment.stop
    threshold = stop.settings.get("ks") if stop is not None else None
    labels = {index: label for index, label, _b, _l in data.configurations()}
    t = data.table
    metric = next(iter(data.metrics), None)
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
    figures = []
    for s, c, n, action, rule, _k, _why in inputs.stops[:MAX_STOPS] if metric else ():
        y = data.metrics[metric].values[(t.configuration == c) & (t.series == s) & t.ok]
        y = y[np.isfinite(y)]
        if y.size < 2:
            continue
        ks = prefix_ks_distances(y)
        keep, note = plots.thin(ks.size)
        k = np.arange(1, ks.size + 1.0)
        hlines = [(f"KS threshold {threshold:g}", float(threshold))] if threshold else []
        svg = plots.lines(
            [("KS(prefix, stopped sample)", k[keep], ks[keep])],
            f"{labels.get(c, c)}, series {s}",
            "trials",
            "KS distance",
            vlines=[(f"stop after {n} ({action}, {rule})", float(n))],
            hlines=hlines,
            note=note,
        )
        alt = (
            f"KS distance of each prefix of {labels.get(c, c)} series {s} to its {y.size} stored "
            f"{metric} values; the rule {rule} stopped after {n} trials ({action})"
        )
        rows = [[int(i + 1), float(ks[i])] for i in keep]
        figures.append(figure(svg, alt, ["trials", "KS distance"], rows, note=note))
    if len(inputs.stops) > MAX_STOPS:
        body.append(
            f"<p class='note'>KS curves of the first {MAX_STOPS} of "
            f"{len(inputs.stops)} stops drawn</p>"
        )
    body.append("<div class='grid'>" + "".join(figures) + "</div>")
    return section("stopping", "Stopping", body)


def profile_section(inputs: ReportInputs) -> str | None:
    if not inputs.profiles:
        return None
    body = []
    for view in inputs.profiles:
        body.append(f"<h3>profile {esc(view.name)}: {esc(view.path)}</h3>")
        if view.result is None:
            body.append(warning(f"not drawn: {view.problem}"))
            continue
        p = view.result
        lags = np.arange(p.acf.size, dtype=float) * p.period
        keep, note = plots.thin(lags.size, 2000)
        vlines = [(f"period {q * p.period:g} s", q * p.period) for q in p.periods[:4]]
        svg = plots.lines(
            [("autocorrelation", lags[keep], p.acf[keep])],
            f"autocorrelation of {view.name}",
            "lag (s)",
            "ACF",
            bands=[("significance band", lags[keep], -p.threshold[keep], p.threshold[keep])],
            vlines=vlines,
            note=note,
        )
        span = p.recommended_span
        alt = (
            f"Autocorrelation of {view.name} over {p.n} samples every {p.period:g} s; periods "
            + (", ".join(f"{q * p.period:g} s" for q in p.periods) or "none found")
            + (f"; recommended span {span:g} s" if span else "")
        )
        rows = [[float(lags[i]), float(p.acf[i]), float(p.threshold[i])] for i in keep]
        body.append(figure(svg, alt, ["lag (s)", "ACF", "threshold"], rows, note=note))
    return section("profile", "Profile of the conditions", body)
