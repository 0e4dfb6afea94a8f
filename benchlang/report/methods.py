"""``benchlang record --format methods``: the methods paragraph of a paper, written from the
spec, the plan's own reasons for its sizes and the stored results (design, sizing rule and why,
order and reset, stopping rule, statistics with their confidence, what failed), with the BibTeX
entries of the methods it names. Pure text from results the analyses already computed."""

from __future__ import annotations

import json

from benchlang import __version__
from benchlang.report.html.inputs import ReportInputs
from benchlang.report.record import format_duration
from benchlang.report.wording import plural

BIBTEX = {
    "jacob2021triscale": """@article{jacob2021triscale,
  author  = {Romain Jacob and Marco Zimmerling and Carlo Alberto Boano and Laurent Vanbever and Lothar Thiele},
  title   = {Designing Replicable Networking Experiments With {TriScale}},
  journal = {Journal of Systems Research},
  volume  = {1},
  number  = {1},
  year    = {2021}
}""",
    "thompson1936": """@article{thompson1936,
  author  = {William R. Thompson},
  title   = {On Confidence Ranges for the Median and Other Expectation Distributions for Populations of Unknown Distribution Form},
  journal = {The Annals of Mathematical Statistics},
  volume  = {7},
  number  = {3},
  pages   = {122--128},
  year    = {1936}
}""",
    "duplyakin2023ordering": """@inproceedings{duplyakin2023ordering,
  author    = {Dmitry Duplyakin and Nikhil Ramesh and Carina Imburgia and Hamza Fathallah Al Sheikh and Semil Jain and Prikshit Tekta and Aleksander Maricq and Gary Wong and Robert Ricci},
  title     = {Avoiding the Ordering Trap in Systems Performance Measurement},
  booktitle = {Proceedings of the 2023 USENIX Annual Technical Conference (USENIX ATC '23)},
  year      = {2023}
}""",
    "bakshy2015perflab": """@inproceedings{bakshy2015perflab,
  author    = {Eytan Bakshy and Eitan Frachtenberg},
  title     = {Design and Analysis of Benchmarking Experiments for Distributed Internet Services},
  booktitle = {Proceedings of the 24th International Conference on World Wide Web (WWW '15)},
  year      = {2015}
}""",
    "mittal2023stopping": """@inproceedings{mittal2023stopping,
  author    = {Viyom Mittal and Pedro Bruel and Dejan Milojicic and Eitan Frachtenberg},
  title     = {Adaptive Stopping Rule for Performance Measurements},
  booktitle = {Proceedings of the SC '23 Workshops (PMBS '23)},
  year      = {2023}
}""",
    "deoliveira2013datamill": """@inproceedings{deoliveira2013datamill,
  author    = {Augusto Born de Oliveira and Jean-Christophe Petkovich and Thomas Reidemeister and Sebastian Fischmeister},
  title     = {{DataMill}: Rigorous Performance Evaluation Made Easy},
  booktitle = {Proceedings of the 4th ACM/SPEC International Conference on Performance Engineering (ICPE '13)},
  year      = {2013}
}""",
    "kruskal1952ranks": """@article{kruskal1952ranks,
  author  = {William H. Kruskal and W. Allen Wallis},
  title   = {Use of Ranks in One-Criterion Variance Analysis},
  journal = {Journal of the American Statistical Association},
  volume  = {47},
  number  = {260},
  pages   = {583--621},
  year    = {1952}
}""",
    "holm1979simple": """@article{holm1979simple,
  author  = {Sture Holm},
  title   = {A Simple Sequentially Rejective Multiple Test Procedure},
  journal = {Scandinavian Journal of Statistics},
  volume  = {6},
  number  = {2},
  pages   = {65--70},
  year    = {1979}
}""",
}


