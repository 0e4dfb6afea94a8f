"""The numbers of TriScale's figures (Jacob et al., JSys 1(1) 2021), from the results
``stats.triscale`` and ``stats.profile`` already compute: Fig. 1b (``kpi-scatter``), 3b
(``series-kpis``), 4 (``runtimes``), 3c and 8 (``variability``) and 5 (``profile``); Fig. 3a
(``convergence``) is
``stats.figure_convergence``, Figs. 7 and 10 (``cdf``, ``cdf-overlay``) ``stats.figure_cdf``;
docs/figures.md. Rows are long format: ``(configuration, part, x, y, low, high)`` unless said
otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from benchlang.stats.figure_data import NAN, FigureData, spaced

if TYPE_CHECKING:  # stats.profile imports scipy.signal and statsmodels (2 s): not for a CDF
    from benchlang.stats.profile import Profile
    from benchlang.stats.triscale import MetricAnalysis

PAPER = "TriScale (Jacob et al., JSys 2021)"
COLUMNS = ("configuration", "part", "x", "y", "low", "high")
TRIAL_POINTS = 300
"""Trials drawn per configuration in ``series-kpis``, evenly spaced in plan order (every
series keeps its share; every series' KPI is drawn)."""


def _kpi_words(analyses: Sequence[MetricAnalysis]) -> str:
    for a in analyses:
        for s in a.series:
            k = s.kpi
            if k.two_sided:
                return (
                    f"the sample p{k.percentile:g} with its {k.confidence:g}% two-sided "
                    "confidence interval"
                )
            return f"the {k.bound} bound of the p{k.percentile:g} at {k.confidence:g}% confidence"
    return "the KPI"


def _two_sided(analyses: Sequence[MetricAnalysis]) -> bool:
    return any(s.kpi.two_sided for a in analyses for s in a.series)


def _interval(k: Any) -> tuple[float, float]:
    """A series KPI's two-sided interval [X_(l), X_(u)] (``stats.kpi``, ``bound both``: the
    equal-tailed order-statistic interval, Hahn & Meeker §5.2), nan for a one-sided bound."""
    if not (k.two_sided and k.enough):
        return NAN, NAN
    return float(k.lower), float(k.upper)


def _descriptive(labels: Sequence[str], analyses: Sequence[MetricAnalysis]) -> tuple[str, ...]:
    return tuple(
        f"{label}: descriptive only ({'; '.join(a.reasons)})"
        for label, a in zip(labels, analyses, strict=True)
        if a.descriptive_only
    )


def kpi_scatter(
    labels: Sequence[str],
    analyses_x: Sequence[MetricAnalysis],
    analyses_y: Sequence[MetricAnalysis],
    metrics: tuple[str, str],
    units: tuple[str, str],
) -> FigureData:
    """Fig. 1b: each configuration's KPI of one metric against its KPI of another.

    A point per series (the two KPIs of the same series), and per configuration the median of
    its series' KPIs with the variability interval (§4.3) of each metric as bars, when scored.
    """
    columns = ("configuration", "part", "x", "y", "x_low", "x_high", "y_low", "y_high")
    rows: list[tuple[Any, ...]] = []
    for label, ax, ay in zip(labels, analyses_x, analyses_y, strict=True):
        kx = {s.series: s.kpi.value if s.kpi.enough else NAN for s in ax.series}
        ky = {s.series: s.kpi.value if s.kpi.enough else NAN for s in ay.series}
        ix = {s.series: _interval(s.kpi) for s in ax.series}
        iy = {s.series: _interval(s.kpi) for s in ay.series}
        both = sorted(set(kx) & set(ky))
        rows += [(label, f"series {s}", kx[s], ky[s], *ix[s], *iy[s]) for s in both]
        bx = _bounds(ax)
        by = _bounds(ay)
        centre_x = float(np.nanmedian([kx[s] for s in both])) if both else NAN
        centre_y = float(np.nanmedian([ky[s] for s in both])) if both else NAN
        rows.append((label, "configuration", centre_x, centre_y, *bx, *by))
    bars = any(np.isfinite(r[4]) for r in rows if r[1] == "configuration")
    words_x, words_y = _kpi_words(analyses_x), _kpi_words(analyses_y)
    kpis = words_x if words_x == words_y else f"{metrics[0]}: {words_x}; {metrics[1]}: {words_y}"
    thin = [f"{metrics[i]}'s" for i, a in enumerate((analyses_x, analyses_y)) if _two_sided(a)]
    caption = (
        f"{metrics[1]} against {metrics[0]}: for each configuration, one small point per "
        f"series at its two KPIs ({kpis})"
        + (f", thin bars: {' and '.join(thin)} interval per series" if thin else "")
        + ", a large point at the median of its series' KPIs"
        + (", bars: each metric's variability interval across series (§4.3)" if bars else "")
        + f". After {PAPER} Fig. 1b."
    )
    return FigureData(
        "kpi-scatter",
        f"{PAPER} Fig. 1b",
        caption,
        columns,
        rows,
        _descriptive(labels, analyses_x) + _descriptive(labels, analyses_y),
        {"x_label": f"{metrics[0]} KPI ({units[0]})", "y_label": f"{metrics[1]} KPI ({units[1]})"},
    )


def _bounds(a: MetricAnalysis) -> tuple[float, float]:
    v = a.variability
    if v is None or not v.enough:
        return NAN, NAN
    return float(v.lower), float(v.upper)


def series_kpis(
    labels: Sequence[str],
    values: Sequence[np.ndarray],
    series: Sequence[np.ndarray],
    analyses: Sequence[MetricAnalysis],
    metric: str,
    unit: str,
) -> FigureData:
    """Fig. 3b: every trial's metric value per series, and each series' KPI (§4.2)."""
    rows: list[tuple[Any, ...]] = []
    thinned: list[str] = []
    for label, v, s, a in zip(labels, values, series, analyses, strict=True):
        v = np.asarray(v, dtype=float)
        ok = np.isfinite(v)
        keep = spaced(int(ok.sum()), TRIAL_POINTS)
        rows += [
            (label, "trial", float(si), float(vi), NAN, NAN)
            for si, vi in zip(np.asarray(s)[ok][keep], v[ok][keep], strict=True)
        ]
        if keep.size < ok.sum():
            thinned.append(
                f"{label}: {keep.size:,} of {int(ok.sum()):,} trials drawn, evenly spaced"
            )
        rows += [
            (label, "KPI", float(k.series), k.kpi.value if k.kpi.enough else NAN, *_interval(k.kpi))
            for k in a.series
        ]
    short = [
        f"{label} series {k.series}: KPI needs {k.kpi.min_n} trials, {k.kpi.n} ran"
        for label, a in zip(labels, analyses, strict=True)
        for k in a.series
        if not k.kpi.enough
    ]
    marker = "large marker, bar: the interval" if _two_sided(analyses) else "large marker"
    caption = (
        f"{metric} of every trial (small points) in each series, and each series' KPI "
        f"({_kpi_words(analyses)}; {marker}), configurations side by side, series left "
        f"to right within each. After {PAPER} Fig. 3b."
    )
    return FigureData(
        "series-kpis",
        f"{PAPER} Fig. 3b",
        caption,
        COLUMNS,
        rows,
        tuple(thinned) + tuple(short) + _descriptive(labels, analyses),
        {"x_label": "configuration, series", "y_label": f"{metric} ({unit})"},
    )


def runtimes(
    convergence: FigureData,
    seconds: Mapping[str, float],
    lengths: Mapping[str, int],
    converged: Mapping[str, tuple[int, int]],
) -> FigureData:
    """Fig. 4: the same protocol run at several runtimes (``factor runtime``), side by side:
    for each configuration, one run's raw series, the metric over sliding windows, the
    Theil–Sen slope and the tolerance band (``figure_convergence.convergence``'s rows, §4.1),
    on a time axis (a sample's index scaled to the run's ``seconds`` over its ``lengths``
    samples), with how many of its trials converged (``converged``: (converged, trials)). A
    run too short for its metric to converge fails the test where a longer one passes, which
    is how the paper picks a runtime."""
    rows = []
    for label, part, x, *rest in convergence.rows:
        scale = seconds[label] / max(1, lengths[label])
        rows.append((label, part, float(x) * scale, *rest))
    verdicts = {
        label: f"{seconds[label]:g} s: {said}; {k} of {n} trials converged"
        for label, said in convergence.meta["verdicts"].items()
        for k, n in [converged.get(label, (0, 0))]
    }
    levels = sorted(set(seconds.values()))
    caption = (
        "One protocol at runtimes of "
        + ", ".join(f"{v:g} s" for v in levels)
        + " side by side: for each configuration one run's raw series against the time in the "
        "run, with the metric over sliding windows, the Theil–Sen slope and the tolerance "
        "band of the convergence test (§4.1), and how many of its trials converged; a "
        "runtime whose metric does not converge is too short. After "
        f"{PAPER} Fig. 4."
    )
    return FigureData(
        "runtimes",
        f"{PAPER} Fig. 4",
        caption,
        convergence.columns,
        rows,
        convergence.notes,
        {
            **convergence.meta,
            "x_label": "time in the run (s)",
            "y_label": str(convergence.meta["y_label"]).removesuffix(" ()"),
            "verdicts": verdicts,
            "runtimes": dict(seconds),
        },
    )


def variability(
    labels: Sequence[str], analyses: Sequence[MetricAnalysis], metric: str, unit: str
) -> FigureData:
    """Figs. 3c and 8: the series KPIs of each configuration side by side with the
    variability interval (the two percentile bounds of §4.3) around them."""
    rows: list[tuple[Any, ...]] = []
    left: list[str] = []
    words = "the variability interval"
    for label, a in zip(labels, analyses, strict=True):
        rows += [
            (
                label,
                "series KPI",
                float(k.series),
                k.kpi.value if k.kpi.enough else NAN,
                *_interval(k.kpi),
            )
            for k in a.series
        ]
        v = a.variability
        if v is not None and v.enough:
            rows.append((label, "variability", NAN, float(v.score), float(v.lower), float(v.upper)))
            words = (
                f"the variability interval: lower bound of the p{v.percentile_low:g}, upper "
                f"bound of the p{v.percentile_high:g} of the series KPIs, jointly at "
                f"{v.joint_confidence:.4g}%"
            )
        elif v is not None:
            left.append(f"{label}: variability needs {v.min_n} series, {v.n} ran")
    bars = "; thin bars: each series' interval" if _two_sided(analyses) else ""
    caption = (
        f"Series KPIs of {metric} ({_kpi_words(analyses)}{bars}) per configuration, with "
        f"{words} (§4.3). After {PAPER} Figs. 3c and 8."
    )
    return FigureData(
        "variability",
        f"{PAPER} Figs. 3c, 8",
        caption,
        COLUMNS,
        rows,
        tuple(left) + _descriptive(labels, analyses),
        {"x_label": "configuration", "y_label": f"{metric} KPI ({unit})"},
    )


def profile(name: str, result: Profile, lag_text: Sequence[str]) -> FigureData:
    """Fig. 5: the autocorrelation of the condition data by lag, the significance threshold,
    the peaks and the seasonal periods found (§4.6). ``lag_text`` names every lag as the
    ``profile`` command prints it (e.g. "1w")."""
    acf = np.asarray(result.acf, dtype=float)
    threshold = np.asarray(result.threshold, dtype=float)
    peaks, periods = set(result.peaks), set(result.periods)
    rows = [
        (
            int(lag),
            lag_text[lag],
            float(lag * result.period),
            acf[lag],
            threshold[lag],
            lag in peaks,
            lag in periods,
        )
        for lag in range(1, acf.size)
    ]
    found = ", ".join(lag_text[p] for p in result.periods) or "none"
    caption = (
        f"Autocorrelation of {name} ({result.n} samples every {lag_text[1]}) by lag, with the "
        f"band outside which it is significant; peaks marked, seasonal periods found: {found}. "
        f"After {PAPER} Fig. 5."
    )
    left = (f"{result.missing} missing samples",) if result.missing else ()
    return FigureData(
        "profile",
        f"{PAPER} Fig. 5",
        caption,
        ("lag", "lag_text", "lag_seconds", "acf", "threshold", "peak", "period"),
        rows,
        left,
        {"x_label": "lag", "y_label": "autocorrelation", "name": name},
    )
