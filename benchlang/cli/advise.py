"""``benchlang advise``: the layout and H, R, T to use next, from a pilot run's variance
components and a cost model (Bakshy & Frachtenberg, WWW 2015, §3.1.2; made concrete in
docs/ab-designs.md)."""

from __future__ import annotations

import argparse

import attrs

from benchlang.app.ab import advise_layout
from benchlang.cli import add_command
from benchlang.jsonout import document, dumps
from benchlang.report.table import render_table


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang advise``; the lazy table in benchlang.cli calls this."""
    p.description = "Fit variance components on a pilot run, then rank the four layouts and choose hosts, requests and repetitions that minimise the standard error within a budget, or the cheapest plan reaching a target SE."
    p.add_argument(
        "spec", metavar="SPEC", help="the spec with a 'compare METRIC by FACTOR' analysis"
    )
    p.add_argument("--pilot", required=True, metavar="STORE", help="store of the pilot run")
    goal = p.add_mutually_exclusive_group()
    goal.add_argument("--budget", type=float, help="total cost allowed (units of --trial-cost)")
    goal.add_argument("--target-se", type=float, help="cheapest plan whose SE is at most this")
    p.add_argument("--batch-cost", type=float, default=0.0, help="setup cost per host batch")
    p.add_argument("--request-cost", type=float, default=0.0, help="fixed cost per request")
    p.add_argument(
        "--trial-cost", type=float, default=1.0, help="marginal cost per repetition (default 1)"
    )
    p.add_argument("--max-hosts", type=int, default=64)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlang.stats.ab.advisor import CostModel

    cost = CostModel(batch=args.batch_cost, request=args.request_cost, trial=args.trial_cost)
    fit, advice = advise_layout(
        args.spec,
        args.pilot,
        cost,
        max_hosts=args.max_hosts,
        budget=args.budget,
        target_se=args.target_se,
    )
    if args.json:
        print(
            dumps(document("advise", 1, {"fit": attrs.asdict(fit), "advice": attrs.asdict(advice)}))
        )
        return 0
    print(
        f"pilot: {fit.trials} trials, method {fit.method}; components: "
        + ", ".join(f"{k} {v:.4g}" for k, v in fit.components.items())
    )
    if fit.not_identifiable:
        print(
            f"not identifiable in the pilot: {', '.join(fit.not_identifiable)} (the advice assumes them at their group's estimate)"
        )
    render_table(
        ["layout", "hosts", "requests/version", "repetitions", "SE", "cost"],
        [(c.layout, c.hosts, c.requests, c.repetitions, c.se, c.cost) for c in advice.ranking],
        title=f"advice ({advice.objective}), best first",
    )
    if advice.infeasible:
        print(f"infeasible: {', '.join(advice.infeasible)}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang advise`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "advise")
