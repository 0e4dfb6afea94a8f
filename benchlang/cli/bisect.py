"""``benchlang bisect SPEC --good REV --bad REV``: the commit that made a spec slower, found
by ``git bisect run`` with benchlang as the oracle (docs/history.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlang.cli import add_command
from benchlang.errors import UserError


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang bisect``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Drive git bisect run with benchlang as the oracle: the endpoints are run once, each "
        "step builds, runs the spec and compares it with both (good, bad, or skip when not "
        "decisive or the build fails). The repository is left as it was."
    )
    p.add_argument("spec", metavar="SPEC", nargs="?")
    p.add_argument("--good", metavar="REV")
    p.add_argument("--bad", metavar="REV")
    p.add_argument("--build", metavar="CMD", help="run at each commit before the spec")
    p.add_argument("--repo", metavar="DIR", help="the git repository (default: the spec's)")
    p.add_argument("--keep", metavar="DIR", help="keep the stores and evidence here")
    p.add_argument("--json", action="store_true")
    p.add_argument("--step", metavar="STATE", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang bisect`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "bisect")


def _evidence(step: dict) -> str:
    parts = []
    for e in step["evidence"]:
        if "reason" in e:
            parts.append(e["reason"])
        else:
            g, b = e["vs_good"], e["vs_bad"]
            parts.append(
                f"{e['configuration']}: x{g[0]:.3g} vs good [{g[1]:.3g}, {g[2]:.3g}], "
                f"x{b[0]:.3g} vs bad [{b[1]:.3g}, {b[2]:.3g}]"
            )
    return "; ".join(parts)


def run(args: argparse.Namespace) -> int:
    from benchlang.app import bisect as app

    if args.step:
        return app.step(Path(args.step))
    if not (args.spec and args.good and args.bad):
        raise UserError("bisect needs SPEC, --good REV and --bad REV")
    result = app.bisect(
        args.spec, args.good, args.bad, build=args.build, repo=args.repo, keep=args.keep
    )
    if args.json:
        from benchlang.jsonout import document, dumps

        print(dumps(document("bisect", 1, result.to_dict())))
    else:
        for s in result.steps:
            print(f"{s['commit'][:12]}  {s['verdict']:4}  {_evidence(s)}")
        if result.first_bad:
            print(f"first bad commit: {result.first_bad} {result.subject}")
        else:
            print("no single first bad commit: the evidence was not decisive (see the log)")
        print(f"{result.runs} runs of the spec (2 endpoints, {len(result.steps)} steps)")
        print("bisect log:")
        print(result.log.rstrip())
    return 0 if result.first_bad else 1