def _list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _design(inputs: ReportInputs, cite: list[str]) -> list[str]:
    data = inputs.data
    exp, t = data.experiment, data.table
    derived = {d["name"]: d for d in json.loads(data.plan.plan_json).get("derived", [])}
    hosts = sorted({str(h) for h in t.host})
    factors = [f"{f.name} ({', '.join(str(v) for v in f.levels)})" for f in exp.factors]
    benches = _list([b.name for b in exp.benchmarks])
    out = [
        f"We ran {plural(len(data.configurations()), 'configuration')} of {benches}"
        + (f", crossing {_list(factors)}" if factors else "")
        + f", with benchlang {__version__} (spec {exp.spec_hash[:19]}, plan "
        f"{data.plan.plan_hash[:19]}, seed {data.plan.seed}): {len(t) + data.left_out} trials "
        f"on {plural(len(hosts), 'host')} ({_list(hosts)})."
    ]
    d = exp.design
    if d.layout is not None:
        lay = d.layout
        cite.append("bakshy2015perflab")
        out.append(
            f"Trials followed a {lay.kind.replace('_', ' ')} A/B layout [bakshy2015perflab] over "
            f"{lay.hosts} hosts and {lay.requests} requests, each repeated {lay.repetitions} "
            f"times per host batch; {lay.warmup} warm-up and {lay.cooldown} cool-down trials per "
            "batch ran but were left out of the analysis."
        )
    else:
        out.append(
            f"The design has {plural(d.series, 'series')} of {plural(d.runs, 'run')} per "
            "configuration (TriScale's timescales [jacob2021triscale])"
            + (f", each series over a span of {format_duration(d.span)}" if d.span else "")
            + (f", each trial running {format_duration(d.runtime)}" if d.runtime else "")
            + "."
        )
        cite.append("jacob2021triscale")
        if data.left_out:
            out.append(
                f"{plural(data.left_out, 'warm-up trial')} (before the first measured trial of "
                "each configuration in each series on each host) ran but were left out of the "
                "analysis."
            )
        if d.redundancy > 1:
            cite += ["deoliveira2013datamill", "kruskal1952ranks", "holm1979simple"]
            out.append(
                f"Every configuration ran all its rounds on {d.redundancy} hosts with the same "
                "hardware levels (purposeful redundancy [deoliveira2013datamill]); a "
                "Kruskal-Wallis test per configuration [kruskal1952ranks], Holm-corrected "
                "[holm1979simple], checked that they agree."
            )
    why = [
        f"{name}: {derived[name]['reason']}"
        for name in ("runs", "series", "span")
        if name in derived
    ]
    if why:
        out.append("Sizes were chosen by rule (" + "; ".join(why) + ").")
    if "order" in derived:
        out.append(f"Order: {derived['order']['reason']}.")
    if d.order == "fixed_vs_random":
        cite.append("duplyakin2023ordering")
    reset = exp.reset
    if reset is not None and (reset.command or reset.reboot):
        what = f"the command `{reset.command}`" if reset.command else "a reboot"
        out.append(f"Each round started with a reset ({what}).")
    else:
        out.append("No reset ran between rounds.")
    if exp.hidden:
        cite.append("deoliveira2013datamill")
        names = _list([h.name for h in exp.hidden])
        out.append(
            f"Hidden factors ({names}) were varied per trial or round from seeded "
            "streams [deoliveira2013datamill]."
        )
    return out


def _machine(inputs: ReportInputs) -> list[str]:
    """The machine block's limits and the measured host state (report.machine)."""
    from benchlang.report.machine import methods_sentence

    data = inputs.data
    sentence = methods_sentence(data.experiment, data.host_states, data.forced, data.hosts)
    return [sentence] if sentence else []


def _stopping(inputs: ReportInputs, cite: list[str]) -> list[str]:
    stop = inputs.data.experiment.stop
    if stop is None:
        return ["No stopping rule: every planned trial ran."]
    if stop.kind == "adaptive":
        cite.append("mittal2023stopping")
        s = stop.settings
        rule = (
            f"the adaptive stopping rule of Mittal et al. [mittal2023stopping] (KS threshold "
            f"{s.get('ks', 0.1)}, at least {s.get('min_n', 10)} and at most "
            f"{s.get('max_n', 400)} trials)"
        )
    elif stop.kind == "after":
        rule = f"a fixed count ({stop.count} trials)"
    elif stop.kind == "kpi_width":
        rule = f"the KPI's interval width (at most {stop.count} trials)"
    else:
        rule = (
            f"the stopping method {stop.kind} ({_source(stop.kind)}; at most {stop.count} trials)"
        )
    early = len(inputs.stops)
    warned = sum(1 for s in inputs.stops if s[3] == "stop_warn")
    return [
        f"Each configuration's trials in a series stopped by {rule}; {early} stopped before the "
        f"plan's end" + (f", {warned} of them with a warning" if warned else "") + "."
    ]


def _source(name: str) -> str:
    from benchlang.stats.registry import statistics_methods

    method = statistics_methods().get(name)
    return method.source if method is not None else "not installed"


