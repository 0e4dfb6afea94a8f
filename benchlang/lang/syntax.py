"""Parse spec text into the syntax tree, reporting every syntax error with a position."""

from __future__ import annotations

import ast as pyast
import difflib
import re
import warnings

from lark import Token, Transformer, Tree, v_args
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from benchlang.lang import ast
from benchlang.lang.diagnostics import Diagnostic, Source, Span, SpecError
from benchlang.lang.grammar import keyword_of_terminal, parser

_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
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
_MAX_SYNTAX_ERRORS = 20
_MAX_RECOVERIES = 200
MAX_NESTING = 64
"""Deepest nesting of brackets and braces a spec may have; real specs need about 4. The bound
keeps every recursive pass (tree building, error recovery, checking) far from Python's
recursion limit, so deep input gets a diagnostic instead of a RecursionError."""
MAX_DIGITS = 100
"""Longest number literal: far more than any setting needs, and short enough that every number
converts to int and float (Python refuses int() of more than 4300 digits; floats overflow)."""
_NESTING = re.compile(r'"""[\s\S]*?"""|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|#[^\n]*|[\[\]{}()]')
_LITERALS = frozenset(("STRING", "INT", "FLOAT", "NEGATIVE", "PERCENT", "DURATION"))


def _span(node: Token | Tree) -> Span:
    if isinstance(node, Token):
        return Span(node.line, node.column, node.end_line, node.end_column)
    meta = node.meta
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _meta_span(meta) -> Span:
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def parse_duration(text: str) -> float:
    for unit in ("ms", "s", "m", "h", "d", "w"):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * _DURATION_UNITS[unit]
    raise ValueError(f"not a duration: {text!r}")


def _string_value(text: str) -> str:
    if text.startswith('"""'):
        return text[3:-3]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unknown escape such as \/ keeps its backslash
            return pyast.literal_eval(text)
    except (ValueError, SyntaxError, Warning):
        return text[1:-1]


def _literal(token: Token) -> ast.Value:
    span = _span(token)
    kind = token.type
    text = str(token)
    if kind == "STRING":
        return ast.Value("string", _string_value(text), span)
    if kind == "INT":
        return ast.Value("int", int(text), span)
    if kind in ("FLOAT", "NEGATIVE"):
        number = float(text)
        if (
            kind == "NEGATIVE"
            and number.is_integer()
            and "." not in text
            and "e" not in text.lower()
        ):
            return ast.Value("int", int(text), span)
        return ast.Value("float", number, span)
    if kind == "PERCENT":
        return ast.Value("percent", float(text[:-1]), span)
    if kind == "DURATION":
        return ast.Value("duration", parse_duration(text), span)
    if kind == "QUANTITY":
        number = text.rstrip("KMGTBiHzk")
        return ast.Value("quantity", (float(number), text[len(number) :]), span)
    return ast.Value("word", text, span)


def _as_value(node) -> ast.Value:
    if isinstance(node, ast.Value):
        return node
    return _literal(node)


