"""``benchlang analyze``: TriScale's KPIs, variability scores and independence tests over a
store (or a CSV from elsewhere)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from benchlang.app.analysis import analyze_csv, analyze_store, order_of
from benchlang.cli import add_command
from benchlang.cli.common import load_experiment, print_spec_profile
from benchlang.cli.options import store_arguments, stores_and_spec
from benchlang.errors import UserError
from benchlang.jsonout import document, dumps
from benchlang.report.analysis_text import render_analysis


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang analyze``; the lazy table in benchlang.cli calls this."""
    p.description = "Analyse a store with the spec's KPIs and variability scores (TriScale, Jacob et al. JSys 2021), or a CSV of values from elsewhere with --data."
    store_arguments(
        p,
        "the store of the run (an SQLite file, told apart from the spec by its content), "
        "or several stores of one experiment, read as the sessions of a campaign (sessions are "
        "then the top clusters and their share is shown), and the spec to analyse with "
        "(default: the latest plan in each store)",
        several=True,
    )
    p.add_argument("--plan", help="plan hash to analyse")
    p.add_argument("--data", help="CSV file: one column per metric, optional series column")
    p.add_argument(
        "--kpi",
        default="percentile 50 confidence 95%",
        help="with --data: e.g. 'percentile 50 confidence 95%%'",
    )
    p.add_argument("--variability", help="with --data: e.g. 'percentile 25 confidence 75%%'")
    p.add_argument("--series", help="with --data: the column that names each value's series")
    p.add_argument(
        "--better",
        action="append",
        metavar="[COLUMN=]lower|higher",
        help="with --data: which direction is better (sets the KPI bound), for every column "
        "or, as COLUMN=DIRECTION (repeatable), per column; default lower",
    )
    p.add_argument(
        "--per-series-independence",
        action="store_true",
        help="let TriScale's per-series independence tests (each series at 5%%) make a "
        "configuration descriptive only, as well as the run-level verdict",
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    p.set_defaults(func=run, exit_at_once=True)  # cli.leave: it writes nothing, every store closed


def _settings(text: str, what: str) -> dict[str, float]:
    pairs = dict(re.findall(r"(percentile|confidence|exclude)\s+([0-9.]+)%?", text))
    if "percentile" not in pairs or "confidence" not in pairs:
        raise UserError(f"--{what} needs 'percentile P confidence C%', got {text!r}")
    values = {k: float(v) for k, v in pairs.items()}
    for key in ("percentile", "confidence"):
        if not 0 < values[key] < 100:
            raise UserError(f"--{what}: {key} {values[key]:g} is outside (0, 100)")
    return values


def _better(given: list[str] | None) -> str | dict[str, str]:
    """``--better lower`` for every column, or ``--better COLUMN=higher`` (repeatable)."""
    if not given:
        return "lower"
    plain = [g for g in given if "=" not in g]
    per = dict(g.split("=", 1) for g in given if "=" in g)
    for direction in [*plain, *per.values()]:
        if direction not in ("lower", "higher"):
            raise UserError(
                f"--better: {direction!r} is not lower or higher",
                "--better lower, or per column: --better time=lower --better rate=higher",
            )
    if (plain and per) or len(plain) > 1:
        raise UserError(
            "--better takes one direction for every column or COLUMN=DIRECTION per column",
            "--better time=lower --better rate=higher",
        )
    return plain[0] if plain else per


def run(args: argparse.Namespace) -> int:
    if args.data:
        kpi = _settings(args.kpi, "kpi")
        variability = _settings(args.variability, "variability") if args.variability else None
        results = analyze_csv(args.data, kpi, variability, args.series, _better(args.better))
        if args.json:
            _print_json(results, [], [])
        else:
            render_analysis(results, {})
        return 0
    if not args.paths and not args.store:
        raise UserError("give the store of a run (or --data FILE.csv)", "benchlang analyze STORE")
    stores, args.spec = stores_and_spec(args.paths, args.store, "analyze")
    if len(stores) == 1 and args.spec:
        from benchlang.app.plan import analysis_target  # the plan compiler: only with a spec

        target = analysis_target(stores[0], args.spec, args.plan)
        if target.note:
            print(f"note: {target.note}", file=sys.stderr)
        plan_hash, experiment = target.plan_hash, target.experiment
    else:  # a campaign: each store's own plan (its seed may differ), the spec's analysis;
        # one store without a spec: --plan or its latest plan, its stored spec
        plan_hash = args.plan
        experiment = load_experiment(args.spec) if args.spec else None
    found = analyze_store(stores, plan_hash, experiment, args.per_series_independence)
    from benchlang.report.runtimes import render_runtime_convergence, runtime_convergence

    runtimes = runtime_convergence(found.data)
    if args.json:
        _print_json(
            found.kpis,
            found.comparisons,
            found.warmup,
            found.headlines,
            found.equal_hosts,
            runtimes,
            found.sessions,
            found.population,
        )
        return 0
    experiment = found.data.experiment
    for item in experiment.profiles:
        print_spec_profile(item)
    if found.comparisons:
        from benchlang.report.compare_text import render_comparisons

        render_comparisons(found.comparisons)
    if found.warmup:
        from benchlang.report.warmup import render_warmup_advice

        render_warmup_advice(found.warmup)
    if found.equal_hosts:
        from benchlang.report.equal_hosts import render_host_agreement

        render_host_agreement(found.equal_hosts)
    if experiment.order_dependence is not None:
        from benchlang.report.order import render_order_report

        render_order_report(order_of(found.data, None, experiment.order_dependence["alpha"]))
    if found.kpis:
        scales = {h.metric: h.display for h in found.headlines if h.display is not None}
        render_analysis(found.kpis, {m.name: m.unit for m in experiment.metrics}, scales=scales)
        from benchlang.report.headline import render_headline

        render_headline(found.headlines)
    if found.population is not None:
        from benchlang.report.analysis_text import render_population

        render_population(found.population, {m.name: m.unit for m in experiment.metrics})
    if found.sessions:
        from benchlang.report.sessions_text import render_session_shares

        render_session_shares(found.sessions, len(stores))
    render_runtime_convergence(runtimes)
    return 0


class _Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def _print_json(
    kpis: Sequence[_Result],
    comparisons: Sequence[_Result],
    warmup: Sequence[_Result],
    headlines: Sequence[_Result] = (),
    equal_hosts: Sequence[_Result] = (),
    runtimes: Sequence[_Result] = (),
    sessions: Sequence[_Result] = (),
    population: _Result | None = None,
) -> None:
    body = {
        "kpis": [r.to_dict() for r in kpis],
        "comparisons": [c.to_dict() for c in comparisons],
        "warmup": [w.to_dict() for w in warmup],
        "headline": [h.to_dict() for h in headlines],
        **({"equal_hosts": [e.to_dict() for e in equal_hosts]} if equal_hosts else {}),
        **({"runtimes": [r.to_dict() for r in runtimes]} if runtimes else {}),
        **({"sessions": [r.to_dict() for r in sessions]} if sessions else {}),
        **({"population": population.to_dict()} if population is not None else {}),
    }
    print(dumps(document("analyze", 1, body)))


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang analyze`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "analyze")
