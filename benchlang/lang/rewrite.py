"""Rewriting a spec's text where a reader must change one statement and keep the rest as
published (``benchlang replicate --hosts``: the same experiment on the reader's machines)."""

from __future__ import annotations

from benchlang.lang import ast
from benchlang.lang.diagnostics import Source, Span
from benchlang.lang.syntax import parse


def _offset(text: str, span: Span) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[: span.line - 1]) + span.column - 1


def _block_end(text: str, start: int) -> int:
    """The index after the ``}`` closing the ``{`` at ``start`` (strings and comments skipped)."""
    depth, i, quoted = 0, start, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "#":
            while i < len(text) and text[i] != "\n":
                i += 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def replace_hosts(text: str, statement: str, path: str = "<spec>") -> str:
    """``text`` with its ``hosts ...`` statement (keyword, kind and settings block) replaced by
    ``hosts STATEMENT``, or that statement added first in the experiment when it has none.
    Raises SpecError when ``text`` does not parse."""
    experiment = parse(Source(path, text))
    new = f"hosts {statement.strip()}"
    found = [item for item in experiment.items if isinstance(item, ast.Hosts)]
    if not found:
        brace = text.index("{", _offset(text, experiment.span))
        return f"{text[: brace + 1]}\n  {new}{text[brace + 1 :]}"
    kind_at = _offset(text, found[0].span)
    start = text.rindex("hosts", 0, kind_at)
    end = kind_at + len(found[0].kind)
    rest = len(text[end:]) - len(text[end:].lstrip(" \t"))
    if text[end + rest : end + rest + 1] == "{":
        end = _block_end(text, end + rest)
    return text[:start] + new + text[end:]
