"""What each keyword and setting of the language means, as data: the language server's hover
and completion read this one table (docs/language.md is the long form).

Settings of a statistics method (``kpi``, ``variability``, ``stop``, ``compare ... with``,
analysis methods) are not repeated here: they are declared with their docs and defaults by the
method itself (``benchlang.stats.contract.Parameter``), and :func:`method_parameter` reads them.
"""

from __future__ import annotations

from typing import Any

import attrs

TRISCALE = "TriScale (Jacob et al., JSys 2021)"
ORDERSAGE = "OrderSage (Duplyakin et al., ATC 2023)"
PERFLAB = "Perflab (Bakshy & Frachtenberg, WWW 2015)"
DATAMILL = "DataMill (de Oliveira et al., ICPE 2013)"
MITTAL = "adaptive stopping (Mittal et al., PMBS 2023)"


@attrs.frozen
class KeywordDoc:
    """A keyword's meaning, its unit (None: none), its default (None: required or none) and
    the paper it comes from (None: benchlang's own)."""

    meaning: str
    unit: str | None = None
    default: str | None = None
    source: str | None = None
    where: tuple[str, ...] = ()
    """The blocks it is written in ("" is the experiment's body); empty: anywhere."""


TOP = ("",)
K = KeywordDoc
KEYWORDS: dict[str, KeywordDoc] = {
    "benchlang": K("the language version the spec is written in", default="1"),
    "experiment": K(
        "one whole performance experiment: what to run, where, how often, how to judge it"
    ),
    "title": K("a one-line title, printed in the record", where=TOP),
    "seed": K(
        "the seed of every random choice of the plan (orders, spans, hidden factors): the same seed gives the same plan",
        default="0",
        where=TOP,
    ),
    "hosts": K(
        "where trials run: a backend (local, ssh, plugins) and its settings, or 'hosts where' constraints on the inventory",
        default="local",
        source=DATAMILL,
        where=TOP,
    ),
    "where": K(
        "constraints on host facts; hosts that pass all of them are chosen, by a minimum set cover for hardware factors",
        source=DATAMILL,
    ),
    "setup": K(
        "a command run once per host before its first round (per benchmark when inside one)",
        where=(*TOP, "benchmark"),
    ),
    "teardown": K("a command run once per host after its last round", where=TOP),
    "reset": K(
        "a command (or reboot, power_cycle, reimage) before every round, so each round starts from a clean state",
        source=ORDERSAGE,
        where=TOP,
    ),
    "reconnect": K("after the reset command, reconnect to the host (the reset restarts services)"),
    "reboot": K(
        "reboot the host before every round (a reset), or reboot as a hidden factor",
        source=DATAMILL,
    ),
    "power_cycle": K(
        "power-cycle the host before every round (an allocating backend)", source=ORDERSAGE
    ),
    "reimage": K(
        "reinstall the host's image before every round (an allocating backend)", source=ORDERSAGE
    ),
    "before": K("a command run before every trial (a hook)", where=(*TOP, "benchmark")),
    "after": K(
        "a command run after every trial (a hook); in 'stop after N', a fixed number of trials"
    ),
    "timeout": K(
        "the longest a trial may run; a trial past it fails alone",
        unit="duration",
        default="none",
        where=(*TOP, "benchmark"),
    ),
    "workdir": K(
        "the directory commands run in, relative to the spec",
        default="a fresh temporary directory",
        where=(*TOP, "benchmark"),
    ),
    "env": K("environment variables of every trial (NAME = value)", where=(*TOP, "benchmark")),
    "factor": K(
        "a factor and its levels; configurations are the full factorial of the software factors",
        source=DATAMILL,
        where=TOP,
    ),
    "in": K("the levels of a factor: a list or a range"),
    "hidden": K(
        "a hidden factor varied on purpose (env padding, ASLR, link order, cache dropping, reboot) so that its effect is randomised, not confounded",
        source=DATAMILL,
    ),
    "population": K(
        "the factor's levels are a sample of a population of inputs (traces, datasets): each "
        "input's KPI, then a KPI over the inputs' KPIs { percentile P confidence C }",
        default="each metric's kpi settings",
        source=TRISCALE + " §5.3",
    ),
    "coverage": K(
        "the share of a factor's levels to run, chosen by the seed",
        unit="%",
        default="100%",
        source=DATAMILL,
    ),
    "from": K(
        "where a value comes from: a measure from stdout/stderr/a file, a factor from the host inventory, a setting from a file or the environment"
    ),
    "benchmark": K("a command to measure and its measures", where=TOP),
    "run": K(
        "the command of a benchmark; {factor} placeholders take the configuration's levels",
        where=("benchmark",),
    ),
    "warmup": K(
        "untimed trials of each configuration before its measured ones",
        unit="trials",
        default="0",
        source=TRISCALE,
        where=("benchmark", "design"),
    ),
    "measure": K(
        "in a benchmark: a number (or series) read from each trial; in a metric: how a trial's series becomes one number",
        where=("benchmark", "metric"),
    ),
    "series": K(
        "a measure that is a raw series per trial; in design: how many series (time spans) the experiment spreads over",
        source=TRISCALE,
    ),
    "stdout": K("read the measure from the command's standard output"),
    "stderr": K("read the measure from the command's standard error"),
    "file": K("read from a file (relative to the trial's directory)"),
    "regex": K("the measure is the first group of a regular expression's match"),
    "json": K("the measure is the value at a JSON path"),
    "column": K("the measure is a CSV column (number or header)"),
    "lines": K("every line is one number (a series)"),
    "metric": K(
        "one number per trial: a measure summarised (mean, median, min, max, percentile) or arithmetic of measures",
        source=TRISCALE,
        where=TOP,
    ),
    "of": K(
        "the measure a metric summarises", default="the measure of the same name", where=("metric",)
    ),
    "unit": K("the unit printed with the metric's values", where=("metric",)),
    "better": K(
        "which direction is better (higher or lower), for rankings and comparisons",
        where=("metric",),
    ),
    "higher": K("higher values are better"),
    "lower": K("lower values are better"),
    "convergence": K(
        "Theil–Sen test that a series' metric converged: the slope's CI within the tolerance",
        source=TRISCALE + " §4.1",
        where=("metric",),
    ),
    "trim": K(
        "leading part of each series left out of the metric (warm-up inside a trial)",
        unit="duration, % or samples",
        default="0",
        source=TRISCALE,
        where=("metric",),
    ),
    "mean": K("arithmetic mean"),
    "median": K("the 50th percentile"),
    "min": K("the smallest value"),
    "max": K("the largest value"),
    "percentile": K("which percentile, in (0, 100)", source=TRISCALE + " §4.2"),
    "kpi": K(
        "the headline number of a metric: a one-sided non-parametric CI of a percentile over the trials of a series (Thompson's order statistics)",
        source=TRISCALE + " §4.2",
        where=TOP,
    ),
    "with": K("the statistics method used (see 'benchlang plugins')"),
    "variability": K(
        "how much the KPI moves across series: a percentile CI over the series' KPIs",
        source=TRISCALE + " §4.3",
        where=TOP,
    ),
    "design": K("how many trials, in which order, over which span", where=TOP),
    "machine": K(
        "the machine trials run on: CPU pinning, memory and CPU-time limits, and the host state the run requires (governor, turbo, smt, aslr), checked before the first trial (docs/machine.md)",
        where=(*TOP, "hosts"),
    ),
    "stop": K(
        "when a configuration has enough trials: after N, adaptive, or when the KPI is narrow enough",
        where=TOP,
    ),
    "adaptive": K(
        "the sequential meta-rule: classify the distribution seen so far, apply a rule fit for it, with a cap",
        source=MITTAL,
    ),
    "when": K("stop when the KPI's interval is narrower than a width", source=TRISCALE + " §7"),
    "width": K(
        "the KPI interval width at which trials stop", unit="% of the KPI or the metric's unit"
    ),
    "analysis": K(
        "the analyses of a run: comparisons, order dependence, ANOVA, profiles", where=TOP
    ),
    "compare": K(
        "compare a metric across the levels of a factor with a method (bootstrap by default for layouts)",
        source=PERFLAB,
        where=("analysis",),
    ),
    "by": K("the factor whose levels are compared"),
    "order_dependence": K(
        "Kruskal–Wallis of fixed vs random order per configuration, with Bonferroni; eta-squared; CI overlap",
        source=ORDERSAGE,
        where=("analysis",),
    ),
    "anova": K(
        "ANOVA of a metric with the factors' interactions", source=DATAMILL, where=("analysis",)
    ),
    "profile": K(
        "autocorrelation of condition data to find seasonal periods (the span of the series)",
        source=TRISCALE + " §4.6",
        where=("analysis",),
    ),
    "step": K("the step of a range of levels", default="1"),
    "true": K("yes"),
    "false": K("no"),
    "and": K("joins host constraints"),
}

