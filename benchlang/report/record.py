"""The reproducibility record: TriScale's 12 parameters per metric (Jacob et al., JSys 1(1)
2021, §4.4) plus what pins the experiment down (spec and plan hashes, seed, version).

Pure formatting: JSON, Markdown and a LaTeX table that fits one paper column (parameters
as rows, metrics as columns).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

Value = str | float | int | None

PARAMETERS = (
    "Measure",
    "Convergence expected",
    "Convergence confidence",
    "Convergence tolerance",
    "KPI percentile",
    "KPI confidence",
    "Variability percentile",
    "Variability confidence",
    "Runs (per series)",
    "Series",
    "Runtime",
    "Span",
    "KPI",
    "Variability score",
)
"""The 12 parameters of §4.4 in the paper's order, then the two results."""

SUMMARY_ROWS = ("Mean [95% interval]", "SD", "IQR", "CV")
"""The optional rows after them: the per-configuration summaries (``stats.summaries``)."""

_UNITS = (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def format_duration(value: Value) -> str:
    """Seconds as the language writes durations (90 -> "90s", 7200 -> "2h"); text as is."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    v = float(value)
    if math.isnan(v):
        return "-"
    for suffix, size in _UNITS:
        if v >= size and v % size == 0:
            return f"{int(v // size)}{suffix}"
    return f"{v:g}s"


def _fmt(value: Value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.{digits}g}"
    return str(value)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:g}%"


@attrs.frozen
class MetricRecord:
    """The 12 parameters of one metric (§4.4) and its headline numbers.

    ``measure`` as written in the spec ("mean", "percentile 95", ...); percents in (0, 100);
    ``runtime`` and ``span`` in seconds or as spec text; ``configuration`` names the
    configuration the KPI and variability values belong to, when there are several.
    ``kpi_summary`` says how ``kpi_value`` summarises several series' KPIs ("median of 5
    series KPIs"); ``variability_lower``/``upper`` are the variability interval's ends.
    ``kpi_method`` names the KPI's statistics method with its settings (``thompson`` when
    None); a method other than Thompson's is named after the KPI confidence.
    """

    name: str
    measure: str
    convergence_expected: bool
    convergence_confidence: float | None
    convergence_tolerance: float | None
    kpi_percentile: float
    kpi_confidence: float
    variability_percentile: float | None
    variability_confidence: float | None
    runs: int
    series: int
    runtime: Value
    span: Value
    kpi_value: float | None = None
    variability_score: float | None = None
    unit: str | None = None
    configuration: str | None = None
    kpi_summary: str | None = None
    variability_lower: float | None = None
    variability_upper: float | None = None
    kpi_method: str | None = None
    kpi_bound: str | None = None
    """``both``: the KPI is the two-sided interval [``kpi_lower``, ``kpi_upper``] (one series;
    with several, ``kpi_value`` is the median of their sample percentiles)."""
    kpi_lower: float | None = None
    kpi_upper: float | None = None
    display_unit: str | None = None
    """The unit every view shows this metric in (``report.table.metric_scale``: one unit per metric in every view)."""
    summary: dict | None = None
    """The configuration's ``stats.summaries.Summary.to_dict()``: the optional rows."""

    def label(self) -> str:
        return self.name if self.configuration is None else f"{self.name} [{self.configuration}]"

    def rows(self) -> list[tuple[str, str]]:
        """(parameter, formatted value) in the order of ``PARAMETERS``."""
        conv = self.convergence_expected
        return [
            ("Measure", self.measure),
            ("Convergence expected", _fmt(conv)),
            ("Convergence confidence", _pct(self.convergence_confidence) if conv else "-"),
            ("Convergence tolerance", _pct(self.convergence_tolerance) if conv else "-"),
            ("KPI percentile", f"{self.kpi_percentile:g}"),
            (
                "KPI confidence",
                _pct(self.kpi_confidence)
                + (" two-sided" if self.kpi_bound == "both" else "")
                + self._kpi_method_text(),
            ),
            ("Variability percentile", _fmt(self.variability_percentile)),
            ("Variability confidence", _pct(self.variability_confidence)),
            ("Runs (per series)", str(self.runs)),
            ("Series", str(self.series)),
            ("Runtime", format_duration(self.runtime)),
            ("Span", format_duration(self.span)),
            ("KPI", self._kpi_text()),
            ("Variability score", self._variability_text()),
        ]

    def summary_rows(self) -> list[tuple[str, str]]:
        """The rows of ``SUMMARY_ROWS``: mean with its interval over cluster means (or
        "descriptive"), SD, IQR, CV; "-" without a summary."""
        s = self.summary
        if s is None:
            return [(name, "-") for name in SUMMARY_ROWS]
        interval = s["mean_interval"]
        if s["descriptive"]:
            mean = f"{self._quantity(s['mean'])} (descriptive)"
        else:
            lo, hi = self._quantity(interval["lower"]), self._quantity(interval["upper"])
            mean = f"{self._quantity(s['mean'])} [{lo}, {hi}] over {interval['clusters']} "
            mean += str(interval["level"])
        cv = "-" if s["cv"] is None else f"{100 * s['cv']:.1f}%"
        return list(
            zip(
                SUMMARY_ROWS,
                (mean, self._quantity(s["sd"]), self._quantity(s["iqr"]), cv),
                strict=True,
            )
        )

    def _quantity(self, value: float | None) -> str:
        from benchlang.report.table import format_quantity, scale_named

        if self.display_unit is not None:
            return format_quantity(value, None, scale=scale_named(self.display_unit, self.unit))
        if self.kpi_summary is None:
            unit = f" {self.unit}" if self.unit else ""
            return _fmt(value) + (unit if value is not None else "")
        return format_quantity(value, self.unit)

    def _kpi_method_text(self) -> str:
        method = (self.kpi_method or "thompson").split(" {")[0]
        return "" if method == "thompson" else f" ({method})"

    def _kpi_text(self) -> str:
        if self.kpi_lower is not None and self.kpi_upper is not None:
            return f"[{self._quantity(self.kpi_lower)}, {self._quantity(self.kpi_upper)}]"
        if self.kpi_bound == "both" and self.kpi_summary and self.kpi_value is not None:
            return f"{self._quantity(self.kpi_value)} (median of the series' sample percentiles)"
        return self._quantity(self.kpi_value)

    def _variability_text(self) -> str:
        text = self._quantity(self.variability_score)
        lo, hi = self.variability_lower, self.variability_upper
        if (
            self.kpi_summary
            and self.variability_score is not None
            and lo is not None
            and hi is not None
        ):
            from benchlang.report.table import format_quantity, scale_for, scale_named

            factor = scale_for(hi, self.unit)[1]
            if self.display_unit is not None:
                factor = scale_named(self.display_unit, self.unit)[1]
            lo_text = format_quantity(lo, None, scale=(None, factor))
            hi_text = format_quantity(hi, None, scale=(None, factor))
            text += f" [{lo_text}, {hi_text}]"
        return text

    def to_json(self) -> dict:
        return attrs.asdict(self)


