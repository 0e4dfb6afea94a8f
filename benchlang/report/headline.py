"""The headline block that ends ``run`` and ``analyze``: per configuration the KPI across
series (TriScale's view: the series' KPIs and the variability score), then a ranking with
ratios and intervals that hold jointly over the ranking (``stats.headline``,
``stats.simultaneous``), then what the confidences mean.

Short enough to paste into a paper; plain text, so nothing in a label is read as markup.
"""

from __future__ import annotations

import math
import sys
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.report.data import ExperimentData
from benchlang.report.headline_confidence import confidence_lines
from benchlang.report.ranking_basis import (
    SlowStartNote,
    assumption,
    checked,
    ran_in_blocks,
    slow_starts,
    trial_host_codes,
)
from benchlang.report.table import format_quantity, metric_scale, scale_for
from benchlang.report.wording import nested_counts, plural
from benchlang.stats._orderstat import lower_rank, upper_rank
from benchlang.stats.block_ranking import rank_blocks
from benchlang.stats.headline import Ranking, rank

TIME_UNITS = {"ns", "us", "µs", "ms", "s", "min", "h"}
WIDTH = 100


@attrs.frozen
class ConfigurationKPI:
    """One configuration's KPI across series: the series' KPIs, their median (the summary the
    record shows), and the variability interval across series."""

    label: str
    trials: int
    series_kpis: tuple[float, ...]
    kpi: float
    lower: float | None
    upper: float | None
    relative: float | None
    reasons: tuple[str, ...] = ()
    """Why this configuration's KPIs are descriptive only (empty: they are not)."""
    series_intervals: tuple[tuple[float, float], ...] = ()
    """With ``bound both``: each series' [lower, upper] (the equal-tailed interval)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; a series without a KPI, or no KPI at all, is null with the reasons."""
        why = "no KPI: too few converged trials" + (" (see reasons)" if self.reasons else "")
        fields = attrs.asdict(self)
        fields["series_intervals"] = [
            [None if not math.isfinite(x) else x for x in pair] for pair in self.series_intervals
        ]
        return undefined(fields, {"*": why})


@attrs.frozen
class RankingGroup:
    """The configurations compared against each other: all of them, or, with several factors,
    the levels of one factor with every other factor (and the benchmark) held."""

    factor: str | None
    held: tuple[tuple[str, Any], ...]
    labels: tuple[str, ...]
    names: tuple[str, ...]
    ranking: Ranking
    assumption: str = ""
    """What the interval assumes, in words (``report.ranking_basis``)."""
    check: str = ""
    """The independence check it rests on and its outcome, in words."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "factor": self.factor,
            "held": dict(self.held),
            "labels": list(self.labels),
            **self.ranking.to_dict(),
            "assumption": self.assumption,
            "check": self.check,
        }


@attrs.frozen
class MetricHeadline:
    metric: str
    unit: str | None
    better: str
    kpi_percentile: float
    kpi_confidence: float
    bound: str
    configurations: tuple[ConfigurationKPI, ...]
    groups: tuple[RankingGroup, ...]
    runs: tuple[int, ...]
    ranks: tuple[int, ...]
    achieved: tuple[float, ...]
    series: int
    variability_percentile: float | None
    variability_confidence: float | None
    variability_bounds: tuple[int, int, float, float] | None
    slow_starts: tuple[SlowStartNote, ...] = ()
    """Configurations whose first trials ran far slower than the rest."""
    independence: Any = None
    """The run-level independence verdict of the metric (``stats.run_independence``)."""
    display: tuple[str | None, float] | None = None
    """The metric's one display unit and factor (``report.table.metric_scale``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "kpi": {
                "percentile": self.kpi_percentile,
                "confidence": self.kpi_confidence,
                "bound": self.bound,
                "summary": "median of the series KPIs",
            },
            "configurations": [c.to_dict() for c in self.configurations],
            "rankings": [g.to_dict() for g in self.groups],
            "slow_starts": [n.to_dict() for n in self.slow_starts],
            "independence": None if self.independence is None else self.independence.to_dict(),
        }


