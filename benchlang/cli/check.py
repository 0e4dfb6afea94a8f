"""``benchlang check``: validate specs; every error with file:line:col and a caret."""

from __future__ import annotations

import argparse
import sys

from benchlang.app import blas_threads  # noqa: F401  (before numpy: see its docstring)
from benchlang.app.spec import counts
from benchlang.cli import add_command
from benchlang.cli.common import SpecFailed, load_experiment
from benchlang.report.wording import plural


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang check``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Parse and check specs; report every error. Exit status 2 when any spec has an error."
    )
    p.add_argument("specs", nargs="+", metavar="SPEC", help=".bench file(s)")
    p.set_defaults(func=run, exit_at_once=True)  # cli.leave: it opens nothing but its output


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.specs:
        try:
            experiment = load_experiment(path)
        except SpecFailed:
            status = 2
            continue
        if experiment.profiles:  # only a spec with profiles loads the profiling module
            from benchlang.app.profile import span_warnings

            for warning in span_warnings(path, experiment):
                print(warning, file=sys.stderr)
        n_configs, trials, note = counts(experiment, path)
        print(
            f"{path}: ok: experiment {experiment.name}, {plural(n_configs, 'configuration')}, "
            f"{plural(trials, 'trial')}" + (f" ({note})" if note else "")
        )
    return status


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang check`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "check")
