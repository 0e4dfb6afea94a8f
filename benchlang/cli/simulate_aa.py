"""``benchlang simulate-aa``: Type I error of each bootstrap scheme for an A/B layout (Bakshy & Frachtenberg §6, Table 3)."""

from __future__ import annotations

import argparse
import json

from benchlang.errors import UserError
from benchlang.plan.layouts import LAYOUTS
from benchlang.report.table import render_table
from benchlang.stats.ab.designs import COMPONENTS, VarianceComponents
from benchlang.stats.ab.simulate import AAResult, simulate_aa

SCHEME_NAMES = {"none": "iid", "request": "request", "host": "host", "host_block": "host-block"}


def parse_components(text: str) -> VarianceComponents:
    """``request=0.5,host=0.1,...``: standard deviations of the random terms (as in Table 1)."""
    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip().replace("-", "_").replace(":", "_")
        if not sep or name not in COMPONENTS:
            raise UserError(
                f"bad component {part!r}",
                hint=f"write name=sd pairs separated by commas; names: {', '.join(COMPONENTS)}",
            )
        try:
            values[name] = float(value)
        except ValueError:
            raise UserError(f"component {name} is not a number: {value!r}") from None
        if not values[name] >= 0:
            raise UserError(f"component {name} must be a standard deviation >= 0")
    if not values:
        raise UserError(
            "no components given", hint="e.g. --components 'request=1,host=0.1,residual=0.1'"
        )
    return VarianceComponents.from_sd(values)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "simulate-aa",
        help="A/A simulation: Type I error of each bootstrap scheme for an A/B layout",
        description="Simulate A/A experiments of an A/B layout from variance components "
        "(Bakshy & Frachtenberg, WWW 2015, Eq. 3-4) and report the Type I error of the iid, "
        "request-, host- and host-block-clustered reweighting bootstraps (§5, §6, Table 3).",
    )
    p.add_argument("--layout", choices=LAYOUTS, default="fully_balanced")
    p.add_argument("--hosts", type=int, default=16, help="H, all hosts (default 16)")
    p.add_argument(
        "--requests", type=int, default=512, help="R, requests per version (default 512)"
    )
    p.add_argument(
        "--repetitions", type=int, default=1, help="T, repetitions of each request (default 1)"
    )
    p.add_argument(
        "--components",
        required=True,
        help="standard deviations, e.g. 'request=1,host=0.1,request_batch=0.1,host_batch=0.08,residual=0.1'",
    )
    p.add_argument(
        "--experiments", type=int, default=2000, help="simulated A/A experiments (default 2000)"
    )
    p.add_argument(
        "--replicates",
        type=int,
        default=200,
        help="bootstrap replicates per experiment (default 200)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="test level (default 0.05)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    components = parse_components(args.components)
    if args.experiments < 2 or args.replicates < 2:
        raise UserError("--experiments and --replicates must be at least 2")
    if not 0 < args.alpha < 1:
        raise UserError("--alpha must lie in (0, 1)")
    try:
        result = simulate_aa(
            args.layout,
            args.hosts,
            args.requests,
            args.repetitions,
            components,
            args.experiments,
            args.replicates,
            args.seed,
            alpha=args.alpha,
        )
    except ValueError as err:
        raise UserError(str(err)) from None
    if args.json:
        print(json.dumps(to_json(result)))
    else:
        report(result)
    return 0


def to_json(result: AAResult) -> dict[str, object]:
    return {
        "layout": result.layout,
        "hosts": result.hosts,
        "requests": result.requests,
        "repetitions": result.repetitions,
        "experiments": result.experiments,
        "replicates": result.replicates,
        "alpha": result.alpha,
        "analytic_se": result.analytic_se,
        "simulated_sd": result.simulated_sd,
        "schemes": [
            {
                "cluster": SCHEME_NAMES[s.cluster],
                "clusters": s.clusters,
                "type_i_error": s.rejection_rate,
                "mean_se": s.mean_se,
            }
            for s in result.schemes
        ],
    }


def report(result: AAResult) -> None:
    rows = [
        [SCHEME_NAMES[s.cluster], s.clusters, s.rejection_rate, s.mean_se] for s in result.schemes
    ]
    title = (
        f"A/A simulation: {result.layout}, H={result.hosts}, R={result.requests}, "
        f"T={result.repetitions}; {result.experiments} experiments x {result.replicates} replicates; "
        f"analytic SE {result.analytic_se:.4g}, simulated SD {result.simulated_sd:.4g}"
    )
    render_table(
        ["bootstrap", "clusters", f"Type I error (alpha={result.alpha:g})", "mean SE"], rows, title
    )