def _median(values: list[float]) -> float:
    v = [x for x in values if x is not None and math.isfinite(x)]
    return float(np.median(v)) if v else math.nan


def _groups(configs: list[tuple[int, str, str, dict]]) -> list[tuple[str | None, tuple, list]]:
    """(factor, held levels, configuration indices) of each ranking: one factor's levels with
    the benchmark and every other factor held; all configurations when no factor varies."""
    names = sorted({k for _, _, _, levels in configs for k in levels})
    varying = [n for n in names if len({repr(lv.get(n)) for _, _, _, lv in configs}) > 1]
    if not varying:
        return [(None, (), [c[0] for c in configs])]
    out = []
    for factor in varying:
        buckets: dict[str, tuple[tuple, list[int]]] = {}
        for index, _label, bench, levels in configs:
            others = tuple((n, levels.get(n)) for n in varying if n != factor)
            held = (("benchmark", bench), *others)
            buckets.setdefault(repr(held), (held, []))[1].append(index)
        out += [(factor, held, members) for held, members in buckets.values()]
    return out


def _short(levels: dict, factor: str | None, label: str) -> str:
    """What a ratio sentence calls a configuration: a text level as is (md5sum), a number
    with its factor (size=2), the whole label when every configuration is ranked."""
    if factor is None:
        return label
    level = levels.get(factor)
    return level if isinstance(level, str) else f"{factor}={level}"


def rankings(data: ExperimentData) -> dict[int, tuple[RankingGroup, ...]]:
    """Each KPI's rankings, by its index in the spec (the cluster bootstrap): they need only
    the trials, not TriScale's results."""
    exp = data.experiment
    if exp.design.layout is not None or not exp.kpis:
        return {}
    table = data.table
    host = trial_host_codes(table.host)[1]
    clusters = np.stack([table.sessions, host, table.series, table.round], axis=1)
    return {i: _metric_rankings(data, k, clusters) for i, k in enumerate(exp.kpis)}


def _metric_rankings(data: ExperimentData, k, clusters: np.ndarray) -> tuple[RankingGroup, ...]:
    table, mv = data.table, data.metrics[k.metric]
    configs = data.configurations()
    by_label = {label: (i, b, lv) for i, label, b, lv in configs}
    groups = []
    ok = table.ok & np.isfinite(mv.values)
    if not ok.any():
        return ()
    for factor, held, members in _groups(configs):
        if len(members) < 2:
            continue
        mask = ok & np.isin(table.configuration, members)
        index = np.zeros(int(max(members)) + 1, dtype=np.int64)
        index[list(members)] = np.arange(len(members))
        picked = slice(None) if mask.all() else mask
        blocks = ran_in_blocks(table, mask)
        labels = [next(lb for i, lb, _, _ in configs if i == c) for c in members]
        names = tuple(_short(by_label[lb][2], factor, lb) for lb in labels)
        ranking = (rank_blocks if blocks else rank)(
            mv.values[picked],
            index[table.configuration[picked]],
            clusters[picked],
            percentile=k.percentile,
            confidence=k.confidence,
            better=mv.metric.better,
            level_names=("session", "host", "series", "round"),
            seed=data.plan.seed or 0,
            config_names=names,
        )
        basis = assumption(table, mask, blocks)
        groups.append(RankingGroup(factor, held, tuple(labels), names, ranking, basis))
    return tuple(groups)


