"""``benchlang bisect SPEC --good REV --bad REV``: the commit that made a spec slower, found
by ``git bisect run`` with benchlang as the oracle, each step decided within one session
(docs/history.md#bisect)."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlang.cli import add_command
from benchlang.cli.options import percent_argument
from benchlang.errors import UserError


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of rounds: {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"at least 2 rounds (a t interval needs 2): {text!r}")
    return value


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang bisect``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Drive git bisect run with benchlang as the oracle. The good and bad endpoints are "
        "built once in worktrees of equal-length paths and kept; each step builds the commit "
        "and runs it with both endpoints interleaved in random order within rounds, in one "
        "session, and decides there whether it is nearer good or bad (the within-round "
        "contrast of log values with a t interval). The error (100% - confidence) is spent "
        "over the steps run: 3/4 of it by Bonferroni over the ceil(log2 n) planned steps, and "
        "each step beyond them (skips, merges) half of what is left, so any number of steps "
        "stays within it; an undecided step runs more rounds up to "
        "--max-rounds, then is skipped with its reason. The repository is left as it was."
    )
    p.add_argument("spec", metavar="SPEC", nargs="?", help="the spec whose benchmarks regressed")
    p.add_argument("--good", metavar="REV", help="a revision before the regression")
    p.add_argument("--bad", metavar="REV", help="a revision with the regression")
    p.add_argument("--build", metavar="CMD", help="run in each build's worktree before its runs")
    p.add_argument("--repo", metavar="DIR", help="the git repository (default: the spec's)")
    p.add_argument("--keep", metavar="DIR", help="keep the stores and evidence here")
    p.add_argument(
        "--rounds", metavar="N", type=_rounds, help="rounds of a step's session (default: runs)"
    )
    p.add_argument(
        "--max-rounds",
        metavar="N",
        type=_rounds,
        help="rounds a step may pool before it is skipped (default: 3 x --rounds)",
    )
    p.add_argument(
        "--confidence",
        metavar="PCT",
        type=percent_argument,
        default=95.0,
        help="that the named commit is right, over all steps (default 95%%)",
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    p.add_argument("--step", metavar="STATE", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang bisect`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "bisect")


def _ratio(name: str, r: list[float | None]) -> str:
    if None in r:
        return f"no ratio to {name}"
    return f"x{r[0]:.3g} of {name} [{r[1]:.3g}, {r[2]:.3g}]"


def _evidence(step: dict) -> str:
    parts = [
        f"{e['configuration']}: {e['reading']}: "
        f"{_ratio('good', e['vs_good'])}, {_ratio('bad', e['vs_bad'])}"
        for e in step["evidence"]
    ]
    if step.get("reason"):
        parts.append(step["reason"])
    rounds = max((e["rounds"] for e in step["evidence"]), default=0)
    tail = f" ({rounds} rounds, {step['sessions']} session{'s' * (step['sessions'] != 1)})"
    return "; ".join(parts) + (tail if rounds else "")


def run(args: argparse.Namespace) -> int:
    from benchlang.app.history import bisect as app

    if args.step:
        return app.step(Path(args.step))
    if not (args.spec and args.good and args.bad):
        raise UserError("bisect needs SPEC, --good REV and --bad REV")
    result = app.bisect(
        args.spec,
        args.good,
        args.bad,
        build=args.build,
        repo=args.repo,
        keep=args.keep,
        rounds=args.rounds,
        max_rounds=args.max_rounds,
        confidence=args.confidence,
    )
    if args.json:
        from benchlang.jsonout import document, dumps

        print(dumps(document("bisect", 1, result.to_dict())))
        return 0 if result.first_bad else 1
    m = result.method
    for e in result.endpoints:
        seen = "regressed" if e["regressed"] else "not worse with confidence"
        print(f"endpoints  {e['configuration']}: {_ratio('good', e['bad_vs_good'])}: {seen}")
    print(
        f"each step: one session of {m['rounds_per_look']} rounds (up to "
        f"{m['rounds_per_look'] * m['looks_per_step']}), at {m['level_per_look']:.3g}% "
        f"(Bonferroni: {100 * m['planned_share'] * (1 - m['confidence'] / 100):.3g}% of "
        f"{100 * (1 - m['confidence'] / 100):.3g}% over {m['planned_steps']} planned steps; "
        "each step beyond them spends half of what is left)"
    )
    if m.get("steps_beyond_planned"):
        print(
            f"{m['steps_run']} steps run, {m['steps_beyond_planned']} beyond the planned "
            f"{m['planned_steps']} (skipped commits): those ran at "
            + ", ".join(f"{s['level']:.4g}%" for s in result.steps[m["planned_steps"] :])
        )
    for s in result.steps:
        print(f"{s['commit'][:12]}  {s['verdict']:4}  {_evidence(s)}")
    if result.first_bad:
        print(f"first bad commit: {result.first_bad} {result.subject}")
    else:
        print("no single first bad commit: the evidence was not decisive (see the log)")
    print(f"{result.runs} sessions (1 of the endpoints, {len(result.steps)} steps)")
    print("bisect log:")
    print(result.log.rstrip())
    return 0 if result.first_bad else 1
