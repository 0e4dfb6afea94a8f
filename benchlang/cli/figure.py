"""``benchlang figure``: list the papers' figures that apply to a store, or export one, several
or all of them as SVG, PDF or PNG with their numbers as CSV (docs/figures.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.jsonout import document, dumps

if TYPE_CHECKING:
    from benchlang.app.figures import FigureSource, Written


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang figure``; the lazy table in benchlang.cli calls this."""
    from benchlang.app.figures import FORMATS

    p.usage = (
        "benchlang figure STORE [STORE...] [SPEC] --list\n"
        "       benchlang figure STORE [STORE...] [SPEC] NAME [-o FILE] [--data FILE.csv] [--style STYLE]"
        " [--label CONFIG=TEXT]... [--notes below|none]\n"
        "       benchlang figure STORE [STORE...] [SPEC] (NAME NAME... | --all) [-o DIR] [--format FMT] "
        "[--data DIR]"
    )
    p.description = (
        "The figures of TriScale, OrderSage, Perflab, DataMill and the stopping rule drawn "
        "from a stored run (docs/figures.md): "
        "--list names those that apply; NAME writes one as SVG, PDF (TrueType fonts) or PNG, "
        "by the suffix of -o; several NAMEs or --all write DIR/NAME.FMT each, the store read "
        "and matplotlib loaded once."
    )
    p.add_argument("store", metavar="STORE", help="the SQLite store of the run")
    p.add_argument(
        "rest",
        nargs="*",
        metavar="[STORE...] [SPEC] NAME",
        help="more stores of the same experiment (the sessions of a campaign: figures that "
        "keep sessions apart label them, the others say they do not apply), a spec (.bench), "
        "one or more figures",
    )
    p.add_argument("--list", action="store_true", help="the figures that apply, one line each")
    p.add_argument("--all", action="store_true", help="every figure that applies (into -o DIR)")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="FILE.svg, .pdf or .png (default NAME.svg); with several figures a directory "
        "(default .)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="svg, pdf or png: of several figures (default svg), or of one without -o",
    )
    p.add_argument(
        "--data",
        metavar="FILE.csv",
        help="also write the numbers behind the figure; with several figures a directory "
        "of NAME.csv",
    )
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
    p.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="CONFIG=TEXT",
        help="show configuration (or factor level) CONFIG as TEXT, e.g. "
        "'digest[tool=sha256sum]=SHA-256'; repeatable",
    )
    p.add_argument(
        "--labels",
        metavar="FILE",
        help="a file of CONFIG=TEXT lines (# comments), as --label; --label wins",
    )
    p.add_argument(
        "--notes",
        choices=("below", "none"),
        default="below",
        help="what the figure leaves out or cannot claim: drawn under it (below, the default) "
        "or not drawn (none); either way in the file's metadata with the caption and printed",
    )
    p.add_argument("--plan", help="plan hash (default: the spec's plan, else the store's latest)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the list, or the figures' numbers (without -o: nothing drawn or written)",
    )
    p.set_defaults(func=run)
    p.intermixed = True  # type: ignore[attr-defined]  # names after options: benchlang.cli


def _split(rest: list[str], args: argparse.Namespace) -> tuple[str | None, list[str]]:
    """(spec, figure names) from the positional arguments after STORE; a combination of
    options that would be ignored is refused before the store is read."""
    spec = rest[0] if rest and rest[0].endswith(".bench") else None
    names = rest[1:] if spec else rest
    writing = [f"{flag} {value}" for flag, value in _writing(args) if value is not None]
    if args.list and (names or args.all):
        raise UserError(f"--list takes no figure name (got {' '.join(names) or '--all'})")
    if args.list and writing:
        raise UserError(
            f"--list writes nothing: {', '.join(writing)} has no use with it",
            hint="benchlang figure STORE --list, then benchlang figure STORE NAME -o FILE",
        )
    if args.all and names:
        raise UserError(
            f"--all draws every figure that applies: name none (got {' '.join(names)})",
            hint="benchlang figure STORE --all -o figures/ --format pdf",
        )
    if not (args.list or args.all or names):
        raise UserError(
            "name a figure (or several, or --all), or ask for --list",
            hint="benchlang figure STORE --list; benchlang figure STORE cdf -o cdf.pdf",
        )
    if args.json and args.output is None and writing:
        raise UserError(
            f"--json without -o prints the numbers and writes nothing: {', '.join(writing)} "
            "would be ignored",
            hint="add -o FILE (one figure) or -o DIR (several) to write the figures too",
        )
    return spec, names