@v_args(meta=True)
class _ToAst(Transformer):
    """Lark tree -> benchlang.lang.ast; no Lark object survives this pass."""

    def start(self, meta, children):
        version = None
        for child in children:
            if isinstance(child, ast.Value):
                version = child
        experiment = children[-1]
        return ast.Experiment(experiment.name, experiment.span, experiment.items, version)

    def version_line(self, meta, children):
        return _literal(children[0])

    def experiment(self, meta, children):
        return ast.Experiment(str(children[0]), _span(children[0]), tuple(children[1:]), None)

    def word(self, meta, children):
        return ast.Value("word", str(children[0]), _span(children[0]))

    def list(self, meta, children):
        return ast.Value("list", tuple(_as_value(c) for c in children), _meta_span(meta))

    def range(self, meta, children):
        numbers = [_as_value(c).value for c in children]
        step = numbers[2] if len(numbers) > 2 else None
        return ast.Value("range", (numbers[0], numbers[1], step), _meta_span(meta))

    def settings(self, meta, children):
        return ast.Settings(tuple(children), _meta_span(meta))

    def setting(self, meta, children):
        key = children[0]
        block = children[2] if len(children) > 2 else None
        return ast.Setting(key.value, key.span, value=_as_value(children[1]), block=block)

    def setting_block(self, meta, children):
        key = children[0]
        return ast.Setting(key.value, key.span, block=children[1])

    def setting_file(self, meta, children):
        key = children[0]
        return ast.Setting(key.value, key.span, file=_literal(children[1]))

    def setting_env(self, meta, children):
        key = children[0]
        return ast.Setting(key.value, key.span, env=_literal(children[1]))

    def _statement(self, keyword, meta, children, flag=None):
        value = _as_value(children[0]) if children else None
        return ast.Statement(keyword, _meta_span(meta), value, flag)

    def title(self, meta, children):
        return self._statement("title", meta, children)

    def seed(self, meta, children):
        return self._statement("seed", meta, children)

    def setup(self, meta, children):
        return self._statement("setup", meta, children)

    def teardown(self, meta, children):
        return self._statement("teardown", meta, children)

    def timeout(self, meta, children):
        return self._statement("timeout", meta, children)

    def workdir(self, meta, children):
        return self._statement("workdir", meta, children)

    def warmup(self, meta, children):
        return self._statement("warmup", meta, children)

    def run(self, meta, children):
        return self._statement("run", meta, children)

    def unit(self, meta, children):
        return self._statement("unit", meta, children)

    def trim(self, meta, children):
        return self._statement("trim", meta, children)

    def reset(self, meta, children):
        flag = "reconnect" if len(children) > 1 else None
        return self._statement("reset", meta, children[:1], flag)

    def reset_reboot(self, meta, children):
        return ast.Statement("reset", _meta_span(meta), None, str(children[0]))

    def hook(self, meta, children):
        return ast.Statement(str(children[0]), _meta_span(meta), _literal(children[1]))

    def better(self, meta, children):
        return ast.Statement(
            "better", _meta_span(meta), ast.Value("word", str(children[0]), _span(children[0]))
        )

    def metric_of(self, meta, children):
        return ast.Statement(
            "of", _meta_span(meta), ast.Value("word", str(children[0]), _span(children[0]))
        )

    def aggregate(self, meta, children):
        return ast.Value("word", str(children[0]), _span(children[0]))

    def metric_measure(self, meta, children):
        return ast.Statement("measure", _meta_span(meta), children[0])

    def metric_measure_percentile(self, meta, children):
        return ast.Statement("measure", _meta_span(meta), _as_value(children[0]), "percentile")

    def env(self, meta, children):
        return (ast.EnvPair(str(children[0]), _as_value(children[1]), _meta_span(meta)),)

    def env_block(self, meta, children):
        return tuple(children)

    def env_pair(self, meta, children):
        return ast.EnvPair(str(children[0]), _as_value(children[1]), _meta_span(meta))

    def hosts(self, meta, children):
        settings = children[1] if len(children) > 1 else None
        return ast.Hosts(str(children[0]), _span(children[0]), settings)

    def hosts_where(self, meta, children):
        conditions = tuple(c for c in children if isinstance(c, ast.Condition))
        return ast.HostsWhere(_meta_span(meta), conditions)

    def condition(self, meta, children):
        fact, op, value = children
        return ast.Condition(str(fact), _meta_span(meta), op, _as_value(value))

    def condition_in(self, meta, children):
        return ast.Condition(str(children[0]), _meta_span(meta), "in", children[1])

    def cmp_op(self, meta, children):
        return str(children[0])

    def factor_from(self, meta, children):
        coverage = children[3] if len(children) > 3 else None
        return ast.Factor(
            str(children[0]),
            _span(children[0]),
            None,
            coverage,
            None,
            provider=children[1],
            key=_literal(children[2]),
        )

    def coverage(self, meta, children):
        return _literal(children[0])

    def factor(self, meta, children):
        coverage = next((c for c in children[2:] if isinstance(c, ast.Value)), None)
        hidden = next((c for c in children[2:] if isinstance(c, tuple)), (None, None))
        return ast.Factor(
            str(children[0]), _span(children[0]), _as_value(children[1]), coverage, *hidden
        )

    def factor_builtin(self, meta, children):
        return ast.Factor(str(children[0]), _span(children[0]), None, None, *children[1])

    def hidden_option(self, meta, children):
        return _span(children[0]), (children[1] if len(children) > 1 else None)

    def benchmark(self, meta, children):
        items = []
        for child in children[1:]:
            items.extend(child if isinstance(child, tuple) else (child,))
        return ast.Benchmark(str(children[0]), _span(children[0]), tuple(items))

    def _measure_head(self, children):
        name = children[0]
        series = (
            len(children) > 1 and isinstance(children[1], Token) and children[1].type == "SERIES"
        )
        return name, series, children[2 if series else 1 :]

    def measure_builtin(self, meta, children):
        name, series, rest = self._measure_head(children)
        return ast.Measure(
            str(name), _span(name), series, builtin=str(rest[0]), builtin_span=_span(rest[0])
        )

    def measure_extract(self, meta, children):
        name, series, rest = self._measure_head(children)
        stream, extractor = rest
        return ast.Measure(
            str(name),
            _span(name),
            series,
            stream=stream[0],
            path=stream[1],
            extractor=extractor[0],
            argument=extractor[1],
        )

    def stream(self, meta, children):
        if isinstance(children[0], Token) and children[0].type in ("STDOUT", "STDERR"):
            return (str(children[0]), None)
        return ("file", _literal(children[0]))

    def extractor(self, meta, children):
        argument = _literal(children[1]) if len(children) > 1 else None
        return (str(children[0]), argument)

    def metric(self, meta, children):
        return self._metric_node(children, None)

    def metric_derived(self, meta, children):
        return self._metric_node([children[0], *children[2:]], children[1])

    @staticmethod
    def _metric_node(children, expression: ast.Arith | None) -> ast.Metric:
        items, convergence, convergence_span = [], None, None
        for child in children[1:]:
            if isinstance(child, tuple):
                convergence_span, convergence = child
            else:
                items.append(child)
        return ast.Metric(
            str(children[0]),
            _span(children[0]),
            tuple(items),
            convergence,
            convergence_span,
            expression,
        )

    def arith_name(self, meta, children):
        return ast.Arith("name", _span(children[0]), value=str(children[0]))

    def arith_number(self, meta, children):
        return ast.Arith("number", _span(children[0]), value=float(children[0]))

    def arith_binary(self, meta, children):
        left, op, right = children
        return ast.Arith(str(op), _meta_span(meta), (left, right))

    def arith_minus_literal(self, meta, children):
        left, literal = children
        number = ast.Arith("number", _span(literal), value=-float(literal))
        return ast.Arith("-", _meta_span(meta), (left, number))

    def arith_negate(self, meta, children):
        return ast.Arith("neg", _meta_span(meta), (children[1],))

    def convergence(self, meta, children):
        settings = children[0] if children else ast.Settings((), _meta_span(meta))
        return (_meta_span(meta), settings)

    def kpi(self, meta, children):
        method = children[1] if len(children) > 2 else None
        return ast.Block(
            "kpi",
            str(children[0]),
            _span(children[0]),
            children[-1],
            str(method) if method else None,
            _span(method) if method else None,
        )

    def variability(self, meta, children):
        return ast.Block("variability", str(children[0]), _span(children[0]), children[1])

    def design(self, meta, children):
        return ast.Block("design", None, _meta_span(meta), children[0])

    def stop_after(self, meta, children):
        return ast.Stop("after", _meta_span(meta), count=_literal(children[0]))

    def stop_adaptive(self, meta, children):
        return ast.Stop("adaptive", _meta_span(meta), settings=children[0] if children else None)

    def stop_method(self, meta, children):
        settings = children[1] if len(children) > 1 else None
        return ast.Stop("method", _span(children[0]), settings=settings, name=str(children[0]))

    def analysis_method(self, meta, children):
        settings = children[1] if len(children) > 1 else None
        return ast.AnalysisItem(
            "method", _span(children[0]), settings=settings, name=str(children[0])
        )

    def stop_when(self, meta, children):
        max_count = _literal(children[2]) if len(children) > 2 else None
        return ast.Stop(
            "when",
            _meta_span(meta),
            metric=str(children[0]),
            width=_as_value(children[1]),
            max_count=max_count,
        )

    def analysis(self, meta, children):
        return ast.Block(
            "analysis", None, _meta_span(meta), ast.Settings((), _meta_span(meta))
        ), tuple(children)

    def compare(self, meta, children):
        method = children[2] if len(children) > 2 else None
        settings = children[3] if len(children) > 3 else None
        return ast.Compare(
            str(children[0]),
            str(children[1]),
            str(method) if method else None,
            _span(children[0]),
            _span(method) if method else None,
            settings,
        )

    def order_dependence(self, meta, children):
        return ast.AnalysisItem(
            "order_dependence", _meta_span(meta), settings=children[0] if children else None
        )

    def anova(self, meta, children):
        terms = tuple(str(c) for c in children[1:] if c.type == "NAME")
        operators = "".join(str(c) for c in children[1:] if c.type == "FORMULA_OP")
        return ast.AnalysisItem(
            "anova",
            _meta_span(meta),
            name=str(children[0]),
            terms=terms,
            path=ast.Value("word", operators, _meta_span(meta)),
        )

    def profile(self, meta, children):
        options = tuple(children[2:])
        settings = ast.Settings(options, _meta_span(meta)) if options else None
        return ast.AnalysisItem(
            "profile",
            _meta_span(meta),
            settings=settings,
            name=str(children[0]),
            path=_literal(children[1]),
        )

    def profile_option(self, meta, children):
        key = children[0]
        return ast.Setting(key.value, key.span, value=_as_value(children[1]))