def two_sided_record(series_kpis: list[Any]) -> dict[str, Any]:
    """A ``MetricRecord``'s interval of a ``bound both`` KPI: [lower, upper] with one series
    (with several, ``kpi_value`` stays the median of their sample percentiles)."""
    if not series_kpis or series_kpis[0].bound != "both":
        return {}
    one = series_kpis[0] if len(series_kpis) == 1 and series_kpis[0].enough else None
    return {
        "kpi_bound": "both",
        "kpi_lower": one.lower if one else None,
        "kpi_upper": one.upper if one else None,
    }


NO_SUCCESSFUL_TRIAL = (
    "no trial succeeded: nothing to record (the failed trials, with their reasons, are in the "
    "store: benchlang results STORE --format json)"
)


@attrs.frozen
class Record:
    """A whole experiment's record: identity plus one MetricRecord per metric."""

    experiment: str
    spec_hash: str
    plan_hash: str
    seed: int | None
    version: str
    metrics: tuple[MetricRecord, ...]
    hosts: tuple[str, ...] = ()
    """One line per host that ran trials (CPU, cores, governor, kernel), then any warning."""
    methods: tuple[str, ...] = ()
    """The statistics methods used, each as ``name (package version)``."""
    comparisons: tuple[str, ...] = ()
    """One line per bootstrap comparison: its interval's method, cluster scheme, why, and
    assumption (report.compare_text.record_lines)."""
    independence: tuple[str, ...] = ()
    """The run-level independence verdict, one line per metric (stats.run_independence)."""
    machine: tuple[str, ...] = ()
    """The machine block, each host's measured state and what was forced past
    (report.machine.record_lines); ``machine_json`` is the same as data."""
    machine_json: dict | None = None
    populations: tuple[str, ...] = ()
    """The population factor and the number of inputs sampled (report.population)."""

    def to_json(self) -> dict:
        return {
            **({"populations": list(self.populations)} if self.populations else {}),
            "hosts": list(self.hosts),
            "statistics_methods": list(self.methods),
            "comparisons": list(self.comparisons),
            "independence": list(self.independence),
            "machine": self.machine_json,
            "experiment": self.experiment,
            "spec_hash": self.spec_hash,
            "plan_hash": self.plan_hash,
            "seed": self.seed,
            "benchlang_version": self.version,
            "metrics": [m.to_json() for m in self.metrics],
        }

    def _grid(self) -> tuple[list[str], list[list[str]]]:
        one_metric = len({m.name for m in self.metrics}) == 1
        headers = ["Parameter"] + [
            m.configuration if one_metric and m.configuration else m.label() for m in self.metrics
        ]
        names: tuple[str, ...] = PARAMETERS
        columns = [m.rows() for m in self.metrics]
        if any(m.summary is not None for m in self.metrics):
            names += SUMMARY_ROWS
            columns = [col + m.summary_rows() for col, m in zip(columns, self.metrics, strict=True)]
        rows = [[name] + [col[i][1] for col in columns] for i, name in enumerate(names)]
        return headers, rows

    def header_lines(self, markdown: bool = True) -> list[str]:
        """The lines above the table: identity, hosts, methods in words, comparisons and
        the independence verdict (Markdown-escaped, or plain for a terminal)."""
        md = _md if markdown else str
        one_metric = len({m.name for m in self.metrics}) == 1 and self.metrics[0].configuration
        name = (
            f"**Reproducibility record: {self.experiment}**"
            if markdown
            else (f"Reproducibility record: {self.experiment}")
        )
        code = (lambda x: f"`{x}`") if markdown else str
        return [
            name
            + (f", metric {code(self.metrics[0].name)}" if one_metric else "")
            + f"\n(benchlang {self.version}, "
            f"spec {code(self.spec_hash[:12])}, plan {code(self.plan_hash[:12])}, "
            f"seed {_fmt(self.seed)})",
            *self._summary_note(),
            *(md(h) for h in self.hosts),
            *(md(m) for m in self.machine),
            *([f"methods: {md(methods_in_words(self.methods))}"] if self.methods else []),
            *(f"comparison: {md(c)}" for c in self.comparisons),
            *(md(line) for line in self.independence),
            *(md(line) for line in self.populations),
        ]

    def grid(self) -> tuple[list[str], list[list[str]]]:
        """The table: a header (Parameter, then one column per metric or configuration) and
        one row per parameter of ``PARAMETERS``."""
        return self._grid()

    def to_markdown(self) -> str:
        if not self.metrics:
            return f"**Reproducibility record: {self.experiment}**: {NO_SUCCESSFUL_TRIAL}\n"
        headers, rows = self._grid()
        lines = [
            *self.header_lines(),
            "",
            "| " + " | ".join(_md(h) for h in headers) + " |",
            "| --- |" + " ---: |" * (len(headers) - 1),
        ]
        lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
        return "\n".join(lines) + "\n"

    def _summary_note(self) -> list[str]:
        """How several series' KPIs are summarised, when they are."""
        summaries = {m.kpi_summary for m in self.metrics if m.kpi_summary}
        if not summaries:
            return []
        return [
            f"KPI: {' / '.join(sorted(summaries))} KPIs; variability score: upper - lower bound, "
            "then [lower, upper].",
        ]

    def to_latex(self) -> str:
        if not self.metrics:
            return f"% {self.experiment}: {NO_SUCCESSFUL_TRIAL}\n"
        headers, rows = self._grid()
        body = [" & ".join(_tex(c) for c in row) + r" \\" for row in rows]
        results = len(PARAMETERS) - 2
        caption = (
            f"Reproducibility record of \\texttt{{{_tex(self.experiment)}}} "
            f"(benchlang {_tex(self.version)}, spec \\texttt{{{_tex(self.spec_hash[:12])}}}, "
            f"plan \\texttt{{{_tex(self.plan_hash[:12])}}}, seed {_tex(_fmt(self.seed))})."
        )
        note = " ".join(self._summary_note())
        if self.methods:
            note = (note + " " if note else "") + f"Statistics: {', '.join(self.methods)}."
        if self.comparisons:
            note = (note + " " if note else "") + " ".join(f"{c}." for c in self.comparisons)
        if self.machine:
            note = (note + " " if note else "") + " ".join(f"{m}." for m in self.machine)
        if self.populations:
            note = (note + " " if note else "") + " ".join(f"{m}." for m in self.populations)
        if note:
            caption += " " + _tex(note)
        return "\n".join(
            [
                r"\begin{table}[t]",
                r"\centering\small",
                r"\setlength{\tabcolsep}{4pt}",
                r"\begin{tabular}{@{}l" + "r" * (len(headers) - 1) + "@{}}",
                r"\toprule",
                " & ".join(_tex(h) for h in headers) + r" \\",
                r"\midrule",
                *body[:results],
                r"\midrule",
                *body[results:],
                r"\bottomrule",
                r"\end{tabular}",
                rf"\caption{{{caption}}}",
                r"\end{table}",
                "",
            ]
        )


_METHOD_WORDS = {
    "thompson": "the KPI is an order statistic bounding the percentile (Thompson 1936)",
    "variability": "the variability score is a percentile range of the series' KPIs "
    "(TriScale, Jacob et al. 2021, §4.3)",
    "order_dependence": "order dependence by Kruskal-Wallis, fixed vs random order "
    "(OrderSage, Duplyakin et al. 2023)",
    "adaptive": "adaptive stopping (Mittal et al. 2023)",
}


def methods_in_words(methods: tuple[str, ...]) -> str:
    """The statistics methods of a record (``name (package version)``) as a reader says them:
    benchlang's own in words, others by name and version; docs/statistics.md has each."""
    words = []
    for entry in methods:
        name, _, package = entry.partition(" (")
        if package.startswith("benchlang ") and name in _METHOD_WORDS:
            words.append(_METHOD_WORDS[name])
        else:
            words.append(entry)
    return "; ".join(words) + " (docs/statistics.md)"


_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in str(text))


def _md(text: str) -> str:
    return str(text).replace("|", r"\|")
