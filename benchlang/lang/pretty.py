"""A small pretty printer for ``benchlang fmt``: documents of text, line breaks, groups and
nests, laid out within a width.

The algorithm is Wadler's ("A prettier printer", 2003) in the imperative form of Prettier
(a group is printed flat when it fits on the rest of the line, else broken), with two of
Prettier's additions: ``Fill`` (items packed onto lines, as long lists are wrapped) and
trailing comments that count no width. Comments on consecutive lines are aligned in one
column, as gofmt aligns them.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

WIDTH = 100
"""The line width of a formatted spec (the repository's ruff line length)."""
COMMENT_GAP = 2
"""Spaces between code and a trailing comment (at least)."""


class _Break:
    """A line break: ``LINE`` (a space when flat), ``SOFT`` (nothing when flat), ``HARD``
    (always; breaks every enclosing group) and ``BLANK`` (one empty line, collapsed)."""

    def __init__(self, name: str, flat: str | None) -> None:
        self.name, self.flat = name, flat

    def __repr__(self) -> str:
        return self.name


LINE = _Break("LINE", " ")
SOFT = _Break("SOFT", "")
HARD = _Break("HARD", None)
BLANK = _Break("BLANK", None)


@attrs.frozen
class Comment:
    """A trailing comment: ends the current line, counts no width when fitting."""

    text: str


@attrs.frozen
class IfBreak:
    """Text printed only when the enclosing group is broken (a wrapped list's last comma)."""

    text: str


@attrs.frozen
class Fill:
    """Flat items separated by ``", "``, packed onto as few lines as fit when broken."""

    items: tuple[str, ...]


@attrs.frozen
class Nest:
    """Line breaks inside ``parts`` indent ``indent`` more."""

    indent: int
    parts: tuple[Doc, ...]


@attrs.frozen
class Group:
    """Printed flat if it fits, else broken; ``broken`` when it holds a hard break."""

    parts: tuple[Doc, ...]
    broken: bool


Doc = str | _Break | Comment | IfBreak | Fill | Nest | Group | Sequence["Doc"]


def nest(indent: int, parts: Sequence[Doc]) -> Nest:
    return Nest(indent, tuple(parts))


def group(parts: Sequence[Doc], force: bool = False) -> Group:
    """A group, broken when forced or when anything in it must break."""
    return Group(tuple(parts), force or any(_must_break(p) for p in parts))


def _must_break(doc: Doc) -> bool:
    if isinstance(doc, str):
        return "\n" in doc
    if doc is HARD or doc is BLANK or isinstance(doc, Comment):
        return True
    if isinstance(doc, Group):
        return doc.broken
    if isinstance(doc, Nest):
        return any(_must_break(p) for p in doc.parts)
    if isinstance(doc, (list, tuple)):
        return any(_must_break(p) for p in doc)
    return False


def flat(doc: Doc) -> str:
    """The one-line text of a document that holds no hard break."""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, _Break):
        if doc.flat is None:
            raise ValueError("a hard break has no flat form")
        return doc.flat
    if isinstance(doc, Fill):
        return ", ".join(doc.items)
    if isinstance(doc, IfBreak):
        return ""
    if isinstance(doc, Comment):
        raise ValueError("a comment has no flat form")
    parts = doc.parts if isinstance(doc, (Nest, Group)) else doc
    return "".join(flat(p) for p in parts)


_FLAT, _BROKEN = 0, 1


@attrs.define
class _Line:
    indent: int = 0
    code: str = ""
    comment: str | None = None

    @property
    def empty(self) -> bool:
        return not self.code and self.comment is None


