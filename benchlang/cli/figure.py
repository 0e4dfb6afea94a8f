"""``benchlang figure``: list the papers' figures that apply to a store, or export one as SVG,
PDF or PNG with its numbers as CSV (docs/figures.md)."""

from __future__ import annotations

import argparse
import sys

from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.jsonout import document, dumps


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang figure``; the lazy table in benchlang.cli calls this."""
    p.usage = (
        "benchlang figure STORE [SPEC] --list\n"
        "       benchlang figure STORE [SPEC] NAME [-o FILE] [--data FILE.csv] [--style STYLE]"
    )
    p.description = (
        "The figures of TriScale, OrderSage, Perflab, DataMill and the stopping rule drawn "
        "from a stored run (docs/figures.md): "
        "--list names those that apply; NAME writes one as SVG, PDF (TrueType fonts) or PNG, "
        "by the suffix of -o."
    )
    p.add_argument("store", metavar="STORE", help="the SQLite store of the run")
    p.add_argument("rest", nargs="*", metavar="[SPEC] NAME", help="a spec (.bench), a figure")
    p.add_argument("--list", action="store_true", help="the figures that apply, one line each")
    p.add_argument(
        "-o", "--output", metavar="FILE", help="FILE.svg, .pdf or .png (default NAME.svg)"
    )
    p.add_argument("--data", metavar="FILE.csv", help="also write the numbers behind the figure")
    p.add_argument(
        "--style",
        metavar="STYLE",
        help="'paper' (one column of a two-column paper: 3.3 in wide, 8 pt text) or a "
        "matplotlib .mplstyle file of your own",
    )
    p.add_argument(
        "--metric",
        help="the metric drawn (default: the first with a KPI; DataMill's: the anova's, else "
        "the first; the stopping rule's: the one it watches); for `profile`, the profile's name",
    )
    p.add_argument("--plan", help="plan hash (default: the spec's plan, else the store's latest)")
    p.add_argument("--json", action="store_true", help="print the list or the figure's numbers")
    p.set_defaults(func=run)


def _split(rest: list[str], listing: bool) -> tuple[str | None, str | None]:
    """(spec, figure name) from the positional arguments after STORE."""
    spec = rest[0] if rest and rest[0].endswith(".bench") else None
    names = rest[1:] if spec else rest
    if listing and names:
        raise UserError(f"--list takes no figure name (got {' '.join(names)})")
    if not listing and len(names) != 1:
        raise UserError(
            "name one figure, or ask for --list",
            hint="benchlang figure STORE --list; benchlang figure STORE cdf -o cdf.pdf",
        )
    return spec, (names[0] if names else None)


def run(args: argparse.Namespace) -> int:
    from benchlang.app import figures

    spec, name = _split(args.rest, args.list)
    where = {"plan_hash": args.plan, "experiment": None, "metric": args.metric}
    if spec is not None:  # app.plan imports the planner and backends: only for a spec
        from benchlang.app.plan import analysis_target

        target = analysis_target(args.store, spec, args.plan)
        if target.note:
            print(f"note: {target.note}", file=sys.stderr)
        where.update(plan_hash=target.plan_hash, experiment=target.experiment)
    if args.list:
        listed = figures.list_figures(args.store, **where)
        if args.json:
            print(dumps(document("figure", 1, {"figures": [f.to_dict() for f in listed]})))
            return 0
        width = max(len(f.name) for f in listed)
        for f in (f for f in listed if f.applies):
            print(f"{f.name:<{width}}  {f.line}")
        skipped = [f for f in listed if not f.applies]
        if skipped:
            print("\nnot applicable to this store:")
            for f in skipped:
                print(f"{f.name:<{width}}  {f.reason}")
        return 0
    if args.json and not args.output:
        data = figures.figure_data(args.store, name, **where)
        print(dumps(document("figure", 1, data.to_dict())))
        return 0
    out = args.output or f"{name}.svg"
    data = figures.export_figure(
        args.store, name, out, data_csv=args.data, style=args.style, **where
    )
    if args.json:
        print(dumps(document("figure", 1, data.to_dict())))
        return 0
    print(f"wrote {out}" + (f" and {args.data}" if args.data else "") + f" ({data.paper})")
    for note in data.notes:
        print(f"  note: {note}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang figure`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "figure")
