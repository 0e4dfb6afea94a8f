"""``benchlang run``: compile, execute through the backend, store, and summarise."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from benchlang.app.plan import plan_experiment
from benchlang.cli import add_command
from benchlang.cli.common import load_spec, print_spec_profile
from benchlang.errors import UserError
from benchlang.report.analysis import analyze, build_record, render_analysis
from benchlang.report.compare import compare, render_comparisons
from benchlang.report.data import load_data
from benchlang.report.order_analysis import order_report, render_order_report
from benchlang.report.results import failure_lines, render_results
from benchlang.report.table import render_table
from benchlang.run.executor import Executor
from benchlang.run.progress import Progress
from benchlang.run.store import Store


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang run``; the lazy table in benchlang.cli calls this."""
    p.description = "Run every trial of a spec's plan, committing each to the store as it finishes."
    p.add_argument("spec", metavar="SPEC")
    p.add_argument(
        "--store", help="SQLite results file (default: <spec name>.sqlite in the current directory)"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a run that was interrupted, without repeating finished trials",
    )
    p.add_argument("--seed", type=int, help="override the spec's seed")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    experiment, backend, plan = plan_experiment(load_spec(args.spec), args.spec, args.seed)
    store_path = Path(args.store or Path(args.spec).with_suffix(".sqlite").name)
    with Store(store_path, create=True) as store:
        done = store.finished_trials(plan.hash)
        if done and not args.resume:
            raise UserError(
                f"{store_path} already holds {len(done)} trials of this plan",
                "continue it with --resume, or give another --store",
            )
        store.add_plan(
            plan.hash,
            experiment.name,
            experiment.spec_hash,
            plan.seed,
            plan.json_text(),
            args.spec,
            Path(args.spec).read_text(encoding="utf-8"),
        )
        progress = Progress(plan.n_trials, len(done), quiet=args.quiet)
        if not args.quiet:
            progress.note(
                f"running {plan.n_trials - len(done)} of {plan.n_trials} trials of {experiment.name} into {store_path}"
            )
        try:
            summary = asyncio.run(
                Executor(
                    experiment, plan, backend, store, progress, pin_hosts=plan.layout is not None
                ).run()
            )
        except KeyboardInterrupt:
            progress.close()
            print(
                f"interrupted: finished trials are in {store_path}; continue with: benchlang run {args.spec} --store {store_path} --resume",
                file=sys.stderr,
            )
            return 130
        finally:
            progress.close()
        missing = plan.n_trials - len(store.finished_trials(plan.hash)) - summary.not_needed
        if missing:
            print(
                f"PARTIAL: {missing} of {plan.n_trials} planned trials did not run; the results below use the {plan.n_trials - missing - summary.not_needed} that did"
            )
        data = load_data(store, plan.hash)
        render_results(data)
        if experiment.kpis:
            analysis = analyze(data)
            render_analysis(analysis, {m.name: m.unit for m in experiment.metrics})
        for item in experiment.profiles:
            print_spec_profile(item)
        if experiment.comparisons:
            render_comparisons([compare(data, c) for c in experiment.comparisons])
        if experiment.order_dependence is not None:
            render_order_report(order_report(data, None, experiment.order_dependence["alpha"]))
        if experiment.kpis:
            print()
            print(build_record(data, analysis).to_markdown())
        if summary.failed:
            print(f"{summary.failed} trials failed:")
            for line in failure_lines(store, plan.hash):
                print(line)
        for host, message in summary.hosts_down:
            print(f"host {host} stopped: {message}", file=sys.stderr)
        stops = store.stops(plan.hash)
        if stops:
            labels = {c.index: c.label for c in plan.configurations}
            render_table(
                ["configuration", "series", "stopped after", "action", "rule", "class", "reason"],
                [(labels[c], s, n, a, r, k, why) for s, c, n, a, r, k, why in stops],
                title=f"stopping ({experiment.stop.kind}): {summary.not_needed} planned trials not needed",
            )
        if missing:
            print(
                f"{missing} trials did not run; fix the cause and continue with --resume",
                file=sys.stderr,
            )
            return 1
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang run`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "run")
