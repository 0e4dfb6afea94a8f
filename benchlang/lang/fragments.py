"""Incremental parsing for the language server (diagnostics as the user types).

An edit changes one statement of a spec and perhaps the number of lines above the others. So
the experiment's body is cut at the newlines between its top-level statements (a statement
ends where a line at the experiment's depth ends, unless a bracket is open), and each piece is
parsed alone, at line 2 of a stand-in experiment, with the whole parse's error recovery
(``Recovery``). A piece's parse depends on its text alone and is cached on it; its
AST and diagnostics are moved to the piece's first line when used (lines only: a piece starts
at column 1). A keystroke re-parses one piece; a line added or removed re-parses none, and a
typo re-parses only the piece it breaks, whose diagnostics (messages, spans, hints) are the
ones the whole parse reports.

The rule that makes a piece's parse the whole parse's: Lark's LALR parser, fed the whole
text, reaches each piece in the state that follows the experiment's ``{`` or one of its
statements, as the stand-in does, provided every piece *enters the list*: the first token
of the next piece (or the closing ``}``), fed where the previous piece's parse ends, is
shifted or refused on the experiment's statement list, not taken as the rest of the previous
statement (``factor a in`` / ``[1, 2]`` on the next line) nor refused inside it
(``_enters_list``). The whole text is parsed, as ``benchlang check`` parses it, when the cut
is not plain (a statement on the experiment's own line, text after its closing brace, a
brace left open, which swallows the statements after it), when a piece does not enter the
list, when a piece has a literal the parser takes but benchlang refuses, or when the syntax
errors reach the whole parse's limits (``MAX_SYNTAX_ERRORS``, ``MAX_RECOVERIES``).
tests/test_lsp_incremental.py checks the result against the whole parse on every edit of
seeded edit sequences.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

import attrs
from lark import Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lexer import LexerState, LexerThread, LineCounter, TextSlice
from lark.parsers.lalr_interactive_parser import InteractiveParser

from benchlang.lang import ast
from benchlang.lang.diagnostics import Diagnostic, Source, Span
from benchlang.lang.grammar import parser
from benchlang.lang.recovery import (
    MAX_RECOVERIES,
    MAX_SYNTAX_ERRORS,
    Recovery,
    literal_diagnostics,
    syntax_diagnostic,
)
from benchlang.lang.to_ast import ToAst

_SCAN = re.compile(r'"""[\s\S]*?"""|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|#[^\n]*|[\[\]{}()\n]')
_BLANK = re.compile(r"(?:\s|#[^\n]*)*")
_HEAD = "experiment _ {\n"
_FIRST_LINE = 2
"""The line of the stand-in where a piece starts; its positions are moved from there."""
CACHE_SIZE = 4096
"""Pieces kept: a few thousand lines' statements, for the few specs open in an editor."""


@attrs.frozen
class Piece:
    """One statement (or a few on consecutive lines) parsed alone, positions from line 2."""

    items: tuple[Any, ...] | None
    """The AST items; None when the piece has syntax errors."""
    diagnostics: tuple[Diagnostic, ...]
    recoveries: int
    end: Any = attrs.field(eq=False, repr=False)
    """Lark's interactive parser where the piece's text ends (``_enters_list``)."""


def cut(text: str) -> tuple[str, list[tuple[int, int]], int | None] | None:
    """The header (up to the experiment's ``{``), the pieces of its body as (start, end)
    offsets, each from the start of a line, and where the layout stops being plain (None:
    nowhere), from where the text is parsed as one; None when the header is not plain."""
    depth, header_end, piece_start = 0, -1, -1
    pieces: list[tuple[int, int]] = []
    for match in _SCAN.finditer(text):
        symbol = match.group()
        if symbol == "\n":
            if depth == 1:
                if piece_start < 0:
                    if not _BLANK.fullmatch(text, header_end, match.start()):
                        return text[:header_end], [], header_end  # a statement on its line
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
                if piece_start < 0:
                    return text[:header_end], [], header_end
                if symbol != "}" or not _BLANK.fullmatch(text, match.end()):
                    return text[:header_end], pieces, piece_start  # closed too early
                pieces.append((piece_start, match.start()))
                return text[:header_end], pieces, None
    if header_end < 0:
        return None
    if depth == 1 and pieces and _BLANK.fullmatch(text, piece_start):
        # A brace left open swallows every statement after it into the last piece.
        return text[:header_end], pieces[:-1], pieces[-1][0]
    return text[:header_end], pieces, piece_start if piece_start >= 0 else header_end