def _writing(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The options that only a written figure uses."""
    return [
        ("--format", args.format),
        ("--data", args.data),
        ("--style", args.style),
        ("--notes", None if args.notes == "below" else args.notes),
    ] + ([("-o", args.output)] if args.list else [])


def _more_stores(rest: list[str]) -> tuple[list[str], list[str]]:
    """The stores after STORE (the sessions of a campaign: SQLite files, told apart by their
    content) and the rest of the positional arguments."""
    from benchlang.app.stores import is_store

    stores = [path for path in rest if is_store(path)]
    return stores, [path for path in rest if path not in stores]


def run(args: argparse.Namespace) -> int:
    from benchlang.app import figures

    more, rest = _more_stores(args.rest)
    spec, names = _split(rest, args)
    where = {"plan_hash": args.plan, "experiment": None, "metric": args.metric}
    if spec is not None and more:
        from benchlang.cli.common import load_experiment

        where.update(experiment=load_experiment(spec))
    elif spec is not None:  # app.plan imports the planner and backends: only for a spec
        from benchlang.app.plan import analysis_target

        target = analysis_target(args.store, spec, args.plan)
        if target.note:
            print(f"note: {target.note}", file=sys.stderr)
        where.update(plan_hash=target.plan_hash, experiment=target.experiment)
    if len(set(more)) < len(more) or args.store in more:
        raise UserError("figure: a store is given twice", hint="benchlang figure STORE... NAME")
    source = figures.FigureSource(
        [args.store, *more] if more else args.store,
        where["plan_hash"],
        where["experiment"],
        names=figures.names_of(args.label, args.labels),
        notes=args.notes,
    )
    if args.list:
        listed = source.listed(args.metric)
        if args.json:
            print(dumps(document("figure", 1, {"figures": [f.to_dict() for f in listed]})))
            return 0
        print(figures.listed_text(listed), end="")
        return 0
    several = args.all or len(names) > 1
    if args.json and args.output is None:  # the numbers only: nothing drawn or written
        if not several:
            print(dumps(document("figure", 1, source.data(names[0], args.metric).to_dict())))
            return 0
        built, skipped = source.select(None if args.all else names, args.metric)
        numbers = [figures.Written(None, data).to_dict() for data in built]
        print(dumps(document("figure", 1, _many_body(numbers, skipped))))
        return 0
    if several:
        return _export_many(source, None if args.all else names, args)
    out = _single_output(names[0], args)
    done = source.export(names[0], out, data_csv=args.data, style=args.style, metric=args.metric)
    if args.json:
        print(dumps(document("figure", 1, done.to_dict())))
        return 0
    print(f"wrote {out}" + (f" and {args.data}" if args.data else "") + f" ({done.data.paper})")
    _print_notes(done)
    return 0


def _single_output(name: str, args: argparse.Namespace) -> str:
    """One figure's file: -o, else NAME.FORMAT; a -o whose suffix --format contradicts is an
    error, not a guess."""
    if args.output is None:
        return f"{name}.{args.format or 'svg'}"
    if args.format and not args.output.lower().endswith(f".{args.format}"):
        raise UserError(
            f"-o {args.output} is not a .{args.format} file, as --format {args.format} asks",
            hint=f"-o {name}.{args.format}, or leave out --format (the suffix of -o decides)",
        )
    return args.output


def _many_body(figures: list[dict[str, Any]], skipped: dict[str, str]) -> dict[str, Any]:
    """The batch document (docs/cli.md#figure): each figure's path, numbers and warnings, and
    the figures ``--all`` skipped with their reasons."""
    return {"figures": figures, "skipped": [{"name": n, "reason": r} for n, r in skipped.items()]}


def _print_notes(done: Written) -> None:
    """A figure's notes, and what matplotlib said drawing it, under its line."""
    for note in done.data.notes:
        print(f"  note: {note}")
    for said in done.said:
        print(f"  note: matplotlib: {said}")


def _export_many(source: FigureSource, names: list[str] | None, args: argparse.Namespace) -> int:
    done = source.export_many(
        names,
        args.output or ".",
        args.format or "svg",
        data_dir=args.data,
        style=args.style,
        metric=args.metric,
    )
    if args.json:
        body = _many_body([w.to_dict() for w in done.written], done.skipped)
        print(dumps(document("figure", 1, body)))
        return 0
    for written in done.written:
        print(f"wrote {written.path} ({written.data.paper})")
        _print_notes(written)
    if args.data:
        print(f"wrote the numbers of each as {args.data}/NAME.csv")
    if done.skipped:
        print(
            f"not drawn, as they do not apply to this store (--list says why): "
            f"{', '.join(done.skipped)}"
        )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang figure`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "figure")
