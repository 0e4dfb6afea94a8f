"""Error recovery of the parser: one diagnostic per syntax error with what was expected there,
and repairs by insertion or substitution so that the parse goes on to find the next error.
``syntax.parse`` uses it on a whole text, ``fragments`` on one statement of it (the language
server), with the same messages, spans and hints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from benchlang.lang.diagnostics import Diagnostic, Source, Span
from benchlang.lang.grammar import keyword_of_terminal
from benchlang.lang.to_ast import span_of, string_value

if TYPE_CHECKING:
    from lark.parsers.lalr_interactive_parser import InteractiveParser

_DESCRIPTIONS = {
    "NAME": "a name",
    "STRING": "a string",
    "INT": "an integer",
    "FLOAT": "a number",
    "NEGATIVE": "a number",
    "PERCENT": "a percentage (95%)",
    "DURATION": "a duration (30s, 5m, 2h)",
    "$END": "the end of the file",
}
MAX_SYNTAX_ERRORS = 20
MAX_RECOVERIES = 200
MAX_DIGITS = 100
"""Longest number literal: far more than any setting needs, and short enough that every number
converts to int and float (Python refuses int() of more than 4300 digits; floats overflow)."""
_LITERALS = frozenset(("STRING", "INT", "FLOAT", "NEGATIVE", "PERCENT", "DURATION"))


def _describe_expected(expected: set[str]) -> list[str]:
    keywords = keyword_of_terminal()
    names = []
    for term in sorted(expected):
        if term in keywords:
            names.append(f"'{keywords[term]}'")
        elif term in _DESCRIPTIONS:
            names.append(_DESCRIPTIONS[term])
    return sorted(set(names))


def syntax_diagnostic(error: UnexpectedInput, source: Source) -> Diagnostic:
    if isinstance(error, UnexpectedToken):
        token = error.token
        if token.type == "$END":
            line = max(1, source.text.count("\n") + (0 if source.text.endswith("\n") else 1))
            column = len(source.line_text(line)) + 1
            expected = _describe_expected(set(error.expected))
            hint = "a block is not closed: add the missing '}'" if "'}'" in expected else None
            return Diagnostic("unexpected end of file", Span(line, max(column, 1)), hint)
        span = Span(token.line, token.column, token.end_line, token.end_column)
        expected = _describe_expected(set(error.expected))
        text = str(token)
        if token.type == "STRAY":
            message = f"unexpected character {text!r}"
            hint = "a string is not closed: add the missing '\"'" if text == '"' else None
        else:
            message = f"unexpected {text!r}"
            keywords = [e.strip("'") for e in expected if e.startswith("'")]
            hint = None
            if text.isidentifier() and keywords:
                import difflib  # a syntax error's hint only

                close = difflib.get_close_matches(text, keywords, n=1, cutoff=0.6)
                hint = f"did you mean '{close[0]}'?" if close else None
            if (
                hint is None
                and text.isidentifier()
                and token.type != "NAME"
                and "a name" in expected
            ):
                hint = f"'{text}' is a keyword and cannot be used as a name here"
        if expected and (hint is None or "did you mean" not in hint):
            shown = ", ".join(expected[:8]) + (", ..." if len(expected) > 8 else "")
            expectation = f"expected {shown}"
            hint = f"{hint}; {expectation}" if hint else expectation
        return Diagnostic(message, span, hint)
    if isinstance(error, UnexpectedCharacters):
        hint = "a string is not closed: add the missing '\"'" if error.char == '"' else None
        return Diagnostic(
            f"unexpected character {error.char!r}", Span(error.line, error.column), hint
        )
    return Diagnostic(str(error), None)


_FILLERS = {
    "NAME": "x",
    "STRING": '""',
    "INT": "1",
    "FLOAT": "1.0",
    "PERCENT": "50%",
    "DURATION": "1s",
    "NEGATIVE": "-1",
}
_CLOSERS = ("RSQB", "RBRACE")


_FILLER_SYMBOLS = ("RSQB", "RBRACE", "EQUAL", "HIGHER", "LOWER", "STDOUT")


def _filler(terminal: str) -> Token | None:
    """A stand-in token of a literal kind or a closing symbol; never a statement keyword."""
    if terminal in _FILLERS:
        return Token(terminal, _FILLERS[terminal])
    if terminal in _FILLER_SYMBOLS:
        return Token(terminal, keyword_of_terminal()[terminal])
    return None


def _repair(error: UnexpectedToken) -> None:
    """Error repair by insertion: feed up to two plausible tokens so the bad one fits.

    Recovery only serves to find further errors; a spec with a syntax error is never
    compiled, so the inserted tokens never reach a plan.
    """
    parser_state = error.interactive_parser
    if parser_state is None:
        return
    bad = error.token
    if str(bad).isidentifier():
        # A misspelt keyword (``desing``) is read as the keyword the hint suggests, so the
        # block after it parses and later errors are real ones.
        keywords = keyword_of_terminal()
        options = {
            keywords[t]: t
            for t in parser_state.accepts()
            if t in keywords and keywords[t].isidentifier()
        }
        import difflib  # a syntax error's recovery only

        close = difflib.get_close_matches(str(bad), sorted(options), n=1, cutoff=0.6)
        if close:
            parser_state.feed_token(Token(options[close[0]], close[0]))
            return

    def fits(state) -> bool:
        return bad.type in state.accepts()

    frontier: list[tuple[InteractiveParser, tuple[Token, ...]]] = [(parser_state, ())]
    for _depth in range(2):
        next_frontier: list[tuple[InteractiveParser, tuple[Token, ...]]] = []
        for state, path in frontier:
            choices = sorted(state.accepts() - {"$END"}, key=lambda t: (t not in _CLOSERS, t))[:12]
            for terminal in choices:
                token = _filler(terminal)
                if token is None:
                    continue
                trial = state.copy(deepcopy_values=False)  # fillers only add new nodes
                try:
                    trial.feed_token(token)
                except UnexpectedInput:
                    continue
                if fits(trial):
                    for step in (*path, token):
                        parser_state.feed_token(step)
                    parser_state.feed_token(bad)
                    return
                if terminal in _CLOSERS:
                    next_frontier.append((trial, (*path, token)))
        frontier = next_frontier
    for terminal in sorted(parser_state.accepts() & _FILLERS.keys()):
        # Substitution: the bad token stands where a literal belongs (``seed "x"``), so
        # parse it as one; otherwise the next statement would be reported as well.
        parser_state.feed_token(Token(terminal, _FILLERS[terminal]))
        return


class Recovery:
    """Lark's ``on_error`` for a parse that reports every syntax error: one diagnostic per
    line, the parse repaired (``_repair``) and resumed, until MAX_SYNTAX_ERRORS diagnostics or
    MAX_RECOVERIES repairs. One per parse; benchlang.lang.fragments reuses it per statement."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.diagnostics: list[Diagnostic] = []
        self.seen_lines: set[int | None] = set()
        self.recoveries = 0

    def __call__(self, error: UnexpectedInput) -> bool:
        self.recoveries += 1
        if self.recoveries > MAX_RECOVERIES:
            return False  # errors on lines already reported: stop, the output would not change
        line = getattr(error, "line", None)
        if isinstance(error, UnexpectedToken) and error.token.type == "$END":
            if line not in self.seen_lines or not self.diagnostics:
                self.diagnostics.append(syntax_diagnostic(error, self.source))
            return False
        if line not in self.seen_lines:
            self.seen_lines.add(line)
            self.diagnostics.append(syntax_diagnostic(error, self.source))
        if isinstance(error, UnexpectedToken):
            _repair(error)
        return len(self.diagnostics) < MAX_SYNTAX_ERRORS


def literal_diagnostics(tree: Tree) -> list[Diagnostic]:
    """Literals the parser takes but benchlang refuses: overlong numbers, NUL and lone
    surrogates in strings."""
    diagnostics: list[Diagnostic] = []
    for token in tree.scan_values(lambda v: isinstance(v, Token) and v.type in _LITERALS):
        if token.type != "STRING":
            digits = sum(c.isdigit() for c in token)
            if digits > MAX_DIGITS:
                diagnostics.append(
                    Diagnostic(
                        f"this number has {digits} digits, more than benchlang reads ({MAX_DIGITS})",
                        span_of(token),
                        "write a shorter number (a float such as 1e30 for a large one)",
                    )
                )
            continue
        value = string_value(str(token))
        if "\x00" in value:
            diagnostics.append(
                Diagnostic("a string cannot contain a NUL character", span_of(token))
            )
        elif not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                diagnostics.append(
                    Diagnostic(
                        "a string cannot contain a lone surrogate escape",
                        span_of(token),
                        "write the character itself, or a pair of surrogates as one \\U escape",
                    )
                )
    return diagnostics
