"""``benchlang lsp``: the language server over stdio, for editors (docs/lsp.md)."""

from __future__ import annotations

import argparse

from benchlang.cli import add_command
from benchlang.errors import UserError


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang lsp``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Serve the Language Server Protocol over stdin/stdout: the checker's diagnostics as "
        "you type, hover, completion, definitions, references, the outline and formatting."
    )
    p.add_argument(
        "--stdio", action="store_true", help="talk over stdin/stdout (the default and only way)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from benchlang.lsp.server import serve
    except ImportError as err:
        if err.name not in ("pygls", "lsprotocol"):
            raise
        raise UserError(
            "the language server needs pygls, which is not installed",
            "pip install 'benchlang[lsp]'",
        ) from None
    serve()
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang lsp`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "lsp")