def headline(data: ExperimentData, results: list) -> list[MetricHeadline]:
    """The headline of every KPI metric, from ``report.analysis.analyze``'s results and the
    ``rankings``."""
    exp = data.experiment
    if exp.design.layout is not None:
        return []
    ranked = rankings(data)
    out = []
    for i, k in enumerate(exp.kpis):
        mv = data.metrics[k.metric]
        mine = [r for r in results if r.metric == k.metric]
        if not mine:
            continue
        rows = []
        runs, ranks, achieved = [], [], []
        var_bounds = None
        n_series = 0
        for r in mine:
            series = [s.kpi.value for s in r.analysis.series]
            for s in r.analysis.series:
                if s.kpi.enough and s.kpi.rank is not None:  # an order statistic (thompson)
                    runs.append(s.kpi.n)
                    ranks.append(s.kpi.rank)
                    achieved.append(s.kpi.achieved_confidence)
            v = r.analysis.variability
            n_series = max(n_series, len(series))
            enough = v is not None and v.enough
            if enough and var_bounds is None:
                c = v.confidence / 100.0
                rl, cl = lower_rank(v.n, v.percentile_low / 100.0, c)
                ru, cu = upper_rank(v.n, v.percentile_high / 100.0, c)
                if rl is not None and ru is not None:
                    var_bounds = (rl, ru, 100 * cl, 100 * cu)
            rows.append(
                ConfigurationKPI(
                    r.configuration,
                    r.trials,
                    tuple(float(x) for x in series),
                    _median(series),
                    v.lower if enough else None,
                    v.upper if enough else None,
                    v.relative if enough and math.isfinite(v.relative) else None,
                    tuple(r.analysis.configuration_reasons),
                    tuple(
                        (s.kpi.lower, s.kpi.upper) for s in r.analysis.series if k.bound == "both"
                    ),
                )
            )
        var = exp.variability(k.metric)
        groups = tuple(checked(g, mine) for g in ranked.get(i, ()))
        out.append(
            MetricHeadline(
                metric=k.metric,
                unit=mv.metric.unit,
                better=mv.metric.better,
                kpi_percentile=k.percentile,
                kpi_confidence=k.confidence,
                bound=k.bound,
                configurations=tuple(rows),
                groups=groups,
                runs=tuple(runs),
                ranks=tuple(ranks),
                achieved=tuple(achieved),
                series=n_series,
                variability_percentile=var.percentile if var else None,
                variability_confidence=var.confidence if var else None,
                variability_bounds=var_bounds,
                slow_starts=slow_starts(data.table, mv.values, mv.metric.better),
                independence=mine[0].analysis.independence,
                display=metric_scale(mv.values[data.table.ok], mv.metric.unit),
            )
        )
    return out


def _statistic_name(p: float) -> str:
    return "median" if p == 50 else f"p{p:g}"


def ratio_parts(h: MetricHeadline, c) -> tuple[str, str, bool, tuple[str, str]]:
    """What a comparison's sentence is made of: the ratio ("1.82×"), its interval ("
    [1.74, 1.91]", or "" without one), whether the interval holds 1 (no clear order), and the
    words for the better and the worse side ("faster than", "slower than"; for another metric
    "lower time than" and "higher time than", turned round when higher is better). A ratio
    that every round repeats exactly (instruction counts: ``sim_instructions``) has no spread to
    bound, and a zero-width interval is not shown as if it were confidence."""
    finite = math.isfinite(c.lower) and math.isfinite(c.upper)
    interval = f" [{c.lower:.2f}, {c.upper:.2f}]" if finite else ""
    if finite and c.upper - c.lower <= 1e-9 * c.upper:  # counts that repeat exactly
        interval = ", the same in every round (no spread, so no interval: a margin decides)"
    if h.better == "lower" and (h.unit in TIME_UNITS or h.metric in ("time", "wall_time")):
        words = ("faster than", "slower than")
    elif h.better == "lower":
        words = (f"lower {h.metric} than", f"higher {h.metric} than")
    else:
        words = (f"higher {h.metric} than", f"lower {h.metric} than")
    return f"{c.ratio:.2f}×", interval, finite and not c.clear, words


