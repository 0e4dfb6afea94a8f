"""The syntax tree (Lark's) turned into benchlang's AST (``lang/ast.py``): one method per
grammar rule, spans kept on every node for diagnostics. ``syntax.py`` drives the parser and
hands a tree without syntax errors to :class:`ToAst`."""

from __future__ import annotations

import ast as pyast
import warnings

from lark import Token, Transformer, Tree, v_args

from benchlang.lang import ast
from benchlang.lang.diagnostics import Span

_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def span_of(node: Token | Tree) -> Span:
    if isinstance(node, Token):
        line, column, end_line, end_column = node.line, node.column, node.end_line, node.end_column
        # the parser's lexer sets every position (lark types them optional)
        assert line is not None and column is not None
        assert end_line is not None and end_column is not None
        return Span(line, column, end_line, end_column)
    meta = node.meta
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _meta_span(meta) -> Span:
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def parse_duration(text: str) -> float:
    for unit in ("ms", "s", "m", "h", "d", "w"):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * _DURATION_UNITS[unit]
    raise ValueError(f"not a duration: {text!r}")


def string_value(text: str) -> str:
    if text.startswith('"""'):
        return text[3:-3]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unknown escape such as \/ keeps its backslash
            return pyast.literal_eval(text)
    except (ValueError, SyntaxError, Warning):
        return text[1:-1]


def _literal(token: Token) -> ast.Value:
    span = span_of(token)
    kind = token.type
    text = str(token)
    if kind == "STRING":
        return ast.Value("string", string_value(text), span)
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
        digits = text.rstrip("KMGTBiHzk")
        return ast.Value("quantity", (float(digits), text[len(digits) :]), span)
    return ast.Value("word", text, span)


def _as_value(node) -> ast.Value:
    if isinstance(node, ast.Value):
        return node
    return _literal(node)


@v_args(meta=True)
class ToAst(Transformer):
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
        return ast.Experiment(str(children[0]), span_of(children[0]), tuple(children[1:]), None)

    def word(self, meta, children):
        return ast.Value("word", str(children[0]), span_of(children[0]))

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
            "better", _meta_span(meta), ast.Value("word", str(children[0]), span_of(children[0]))
        )

    def metric_of(self, meta, children):
        return ast.Statement(
            "of", _meta_span(meta), ast.Value("word", str(children[0]), span_of(children[0]))
        )

    def aggregate(self, meta, children):
        return ast.Value("word", str(children[0]), span_of(children[0]))

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
        return ast.Hosts(str(children[0]), span_of(children[0]), settings)

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
            span_of(children[0]),
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
        population = next((c for c in children[2:] if isinstance(c, list)), [None, None])
        return ast.Factor(
            str(children[0]),
            span_of(children[0]),
            _as_value(children[1]),
            coverage,
            *hidden,
            population=population[0],
            population_settings=population[1],
        )

    def factor_builtin(self, meta, children):
        return ast.Factor(str(children[0]), span_of(children[0]), None, None, *children[1])

    def hidden_option(self, meta, children):
        return span_of(children[0]), (children[1] if len(children) > 1 else None)

    def population_option(self, meta, children):
        return [span_of(children[0]), (children[1] if len(children) > 1 else None)]

    def benchmark(self, meta, children):
        items = []
        for child in children[1:]:
            items.extend(child if isinstance(child, tuple) else (child,))
        return ast.Benchmark(str(children[0]), span_of(children[0]), tuple(items))

    def _measure_head(self, children):
        name = children[0]
        series = (
            len(children) > 1 and isinstance(children[1], Token) and children[1].type == "SERIES"
        )
        return name, series, children[2 if series else 1 :]

    def measure_builtin(self, meta, children):
        name, series, rest = self._measure_head(children)
        return ast.Measure(
            str(name), span_of(name), series, builtin=str(rest[0]), builtin_span=span_of(rest[0])
        )

    def measure_extract(self, meta, children):
        name, series, rest = self._measure_head(children)
        stream, extractor = rest
        return ast.Measure(
            str(name),
            span_of(name),
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
            span_of(children[0]),
            tuple(items),
            convergence,
            convergence_span,
            expression,
        )

    def arith_name(self, meta, children):
        return ast.Arith("name", span_of(children[0]), value=str(children[0]))

    def arith_number(self, meta, children):
        return ast.Arith("number", span_of(children[0]), value=float(children[0]))

    def arith_binary(self, meta, children):
        left, op, right = children
        return ast.Arith(str(op), _meta_span(meta), (left, right))

    def arith_minus_literal(self, meta, children):
        left, literal = children
        number = ast.Arith("number", span_of(literal), value=-float(literal))
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
            span_of(children[0]),
            children[-1],
            str(method) if method else None,
            span_of(method) if method else None,
        )

    def variability(self, meta, children):
        return ast.Block("variability", str(children[0]), span_of(children[0]), children[1])

    def design(self, meta, children):
        return ast.Block("design", None, _meta_span(meta), children[0])

    def machine(self, meta, children):
        return ast.Block("machine", None, _meta_span(meta), children[0])

    def stop_after(self, meta, children):
        return ast.Stop("after", _meta_span(meta), count=_literal(children[0]))

    def stop_adaptive(self, meta, children):
        return ast.Stop("adaptive", _meta_span(meta), settings=children[0] if children else None)

    def stop_method(self, meta, children):
        settings = children[1] if len(children) > 1 else None
        return ast.Stop("method", span_of(children[0]), settings=settings, name=str(children[0]))

    def analysis_method(self, meta, children):
        settings = children[1] if len(children) > 1 else None
        return ast.AnalysisItem(
            "method", span_of(children[0]), settings=settings, name=str(children[0])
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
            span_of(children[0]),
            span_of(method) if method else None,
            settings,
        )

    def order_dependence(self, meta, children):
        return ast.AnalysisItem(
            "order_dependence", _meta_span(meta), settings=children[0] if children else None
        )

    def anova(self, meta, children):
        """``anova M ~ A * B``; ``(A + B + C)^2`` (interactions up to that order) and
        ``by host`` (one table per host) are the settings ``order`` and ``by``."""
        tokens = [c for c in children[1:] if isinstance(c, Token)]
        options = tuple(c for c in children[1:] if isinstance(c, ast.Setting))
        terms = tuple(str(c) for c in tokens if c.type == "NAME")
        operators = "".join(str(c) for c in tokens if c.type == "FORMULA_OP")
        return ast.AnalysisItem(
            "anova",
            _meta_span(meta),
            settings=ast.Settings(options, _meta_span(meta)) if options else None,
            name=str(children[0]),
            terms=terms,
            path=ast.Value("word", operators, _meta_span(meta)),
        )

    def anova_order(self, meta, children):
        span = span_of(children[0])
        return ast.Setting("order", span, value=ast.Value("int", int(children[0]), span))

    def anova_by(self, meta, children):
        span = span_of(children[0])
        return ast.Setting("by", span, value=ast.Value("word", str(children[0]), span))

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
