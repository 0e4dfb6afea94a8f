"""``benchlang history add|import|list|changes|check|ack|report``: performance through a
project's history (docs/history.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlang.cli import add_command
from benchlang.cli.options import percent_argument
from benchlang.errors import UserError


def _tag(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"not K=V: {text!r}")
    return key.strip(), value.strip()


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--history",
        metavar="H",
        help="a SQLite file or a postgresql:// URL (default, for every history command: "
        "benchlang-history.sqlite in the current directory)",
    )


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang history``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Track performance through a project's history: each run's KPIs with their intervals "
        "per commit, change points, a CI gate and a dashboard (docs/history.md). Every command "
        "reads and writes benchlang-history.sqlite in the current directory unless --history "
        "names another."
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = sub.add_parser("add", help="add stores' KPIs to the history (once each)")
    add.add_argument("stores", metavar="STORE", nargs="+", help="stores of runs to add (once each)")
    _common(add)
    which = add.add_mutually_exclusive_group()
    which.add_argument(
        "--commit",
        metavar="SHA",
        help="default: git HEAD of the repository around the run's spec (refused without one)",
    )
    which.add_argument(
        "--no-commit", action="store_true", help="add runs whose spec is in no git repository"
    )
    add.add_argument("--branch", metavar="B", help="default: the checked-out branch")
    add.add_argument("--date", metavar="ISO", help="default: when the run ended")
    add.add_argument(
        "--tag",
        metavar="K=V",
        type=_tag,
        action="append",
        default=[],
        help="a label kept with the run (repeatable), e.g. runner=ci-large",
    )
    imp = sub.add_parser("import", help="series from Apache Otava's CSV layout")
    imp.add_argument("file", metavar="FILE.csv", help="a CSV in Apache Otava's layout")
    _common(imp)
    imp.add_argument("--experiment", help="the name the series are kept under (default: stem)")
    imp.add_argument(
        "--time-column", default="time", help="the column of each run's date (default: time)"
    )
    imp.add_argument(
        "--commit-column",
        default="commit",
        help="the column of each run's commit (default: commit)",
    )
    imp.add_argument(
        "--higher-is-better", metavar="METRIC", action="append", default=[], help="repeatable"
    )
    listing = sub.add_parser("list", help="the runs and series in the history")
    _common(listing)
    listing.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    changes = sub.add_parser("changes", help="every series' change points")
    _common(changes)
    changes.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    changes.add_argument("--since", metavar="REF", help="only changes at or after this commit")
    changes.add_argument("--repo", default=".", help="the git repository REF is resolved in")
    check = sub.add_parser("check", help="the CI gate: exit 1 on a regression beyond the margin")
    _common(check)
    check.add_argument("--margin", type=percent_argument, default=2.0, help="default: 2%%")
    check.add_argument("--summary", metavar="FILE", help="append a Markdown summary here")
    check.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    ack = sub.add_parser(
        "ack", help="acknowledge a regression: the gate stops failing on it (kept, listed)"
    )
    ack.add_argument(
        "change",
        metavar="ID",
        help="a change point's id (check, changes), BEFORE..AFTER or a commit",
    )
    ack.add_argument("--reason", required=True, metavar="TEXT", help="why it is accepted")
    _common(ack)
    report = sub.add_parser("report", help="the dashboard: one self-contained HTML page")
    _common(report)
    report.add_argument(
        "-o",
        "--output",
        default="history.html",
        metavar="FILE",
        help="the HTML page to write (default: history.html)",
    )
    for sp in (changes, check, ack, report):
        sp.add_argument(
            "--confidence",
            type=percent_argument,
            default=95.0,
            help="percent, for the change points' and the gate's intervals (default: 95)",
        )
    p.set_defaults(func=run, exit_at_once=True)  # cli.leave: each action closes what it opened


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang history`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "history")


def run(args: argparse.Namespace) -> int:
    from benchlang.app.history import runs as app

    if args.action in ("add", "import"):
        if args.action == "add":
            target, added = app.add_stores(
                args.stores,
                args.history,
                commit=args.commit,
                no_commit=args.no_commit,
                branch=args.branch,
                date=args.date,
                tags=dict(args.tag),
            )
        else:
            target, added = app.import_csv(
                args.file,
                args.history,
                experiment=args.experiment,
                time_column=args.time_column,
                commit_column=args.commit_column,
                higher_is_better=args.higher_is_better,
            )
        new = [a for a in added if a.added]
        print(f"{len(new)} run(s) added to {target}, {len(added) - len(new)} already there")
        return 0
    from benchlang.history import text

    if args.action == "list":
        listing = app.list_history(args.history)
        if args.json:
            from benchlang.jsonout import document, dumps

            print(dumps(document("history", 1, {"action": "list", **listing})))
        else:
            print(text.list_text(listing), end="")
        return 0
    alpha = (100.0 - args.confidence) / 100.0
    if alpha >= 0.5:
        raise UserError(f"--confidence {args.confidence:g} is below 50%")
    if args.action == "changes":
        found = app.history_changes(
            args.history, since=args.since, repo=args.repo, alpha=alpha, confidence=args.confidence
        )
        print(text.changes_json(found) if args.json else text.changes_text(found), end="")
        return 0
    if args.action == "ack":
        from benchlang.app.history.acks import history_ack

        acks = history_ack(
            args.change, args.reason, args.history, alpha=alpha, confidence=args.confidence
        )
        print(text.ack_text(acks), end="")
        return 0
    if args.action == "report":
        path = app.history_report(
            args.output, args.history, alpha=alpha, confidence=args.confidence
        )
        print(f"wrote {path}")
        return 0
    margin = args.margin / 100.0
    checks = app.history_check(args.history, margin, alpha=alpha, confidence=args.confidence)
    if args.summary:
        with Path(args.summary).open("a", encoding="utf-8") as out:
            out.write(text.check_markdown(checks, margin, alpha))
    shown = text.check_json(checks, margin) if args.json else text.check_text(checks, margin, alpha)
    print(shown, end="")
    return 1 if any(c.fails for c in checks) else 0
