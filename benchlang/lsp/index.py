"""What the editor needs of a spec's text, on any text: tokens, blocks, declared names.

The checker's parser refuses broken text, and an editor's text is broken most of the time, so
the language server reads names and blocks with this tolerant scanner (it never fails: every
character is some token). Positions are 0-based (line, column) in code points; the server
converts them to the client's encoding. Names are matched by spelling: a metric and the
measure it summarises usually share a name (``metric time`` reads ``measure time``), and are
found together.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator

import attrs

_TOKEN = re.compile(
    r'(?P<comment>#[^\n]*)|(?P<string>"""[\s\S]*?(?:"""|\Z)|"[^"\\\n]*(?:\\.[^"\\\n]*)*"?)'
    r"|(?P<number>-?[0-9][0-9A-Za-z_.%]*)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>\S)"
)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}?")
DECLARING = {"factor": "factor", "benchmark": "benchmark", "metric": "metric"}
"""Statement heads that declare the name after them; ``measure`` does so in a benchmark."""


@attrs.frozen
class Token:
    kind: str
    text: str
    start: int
    end: int


@attrs.frozen
class Name:
    """A declared name (``kind``: factor, benchmark, measure, metric, experiment) or a use."""

    kind: str
    name: str
    start: int
    end: int
    scope_end: int
    """Where its declaration ends (its block's closing brace, else its line's end)."""
    parent: str | None = None
    detail: str = ""


@attrs.frozen
class Block:
    """A ``{ ... }`` block: the head word of its statement, the method it configures, and
    where its braces are (``end`` is the text's end when it is not closed)."""

    kind: str
    method: str | None
    start: int
    end: int


class Index:
    """Tokens, blocks, declarations and uses of one text, each found when first asked for:
    the diagnostics sent after a keystroke need only the line starts."""

    blocks: list[Block]
    declarations: list[Name]
    uses: list[Name]

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = _line_starts(text)

    @functools.cached_property
    def tokens(self) -> list[Token]:
        return [
            Token(m.lastgroup or "punct", m.group(), m.start(), m.end())
            for m in _TOKEN.finditer(self.text)
        ]

    def __getattr__(self, name: str) -> list:
        if name not in ("blocks", "declarations", "uses"):
            raise AttributeError(name)
        self.blocks, self.declarations, self.uses = [], [], []
        self._scan()
        return getattr(self, name)

    def offset(self, line: int, column: int) -> int:
        """The offset of a 0-based position (clamped to the text)."""
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[max(line, 0)]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        return min(start + max(column, 0), end)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]

    def line_text(self, line: int) -> str:
        if not 0 <= line < len(self.starts):
            return ""
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[line] : end]

    def token_at(self, offset: int) -> Token | None:
        """The token under ``offset`` (or ending at it: the cursor after a word)."""
        i = bisect.bisect_right([t.start for t in self.tokens], offset) - 1
        if i >= 0 and self.tokens[i].start <= offset <= self.tokens[i].end:
            return self.tokens[i]
        return None

    def enclosing(self, offset: int) -> list[Block]:
        """The blocks around ``offset``, outermost first."""
        return sorted((b for b in self.blocks if b.start < offset < b.end), key=lambda b: b.start)

    def names(self, name: str) -> list[Name]:
        return [d for d in self.declarations if d.name == name]

    def occurrences(self, name: str) -> list[Name]:
        """Every declaration and use of ``name``, in text order."""
        found = [n for n in (*self.declarations, *self.uses) if n.name == name]
        return sorted(found, key=lambda n: n.start)

    def name_at(self, offset: int) -> Name | None:
        """The declared name or use under ``offset``."""
        for n in (*self.declarations, *self.uses):
            if n.start <= offset <= n.end:
                return n
        return None

    def _scan(self) -> None:
        code = [t for t in self.tokens if t.kind != "comment"]
        stack: list[tuple[str, str | None, int, Name | None]] = []
        statement = 0
        declared: list[Name] = []
        for i, tok in enumerate(code):
            newline = i > 0 and "\n" in self.text[code[i - 1].end : tok.start]
            if tok.text in "{}" and tok.kind == "punct":
                if tok.text == "{":
                    kind, method = self._head(code[statement:i])
                    owner = declared[-1] if declared else None
                    if owner is not None and owner.start < code[statement].start:
                        owner = None
                    stack.append((kind, method, tok.start, owner))
                elif stack:
                    kind, method, start, owner = stack.pop()
                    self.blocks.append(Block(kind, method, start, tok.end))
                    if owner is not None:
                        self._close(owner, tok.end)
                statement = i + 1
                continue
            if newline and i > statement:
                statement = i
            if tok.kind == "string":
                self._placeholders(tok)
            if tok.kind != "word" or i == statement:
                continue
            head = code[statement]
            if i == statement + 1 and head.kind == "word":
                declares = DECLARING.get(head.text)
                inside = stack[-1][0] if stack else ""
                if head.text == "measure" and inside == "benchmark":
                    declares = "measure"
                if head.text == "experiment":
                    declares = "experiment"
                if declares:
                    parent = _parent(declared, declares)
                    name = Name(
                        declares, tok.text, tok.start, tok.end, -1, parent, self._detail(code, i)
                    )
                    self.declarations.append(name)
                    declared.append(name)
                    continue
            self.uses.append(Name("use", tok.text, tok.start, tok.end, tok.end))
        for kind, method, start, _ in stack:
            self.blocks.append(Block(kind, method, start, len(self.text)))
        self.declarations = [self._ended(d) for d in self.declarations]
        known = {d.name for d in self.declarations}
        self.uses = [u for u in self.uses if u.name in known]

    def _close(self, name: Name, end: int) -> None:
        at = self.declarations.index(name)
        self.declarations[at] = attrs.evolve(name, scope_end=end)

    def _ended(self, name: Name) -> Name:
        if name.scope_end != -1:
            return name
        nxt = self.text.find("\n", name.end)
        return attrs.evolve(name, scope_end=len(self.text) if nxt < 0 else nxt)

    def _head(self, statement: list[Token]) -> tuple[str, str | None]:
        """The kind of block a ``{`` opens and the statistics method it configures."""
        words = [t.text for t in statement if t.kind == "word"]
        if not words:
            return "", None
        head = words[0]
        method = words[words.index("with") + 1] if "with" in words[:-1] else None
        if head == "kpi" and method is None:
            method = "thompson"
        elif head in ("variability", "order_dependence"):
            method = head
        elif head == "stop" and len(words) > 1:
            method = words[1]
        elif head not in _LANGUAGE_BLOCKS:
            method = head
        if head == "experiment":
            head = ""
        if len(words) > 1 and words[-1] in ("layout", "hidden", "convergence"):
            head = words[-1]
        return head, method

    def _placeholders(self, tok: Token) -> None:
        for m in _PLACEHOLDER.finditer(tok.text):
            start = tok.start + m.start(1)
            self.uses.append(Name("use", m.group(1), start, start + len(m.group(1)), start))

    def _detail(self, code: list[Token], i: int) -> str:
        """The rest of the declaring line, shown in hovers and the outline."""
        line_end = self.text.find("\n", code[i].end)
        rest = self.text[code[i].end : len(self.text) if line_end < 0 else line_end]
        return rest.split("#", 1)[0].strip().rstrip("{").strip()[:120]

    def words_before(self, offset: int, count: int = 3) -> list[str]:
        """The last ``count`` code tokens before ``offset`` on its statement."""
        out: list[str] = []
        for tok in reversed(self.tokens):
            if tok.end > offset or tok.kind == "comment":
                continue
            if (tok.text in "{}" and tok.kind == "punct") or "\n" in self.text[tok.end : offset]:
                break
            out.append(tok.text)
            if len(out) == count:
                break
        return out[::-1]


_LANGUAGE_BLOCKS = frozenset(
    ("", "experiment", "benchmark", "metric", "design", "analysis", "hosts", "env", "factor")
)


def _parent(declared: list[Name], kind: str) -> str | None:
    if kind != "measure":
        return None
    return next((d.name for d in reversed(declared) if d.kind == "benchmark"), None)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def words(text: str) -> Iterator[str]:
    """The words of a text outside strings and comments (tests and the keyword table)."""
    for m in _TOKEN.finditer(text):
        if m.lastgroup == "word":
            yield m.group()
