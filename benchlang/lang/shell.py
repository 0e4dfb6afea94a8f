"""Command templates: ``{placeholders}`` and the shell context each one stands in.

A level is data, not code: whatever its text (quotes, ``$``, backquotes, newlines, ``;``),
``{name}`` must reach the command as exactly that text, one word. ``shlex.quote`` alone is only
right outside quotes: inside ``"..."`` its single quotes are literal and ``$(...)`` in the level
runs. So a small lexer of POSIX sh finds the context of every placeholder — unquoted (at top
level, in ``$(...)`` or in backquotes), ``'...'``, ``"..."``, ``$((...))`` — and ``quote`` escapes
for that context. Contexts that cannot be made safe (after a backslash or a ``$``, in ``${...}``,
in a comment, a here-document, ``$'...'``, backquotes inside double quotes, after ``case`` in
``$(...)``) carry a ``problem`` that ``check`` reports at the placeholder.

``{name!code}`` inserts the level as shell code, unquoted: for levels that are commands
(``factor cmd in ["gzip -6", "xz -6"]`` with ``run "{cmd!code} f"``). It must stand unquoted.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Collection, Mapping

import attrs

CODE_SUFFIX = "!code"
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_KEYWORDS = frozenset(("!", "if", "then", "else", "elif", "while", "until", "do", "time", "exec"))
_CONTROL = frozenset(";&|\n()")
SHELL_WORDS = frozenset(
    [
        "!",
        "{",
        "}",
        "[",
        "[[",
        ".",
        ":",
        "alias",
        "bg",
        "break",
        "cd",
        "command",
        "continue",
        "eval",
        "exec",
        "exit",
        "export",
        "false",
        "fg",
        "for",
        "getopts",
        "hash",
        "if",
        "case",
        "while",
        "until",
        "read",
        "readonly",
        "return",
        "set",
        "shift",
        "test",
        "time",
        "times",
        "trap",
        "true",
        "type",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "wait",
        "local",
        "source",
    ]
)
"""Keywords and builtins: a command's first word that is not looked up on PATH."""


class UnsafePlaceholder(ValueError):
    """A placeholder stands where no quoting makes its level one literal word."""


@attrs.frozen
class Placeholder:
    """One ``{name}`` of a template: where it is and how the shell reads it there."""

    name: str
    offset: int  # of its '{' in the template
    width: int  # characters from '{' to '}' inclusive
    code: bool  # {name!code}: the level is shell code, inserted as is
    context: str  # "word", "single", "double", "arithmetic" or "unsafe"
    backquotes: int  # enclosing backquote substitutions (each adds a layer of escaping)
    program: bool  # unquoted, the whole first word of a simple command
    problem: str | None = None


@attrs.frozen
class Template:
    """A template split into literal text (braces unescaped) around its placeholders."""

    literals: tuple[str, ...]
    placeholders: tuple[Placeholder, ...]
    brace_error: bool = False
    program: str | None = None  # the first word when it is plain literal text

    def render(self, values: Mapping[str, object], keep: Collection[str] = ()) -> str:
        """The command with every placeholder replaced by its value, quoted for its context.
        A tuple value (a hidden ``link_order``) is several words where the placeholder stands
        unquoted, each literal; placeholders named in ``keep`` stay as written (drawn later)."""
        out = [self.literals[0]]
        for ph, literal in zip(self.placeholders, self.literals[1:], strict=True):
            if ph.name in keep:
                out.append("{" + ph.name + "}")
                out.append(literal)
                continue
            value = values[ph.name]
            if isinstance(value, tuple) and ph.context == "word" and not ph.code:
                out.append(" ".join(quote(text_of(w), ph) for w in value) or "''")
            else:
                out.append(quote(text_of(value), ph))
            out.append(literal)
        return "".join(out)


def text_of(value: object) -> str:
    """The text of a level as a command sees it (6.0 stays '6.0'; words joined by spaces)."""
    if isinstance(value, tuple):
        return " ".join(map(text_of, value))
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


def quote(text: str, ph: Placeholder) -> str:
    """``text`` as one literal word in the placeholder's context (or as code for ``!code``)."""
    if ph.problem is not None:
        raise UnsafePlaceholder(f"placeholder {{{ph.name}}} {ph.problem}")
    if ph.code:
        out = text
    elif ph.context == "word":
        out = shlex.quote(text)
    elif ph.context == "single":
        out = text.replace("'", "'\"'\"'")  # close, a quoted quote, reopen: still one word
    elif ph.context == "double":
        out = re.sub(r'([\\$`"])', r"\\\1", text)
    elif ph.context == "arithmetic":
        if not _NUMBER.fullmatch(text):
            raise UnsafePlaceholder(f"placeholder {{{ph.name}}} in $((...)) needs a number")
        out = text
    else:  # pragma: no cover - every other context carries a problem
        raise UnsafePlaceholder(f"placeholder {{{ph.name}}} cannot be quoted here")
    for _ in range(ph.backquotes):
        out = re.sub(r"([\\$`])", r"\\\1", out)
    return out


