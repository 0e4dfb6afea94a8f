"""Diagnostics for people: ``path:line:col: error: message``, the line, a caret, a hint."""

from __future__ import annotations

import functools
from collections.abc import Iterable

import attrs

MAX_SUGGESTION_CANDIDATES = 200
SHOWN_LINE = 160
"""Longest source line shown under a diagnostic; longer lines are cut around the caret."""


@attrs.frozen
class Span:
    """A 1-based line and column in a source file (end exclusive, same convention)."""

    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None


@attrs.frozen
class Source:
    """The text of a spec and the name it is reported under."""

    path: str
    text: str

    def line_text(self, line: int) -> str:
        """Line ``line`` as the parser counts lines: split at '\n' only (splitlines would
        also split at form feeds, U+2028 and the like, and show the wrong line)."""
        starts = _line_starts(self.text)
        if not 0 < line <= len(starts):
            return ""
        end = self.text.find("\n", starts[line - 1])
        return self.text[starts[line - 1] : end if end >= 0 else len(self.text)].rstrip("\r")


@functools.lru_cache(maxsize=8)
def _line_starts(text: str) -> tuple[int, ...]:
    """Offsets where each line starts; cached, so rendering many diagnostics stays linear."""
    starts = [0]
    find = text.find
    at = find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = find("\n", at + 1)
    return tuple(starts)


@attrs.frozen
class Diagnostic:
    message: str
    span: Span | None
    hint: str | None = None
    severity: str = "error"


class SpecError(Exception):
    """A spec has errors; carries every diagnostic found, in source order."""

    def __init__(self, source: Source, diagnostics: Iterable[Diagnostic]) -> None:
        self.source = source
        self.diagnostics = tuple(
            sorted(diagnostics, key=lambda d: (d.span.line, d.span.column) if d.span else (0, 0))
        )
        super().__init__(render_all(source, self.diagnostics))


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """A hint naming the closest candidate, or None when nothing is close."""
    names = sorted(set(candidates))
    if len(names) > MAX_SUGGESTION_CANDIDATES:
        return None  # a guess among thousands of names costs more than it helps
    import difflib  # only when a name is unknown

    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def render(source: Source, diagnostic: Diagnostic) -> str:
    """Render one diagnostic the way compilers do, with the offending line and a caret."""
    span = diagnostic.span
    where = f"{source.path}:{span.line}:{span.column}" if span else source.path
    out = [f"{where}: {diagnostic.severity}: {diagnostic.message}"]
    if span:
        text = source.line_text(span.line).replace("\t", " ")
        if len(text) > SHOWN_LINE:
            text, span = _window(text, span)
        if text:
            width = 1
            if span.end_line == span.line and span.end_column and span.end_column > span.column:
                width = span.end_column - span.column
            width = max(1, min(width, len(text) - span.column + 1))
            out.append(f"  {text}")
            out.append("  " + " " * (span.column - 1) + "^" + "~" * (width - 1))
    if diagnostic.hint:
        out.append(f"  hint: {diagnostic.hint}")
    return "\n".join(out)


def _window(text: str, span: Span) -> tuple[str, Span]:
    """About SHOWN_LINE characters of a long line around the caret, so that output stays
    proportional to the number of diagnostics, not to their product with the line length."""
    start = max(0, min(span.column - 1 - SHOWN_LINE // 2, len(text) - SHOWN_LINE))
    cut = text[start : start + SHOWN_LINE]
    prefix = "..." if start > 0 else ""
    suffix = "..." if start + SHOWN_LINE < len(text) else ""
    shift = start - len(prefix)
    end = span.end_column - shift if span.end_column is not None else None
    moved = Span(span.line, span.column - shift, span.end_line, end)
    return prefix + cut + suffix, moved


def render_all(source: Source, diagnostics: Iterable[Diagnostic]) -> str:
    diagnostics = tuple(diagnostics)
    text = "\n".join(render(source, d) for d in diagnostics)
    errors = sum(d.severity == "error" for d in diagnostics)
    if errors > 1:
        text += f"\n{errors} errors"
    return text