def parse_pieces(text: str) -> ast.Experiment | list[Diagnostic] | None:
    """The unflattened AST of ``text`` from its cached pieces, or its syntax errors as the
    whole parse reports them, or None: parse it whole."""
    found = cut(text)
    if found is None:
        return None
    header, pieces, tail = found
    head = _header(header)
    if head is None:
        return None
    placed: list[tuple[str, int, int]] = []
    line = header.count("\n") + 1
    previous = len(header)
    for start, end in pieces:
        line += text.count("\n", previous, start)
        previous = start
        piece = text[start:end]
        if not _BLANK.fullmatch(piece):
            placed.append((piece, line, start))
    before: str | None = None
    for index, (piece, _, start) in enumerate(placed):
        if _piece(piece) is None or not _enters_list(before, _first_terminal(piece)):
            tail, placed = start, placed[:index]
            break
        before = piece
    else:
        if tail is None and before is not None and not _enters_list(before, "RBRACE"):
            tail = pieces[-1][1]
    parsed = [(_piece(piece), line) for piece, line, _ in placed]  # every one parsed (above)
    broken = [(p, line) for p, line in parsed if p is not None and p.items is None]
    diagnostics = [_moved(d, line - _FIRST_LINE) for p, line in broken for d in p.diagnostics]
    recoveries = sum(p.recoveries for p, _ in broken)
    if len(diagnostics) >= MAX_SYNTAX_ERRORS or recoveries > MAX_RECOVERIES:
        return None
    if tail is not None:
        return _parse_tail(text, tail, before, diagnostics, recoveries)
    if diagnostics:
        return diagnostics
    items = [item for piece, line, _ in placed for item in _items_at(piece, line)]
    return ast.Experiment(head.name, head.span, tuple(items), head.version)


def _parse_tail(
    text: str, tail: int, before: str | None, diagnostics: list[Diagnostic], recoveries: int
) -> list[Diagnostic] | None:
    """The syntax errors of a text whose layout stops being plain at offset ``tail`` (a
    brace left open or closed too early): the whole parse resumed where the last plain piece
    ends, on the rest of the text, with the errors the pieces before reported. None when the
    rest parses (the AST is the whole parse's to build)."""
    start = _piece(before if before is not None else "")
    if start is None:
        return None
    source = Source("", text)
    recovery = Recovery(source)
    recovery.diagnostics.extend(diagnostics)
    recovery.seen_lines.update(d.span.line for d in diagnostics if d.span is not None)
    recovery.recoveries = recoveries
    counter = LineCounter("\n")
    counter.char_pos = tail
    counter.line = text.count("\n", 0, tail) + 1
    counter.line_start_pos = text.rfind("\n", 0, tail) + 1
    counter.column = tail - counter.line_start_pos + 1
    lexer = LexerThread(
        start.end.lexer_thread.lexer, LexerState(TextSlice(text, 0, len(text)), counter)
    )
    state = start.end.parser_state.copy(deepcopy_values=False)
    state.lexer = lexer
    try:
        InteractiveParser(start.end.parser, state, lexer).resume_parse()
        return None
    except UnexpectedToken as first:
        error = first
    except (LarkError, RecursionError):
        return None
    while True:  # Lark's own on_error loop (lark.parsers.lalr_parser.LALR_Parser.parse)
        if not recovery(error):
            return recovery.diagnostics or [syntax_diagnostic(error, source)]
        try:
            tree = error.interactive_parser.resume_parse()
            break
        except UnexpectedToken as again:
            if error.token.type == again.token.type == "$END" and (
                error.interactive_parser == again.interactive_parser
            ):
                return recovery.diagnostics
            error = again
        except (LarkError, RecursionError):
            return None
    if not recovery.diagnostics:
        return None
    return recovery.diagnostics + literal_diagnostics(tree)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _header(header: str) -> ast.Experiment | None:
    try:
        tree = parser().parse(header + "}")
    except (LarkError, RecursionError):
        return None
    return None if literal_diagnostics(tree) else ToAst().transform(tree)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _piece(piece: str) -> Piece | None:
    """Parse one piece in the stand-in, recovering from its syntax errors as the whole parse
    does; its end is where the stand-in's text ends (Lark reports the end of input there,
    kept as ``end``, and the stand-in's ``}`` is fed). None when it cannot stand for the
    whole parse: a literal benchlang refuses, or an error at or after that end."""
    source = Source("", _HEAD + piece)
    recovery = Recovery(source)
    ends: list[Any] = []

    def on_error(error: UnexpectedInput) -> bool:
        if isinstance(error, UnexpectedToken) and error.token.type == "$END" and not ends:
            ends.append(error.interactive_parser.copy(deepcopy_values=False))
            error.interactive_parser.feed_token(Token("RBRACE", "}"))
            return True
        return not ends and recovery(error)

    try:
        tree = parser().parse(source.text, on_error=on_error)
    except (LarkError, RecursionError):
        return None
    if not ends or literal_diagnostics(tree):
        return None
    if recovery.diagnostics:
        return Piece(None, tuple(recovery.diagnostics), recovery.recoveries, ends[0])
    return Piece(ToAst().transform(tree).items, (), 0, ends[0])