def _ratio_sentence(h: MetricHeadline, g: RankingGroup, c) -> str:
    """ "md5sum is 1.82× faster than sha256sum [1.74, 1.91]", or no clear order."""
    r, interval, unclear, (word, _) = ratio_parts(h, c)
    if unclear:
        return f"no clear order: {r}{interval} holds 1"
    return f"{g.names[c.better]} is {r} {word} {g.names[c.worse]}{interval}"


NO_BREAK = "\u00a0"


def _wrap(text: str) -> list[str]:
    """``text`` in lines of at most ``WIDTH``, continuation lines indented by four; a
    no-break space keeps its two words on one line (``(df 4)``) and prints as a space."""
    import textwrap

    lines = textwrap.wrap(text, WIDTH, subsequent_indent="    ", break_on_hyphens=False)
    return [line.replace(NO_BREAK, " ") for line in lines]


def _interval(c: ConfigurationKPI, num: Any) -> str:
    """A one-series two-sided KPI as [lower, upper]."""
    if len(c.series_intervals) != 1:
        return num(c.kpi)
    lo, hi = c.series_intervals[0]
    return f"[{num(lo)}, {num(hi)}]"


def _metric_lines(h: MetricHeadline) -> list[str]:
    stat = _statistic_name(h.kpi_percentile)
    kpis = [x for c in h.configurations for x in c.series_kpis if math.isfinite(x)]
    unit_name, factor = scale_for(float(np.median(kpis)) if kpis else None, h.unit)
    if h.display is not None:
        unit_name, factor = h.display
    unit = f" ({unit_name})" if unit_name else ""

    def num(x: float | None) -> str:
        return format_quantity(x, None, scale=(None, factor))

    what = f"{h.kpi_confidence:g}% {h.bound} bound on the {stat}"
    if h.bound == "both":
        what = (
            f"{h.kpi_confidence:g}% two-sided interval [lower, upper] of the {stat} "
            "(equal-tailed order statistics, Thompson 1936)"
        )
    lines = _wrap(
        f"Headline: {h.metric}{unit}, {h.better} is better; KPI: "
        + (what if h.series == 1 and h.bound == "both" else f"median over series of the {what}")
    )
    width = 3 + max([len("configuration")] + [len(c.label) for c in h.configurations])
    vp = h.variability_percentile
    var_head = ""
    if vp is not None:
        var_head = f"variability p{min(vp, 100 - vp):g}–p{max(vp, 100 - vp):g}"
    one = h.series == 1 and h.bound == "both"
    kpi_head = {"upper": "bound ≤", "lower": "bound ≥"}.get(h.bound, "KPI")
    cell = max(7, len(kpi_head))
    if one:
        cell = max([cell] + [len(_interval(c, num)) for c in h.configurations])
    lines.append(
        f"  {'configuration':<{width}}  {'n':>3}  {kpi_head:>{cell}}  {'series KPIs':<30}  "
        f"{var_head}".rstrip()
    )
    for c in h.configurations:
        values = [num(x) for x in c.series_kpis]
        kpi_cell = num(c.kpi)
        if c.series_intervals:
            values = [f"[{num(lo)}, {num(hi)}]" for lo, hi in c.series_intervals]
            if len(values) == 1:
                kpi_cell, values = _interval(c, num), [f"sample {stat} {num(c.kpi)}"]
        text = (
            " ".join(values)
            if len(values) <= 5
            else f"{len(values)}: {num(min(c.series_kpis))} to {num(max(c.series_kpis))}"
        )
        var = ""
        if c.lower is not None and c.upper is not None:
            rel = f" {100 * c.relative:.2g}%" if c.relative is not None else ""
            var = f"[{num(c.lower)}, {num(c.upper)}]{rel}"
        elif vp is not None:
            var = f"more series needed than {len(c.series_kpis)}"
        lines.append(
            f"  {c.label:<{width}}  {c.trials:>3}  {kpi_cell:>{cell}}  {text:<30}  {var}".rstrip()
        )
    lines += _bounds_note(h)
    for c in h.configurations:
        if c.reasons:
            lines += _wrap(f"  DESCRIPTIVE ONLY {c.label}: " + "; ".join(c.reasons))
    if h.independence is not None:
        verdict = h.independence
        lines += _wrap(("  " if verdict.passed else "  DESCRIPTIVE ONLY: ") + verdict.summary())
    benchmarks = {lb.split("[", 1)[0] for c in h.configurations for lb in [c.label]}
    for g in h.groups:
        rk = g.ranking
        held = ", ".join(f"{k}={v}" for k, v in g.held if k != "benchmark" or len(benchmarks) > 1)
        scope = f" of {g.factor}" if g.factor is not None else ""
        scope += f" ({held})" if held else ""
        design = nested_counts(rk.units, rk.levels)
        if rk.scheme == "blocks":
            design = f"each configuration's block on its own ({design} or more each)"
        what = f"ratios only, {design}"
        if not rk.descriptive_only:
            n = rk.family.comparisons or len(rk.comparisons)
            how = f"bootstrap of {design}"
            if rk.family.df is not None:
                top = plural(rk.units[0], rk.levels[0])
                value = (
                    f"its level fitted over the {rk.levels[0]} units (configuration + unit, "
                    "least squares: some configurations miss units)"
                    if "levels fitted" in rk.family.method
                    else f"the geometric mean of its {rk.levels[0]} {stat}s"
                )
                how = f"cluster-level t on {top} (df{NO_BREAK}{rk.family.df:g}); each value {value}"
            what = f"jointly at {rk.confidence:g}% over {plural(n, 'comparison')}, {how}"
        lines += _wrap(f"Ranking{scope} by {stat} {h.metric}; {what}")
        for place, j in enumerate(rk.order, start=1):
            comparison = next((c for c in rk.comparisons if c.worse == j), None)
            sentence = _ratio_sentence(h, g, comparison) if comparison else ""
            label = f"{place}. {g.labels[j]}"
            lines.append(
                f"  {label:<{width}}  {'':>3}  {num(rk.statistics[j]):>7}  {sentence}".rstrip()
            )
        if rk.descriptive_only:
            lines += _wrap("  DESCRIPTIVE ONLY: " + "; ".join(rk.reasons))
        if g.assumption:
            lines += _wrap(f"  {g.assumption[0].upper()}{g.assumption[1:]}.")
        if g.check and g.check not in rk.reasons:
            lines += _wrap(f"  Check: {g.check}.")
    for note in h.slow_starts:
        lines += _wrap("  " + note.sentence(lambda x: f"{num(x)} {unit_name or ''}".rstrip()))
    return lines + confidence_lines(h)


def _bounds_note(h: MetricHeadline) -> list[str]:
    """A sentence when the KPIs (bounds) order the configurations otherwise than a ranking
    does, so the two columns are never read as contradicting each other."""
    kpi = {c.label: c.kpi for c in h.configurations if c.kpi is not None and math.isfinite(c.kpi)}
    for g in h.groups:
        ranked = [g.labels[j] for j in g.ranking.order if g.labels[j] in kpi]
        by_bound = sorted(ranked, key=lambda c: kpi[c], reverse=h.better != "lower")
        if h.bound != "both" and ranked != by_bound:
            return _wrap(
                f"  The {h.bound} bounds above order the configurations unlike the ranking "
                "below: a bound is not an estimate; the ranking compares the "
                f"{_statistic_name(h.kpi_percentile)}s, with intervals."
            )
    return []


def headline_lines(headlines: list[MetricHeadline]) -> list[str]:
    """The block as lines, at most ``WIDTH`` characters wide when the labels are short."""
    lines: list[str] = []
    for h in headlines:
        lines += _metric_lines(h)
    return lines


def render_headline(headlines: list[MetricHeadline], stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    for line in headline_lines(headlines):
        out.write(line + "\n")
