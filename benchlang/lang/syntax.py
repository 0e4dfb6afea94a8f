"""Parse spec text into the syntax tree, reporting every syntax error with a position."""

from __future__ import annotations

import re

from lark.exceptions import LarkError, UnexpectedInput

from benchlang.lang import ast
from benchlang.lang.diagnostics import Diagnostic, Source, Span, SpecError
from benchlang.lang.grammar import parser
from benchlang.lang.recovery import MAX_DIGITS as MAX_DIGITS
from benchlang.lang.recovery import Recovery, literal_diagnostics, syntax_diagnostic
from benchlang.lang.to_ast import ToAst

MAX_NESTING = 64
"""Deepest nesting of brackets and braces a spec may have; real specs need about 4. The bound
keeps every recursive pass (tree building, error recovery, checking) far from Python's
recursion limit, so deep input gets a diagnostic instead of a RecursionError."""
MAX_BYTES = 1 << 20
"""Largest spec benchlang reads (1 MiB, in UTF-8); real specs are a few KB. Parsing, checking
and formatting are linear in the text, about a second per 100 KB, so the bound keeps every
command and the language server's answer within about ten seconds."""
_NESTING = re.compile(r'"""[\s\S]*?"""|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|#[^\n]*|[\[\]{}()]')
PIECES = {"on": False}
"""Parse a spec from cached pieces (benchlang.lang.fragments) when it can: on in the language
server, which parses the same text again after every keystroke; off for one-shot commands."""


def decode(path: str, data: bytes) -> Source:
    """Decode spec bytes as UTF-8, or fail with a diagnostic at the first bad byte."""
    try:
        return Source(path, data.decode("utf-8"))
    except UnicodeDecodeError as err:
        head = data[: err.start]
        line = head.count(b"\n") + 1
        column = err.start - (head.rfind(b"\n") + 1) + 1
        text = data.decode("utf-8", errors="replace")
        raise SpecError(
            Source(path, text),
            [
                Diagnostic(
                    "the file is not UTF-8 text", Span(line, column), "is this a .bench spec?"
                )
            ],
        ) from None


def parse(source: Source) -> ast.Experiment:
    """Parse a spec; raise SpecError with every syntax error found (recovering between them)."""
    on_error = Recovery(source)
    diagnostics = on_error.diagnostics

    if not source.text.strip():
        raise SpecError(
            source,
            [
                Diagnostic(
                    "the spec is empty",
                    Span(1, 1),
                    "a spec starts with 'benchlang 1' and an 'experiment NAME { ... }' block",
                )
            ],
        )
    check_size(source)
    _check_nesting(source)
    if PIECES["on"]:
        from benchlang.lang.fragments import parse_pieces

        pieced = parse_pieces(source.text)
        if isinstance(pieced, ast.Experiment):
            return _flatten(pieced)
        if pieced is not None:
            raise SpecError(source, pieced)
    try:
        tree = parser().parse(source.text, on_error=on_error)
    except UnexpectedInput as error:
        if not diagnostics:
            diagnostics.append(syntax_diagnostic(error, source))
        raise SpecError(source, diagnostics) from None
    except LarkError as error:
        raise SpecError(
            source, diagnostics or [Diagnostic(f"cannot parse: {error}", Span(1, 1))]
        ) from None
    diagnostics += literal_diagnostics(tree)
    if diagnostics:
        raise SpecError(source, diagnostics)
    experiment = ToAst().transform(tree)
    return _flatten(experiment)


def check_size(source: Source) -> None:
    """Refuse a spec larger than MAX_BYTES before reading it, pointing at where it passes
    the bound."""
    text = source.text
    if len(text) <= MAX_BYTES // 4 or len(text.encode("utf-8", "surrogatepass")) <= MAX_BYTES:
        return
    offset = len(text.encode("utf-8", "surrogatepass")[:MAX_BYTES].decode("utf-8", "ignore"))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    size = len(text.encode("utf-8", "surrogatepass"))
    raise SpecError(
        source,
        [
            Diagnostic(
                f"the spec is {_megabytes(size)}, more than benchlang reads "
                f"({_megabytes(MAX_BYTES)})",
                Span(line, column),
                "a spec describes one experiment in a few KB; split this one into several",
            )
        ],
    )


def _megabytes(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def _check_nesting(source: Source) -> None:
    """Refuse nesting deeper than MAX_NESTING before parsing (one linear scan that skips
    strings and comments), pointing at the bracket that goes too deep."""
    depth = 0
    text = source.text
    for match in _NESTING.finditer(text):
        symbol = match.group()
        if symbol in ("[", "{", "("):
            depth += 1
            if depth > MAX_NESTING:
                offset = match.start()
                line = text.count("\n", 0, offset) + 1
                column = offset - (text.rfind("\n", 0, offset) + 1) + 1
                raise SpecError(
                    source,
                    [
                        Diagnostic(
                            f"brackets nest more than {MAX_NESTING} deep",
                            Span(line, column, line, column + 1),
                            "a spec nests a few blocks and lists; close the brackets opened above",
                        )
                    ],
                )
        elif symbol in ("]", "}", ")"):
            depth = max(0, depth - 1)


def _flatten(experiment: ast.Experiment) -> ast.Experiment:
    """Env blocks and the analysis block come back as tuples; lay them out as items."""
    items = []
    for item in experiment.items:
        if (
            isinstance(item, tuple)
            and item
            and isinstance(item[0], ast.Block)
            and item[0].keyword == "analysis"
        ):
            items.append(item[0])
            items.extend(item[1])
        elif isinstance(item, tuple):
            items.extend(item)
        else:
            items.append(item)
    return ast.Experiment(experiment.name, experiment.span, tuple(items), experiment.version)
