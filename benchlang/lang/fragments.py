"""Incremental parsing for the language server (issue 39: diagnostics as the user types).

A keystroke changes one statement of a spec; the others are the same text at the same place.
So the experiment's body is cut at the newlines between its top-level statements (the language
is line-oriented: a statement ends where a line at the experiment's depth ends), and each piece
is parsed alone, inside a stand-in experiment padded with newlines so that its tokens get the
lines and columns they have in the whole text. A piece's syntax tree, and the AST built from
it, depend only on its text and its first line, so they are cached on that pair: a change
inside one line re-parses one piece; a line added or removed re-parses the pieces below it.

Whenever the cut is not plain (a statement on the experiment's own line, text after its
closing brace, a piece that does not parse alone, a literal the parser refuses), this returns
None and the caller parses the whole text, which reports every syntax error as before. The
result is the same AST as the whole parse (tests/test_lsp_incremental.py checks it on every
edit of seeded edit sequences).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from lark import Tree
from lark.exceptions import LarkError

from benchlang.lang import ast
from benchlang.lang.diagnostics import Diagnostic
from benchlang.lang.grammar import parser
from benchlang.lang.to_ast import ToAst

_SCAN = re.compile(r'"""[\s\S]*?"""|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|#[^\n]*|[\[\]{}()\n]')
_BLANK = re.compile(r"(?:\s|#[^\n]*)*")
_HEAD = "experiment _ {"
CACHE_SIZE = 4096
"""Pieces kept: a few thousand lines' statements, for the few specs open in an editor."""

LiteralCheck = Callable[[Tree], list[Diagnostic]]


def cut(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """The header (up to the experiment's ``{``) and the pieces of its body as (start, end)
    offsets, each from the start of a line; None when the layout is not plain."""
    depth, header_end, piece_start = 0, -1, -1
    pieces: list[tuple[int, int]] = []
    for match in _SCAN.finditer(text):
        symbol = match.group()
        if symbol == "\n":
            if depth == 1:
                if piece_start < 0:
                    if not _BLANK.fullmatch(text, header_end, match.start()):
                        return None  # a statement on the experiment's own line
                else:
                    pieces.append((piece_start, match.end()))
                piece_start = match.end()
        elif symbol in "[{(":
            depth += 1
            if depth == 1:
                if symbol != "{" or header_end >= 0:
                    return None
                header_end = match.end()
        elif symbol in "]})":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                if piece_start < 0 or not _BLANK.fullmatch(text, match.end()):
                    return None
                pieces.append((piece_start, match.start()))
                return text[:header_end], pieces
    return None


def parse_pieces(text: str, literals: LiteralCheck) -> ast.Experiment | None:
    """The unflattened AST of ``text`` from its cached pieces, or None (parse it whole)."""
    found = cut(text)
    if found is None:
        return None
    header, pieces = found
    head = _header(header, literals)
    if head is None:
        return None
    items: list[object] = []
    line = header.count("\n") + 1
    previous = len(header)
    for start, end in pieces:
        line += text.count("\n", previous, start)
        previous = start
        piece = text[start:end]
        if _BLANK.fullmatch(piece):
            continue
        parsed = _piece(piece, line, literals)
        if parsed is None:
            return None
        items.extend(parsed)
    return ast.Experiment(head.name, head.span, tuple(items), head.version)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _header(header: str, literals: LiteralCheck) -> ast.Experiment | None:
    return _parse(header + "}", literals)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _piece(piece: str, line: int, literals: LiteralCheck) -> tuple[object, ...] | None:
    """The items of one piece starting at column 1 of ``line`` (at least 2)."""
    parsed = _parse(_HEAD + "\n" * (line - 1) + piece + "\n}", literals)
    return None if parsed is None else parsed.items


def _parse(text: str, literals: LiteralCheck) -> ast.Experiment | None:
    try:
        tree = parser().parse(text)
    except (LarkError, RecursionError):
        return None
    if literals(tree):
        return None
    return ToAst().transform(tree)
