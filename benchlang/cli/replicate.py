"""``benchlang replicate``: check a bundle, rerun its plan here, and say whether it agrees."""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from pathlib import Path

from benchlang.app.replicate import judge, open_bundle
from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.lang.rewrite import replace_hosts

EXIT = {"agree": 0, "disagree": 1, "could not compare": 3}


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang replicate``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Check a bundle (hashes, versions), rerun its plan on this machine (or only "
        "re-analyse it with --analyze-only) and judge the replication per metric and "
        "configuration: the new KPIs against the published variability score (TriScale), "
        "the shift with its interval, the host facts that differ. Exit status: 0 agree, "
        "1 disagree, 3 could not compare, 2 a bad bundle or option (docs/replicate.md)."
    )
    p.add_argument("bundle", metavar="BUNDLE")
    p.add_argument("--workdir", help="where to extract and run (default: BUNDLE's name + .d)")
    p.add_argument(
        "--analyze-only",
        action="store_true",
        help="check and re-analyse the published trials; run nothing",
    )
    p.add_argument("--store", help="the replication's store (default: WORKDIR/replication.sqlite)")
    p.add_argument(
        "--hosts",
        metavar="STATEMENT",
        help="run on these hosts instead of the published ones: the spec's hosts statement "
        'without the keyword, e.g. \'ssh { nodes ["n1", "n2"] user "me" }\' or \'local\'',
    )
    p.set_defaults(func=run)


def _number(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else "-"


def run(args: argparse.Namespace) -> int:
    bundle = Path(args.bundle)
    workdir = Path(args.workdir or f"{bundle.name.removesuffix('.tar.gz')}.d").resolve()
    opened = open_bundle(bundle, workdir)
    print(f"bundle {bundle}: experiment {opened.experiment}, plan {opened.plan_hash[:19]}")
    for note in opened.version_notes:
        print(f"note: {note}")
    if opened.problems:
        for problem in opened.problems:
            print(f"problem: {problem}")
        raise UserError(f"{bundle} does not match its manifest: it cannot be trusted")
    if args.analyze_only:
        replication = opened.store
        print("re-analysing the published trials (--analyze-only)")
    else:
        replication = Path(args.store or workdir / "replication.sqlite").resolve()
        spec = opened.spec
        if args.hosts:
            spec = spec.with_name(f"{spec.stem}.hosts{spec.suffix}")
            spec.write_text(replace_hosts(opened.spec.read_text(), args.hosts, str(opened.spec)))
            print(f"hosts replaced: {spec.name} runs on 'hosts {args.hosts.strip()}'")
        command = [
            sys.executable, "-m", "benchlang", "run", str(spec),
            "--store", str(replication), "--seed", str(opened.seed), "--quiet",
            *(["--resume"] if replication.exists() else []),
        ]  # fmt: skip
        print(f"rerunning the plan: {' '.join(command[2:])}")
        status = subprocess.run(command, cwd=spec.parent).returncode
        if status not in (0, 1):
            print(f"the rerun stopped with exit status {status}")
            return status
    result = judge(opened.store, replication)
    print("metric  configuration  published score  new KPIs  shift new/published [95%]  verdict")
    for v in result.verdicts:
        bounds = f"[{_number(v.bounds[0])}, {_number(v.bounds[1])}]" if v.bounds else "-"
        kpis = ", ".join(_number(k) for k in v.new_kpis) or "-"
        shift = f"{_number(v.ratio)} [{_number(v.lower)}, {_number(v.upper)}]"
        print(f"{v.metric}  {v.configuration}  {bounds}  {kpis}  {shift}  {v.verdict}: {v.why}")
    for fact in result.facts_differ:
        print(f"facts differ: {fact}")
    for note in result.notes:
        print(f"note: {note}")
    disagreeing = [
        f"{v.metric} {v.configuration}" for v in result.verdicts if v.verdict == "disagree"
    ]
    outcome = result.outcome
    print(
        f"replication: {outcome.upper()}" + (f" ({'; '.join(disagreeing)})" if disagreeing else "")
    )
    return EXIT[outcome]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang replicate`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "replicate")
