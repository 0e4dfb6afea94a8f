"""``benchlang results``: per-configuration trials, failures and metric summaries."""

from __future__ import annotations

import argparse
import sys

from benchlang.app.stores import load_store
from benchlang.cli import add_command
from benchlang.report.results import render_results, results_csv


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang results``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Per configuration: successful trials, failures, and median/min/max of each metric."
    )
    p.add_argument(
        "stores",
        nargs="+",
        metavar="STORE",
        help="the SQLite store of a run, or several stores of one experiment, read as the "
        "sessions of a campaign (table or --json: summaries per session and pooled with "
        "sessions as the top clusters, and the between-session share; --format csv, json "
        "and parquet: every trial with its session and store)",
    )
    p.add_argument(
        "--plan",
        help="plan hash (default: the latest plan in the store); with several stores, every "
        "store must hold it (one spec and seed make one plan), else each store's latest",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument(
        "--format",
        choices=("table", "json", "csv", "markdown", "parquet"),
        default="table",
        help="json: versioned document with per-trial rows (status, failure reason, every "
        "measure), hosts and the headline; csv: one row per trial; markdown: a table with a "
        "relative column (docs/exports.md)",
    )
    fmt.add_argument(
        "--json",
        action="store_true",
        help="the same document as --format json (its 'configurations' are the summaries "
        "--json printed alone before; docs/exports.md)",
    )
    fmt.add_argument(
        "--summary-csv",
        action="store_true",
        help="one CSV row per configuration: trials, failures, each metric's median/min/max "
        "(--format csv gives one row per trial)",
    )
    fmt.add_argument("--csv", action="store_true", help="the former name of --summary-csv")
    p.add_argument(
        "--output",
        metavar="FILE",
        help="the file --format parquet writes: one row per trial, the columns of --format "
        "csv (needs pyarrow: benchlang[parquet]; docs/exports.md)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if len(args.stores) > 1:
        return _campaign(args)
    args.store = args.stores[0]
    if args.format == "parquet" or args.output:
        from benchlang.app.api import export_parquet
        from benchlang.errors import UserError

        if args.format != "parquet" or not args.output:
            raise UserError("--format parquet writes a file: give both, with --output FILE")
        print(export_parquet(args.store, args.plan, args.output))
        return 0
    data = load_store(args.store, args.plan)
    form = "json" if args.json else args.format
    if args.csv:
        print(
            "note: --csv is now --summary-csv (one row per configuration); "
            "--format csv gives one row per trial",
            file=sys.stderr,
        )
    if args.csv or args.summary_csv:
        sys.stdout.write(results_csv(data))
    elif form != "table":
        from benchlang.report.export_files import write_export

        write_export(data, form, sys.stdout)
    else:
        render_results(data)
        _render_population(data)
    return 0


def _render_population(data) -> None:
    """The KPIs over the population factor's inputs, when the spec declares one."""
    from benchlang.app.analysis import population_of

    population = population_of(data)
    if population is not None:
        from benchlang.report.analysis_text import render_population

        render_population(population, {m.name: m.unit for m in data.experiment.metrics})


def _campaign(args: argparse.Namespace) -> int:
    """Several stores: the table or the JSON document, sessions as the top clusters, or the
    per-trial CSV and Parquet with each trial's session and store (docs/exports.md)."""
    from benchlang.app.campaign import campaign_document, campaign_results, load_campaign
    from benchlang.cli.options import stores_and_spec
    from benchlang.errors import UserError

    stores, spec = stores_and_spec(args.stores, None, "results")
    if spec is not None:
        raise UserError(
            f"results reads stores, and {spec} is not one", "benchlang results STORE..."
        )
    form = "json" if args.json else args.format
    if form == "markdown" or args.csv or args.summary_csv:
        raise UserError(
            "several stores (a campaign) have no session column in the markdown or summary "
            "exports: per trial, --format csv, parquet or json carry it",
            "export each store alone: benchlang results STORE --format markdown",
        )
    if (form == "parquet") != bool(args.output):
        raise UserError("--format parquet writes a file: give both, with --output FILE")
    if form in ("csv", "parquet"):
        data = load_campaign(stores, args.plan)
        if form == "csv":
            from benchlang.report.export_files import write_export

            write_export(data, "csv", sys.stdout)
        else:
            from benchlang.report.export_files import write_trials_parquet

            print(write_trials_parquet(data, args.output))
        return 0
    data, headlines = campaign_results(stores, args.plan)
    if form == "json":
        from benchlang.jsonout import dumps

        print(dumps(campaign_document(stores, data, headlines)))
        return 0
    render_results(data, stores=stores)
    if headlines:
        from benchlang.report.headline import render_headline

        render_headline(headlines)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang results`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "results")
