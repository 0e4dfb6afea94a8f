"""``benchlang fmt``: one canonical layout of a spec, with every comment kept where it is.

The spec is parsed (refused, with ``check``'s diagnostics, when it has a syntax error; the
checker's other errors, a misspelt metric say, do not stop formatting), then re-lexed with its
comments; the parse tree only says where each statement starts and ends.
The layout (docs/fmt.md):

- one statement per line inside a block, indented two spaces per block; at most one blank
  line where the author left one between statements, none at a block's start or end;
- one space between words; none inside brackets and parentheses, before a comma, around
  ``..``, ``:`` and ``^``, or after a unary minus;
- a block (``{ ... }``) written on one line stays on one line when it fits in 100 columns
  and holds no comment; otherwise (and always for the experiment) one statement per line;
- a list that does not fit is wrapped: its items packed onto lines indented one level, each
  line ending in a comma; a list holding comments gets one item per line;
- a comment at the end of a line stays at the end of that line (aligned with its neighbours'),
  a comment on a line of its own stays on a line of its own, before what follows it;
- nothing is reordered: in benchlang order carries meaning (factors give the order of
  configurations, measures and metrics their columns), so the author's order is kept.

The tokens of the result are those of the spec (a wrapped list's last comma aside), checked
before the text is returned, so the spec compiles to the same plan.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable

from lark import Token, Tree
from lark.exceptions import LarkError
from lark.lexer import Lexer, LexerThread

from benchlang.lang.diagnostics import Diagnostic, Source, Span, SpecError
from benchlang.lang.grammar import parser
from benchlang.lang.pretty import (
    BLANK,
    HARD,
    LINE,
    SOFT,
    Comment,
    Doc,
    Fill,
    IfBreak,
    flat,
    group,
    nest,
    render,
)
from benchlang.lang.syntax import MAX_NESTING, check_size, parse

INDENT = 2
_OPEN_NO_SPACE = frozenset(("LSQB", "LPAR"))
_CLOSE_NO_SPACE = frozenset(("COMMA", "RSQB", "RPAR"))
_OPENERS = frozenset(("LBRACE", "LSQB", "LPAR"))
_CLOSERS = frozenset(("RBRACE", "RSQB", "RPAR"))
_OPERANDS = frozenset(("NAME", "INT", "FLOAT", "NEGATIVE", "RPAR"))


def format_text(text: str, path: str = "<spec>") -> str:
    """The canonical layout of spec ``text``; raises SpecError (the diagnostics of
    ``benchlang check``) when the text has a syntax error."""
    source = Source(path, text)
    check_size(source)
    try:
        tree = parser().parse(text)
    except LarkError:
        tree = None
    tokens = _lex(text) if tree is not None else []
    if tree is None or _depth(tokens) > MAX_NESTING:
        parse(source)  # raises SpecError with every syntax error, as check reports them
        if tree is None:
            raise SpecError(source, [Diagnostic("the spec cannot be parsed", Span(1, 1))])
    braces = [_offsets(t)[0] for t in tokens if t.type == "LBRACE"]
    ends = _statement_ends(tree, braces)
    formatted = render(_Layout(text, tokens, ends).top())
    if _signature(_lex(formatted)) != _signature(tokens):
        raise SpecError(
            source,
            [
                Diagnostic(
                    "benchlang fmt cannot lay this spec out without changing it",
                    None,
                    "the file is left as it is; please report this as a bug of benchlang fmt",
                )
            ],
        )
    return formatted


def comments_of(text: str) -> list[str]:
    """The comments of spec text (without trailing blanks), in order."""
    return [str(t).rstrip() for t in _lex(text) if t.type == "COMMENT"]


@functools.cache
def _comment_lexer() -> Lexer:
    """The parser's own lexer, keeping what the grammar ignores (comments, whitespace): the
    lexer ``Lark.lex(text, dont_ignore=True)`` builds on every call, built once."""
    return parser()._build_lexer(dont_ignore=True)


def _lex(text: str) -> list[Token]:
    """Every token of ``text`` but whitespace, comments included."""
    return [t for t in LexerThread.from_text(_comment_lexer(), text).lex(None) if t.type != "WS"]


def _signature(tokens: list[Token]) -> tuple[list[tuple[str, str]], list[str]]:
    """What formatting must keep: the tokens (a comma before ``]`` aside) and the comments,
    each in order."""
    code = [t for t in tokens if t.type != "COMMENT"]
    kept = [
        (t.type, str(t))
        for i, t in enumerate(code)
        if not (t.type == "COMMA" and i + 1 < len(code) and code[i + 1].type == "RSQB")
    ]
    return kept, [str(t).rstrip() for t in tokens if t.type == "COMMENT"]


def _depth(tokens: list[Token]) -> int:
    """How deep brackets and braces nest."""
    depth = deepest = 0
    for token in tokens:
        if token.type in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif token.type in _CLOSERS:
            depth -= 1
    return deepest


def _offsets(token: Token) -> tuple[int, int]:
    """Where ``token`` starts and ends: the lexer sets both (lark types them optional)."""
    assert token.start_pos is not None and token.end_pos is not None
    return token.start_pos, token.end_pos


def _span(node: Tree | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return _offsets(node)
    return node.meta.start_pos, node.meta.end_pos


def _statement_ends(tree: Tree, braces: list[int]) -> dict[int, int]:
    """Start offset -> end offset of every statement: the items of the file and those inside
    each block's braces (a node's children after its own ``{``, offsets in ``braces``)."""
    ends = dict(_span(child) for child in tree.children)
    for node in tree.iter_subtrees():
        children = [c for c in node.children if not (isinstance(c, Tree) and c.meta.empty)]
        if node is tree or not children:
            continue
        start, end = _span(node)
        covered = [_span(c) for c in children if isinstance(c, Tree)]
        own = _first_own_brace(braces, start, end, covered)
        for child in children:
            child_start, child_end = _span(child)
            if own is not None and child_start > own:
                ends[child_start] = child_end
    return ends


def _first_own_brace(
    braces: list[int], start: int, end: int, covered: list[tuple[int, int]]
) -> int | None:
    """The first offset in ``braces`` within [start, end) that no span of ``covered`` (in
    order, not overlapping) holds: one pass over both, where testing each brace against every
    span was quadratic in a block's statements."""
    i, stop = bisect.bisect_left(braces, start), bisect.bisect_left(braces, end)
    j = 0
    while i < stop:
        brace = braces[i]
        while j < len(covered) and covered[j][1] <= brace:
            j += 1
        if j == len(covered) or brace < covered[j][0]:
            return brace
        i = bisect.bisect_left(braces, covered[j][1], i, stop)
    return None