def substitute(template: str, values: Mapping[str, object]) -> str:
    """Fill ``{name}`` placeholders, each quoted for its shell context (``{{`` is a brace)."""
    return parse_template(template).render(values)


@attrs.define
class _Frame:
    kind: str  # "cmd", "single", "ansi", "double", "param", "arith", "comment", "heredoc"
    sub: str = "top"  # for cmd: "top", "dollar" or "backquote"
    depth: int = 0  # open parentheses inside $( ) or $(( ))
    program: bool = True  # the next word is a command's program
    word: str = ""  # the current unquoted word, while it is plain text
    plain: bool = True  # the current word has no quotes or placeholders so far
    unknown: bool = False  # 'case' inside $( ): parentheses no longer tell where it ends


_Item = str | tuple[str, int, int, bool]
"""A template's character, or a ``{name}`` substitution as (name, offset, width, code)."""


def _split(template: str) -> tuple[list[_Item], bool]:
    """Characters and (name, offset, width, code) tuples; flag an unbalanced brace."""
    items: list[_Item] = []
    i, n = 0, len(template)
    while i < n:
        c = template[i]
        if c == "{":
            if template.startswith("{{", i):
                items.append("{")
                i += 2
                continue
            end = template.find("}", i + 1)
            inner = template[i + 1 : end] if end >= 0 else ""
            if end < 0 or "{" in inner:
                return items, True
            code = inner.endswith(CODE_SUFFIX)
            name = inner[: -len(CODE_SUFFIX)] if code else inner
            items.append((name, i, end - i + 1, code))
            i = end + 1
            continue
        if c == "}":
            if template.startswith("}}", i):
                items.append("}")
                i += 2
                continue
            return items, True
        items.append(c)
        i += 1
    return items, False


@functools.lru_cache(maxsize=512)
def parse_template(template: str) -> Template:
    """Placeholders of a template with their shell contexts (cached: plans render it often)."""
    items, brace_error = _split(template)
    literals: list[list[str]] = [[]]
    found: list[Placeholder] = []
    stack = [_Frame("cmd")]
    first_word: str | None = None
    first_done = False
    heredoc = False
    i = 0

    def top() -> _Frame:
        return stack[-1]

    def peek(k: int) -> _Item | None:
        return items[i + k] if i + k < len(items) else None

    def end_word(frame: _Frame) -> None:
        nonlocal first_word, first_done
        if frame.kind != "cmd":
            return
        if frame.word or not frame.plain:
            if not first_done and frame.sub == "top":
                first_word = frame.word if frame.plain else None
                first_done = frame.word not in _KEYWORDS and not _ASSIGNMENT.match(frame.word)
            keyword = frame.plain and (frame.word in _KEYWORDS or _ASSIGNMENT.match(frame.word))
            frame.program = bool(keyword)
            if frame.sub == "dollar" and frame.plain and frame.word == "case":
                frame.unknown = True
        frame.word, frame.plain = "", True

    while i < len(items):
        item = items[i]
        frame = top()
        if isinstance(item, tuple):
            name, offset, width, code = item
            found.append(_placeholder(name, offset, width, code, stack, items, i, heredoc))
            literals.append([])
            if frame.kind == "cmd":
                frame.plain = False
            i += 1
            continue
        c: str = item
        literals[-1].append(c)
        kind = frame.kind
        if kind == "cmd":
            if c == "\\":
                frame.plain = False
                nxt = peek(1)
                if isinstance(nxt, str):
                    literals[-1].append(nxt)
                    i += 2
                    continue
                i += 1
                continue
            if c in " \t":
                end_word(frame)
            elif c in _CONTROL or (c == "#" and not frame.word and frame.plain):
                if c == "#":
                    stack.append(_Frame("comment"))
                else:
                    end_word(frame)
                    frame.program = True
                    if c == "\n" and heredoc:
                        stack.append(_Frame("heredoc"))
                    elif c == "(" and frame.sub == "dollar":
                        frame.depth += 1
                    elif c == ")" and frame.sub == "dollar" and not frame.unknown:
                        if frame.depth == 0:
                            stack.pop()
                            top().plain = False
                        else:
                            frame.depth -= 1
            elif c == "'":
                ansi = frame.word.endswith("$") and frame.plain
                frame.plain = False
                stack.append(_Frame("ansi" if ansi else "single"))
            elif c == '"':
                frame.plain = False
                stack.append(_Frame("double"))
            elif c == "`":
                frame.plain = False
                if frame.sub == "backquote":
                    stack.pop()
                else:
                    stack.append(_Frame("cmd", "backquote"))
            elif c == "$" and peek(1) in ("(", "{"):
                frame.plain = False
                i = _open_dollar(items, i, stack, literals[-1])
                continue
            elif c == "<" and peek(1) == "<" and peek(2) != "<":
                heredoc = True
                frame.word += c
            else:
                frame.word += c
        elif kind in ("single", "ansi"):
            if c == "'":
                stack.pop()
            elif c == "\\" and kind == "ansi" and isinstance(escaped := peek(1), str):
                literals[-1].append(escaped)
                i += 2
                continue
        elif kind == "double":
            if c == "\\" and isinstance(escaped := peek(1), str):
                literals[-1].append(escaped)
                i += 2
                continue
            if c == '"':
                stack.pop()
            elif c == "`":
                stack.append(_Frame("cmd", "backquote"))
            elif c == "$" and peek(1) in ("(", "{"):
                i = _open_dollar(items, i, stack, literals[-1])
                continue
        elif kind == "param":
            if c == "}":
                stack.pop()
        elif kind == "arith":
            if c == "(":
                frame.depth += 1
            elif c == ")":
                if frame.depth > 0:
                    frame.depth -= 1
                elif peek(1) == ")":
                    literals[-1].append(")")
                    stack.pop()
                    i += 2
                    continue
        elif kind == "comment" and c == "\n":
            stack.pop()
            top().program = True
        i += 1
    if stack[0].kind == "cmd" and len(stack) == 1:
        end_word(stack[0])
    return Template(
        tuple("".join(part) for part in literals),
        tuple(found),
        brace_error,
        first_word if first_word else None,
    )


