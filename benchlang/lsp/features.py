"""The language server's answers, as plain values in code-point positions: diagnostics from
the real checker, hover, completion, definitions, references, the outline and the ``auto``
hints. No protocol types here (benchlang.lsp.server converts), so each answer is testable
alone and the server stays a thin adapter.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from benchlang import model
from benchlang.lang.diagnostics import Diagnostic, Source, SpecError
from benchlang.lsp.index import Index, Name
from benchlang.lsp.keywords import KEYWORDS, SETTINGS, method_parameter, render, render_parameter

Range = tuple[tuple[int, int], tuple[int, int]]
"""((line, column), (line, column)), 0-based, code points, end exclusive."""


@attrs.frozen
class Checked:
    """What the checker said about one version of a text: its diagnostics (errors and
    warnings, the same as ``benchlang check``) and the experiment when it had no error."""

    diagnostics: tuple[Diagnostic, ...]
    experiment: model.Experiment | None


def check_text(text: str, path: str, base_dir: Path | None = None) -> Checked:
    """Run the checker ``benchlang check`` runs on an unsaved text (against the installed
    backends); never raises: a checker failure on strange text is reported as a diagnostic."""
    from benchlang.backends.registry import backend_kinds
    from benchlang.lang.check import check_source

    try:
        compiled = check_source(Source(path, text), base_dir, backends=backend_kinds())
    except SpecError as err:
        return Checked(err.diagnostics, None)
    except (RecursionError, MemoryError, ValueError, OverflowError) as err:
        return Checked((Diagnostic(f"the checker could not read this text: {err}", None),), None)
    return Checked(compiled.warnings, compiled.experiment)


def diagnostic_range(index: Index, d: Diagnostic) -> Range:
    """A diagnostic's span as a range; a caret without an end covers its word."""
    if d.span is None:
        return ((0, 0), (0, 0))
    line, column = d.span.line - 1, d.span.column - 1
    if d.span.end_line is not None and d.span.end_column is not None:
        end = (d.span.end_line - 1, d.span.end_column - 1)
        if end > (line, column):
            return ((line, column), end)
    token = index.token_at(index.offset(line, column))
    if token is not None and token.start == index.offset(line, column):
        return ((line, column), index.position(token.end))
    return ((line, column), (line, column + 1))


def _range(index: Index, start: int, end: int) -> Range:
    return (index.position(start), index.position(end))


def hover(index: Index, line: int, column: int, experiment: model.Experiment | None) -> str | None:
    """Markdown for the word under the cursor: a keyword or setting (meaning, unit, default,
    source), a declared name (its declaration), or ``auto`` (what the plan computes)."""
    offset = index.offset(line, column)
    name = index.name_at(offset)
    if name is not None and index.names(name.name):
        return "\n\n".join(_declaration_text(d) for d in index.names(name.name))
    token = index.token_at(offset)
    if token is None or token.kind != "word":
        return None
    word = token.text
    before = index.words_before(token.start, 1)
    if word == "auto":
        return auto_text(before[0] if before else "", experiment)
    blocks = index.enclosing(token.start)
    block = blocks[-1] if blocks else None
    if block is not None:
        docs = SETTINGS.get(block.kind)
        if docs and word in docs:
            return render(word, docs[word])
        if block.method:
            parameter = method_parameter(block.method, word)
            if parameter is not None:
                from benchlang.stats.registry import statistics_methods

                return render_parameter(statistics_methods()[block.method], parameter)
    if word in model.BUILTIN_MEASURES:
        return f"**{word}**: a built-in measure of every trial, in {model.BUILTIN_MEASURES[word]}"
    if word in model.COUNTERS:
        event, unit = model.COUNTERS[word]
        return f"**{word}**: the perf counter `{event}` of the command alone, in {unit}"
    if word in KEYWORDS:
        return render(word, KEYWORDS[word])
    return None


def _declaration_text(d: Name) -> str:
    where = f" in benchmark {d.parent}" if d.parent else ""
    detail = f" `{d.detail}`" if d.detail and not d.detail.startswith("{") else ""
    return f"**{d.kind} {d.name}**{where}{detail}"


AUTO_SETTINGS = ("runs", "series", "span")


def auto_text(setting: str, experiment: model.Experiment | None) -> str:
    """What ``SETTING auto`` comes to in the plan, and why (the checker's reasons)."""
    if setting not in AUTO_SETTINGS:
        return "**auto**: computed when the spec is checked and planned"
    if experiment is None:
        return f"**{setting} auto**: computed once the spec checks without errors"
    d = experiment.design
    if setting == "runs":
        return f"**runs auto = {d.runs}**: {d.runs_reason}"
    if setting == "series":
        return f"**series auto = {d.series}**: {d.series_reason}"
    if isinstance(d.span, float):
        return f"**span auto = {d.span:g} s**: {d.span_reason or 'the profile recommends it'}"
    return (
        "**span auto**: resolved when planned, the longest seasonal period the profile finds "
        "(TriScale §4.6)"
    )


def auto_hints(
    index: Index, experiment: model.Experiment | None
) -> list[tuple[tuple[int, int], str]]:
    """Inlay hints after each ``runs|series auto`` of a design: `` = 5``."""
    if experiment is None:
        return []
    out = []
    for i, token in enumerate(index.tokens):
        if token.kind != "word" or token.text != "auto" or i == 0:
            continue
        setting = index.tokens[i - 1].text
        blocks = index.enclosing(token.start)
        if setting in ("runs", "series") and blocks and blocks[-1].kind == "design":
            value = experiment.design.runs if setting == "runs" else experiment.design.series
            out.append((index.position(token.end), f" = {value}"))
    return out