def _statistics(inputs: ReportInputs, cite: list[str]) -> list[str]:
    exp = inputs.data.experiment
    out = []
    for k in exp.kpis:
        m = exp.metric(k.metric)
        if m is None:  # the checker refuses a KPI of an undeclared metric
            continue
        side = "upper" if k.bound == "upper" else "lower"
        what = f"a one-sided {k.confidence:g}% {side} confidence bound on"
        if k.bound == "both":
            what = f"the equal-tailed two-sided {k.confidence:g}% confidence interval of"
        text = (
            f"For {k.metric} ({m.aggregate if isinstance(m.aggregate, str) else f'percentile {m.aggregate:g}'}"
            f" per trial{', in ' + m.unit if m.unit else ''}, {m.better} is better), the KPI of "
            f"each series is {what} its "
            f"{k.percentile:g}th percentile "
            + (
                "from order statistics [thompson1936; jacob2021triscale]"
                if k.method == "thompson"
                else f"by the statistics method {k.method} ({_source(k.method)})"
            )
        )
        if m.convergence is not None:
            text += (
                f"; each trial's value counts only when its raw series converged (Theil-Sen "
                f"slope within ±{m.convergence.tolerance:g}% at {m.convergence.confidence:g}%)"
            )
        var = exp.variability(k.metric)
        if var is not None:
            low = min(var.percentile, 100 - var.percentile)
            text += (
                f"; the variability score is the spread between the {low:g}th and "
                f"{100 - low:g}th percentiles of the series KPIs, each bounded at "
                f"{var.confidence:g}% [jacob2021triscale]"
            )
        out.append(
            text + ". Before a bound was used, each series was tested for independence "
            "(stationarity and autocorrelation, TriScale §4.5)."
        )
        cite += (["thompson1936"] if k.method == "thompson" else []) + ["jacob2021triscale"]
    out += _population(inputs, cite)
    if exp.order_dependence is not None:
        cite.append("duplyakin2023ordering")
        out.append(
            "Order dependence was tested per configuration by Kruskal-Wallis between fixed- and "
            f"random-order rounds at α = {exp.order_dependence['alpha']:g} with Bonferroni "
            "correction, with η², Δ% and the CI-overlap case [duplyakin2023ordering]."
        )
    for c in exp.comparisons:
        if c.method == "anova":
            cite.append("deoliveira2013datamill")
            out.append(
                f"{c.metric} was analysed by ANOVA ({', '.join(c.settings.get('terms', []))}) "
                "[deoliveira2013datamill]."
            )
            continue
        cite.append("bakshy2015perflab")
        how = (
            "a clustered reweighting bootstrap"
            if c.method == "bootstrap"
            else "crossed random effects of request, host and batch"
        )
        conf = c.settings.get("confidence", 95.0)
        out.append(
            f"{c.metric} was compared across the levels of {c.by} by {how} "
            f"({conf:g}% intervals) [bakshy2015perflab]."
        )
    return out


def _population(inputs: ReportInputs, cite: list[str]) -> list[str]:
    """The KPIs generalised over a population factor's sampled inputs (TriScale §5.3), as the
    record's line says (``report.population_record``)."""
    from benchlang.report.population_record import sampled_inputs
    from benchlang.stats.population import population_settings

    exp = inputs.data.experiment
    pop = exp.population
    if pop is None or not exp.kpis:
        return []
    sampled, declared = sampled_inputs(inputs.data)
    each = []
    for k in exp.kpis:
        p, c = population_settings(pop, k)
        what = (
            f"the two-sided {c:g}% confidence interval of"
            if k.bound == "both"
            else f"a one-sided {c:g}% {k.bound} confidence bound on"
        )
        each.append(f"for {k.metric}, {what} the {p:g}th percentile of the inputs' KPIs")
    cite += ["jacob2021triscale", "thompson1936"]
    return [
        f"KPIs were generalised over {plural(sampled, 'sampled input')} of the factor "
        f"{pop.factor}"
        + (f" (of {declared} declared)" if declared != sampled else "")
        + f" (TriScale §5.3): {'; '.join(each)}, from order statistics "
        "[jacob2021triscale; thompson1936]."
    ]


def _failed(inputs: ReportInputs) -> list[str]:
    from benchlang.report.html.summary import warnings_of

    t = inputs.data.table
    failed = int((~t.ok).sum())
    problems = warnings_of(inputs)
    out = []
    if failed:
        reasons = sorted({f.reason for f in inputs.failed if f.reason})
        out.append(
            f"{failed} of {len(t)} trials failed"
            + (f" ({'; '.join(reasons[:3])})" if reasons else "")
            + (" and was left out." if failed == 1 else " and were left out.")
        )
    out += [p.rstrip(".") + "." for p in problems]
    if not out:
        out.append("No trial failed and every tested assumption held.")
    return out


def methods_text(inputs: ReportInputs) -> str:
    """The paragraph, then the BibTeX entries of the works it cites (each once)."""
    cite: list[str] = []
    sentences = (
        _design(inputs, cite)
        + _machine(inputs)
        + _stopping(inputs, cite)
        + _statistics(inputs, cite)
        + _failed(inputs)
    )
    keys = list(dict.fromkeys(cite))
    paragraph = "**Methods.** " + " ".join(sentences)
    return paragraph + "\n\n" + "\n\n".join(BIBTEX[k] for k in keys) + "\n"
