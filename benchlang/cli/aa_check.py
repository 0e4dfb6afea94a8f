"""``benchlang aa-check``: the empirical Type I error of each compare over several A/A stores,
with its Clopper-Pearson interval and the binomial band (Bakshy & Frachtenberg, WWW 2015, §6,
Fig. 8; docs/ab-designs.md)."""

from __future__ import annotations

import argparse

from benchlang.cli import add_command
from benchlang.jsonout import document, dumps
from benchlang.report.table import render_table


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang aa-check``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Count, per compare, the A/A runs (stores of one spec whose two versions are identical) "
        "whose interval excludes no change: the empirical Type I error with its Clopper-Pearson "
        "interval, beside the band an honest test's rate falls in over that many independent "
        "runs (Perflab Fig. 8)."
    )
    p.add_argument("stores", nargs="+", metavar="STORE", help="stores of A/A runs (two or more)")
    p.add_argument("-o", "--output", metavar="FILE", help="draw aa-empirical: .svg, .pdf or .png")
    p.add_argument("--data", metavar="FILE.csv", help="the figure's numbers as CSV")
    p.add_argument("--style", metavar="STYLE", help="'paper' or a matplotlib .mplstyle file")
    p.add_argument(
        "--ladder", metavar="FILE", help="also draw aa-ladder: each run's interval, ranked"
    )
    p.add_argument(
        "--test", metavar="COMPARE", help="the compare of --ladder, e.g. 'time (bootstrap)'"
    )
    p.add_argument("--json", action="store_true", help="every run's interval and the tallies")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlang.app.aa_check import aa_check, export_figure, ladder_figure

    check = aa_check(args.stores)
    if args.output:
        export_figure(check.figure, args.output, args.data, args.style)
    elif args.data:
        from benchlang.app.figures import write_csv

        write_csv(check.figure, args.data)
    if args.ladder:
        export_figure(ladder_figure(check, args.test), args.ladder, style=args.style)
    if args.json:
        print(dumps(document("aa-check", 1, check.to_dict())))
        return 0
    rows = [
        (
            r["test"],
            r["runs"],
            r["false_positives"],
            f"{r['rate']:.3f}",
            f"{r['low']:.3f}-{r['high']:.3f}",
            f"{r['alpha']:g}",
            f"{r['band_low']:.3f}-{r['band_high']:.3f}",
            "yes" if r["band_low"] <= r["rate"] <= r["band_high"] else "NO",
        )
        for r in check.figure.where()
    ]
    render_table(
        [
            "compare",
            "runs",
            "false positives",
            "Type I error",
            "95% interval",
            "alpha",
            "binomial band",
            "in band",
        ],
        rows,
        title=f"A/A check over {len(args.stores)} stores (Clopper-Pearson interval; band: where "
        "an honest test's rate falls in 95% of such checks)",
    )
    for note in check.figure.notes:
        print(f"note: {note}")
    if args.output:
        print(f"wrote {args.output}" + (f" and {args.data}" if args.data else ""))
    if args.ladder:
        print(f"wrote {args.ladder}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang aa-check`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "aa-check")