_NAME_AFTER = {
    "kpi": ("metric",),
    "variability": ("metric",),
    "compare": ("metric",),
    "anova": ("metric",),
    "by": ("factor",),
    "of": ("measure",),
    "~": ("factor",),
    "*": ("factor",),
}


def completion(index: Index, line: int, column: int) -> list[tuple[str, str, str]]:
    """(label, kind, detail) of what may be written at the cursor: names a place expects,
    factors inside a command's ``{``, else the keywords and settings of the enclosing block."""
    offset = index.offset(line, column)
    token = index.token_at(offset)
    if token is not None and token.kind == "string" and token.start < offset:
        inside = token.text[: offset - token.start]
        if inside.rfind("{") > inside.rfind("}"):
            factors = [
                (d.name, "factor", d.detail) for d in index.declarations if d.kind == "factor"
            ]
            if all(name != "runtime" for name, _, _ in factors):
                factors.append(
                    ("runtime", "setting", "the design's runtime (design { runtime 30s })")
                )
            return factors
        return []
    if token is not None and token.kind == "comment":
        return []
    start = token.start if token is not None and token.kind == "word" else offset
    before = index.words_before(start, 2)
    if before and before[-1] in _NAME_AFTER:
        kinds = _NAME_AFTER[before[-1]]
        return [(d.name, d.kind, d.detail) for d in index.declarations if d.kind in kinds]
    if before and before[-1] == "=" and len(before) > 1:
        return [(m, "measure", f"built-in, {u}") for m, u in model.BUILTIN_MEASURES.items()]
    if before and before[-1] == "with":
        from benchlang.stats.registry import statistics_methods

        return [(m.name, "method", m.summary) for m in statistics_methods().values()]
    if before and _same_line(index, start, before):
        return []
    blocks = index.enclosing(start)
    block = blocks[-1] if blocks else None
    if block is None:
        return [(w, "keyword", KEYWORDS[w].meaning) for w in ("benchlang", "experiment")]
    out = [(k, "setting", d.meaning) for k, d in SETTINGS.get(block.kind, {}).items()]
    if block.method and not out:
        from benchlang.stats.registry import statistics_methods

        method = statistics_methods().get(block.method)
        out = [(p.name, "setting", p.doc) for p in method.parameters] if method else []
    listed = {label for label, _, _ in out}
    out += [
        (w, "keyword", d.meaning)
        for w, d in KEYWORDS.items()
        if block.kind in d.where and w not in listed  # warmup is both a block and a statement
    ]
    return out


def _same_line(index: Index, start: int, before: list[str]) -> bool:
    """Whether the cursor follows a word on its own line (a value is expected, not a key)."""
    line = index.position(start)[0]
    text = index.line_text(line)[: index.position(start)[1]].split("#", 1)[0]
    return bool(text.strip()) and not text.rstrip().endswith("{")


def definition(index: Index, line: int, column: int) -> list[Range]:
    """Where the name under the cursor is declared."""
    name = index.name_at(index.offset(line, column))
    if name is None:
        return []
    return [_range(index, d.start, d.end) for d in index.names(name.name)]


def references(index: Index, line: int, column: int, declaration: bool = True) -> list[Range]:
    """Every use of the name under the cursor (its declarations too when asked)."""
    name = index.name_at(index.offset(line, column))
    if name is None or not index.names(name.name):
        return []
    return [
        _range(index, n.start, n.end)
        for n in index.occurrences(name.name)
        if declaration or n.kind == "use"
    ]


@attrs.frozen
class Symbol:
    name: str
    kind: str
    detail: str
    range: Range
    selection: Range
    children: tuple[Symbol, ...] = ()


def symbols(index: Index) -> list[Symbol]:
    """The outline: the experiment, its factors, benchmarks (with their measures), metrics
    and its kpi, variability, design, stop, analysis and machine blocks."""
    out: list[Symbol] = []
    for d in index.declarations:
        if d.kind == "measure":
            continue
        children = tuple(
            _symbol(index, m)
            for m in index.declarations
            if m.kind == "measure" and m.parent == d.name and d.kind == "benchmark"
        )
        out.append(_symbol(index, d, children))
    for b in index.blocks:
        if b.kind in ("kpi", "variability", "design", "stop", "analysis", "machine"):
            head = index.line_text(index.position(b.start)[0]).split("{", 1)[0].strip()
            start = index.offset(index.position(b.start)[0], 0)
            out.append(
                Symbol(
                    head or b.kind,
                    b.kind,
                    "",
                    _range(index, start, b.end),
                    _range(index, b.start, b.start + 1),
                )
            )
    experiment = [s for s in out if s.kind == "experiment"]
    if len(experiment) == 1:
        rest = tuple(s for s in out if s.kind != "experiment")
        return [attrs.evolve(experiment[0], children=rest)]
    return out


def _symbol(index: Index, d: Name, children: tuple[Symbol, ...] = ()) -> Symbol:
    line_start = index.offset(index.position(d.start)[0], 0)
    whole = _range(index, line_start, max(d.scope_end, d.end))
    return Symbol(d.name, d.kind, d.detail, whole, _range(index, d.start, d.end), children)


def format_text(text: str, path: str) -> str:
    """The text as ``benchlang fmt`` writes it; ``SpecError`` when it does not parse."""
    try:
        from benchlang.lang.format import format_text as fmt
    except ImportError:
        raise LookupError("formatting needs 'benchlang fmt', which this version lacks") from None
    return fmt(text, path)
