"""The command line: argument parsing only, each command a few calls into ``benchlang.app``.

Commands are found through the lazy table ``COMMANDS`` (name -> module, one-line help): the
top-level ``--help`` is built from the table alone, and only the command being run (or asked
for ``--help``) is imported. A command module defines ``configure(parser)``, which adds its
arguments and sets ``func`` to a function ``(args) -> int`` returning the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple, NoReturn

from benchlang import __version__


class Command(NamedTuple):
    """Where a command lives and the line ``benchlang --help`` shows for it."""

    module: str
    help: str


GROUPS: dict[str, tuple[str, ...]] = {
    "Run and read": (
        "check", "fmt", "plan", "run", "results", "analyze", "record", "report", "order", "figure",
    ),
    "Compare and track": ("compare", "diff", "history", "bisect", "composite"),
    "Publish and replicate": ("bundle", "replicate"),
    "Design and statistics": (
        "size", "advise", "simulate-aa", "aa-check", "profile", "stopping-eval",
    ),
    "Tools": ("import", "store", "plugins", "hosts", "system", "lsp"),
}  # fmt: skip
"""How ``benchlang --help`` groups the commands: what a newcomer does first, first. Every
command of ``COMMANDS`` is in exactly one group (tests/test_cli_commands.py)."""


COMMANDS: dict[str, Command] = {
    "check": Command("benchlang.cli.check", "validate .bench specs"),
    "fmt": Command("benchlang.cli.fmt", "rewrite specs in the canonical layout, comments kept"),
    "plan": Command("benchlang.cli.plan", "show the compiled plan"),
    "run": Command("benchlang.cli.run", "run an experiment"),
    "results": Command("benchlang.cli.results", "summarise a store per configuration"),
    "analyze": Command("benchlang.cli.analyze", "KPIs, variability scores and independence tests"),
    "record": Command("benchlang.cli.record", "the reproducibility record of a run"),
    "report": Command("benchlang.cli.report", "one self-contained HTML page of a run, with plots"),
    "order": Command("benchlang.cli.order", "test whether trial order changed the results"),
    "figure": Command(
        "benchlang.cli.figure", "the papers' figures of a run: list, or export SVG/PDF/PNG"
    ),
    "import": Command(
        "benchlang.cli.import_data",
        "import results of hyperfine, pyperf, pytest-benchmark, Google Benchmark, criterion, "
        "asv or a per-trial CSV",
    ),
    "bundle": Command(
        "benchlang.cli.bundle", "archive a run to publish: spec, plan, store, record"
    ),
    "replicate": Command(
        "benchlang.cli.replicate", "check a bundle, rerun it, judge the replication"
    ),
    "compare": Command(
        "benchlang.cli.compare", "compare shell commands (as hyperfine does), or SPEC --base REF"
    ),
    "diff": Command("benchlang.cli.diff", "before/after of one spec on two stores; a gate"),
    "size": Command("benchlang.cli.size", "minimal number of trials for a one-sided percentile CI"),
    "profile": Command(
        "benchlang.cli.profile", "find seasonal periods in regularly sampled condition data"
    ),
    "stopping-eval": Command(
        "benchlang.cli.stopping_eval", "judge the adaptive stopping rule on recorded sample streams"
    ),
    "simulate-aa": Command(
        "benchlang.cli.simulate_aa",
        "A/A simulation: Type I error of each bootstrap scheme for an A/B layout",
    ),
    "advise": Command("benchlang.cli.advise", "choose the A/B layout and sizes from a pilot run"),
    "aa-check": Command(
        "benchlang.cli.aa_check", "empirical Type I error of each compare over A/A stores"
    ),
    "composite": Command(
        "benchlang.cli.composite", "one weighted effect over benchmarks, with both SEs"
    ),
    "plugins": Command("benchlang.cli.plugins", "list installed backends and statistics plugins"),
    "hosts": Command("benchlang.cli.hosts", "list or release the hosts a run's backend allocated"),
    "system": Command(
        "benchlang.cli.system", "show, check or tune the host state that disturbs measurements"
    ),
    "history": Command(
        "benchlang.cli.history", "performance per commit: add, changes, check (CI gate), report"
    ),
    "bisect": Command(
        "benchlang.cli.bisect", "find the commit that made a spec slower (git bisect run)"
    ),
    "lsp": Command("benchlang.cli.lsp", "the language server for editors, over stdio"),
    "store": Command("benchlang.cli.store", "migrate a store of an earlier schema"),
}


class _LazyParser(argparse.ArgumentParser):
    """A command's parser that imports its module the first time it parses or shows help."""

    def __init__(self, *args: Any, module: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._module = module

    def _load(self) -> None:
        if self._module is not None:
            module, self._module = self._module, None
            importlib.import_module(module).configure(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """A command whose ``configure`` sets ``parser.intermixed`` takes its positional
        arguments before and after options alike (``figure STORE -o DIR cdf order-ci``)."""
        self._load()
        if getattr(self, "intermixed", False) and not getattr(self, "_mixing", False):
            self._mixing = True  # parse_known_intermixed_args calls back in here twice
            try:
                return super().parse_known_intermixed_args(args, namespace)
            finally:
                self._mixing = False
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._load()
        return super().format_help()

    def format_usage(self) -> str:
        self._load()
        return super().format_usage()


def add_command(subparsers: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    """Register command ``name`` (from the table) on any subparsers action, configured now.

    For tests and tools that build their own parser around one command module.
    """
    parser = subparsers.add_parser(name, help=COMMANDS[name].help)
    importlib.import_module(COMMANDS[name].module).configure(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The whole parser; command modules load only when their command is parsed."""
    parser = argparse.ArgumentParser(
        prog="benchlang",
        description="Rigorous performance experiments from a .bench spec.",
        epilog=grouped_commands(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"benchlang {__version__}")
    subparsers = parser.add_subparsers(
        dest="command",
        metavar="COMMAND",
        parser_class=_LazyParser,
        help="one of the commands below",
    )
    for name, command in COMMANDS.items():
        subparsers.add_parser(name, module=command.module)
    return parser


def grouped_commands(width: int = 15) -> str:
    """The commands by group, one line each (``GROUPS``), for the top-level ``--help``."""
    lines = []
    for group, names in GROUPS.items():
        lines.append(f"{group.lower()}:")
        for name in names:
            pad = width - len(name) if len(name) < width else 1
            lines.append(f"  {name}{' ' * pad}{COMMANDS[name].help}")
        lines.append("")
    lines.append("`benchlang COMMAND --help` describes a command's arguments.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; people's errors print as ``benchlang: error: ...`` and exit 2."""
    parser = build_parser()
    return _dispatch(parser, parser.parse_args(argv))  # --version, --help exit in the parse


def entry() -> NoReturn:
    """``python -m benchlang`` and the ``benchlang`` script: ``main``, then the exit. A command
    that sets ``exit_at_once`` (the ``history`` commands: when they return, every file they
    wrote and every store and history they opened is closed) leaves without the interpreter's
    teardown (``leave``). Its standard output and error are ``cli.output``'s: a closed pipe on
    the output ends it with exit 0, or with its verdict where its status is one; a write that
    fails otherwise ends in one line and a non-zero exit; the error's failures change nothing."""
    from benchlang import process
    from benchlang.cli import output

    process.command = True
    output.install()
    parser = build_parser()
    try:
        args = parser.parse_args()
    except SystemExit as done:  # --help, --version, a usage error
        raise SystemExit(output.flushed(output.status(done.code))) from None
    output.judge(args)
    code = output.flushed(_dispatch(parser, args))
    if getattr(args, "exit_at_once", False):
        leave(code)
    raise SystemExit(code)


def leave(code: int) -> None:
    """Exit now, as the interpreter would but without its teardown: standard output and error
    flushed, the ``atexit`` functions run, then ``os._exit``. The teardown (every module's
    objects freed, about half of it a last collection) cost 0.01 CPU s of a ``history add`` of
    kept points, 0.03 s of one that compiles the spec (docs/benchmarks.md). Returns, for the
    interpreter's own exit, where a flush fails (a closed pipe: it reports it as it always
    has; ``entry`` flushed them first, so only a write after its own flush fails here) and
    where a thread other than the main one is alive (the exit waits for it)."""
    import atexit
    import os

    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    os._exit(code)


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from benchlang.cli.common import SpecFailed
    from benchlang.errors import UserError

    try:
        return int(args.func(args) or 0)
    except SpecFailed:
        return 2
    except UserError as err:
        print(f"benchlang: error: {err.message}", file=sys.stderr)
        if err.hint:
            print(f"  hint: {err.hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("benchlang: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        from benchlang.cli import output

        return output.closed(args)
    except Exception as err:
        written = sys.modules.get("benchlang.cli.output")
        if written is not None and isinstance(err, written.OutputError):
            return written.cannot_write(err, 0)
        if not _spec_error(err):
            raise
        print(str(err), file=sys.stderr)
        return 2


def _spec_error(err: Exception) -> bool:
    """Whether ``err`` is a spec's diagnostics (``lang.diagnostics.SpecError``): none can be
    raised before that module is loaded, so a command that parses no spec does not load it."""
    diagnostics = sys.modules.get("benchlang.lang.diagnostics")
    return diagnostics is not None and isinstance(err, diagnostics.SpecError)
