"""``benchlang advise``: the layout and H, R, T to use next, from a pilot run's variance
components and a cost model (Bakshy & Frachtenberg, WWW 2015, §3.1.2; made concrete in
docs/ab-designs.md)."""

from __future__ import annotations

import argparse

import attrs

from benchlang.app.ab import advise_layout, pilot_warmup
from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.jsonout import document, dumps, undefined
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
    p.add_argument(
        "--max-hosts", type=int, default=64, help="the most hosts a layout may use (default: 64)"
    )
    p.add_argument(
        "--sweep",
        action="store_true",
        help="instead: the SE of every layout against requests per version and hosts, analytic "
        "from the pilot's components with simulated points (Perflab Figs. 2, 4)",
    )
    p.add_argument(
        "--sweep-hosts", metavar="H,H,...", help="hosts of --sweep (default: around the spec's)"
    )
    p.add_argument(
        "--sweep-requests", metavar="LOW:HIGH", help="requests per version of --sweep (9 steps)"
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    p.set_defaults(func=run)


def _ints(text: str | None, sep: str, what: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(x) for x in text.split(sep))
    except ValueError:
        raise UserError(f"{what}: whole numbers separated by {sep!r}, got {text!r}") from None


def sweep(args: argparse.Namespace) -> int:
    """``--sweep``: the SE table (Bakshy & Frachtenberg §4.2.1, §6; docs/ab-designs.md)."""
    from benchlang.app.ab import layout_sweep

    span = _ints(args.sweep_requests, ":", "--sweep-requests")
    if span is not None and len(span) != 2:
        raise UserError("--sweep-requests takes LOW:HIGH")
    result, layout, scale = layout_sweep(
        args.spec, args.pilot, hosts=_ints(args.sweep_hosts, ",", "--sweep-hosts"), requests=span
    )
    if args.json:
        body = {
            "components": result.components.as_dict(),
            "experiments": result.experiments,
            "scale": scale,
            "spec_layout": layout,
            "points": [
                undefined(attrs.asdict(p), {"simulated_sd": "not simulated at this size"})
                for p in result.points
            ],
            "skipped": list(result.skipped),
        }
        print(dumps(document("advise-sweep", 1, body)))
        return 0
    render_table(
        ["layout", "hosts", "requests/version", "repetitions", "analytic SE", "simulated SD"],
        [
            (p.layout, p.hosts, p.requests, p.repetitions, p.analytic_se, p.simulated_sd)
            for p in result.points
        ],
        title=f"SE of the difference ({'mean log' if scale == 'log' else scale or 'metric'}) by "
        f"layout, hosts and requests; simulated SD over {result.experiments} experiments",
    )
    for line in result.skipped:
        print(f"skipped: {line}")
    return 0


def run(args: argparse.Namespace) -> int:
    from benchlang.stats.ab.advisor import CostModel

    if args.sweep:
        return sweep(args)

    cost = CostModel(batch=args.batch_cost, request=args.request_cost, trial=args.trial_cost)
    fit, advice = advise_layout(
        args.spec,
        args.pilot,
        cost,
        max_hosts=args.max_hosts,
        budget=args.budget,
        target_se=args.target_se,
    )
    warmup = pilot_warmup(args.pilot)
    if args.json:
        body = {"fit": attrs.asdict(fit), "advice": attrs.asdict(advice)}
        print(dumps(document("advise", 1, {**body, "warmup": [a.to_dict() for a in warmup]})))
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
    if warmup:
        from benchlang.report.warmup import render_warmup_detail

        render_warmup_detail(warmup)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang advise`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "advise")