def _describe_expected(expected: set[str]) -> list[str]:
    keywords = keyword_of_terminal()
    names = []
    for term in sorted(expected):
        if term in keywords:
            names.append(f"'{keywords[term]}'")
        elif term in _DESCRIPTIONS:
            names.append(_DESCRIPTIONS[term])
    return sorted(set(names))


def _syntax_diagnostic(error: UnexpectedInput, source: Source) -> Diagnostic:
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
        close = difflib.get_close_matches(str(bad), sorted(options), n=1, cutoff=0.6)
        if close:
            parser_state.feed_token(Token(options[close[0]], close[0]))
            return

    def fits(state) -> bool:
        return bad.type in state.accepts()

    frontier = [(parser_state, ())]
    for _depth in range(2):
        next_frontier = []
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
    diagnostics: list[Diagnostic] = []
    seen_lines: set[int] = set()
    recoveries = [0]

    def on_error(error: UnexpectedInput) -> bool:
        recoveries[0] += 1
        if recoveries[0] > _MAX_RECOVERIES:
            return False  # errors on lines already reported: stop, the output would not change
        line = getattr(error, "line", None)
        if isinstance(error, UnexpectedToken) and error.token.type == "$END":
            if line not in seen_lines or not diagnostics:
                diagnostics.append(_syntax_diagnostic(error, source))
            return False
        if line not in seen_lines:
            seen_lines.add(line)
            diagnostics.append(_syntax_diagnostic(error, source))
        if isinstance(error, UnexpectedToken):
            _repair(error)
        return len(diagnostics) < _MAX_SYNTAX_ERRORS

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
    _check_nesting(source)
    try:
        tree = parser().parse(source.text, on_error=on_error)
    except UnexpectedInput as error:
        if not diagnostics:
            diagnostics.append(_syntax_diagnostic(error, source))
        raise SpecError(source, diagnostics) from None
    except LarkError as error:
        raise SpecError(
            source, diagnostics or [Diagnostic(f"cannot parse: {error}", Span(1, 1))]
        ) from None
    for token in tree.scan_values(lambda v: isinstance(v, Token) and v.type in _LITERALS):
        if token.type != "STRING":
            digits = sum(c.isdigit() for c in token)
            if digits > MAX_DIGITS:
                diagnostics.append(
                    Diagnostic(
                        f"this number has {digits} digits, more than benchlang reads ({MAX_DIGITS})",
                        _span(token),
                        "write a shorter number (a float such as 1e30 for a large one)",
                    )
                )
            continue
        value = _string_value(str(token))
        if "\x00" in value:
            diagnostics.append(Diagnostic("a string cannot contain a NUL character", _span(token)))
        elif not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                diagnostics.append(
                    Diagnostic(
                        "a string cannot contain a lone surrogate escape",
                        _span(token),
                        "write the character itself, or a pair of surrogates as one \\U escape",
                    )
                )
    if diagnostics:
        raise SpecError(source, diagnostics)
    experiment = _ToAst().transform(tree)
    return _flatten(experiment)


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
