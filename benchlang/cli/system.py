"""``benchlang system show|check|tune|clean``: the host state that disturbs measurements, compared
with a spec's ``machine`` block, and set or restored (docs/machine.md)."""

from __future__ import annotations

import argparse
import sys

from benchlang.cli import add_command
from benchlang.jsonout import document, dumps


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang system``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "The host state that disturbs measurements (governor, turbo, SMT, ASLR, swap, load, "
        "throttling, virtualization, cgroups): shown, checked against a spec, or tuned; and the "
        "cgroups of killed runs removed."
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="every item of this host's (or the spec's hosts') state")
    show.add_argument("spec", metavar="SPEC", nargs="?", help="read the spec's hosts instead")
    show.add_argument("--json", action="store_true", help="one JSON document")
    check = sub.add_parser(
        "check", help="exit 1 with one line per requirement of the spec's machine block unmet"
    )
    check.add_argument(
        "spec", metavar="SPEC", help="the spec whose machine block to check the hosts against"
    )
    tune = sub.add_parser(
        "tune", help="(root) set the spec's required state, or pyperf's defaults; --reset restores"
    )
    tune.add_argument("spec", metavar="SPEC", nargs="?", help="set what this spec requires")
    tune.add_argument("--reset", action="store_true", help="restore what tune changed")
    sub.add_parser(
        "clean",
        help="remove the cgroups runs killed with SIGKILL left behind (a run does it too, "
        "in its own cgroup); says so on stderr",
    )
    p.set_defaults(func=run)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    add_command(subparsers, "system")


def run(args: argparse.Namespace) -> int:
    from benchlang.app import system
    from benchlang.cli.common import load_experiment

    if args.action == "clean":
        lines, done = system.clean()
        for line in lines:
            print(line, file=sys.stderr)
        return 0 if done else 1
    experiment = load_experiment(args.spec) if getattr(args, "spec", None) else None
    if args.action == "tune":
        lines, done = system.tune(experiment, args.spec, reset=args.reset)
        for line in lines:
            print(line, file=sys.stdout if done else sys.stderr)
        return 0 if done else 1
    states = system.read_states(experiment, args.spec)
    if args.action == "check":
        assert experiment is not None  # check's SPEC is required (add_parser)
        unmet = system.unmet_requirements(states, experiment)
        for line in unmet:
            print(line)
        if not unmet:
            has = experiment.machine is not None
            print(
                f"the hosts meet the machine block of {args.spec}"
                if has
                else f"{args.spec} has no machine block: nothing to check"
            )
        return 1 if unmet else 0
    built = system.builds()
    if args.json:
        hosts = [{**s.to_dict(), "items": dict(s.items())} for s in states.values()]
        print(dumps(document("system", 1, {"hosts": hosts, "builds": built})))
        return 0
    mine = [(f"{name} build", text) for name, text in built.items()]
    for host, state in states.items():
        if len(states) > 1:
            print(f"host {host}")
        width = max(len(k) for k, _ in [*state.items(), *mine])
        for key, text in state.items():
            print(f"{key:<{width}}  {text}")
    if len(states) > 1:
        print("this installation")
    for key, text in mine:
        print(f"{key:<{width}}  {text}")
    return 0