class _Layout:
    """Builds the document of a spec from its tokens and comments."""

    def __init__(self, text: str, tokens: list[Token], ends: dict[int, int]) -> None:
        self.text, self.tokens, self.ends = text, tokens, ends

    def gap(self, i: int) -> str:
        """The source text between token ``i`` and the one before it."""
        before = self.tokens[i - 1].end_pos if i > 0 else 0
        return self.text[before : self.tokens[i].start_pos]

    def trailing(self, i: int) -> bool:
        return i > 0 and "\n" not in self.gap(i)

    def blank_before(self, i: int) -> bool:
        return self.gap(i).count("\n") >= 2

    def comment(self, i: int) -> str:
        return str(self.tokens[i]).rstrip()

    def top(self) -> Doc:
        items, _ = self.body(0, depth=-1)
        return self.join(items, first_sep=HARD, sep=HARD)

    def body(self, i: int, depth: int) -> tuple[list[tuple[str, Doc, bool]], int]:
        """The statements and comments of a block (or of the file) from token ``i``."""
        items: list[tuple[str, Doc, bool]] = []
        tokens = self.tokens
        while i < len(tokens) and not (depth >= 0 and tokens[i].type == "RBRACE"):
            token, blank = tokens[i], self.blank_before(i)
            if token.type == "COMMENT":
                kind = "trailing" if self.trailing(i) else "own"
                items.append((kind, self.comment(i), blank))
                i += 1
            else:
                start, stop = _offsets(token)
                end = self.ends.get(start, stop)
                doc, i = self.statement(i, end, depth)
                items.append(("statement", doc, blank))
        return items, i

    @staticmethod
    def join(items: list[tuple[str, Doc, bool]], first_sep: Doc, sep: Doc) -> list[Doc]:
        parts: list[Doc] = []
        first = True
        for kind, doc, blank in items:
            if kind == "trailing":
                assert isinstance(doc, str)  # a comment's text (body)
                parts += [Comment(doc), HARD]
                continue
            if kind == "own":
                parts += [BLANK if blank and not first else HARD, doc, HARD]
            else:
                parts += [BLANK if blank and not first else (first_sep if first else sep), doc]
            first = False
        return parts

    def statement(self, i: int, end: int, depth: int) -> tuple[Doc, int]:
        """The tokens of one statement (up to offset ``end``) with its blocks and lists."""
        return self.run(i, lambda j: _offsets(self.tokens[j])[0] < end, depth)

    def run(self, i: int, inside: Callable[[int], bool], depth: int) -> tuple[list[Doc], int]:
        """Tokens from ``i`` while ``inside(index)``: spaced words, nested brackets, and
        comments that break the line (the rest continues one level deeper)."""
        parts: list[Doc] = []
        tokens = self.tokens
        previous: Token | None = None
        before: Token | None = None
        broken = False
        while i < len(tokens) and inside(i):
            token = tokens[i]
            if token.type == "COMMENT":
                if self.trailing(i):
                    parts += [Comment(self.comment(i)), nest(INDENT, [HARD])]
                else:
                    parts.append(nest(INDENT, [HARD, self.comment(i), HARD]))
                broken = True
                i += 1
                continue
            if previous is not None and not broken and _spaced(previous, token, before):
                parts.append(" ")
            if token.type == "LBRACE":
                doc, i = self.block(i, depth + 1)
            elif token.type == "LSQB":
                doc, i = self.list(i, depth)
            else:
                doc, i = str(token), i + 1
            parts.append(doc)
            before, previous, broken = previous, tokens[i - 1], False
        return parts, i

    def block(self, i: int, depth: int) -> tuple[Doc, int]:
        opening = self.tokens[i]
        items, i = self.body(i + 1, depth)
        closing = self.tokens[i]
        if not items:
            return "{}", i + 1
        one_line = "\n" not in self.text[opening.start_pos : closing.end_pos]
        parts = self.join(items, first_sep=LINE, sep=LINE)
        doc = group(["{", nest(INDENT, parts), LINE, "}"], force=depth == 0 or not one_line)
        return doc, i + 1

    def list(self, i: int, depth: int) -> tuple[Doc, int]:
        """A list: packed when it holds no comment, else one item per line."""
        tokens = self.tokens
        i += 1
        items: list[tuple[list[str], list[Doc], list[str]]] = []  # leading comments, item, trailing
        opening: list[str] = []
        leading: list[str] = []

        def inside(j: int) -> bool:
            if tokens[j].type in ("COMMA", "RSQB"):
                return False
            if tokens[j].type != "COMMENT":
                return True
            k = j
            while k < len(tokens) and tokens[k].type == "COMMENT":
                k += 1
            return k < len(tokens) and tokens[k].type not in ("COMMA", "RSQB")

        while tokens[i].type != "RSQB":
            token = tokens[i]
            if token.type == "COMMENT":
                if self.trailing(i) and tokens[i - 1].type == "LSQB":
                    opening.append(self.comment(i))
                elif self.trailing(i) and items and not leading:
                    items[-1][2].append(self.comment(i))
                else:
                    leading.append(self.comment(i))
                i += 1
            elif token.type == "COMMA":
                i += 1
            else:
                doc, i = self.run(i, inside, depth)
                items.append((leading, doc, []))
                leading = []
        closing, i = leading, i + 1
        if not items and not opening and not closing:
            return "[]", i
        plain = not opening and not closing and all(not a and not c for a, _, c in items)
        if plain and not any(group(d).broken for _, d, _ in items):
            packed = Fill(tuple(flat(d) for _, d, _ in items))
            return group(["[", nest(INDENT, [SOFT, packed]), IfBreak(","), SOFT, "]"]), i
        parts: list[Doc] = [Comment(c) for c in opening[:1]]
        for c in opening[1:]:
            parts += [HARD, c]
        for before, doc, after in items:
            for c in before:
                parts += [HARD, c]
            parts += [HARD, doc, ","]
            if after:
                parts.append(Comment(after[0]))
            for c in after[1:]:
                parts += [HARD, c]
        for c in closing:
            parts += [HARD, c]
        return group(["[", nest(INDENT, parts), HARD, "]"], force=True), i


def _spaced(previous: Token, token: Token, before: Token | None) -> bool:
    """Whether a space separates two tokens of a statement."""
    if previous.type in _OPEN_NO_SPACE or token.type in _CLOSE_NO_SPACE:
        return False
    if _tight(previous) or _tight(token):
        return False
    if previous.type == "MINUS" and (before is None or before.type not in _OPERANDS):
        return token[0].isdigit() or token[0] in "-."  # unary minus: "-x", but "- 1" stays
    return True


def _tight(token: Token) -> bool:
    """``..`` of a range, ``:`` of an interaction (``a:b``) and ``^`` of an interaction order
    (``(a + b)^2``, binding tighter than ``+``, as R writes it) are written without spaces."""
    return token.type != "STRING" and str(token) in ("..", ":", "^")