@functools.lru_cache(maxsize=CACHE_SIZE)
def _items_at(piece: str, line: int) -> tuple[Any, ...]:
    """A clean piece's items with the lines they have when the piece starts at ``line``."""
    parsed = _piece(piece)
    assert parsed is not None and parsed.items is not None
    return _moved(parsed.items, line - _FIRST_LINE)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _first_terminal(piece: str) -> str | None:
    """The kind of the piece's first token, by the parser's own lexer (``Lark.lex`` would
    build a new lexer, compiling its patterns, on every call); None for a character no
    token matches (a control character the parse skips with a diagnostic)."""
    try:
        for token in parser().parser.lexer.lex(LexerState(TextSlice.cast_from(piece)), None):
            return token.type
    except UnexpectedCharacters:
        return None
    return "RBRACE"


@functools.lru_cache(maxsize=CACHE_SIZE)
def _enters_list(before: str | None, terminal: str | None) -> bool:
    """Whether ``terminal``, fed where piece ``before`` ends (None: after the experiment's
    ``{``), is shifted onto the experiment's statement list or refused there, so that the
    next piece is parsed from where its stand-in parses it."""
    if terminal is None:
        return False
    if before is None:
        return True
    parsed = _piece(before)
    if parsed is None:
        return False
    trial = parsed.end.copy(deepcopy_values=False)
    quiet = copy.copy(trial.parser_state.parse_conf)
    quiet.callbacks = {}
    trial.parser_state.parse_conf = quiet
    try:
        trial.feed_token(Token(terminal, ""))
    except UnexpectedToken as error:
        return error.state.position in _list_states()
    return trial.parser_state.state_stack[-2] in _list_states()


@functools.cache
def _list_states() -> frozenset[int]:
    """The parser's states on the experiment's statement list: after its ``{`` and after
    a statement."""
    empty = _piece("")
    seed = _piece("seed 1\n")
    assert empty is not None and seed is not None
    trial = seed.end.copy(deepcopy_values=False)
    trial.feed_token(Token("SEED", "seed"))
    return frozenset((empty.end.parser_state.position, trial.parser_state.state_stack[-2]))


def _moved(node: Any, delta: int) -> Any:
    """``node`` (an AST or a diagnostic) with every span ``delta`` lines further down."""
    if delta == 0:
        return node
    if isinstance(node, Span):
        end = None if node.end_line is None else node.end_line + delta
        return Span(node.line + delta, node.column, end, node.end_column)
    if isinstance(node, tuple):
        return tuple(_moved(child, delta) for child in node)
    cls: type = type(node)
    if attrs.has(cls):
        changes = {}
        for name in _field_names(cls):
            value = getattr(node, name)
            moved = _moved(value, delta)
            if moved is not value:
                changes[name] = moved
        return attrs.evolve(node, **changes) if changes else node
    return node


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(field.name for field in attrs.fields(cls))