class _Printer:
    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[_Line] = []
        self.line = _Line()
        self.column = 0

    def newline(self, indent: int) -> None:
        if not self.line.empty:
            self.lines.append(self.line)
            self.line = _Line(indent)
        self.line.indent = indent
        self.column = indent

    def blank(self, indent: int) -> None:
        self.newline(indent)
        if self.lines and not self.lines[-1].empty:
            self.lines.append(_Line())

    def text(self, text: str) -> None:
        self.line.code += text
        cut = text.rfind("\n")
        self.column = len(text) - cut - 1 if cut >= 0 else self.column + len(text)

    def fill(self, indent: int, items: tuple[str, ...]) -> None:
        for i, item in enumerate(items):
            if i:
                self.text(",")
                if self.column + 1 + len(item) + 1 <= self.width:
                    self.text(" ")
                else:
                    self.newline(indent)
            self.text(item)

    def fits(self, first: tuple[int, int, Doc], rest: list[tuple[int, int, Doc]]) -> bool:
        """Whether ``first`` (flat) and what follows it up to the next line break fit."""
        remaining = self.width - self.column
        todo = [first]
        at = len(rest)
        while remaining >= 0:
            if not todo:
                if at == 0:
                    return True
                at -= 1
                todo.append(rest[at])
            indent, mode, doc = todo.pop()
            if isinstance(doc, str):
                cut = doc.find("\n")
                if cut >= 0:
                    return remaining >= cut
                remaining -= len(doc)
            elif isinstance(doc, _Break):
                if mode == _BROKEN or doc.flat is None:
                    return True
                remaining -= len(doc.flat)
            elif isinstance(doc, IfBreak):
                remaining -= len(doc.text) if mode == _BROKEN else 0
            elif isinstance(doc, Fill):
                if mode == _BROKEN:
                    return remaining >= (len(doc.items[0]) if doc.items else 0)
                remaining -= len(flat(doc))
            elif isinstance(doc, Group):
                todo.append((indent, _BROKEN if doc.broken else mode, doc.parts))
            elif isinstance(doc, Nest):
                todo.append((indent, mode, doc.parts))
            elif isinstance(doc, (list, tuple)):
                todo.extend((indent, mode, p) for p in reversed(doc))
        return False

    def print(self, doc: Doc) -> list[_Line]:
        stack: list[tuple[int, int, Doc]] = [(0, _BROKEN, doc)]
        while stack:
            indent, mode, doc = stack.pop()
            if isinstance(doc, str):
                self.text(doc)
            elif isinstance(doc, (list, tuple)):
                stack.extend((indent, mode, p) for p in reversed(doc))
            elif isinstance(doc, Nest):
                stack.append((indent + doc.indent, mode, doc.parts))
            elif isinstance(doc, Group):
                if doc.broken:
                    mode = _BROKEN
                elif mode == _BROKEN:
                    mode = _FLAT if self.fits((indent, _FLAT, doc.parts), stack) else _BROKEN
                stack.append((indent, mode, doc.parts))
            elif doc is BLANK:
                self.blank(indent)
            elif isinstance(doc, _Break):
                if mode == _FLAT and doc.flat is not None:
                    self.text(doc.flat)
                else:
                    self.newline(indent)
            elif isinstance(doc, Comment):
                if self.line.code:
                    self.line.comment = doc.text
                else:
                    self.text(doc.text)
            elif isinstance(doc, IfBreak):
                if mode == _BROKEN:
                    self.text(doc.text)
            elif isinstance(doc, Fill):
                if mode == _FLAT:
                    self.text(flat(doc))
                else:
                    self.fill(indent, doc.items)
        self.newline(0)
        return self.lines


def render(doc: Doc, width: int = WIDTH) -> str:
    """Lay ``doc`` out within ``width`` columns; trailing comments of consecutive lines are
    aligned one column (COMMENT_GAP past the longest code among them)."""
    lines = _Printer(width).print(doc)
    out: list[str] = []
    run: list[_Line] = []

    def flush() -> None:
        column = max((ln.indent + len(ln.code) for ln in run), default=0) + COMMENT_GAP
        for ln in run:
            out.append(" " * ln.indent + ln.code.ljust(column - ln.indent) + (ln.comment or ""))
        run.clear()

    for ln in lines:
        if ln.comment is not None and ln.code and "\n" not in ln.code:
            run.append(ln)
            continue
        flush()
        if ln.comment is not None and ln.code:
            out.append(" " * ln.indent + ln.code + " " * COMMENT_GAP + ln.comment)
        elif ln.empty:
            out.append("")
        else:
            out.append(" " * ln.indent + ln.code)
    flush()
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"