DESIGN: dict[str, KeywordDoc] = {
    "runs": K(
        "trials per configuration and series; auto: the fewest that bound every KPI",
        unit="trials",
        default="auto with a kpi, else 1",
        source=TRISCALE + " Eq. 4",
    ),
    "series": K(
        "series (time spans) of the experiment; auto: the fewest for the variability score",
        unit="series",
        default="auto with a variability, else 1",
        source=TRISCALE + " §4.3",
    ),
    "runtime": K("how long each trial runs, passed to commands as {runtime}", unit="duration"),
    "span": K(
        "the time span series are spread over at random; auto: from the profile's periods",
        unit="duration",
        default="none",
        source=TRISCALE + " §4.6",
    ),
    "order": K(
        "order of configurations in a round: fixed, random (a fresh permutation per round) or fixed_vs_random",
        default="random",
        source=ORDERSAGE,
    ),
    "layout": K(
        "an A/B design: unbalanced, request_balanced, host_balanced or fully_balanced, with hosts, requests and repetitions",
        source=PERFLAB + " §3",
    ),
    "versions": K("the two versions of an A/B design"),
    "requests": K("the request pool of an A/B design, or its size in a layout", source=PERFLAB),
    "replicate": K(
        "repeat the runs in blocks (replications)",
        unit="blocks",
        default="1",
        source=DATAMILL + " §4",
    ),
    "redundancy": K(
        "run every trial on this many hosts, to detect failures",
        unit="hosts",
        default="1",
        source=DATAMILL,
    ),
    "warmup": KEYWORDS["warmup"],
    "cooldown": K("untimed pause trials after each configuration", unit="trials", default="0"),
    "hosts": K("hosts in the layout", unit="hosts", source=PERFLAB),
    "repetitions": K("repetitions of each request in a host batch", unit="trials", source=PERFLAB),
}
CONVERGENCE: dict[str, KeywordDoc] = {
    "confidence": K(
        "confidence of the Theil–Sen slope CI", unit="%", default="95%", source=TRISCALE + " §4.1"
    ),
    "tolerance": K(
        "largest slope, relative to the metric, the CI may reach",
        unit="%",
        default="5%",
        source=TRISCALE + " §4.1",
    ),
}
SETTINGS: dict[str, dict[str, KeywordDoc]] = {
    "design": DESIGN,
    "layout": DESIGN,
    "convergence": CONVERGENCE,
}
"""Setting docs by the block they are written in; method blocks read method parameters."""


def method_parameter(method: str, name: str) -> Any:
    """The declared parameter ``name`` of statistics method ``method`` (None when unknown)."""
    from benchlang.stats.registry import statistics_methods

    found = statistics_methods().get(method)
    return None if found is None else found.parameter(name)


def render(name: str, doc: KeywordDoc) -> str:
    """Markdown hover text of a keyword or setting."""
    lines = [f"**{name}**: {doc.meaning}"]
    if doc.unit:
        lines.append(f"- unit: {doc.unit}")
    if doc.default:
        lines.append(f"- default: {doc.default}")
    if doc.source:
        lines.append(f"- source: {doc.source}")
    return "\n".join(lines)


def render_parameter(method: Any, parameter: Any) -> str:
    """Markdown hover text of a statistics method's parameter, from its declaration."""
    lines = [f"**{parameter.name}** ({method.name}): {parameter.doc}"]
    shown = parameter.describe_range()
    lines.append(f"- type: {parameter.type}" + (f" in {shown}" if shown else ""))
    default = "required" if parameter.required else parameter.default
    lines.append(f"- default: {'computed' if default is None else default}")
    lines.append(f"- source: {method.source}")
    return "\n".join(lines)