def _open_dollar(items: list[_Item], i: int, stack: list[_Frame], literal: list[str]) -> int:
    """Enter ``$(``, ``$((`` or ``${`` at items[i] == '$'; return the index after it."""
    nxt = items[i + 1]
    if nxt == "{":
        stack.append(_Frame("param"))
        literal.append("{")
        return i + 2
    if i + 2 < len(items) and items[i + 2] == "(":
        stack.append(_Frame("arith"))
        literal.extend("((")
        return i + 3
    stack.append(_Frame("cmd", "dollar"))
    literal.append("(")
    return i + 2


def _placeholder(
    name: str,
    offset: int,
    width: int,
    code: bool,
    stack: list[_Frame],
    items: list[_Item],
    i: int,
    heredoc_seen: bool,
) -> Placeholder:
    """The placeholder at items[i], given the lexer's stack there."""
    frame = stack[-1]
    backquotes = sum(f.kind == "cmd" and f.sub == "backquote" for f in stack)
    before = items[i - 1] if i > 0 else None
    after = items[i + 1] if i + 1 < len(items) else None
    problem = None
    context = {"cmd": "word", "single": "single", "double": "double", "arith": "arithmetic"}.get(
        frame.kind, "unsafe"
    )
    escaped = False
    if before == "\\":
        # a backslash before the placeholder escapes the first character of the value
        count, j = 0, i - 1
        while j >= 0 and items[j] == "\\":
            count, j = count + 1, j - 1
        escaped = count % 2 == 1
    in_double_backquote = any(
        f.kind == "cmd" and f.sub == "backquote" and k > 0 and stack[k - 1].kind == "double"
        for k, f in enumerate(stack)
    )
    if frame.kind == "comment":
        problem = "is inside a shell comment (a newline in a level would end it)"
    elif frame.kind == "heredoc" or (heredoc_seen and any(f.kind == "heredoc" for f in stack)):
        problem = "is inside a here-document"
    elif frame.kind == "param":
        problem = "is inside ${...}"
    elif frame.kind == "ansi":
        problem = "is inside $'...', whose escapes the shell interprets"
    elif any(f.unknown for f in stack):
        problem = "follows 'case' inside $(...), where parentheses no longer show the nesting"
    elif in_double_backquote:
        problem = "is inside backquotes within double quotes"
    elif escaped and frame.kind in ("cmd", "double"):
        problem = "follows a backslash, which would escape the first character of the level"
    elif before == "$" and frame.kind in ("cmd", "double"):
        problem = "follows a '$', which would join the level into an expansion"
    elif code and frame.kind != "cmd":
        problem = "is code (!code), so it must stand unquoted"
    elif code and backquotes:
        problem = "is code (!code) inside backquotes; use $(...)"
    program = (
        frame.kind == "cmd"
        and frame.program
        and frame.plain
        and not frame.word
        and (after is None or (isinstance(after, str) and (after in " \t" or after in _CONTROL)))
    )
    return Placeholder(name, offset, width, code, context, backquotes, program, problem)


def placeholders(template: str) -> list[tuple[str, int]]:
    """``{name}`` fields of a template with their offsets; ``("", -1)`` marks an unbalanced
    brace (``{{`` and ``}}`` are literal braces)."""
    parsed = parse_template(template)
    found = [(p.name, p.offset) for p in parsed.placeholders]
    if parsed.brace_error:
        found.append(("", -1))
    return found
