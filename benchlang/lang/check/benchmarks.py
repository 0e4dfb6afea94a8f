"""Benchmarks, their command templates and measures.

A template's placeholders must be declared factors usable where they stand, and quotable in
their shell context (lang.shell); on hosts local the program of a run command must be on PATH."""

from __future__ import annotations

import os
import shutil
import string as _string

from benchlang import model
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import STRUCTURE_PLACEHOLDERS, Context
from benchlang.lang.check.hosts import check_env
from benchlang.lang.diagnostics import did_you_mean
from benchlang.lang.shell import SHELL_WORDS, parse_template, text_of
from benchlang.lang.shell import placeholders as shell_placeholders


def placeholders(template: str) -> list[tuple[str, int]]:
    """``{name}`` fields of a non-shell template (an env value, filled by str.format_map) with
    their offsets; ``("", -1)`` marks an unbalanced brace."""
    found, offset = [], 0
    try:
        for literal_text, field, _spec, _conv in _string.Formatter().parse(template):
            offset += len(literal_text)
            if field is not None:
                found.append((field, offset))
                offset += len(field) + 2
    except ValueError:
        found.append(("", -1))
    return found


def check_templates(
    ctx: Context,
    value: ast.Value | None,
    factor_names: dict[str, model.Factor],
    runtime: float | None,
    allow_factors: bool | tuple[str, ...] = True,
    where: str = "experiment-level commands run once, not per configuration",
    shell: bool = True,
) -> tuple[str, ...]:
    """Check ``{placeholders}``; return the factors a template uses. ``allow_factors``: all
    factors, none, or the names allowed here (``where`` says why the others are not)."""
    if value is None or value.kind != "string":
        return ()
    used = []
    known = [*factor_names, *STRUCTURE_PLACEHOLDERS]
    if shell:
        check_shell_contexts(ctx, value, factor_names)
    found = shell_placeholders(value.value) if shell else placeholders(value.value)
    for name, offset in found:
        span = ctx.span_in_string(value, offset, len(name) + 2)
        if offset < 0:
            ctx.error(
                "unbalanced '{' or '}' in a command template",
                value.span,
                "write '{{' and '}}' for literal braces",
            )
            continue
        if name in factor_names and (
            allow_factors is True or (allow_factors and name in allow_factors)
        ):
            used.append(name)
        elif name == "runtime" and name not in factor_names:
            if runtime is None:
                ctx.error(
                    "placeholder {runtime} has no value",
                    span,
                    "set it in the design: design { runtime 30s }",
                )
        elif name in factor_names:
            ctx.error(f"placeholder {{{name}}} cannot be used here: {where}", span)
        elif name in ctx.hardware_factors:
            ctx.error(
                f"hardware factor '{name}' is not a placeholder: its levels come from the hosts' facts when the plan is made",
                span,
                "the trial runs on a host with that level; read the fact on the host itself if the command needs it",
            )
        elif name not in ctx.broken_factors:
            hint: str | None
            if name in (model.VERSION_FACTOR, model.REQUEST_FACTOR):
                hint = f"{{{name}}} comes from an A/B design: design {{ versions {{ ... }} layout KIND {{ hosts H }} requests [...] }}"
            else:
                hint = did_you_mean(name, known) or (
                    f"declare it: factor {name} in [...]" if name.isidentifier() else None
                )
            ctx.error(f"placeholder {{{name}}} is not a declared factor", span, hint)
    return tuple(dict.fromkeys(used))


def check_shell_contexts(
    ctx: Context, value: ast.Value, factor_names: dict[str, model.Factor]
) -> None:
    """Each placeholder must be quotable where it stands (lang.shell); a level with spaces
    as a command's program, or a non-number in $((...)), fails every trial."""
    for ph in parse_template(value.value).placeholders:
        span = ctx.span_in_string(value, ph.offset, ph.width)
        factor = factor_names.get(ph.name)
        if ph.problem is not None:
            ctx.error(
                f"placeholder {{{ph.name}}} {ph.problem}",
                span,
                "a level is always one literal word: put the placeholder unquoted, or in"
                " '...', \"...\" or $(...)",
            )
        elif ph.context == "arithmetic" and factor is not None:
            bad = [lv for lv in factor.levels if not isinstance(lv, int | float)]
            if bad:
                ctx.error(
                    f"placeholder {{{ph.name}}} is inside $((...)), but level {bad[0]!r} is not a number",
                    span,
                    "use numeric levels, or move the placeholder out of the arithmetic",
                )
        elif ph.program and not ph.code and factor is not None:
            spaced = [t for t in map(text_of, factor.texts or factor.levels) if " " in t]
            if spaced:
                ctx.warn(
                    f"{{{ph.name}}} is the program of the command, but level {spaced[0]!r} has a space:"
                    " a level is one word, so the shell looks for a program with that whole name",
                    span,
                    f"if the levels are commands, write {{{ph.name}!code}} to run each as shell code",
                )


_FOUND: set[tuple[str, str]] = set()


def _on_path(program: str) -> bool:
    """Whether ``program`` is on PATH; a program found once is remembered (the language server
    checks every keystroke's text), one not found is looked for again (it may be installed)."""
    path = os.environ.get("PATH", os.defpath)
    if (program, path) in _FOUND:
        return True
    if shutil.which(program, path=path) is None:
        return False
    _FOUND.add((program, path))
    return True


def check_programs(ctx: Context, value: ast.Value, factor_names: dict[str, model.Factor]) -> None:
    """Warn when the program of a local command is not on PATH (every trial would fail
    with status 127); names with a '/' may be built by a setup, so they are left alone."""
    template = parse_template(value.value)
    programs: list[str] = []
    if template.program is not None:
        programs.append(template.program)
    elif template.placeholders and template.placeholders[0].program:
        ph = template.placeholders[0]
        factor = factor_names.get(ph.name)
        if factor is not None and template.literals[0].strip() == "":
            for level in map(text_of, factor.texts or factor.levels):
                words = level.split() if ph.code else [level]
                if words:
                    programs.append(words[0])
    for program in dict.fromkeys(programs):
        if "/" in program or program in SHELL_WORDS or "=" in program:
            continue
        if not _on_path(program):
            ctx.warn(
                f"program '{program}' is not found on PATH",
                value.span,
                "install it, or give its path; every trial on hosts local would fail (status 127)",
            )


def check_benchmarks(
    ctx: Context,
    benchmarks: list[ast.Benchmark],
    factors: list[model.Factor],
    hidden: tuple[model.Hidden, ...] = (),
) -> list[model.Benchmark]:
    ctx.unique(benchmarks, "benchmark")
    factor_names = {f.name: f for f in factors}
    factor_names.update(
        (h.name, model.Factor(h.name, h.levels)) for h in hidden if h.name not in factor_names
    )
    out = []
    for b in benchmarks:

        def stmts(kw: str, b: ast.Benchmark = b) -> list[ast.Statement]:
            return [i for i in b.items if isinstance(i, ast.Statement) and i.keyword == kw]

        run = ctx.single(stmts("run"), f"'run' in benchmark {b.name}")
        if run is None:
            ctx.error(
                f"benchmark '{b.name}' has no 'run' command", b.span, 'add: run "your command"'
            )
            continue
        used = list(check_templates(ctx, run.value, factor_names, 1.0))
        setup = ctx.single(stmts("setup"), f"'setup' in benchmark {b.name}")
        before = ctx.single(stmts("before"), f"'before' in benchmark {b.name}")
        after = ctx.single(stmts("after"), f"'after' in benchmark {b.name}")
        for stmt in (before, after):
            if stmt is not None:
                used.extend(check_templates(ctx, stmt.value, factor_names, 1.0))
        if setup is not None:
            used.extend(
                check_templates(
                    ctx,
                    setup.value,
                    factor_names,
                    1.0,
                    allow_factors=tuple(f.name for f in factors),
                    where="a benchmark's setup runs once per host; a hidden factor is drawn per trial or round (use it in 'before')",
                )
            )
        env_pairs = [i for i in b.items if isinstance(i, ast.EnvPair)]
        for pair in env_pairs:
            used.extend(check_templates(ctx, pair.value, factor_names, 1.0, shell=False))
        if ctx.local and run.value is not None and run.value.kind == "string":
            check_programs(ctx, run.value, factor_names)
        timeout = ctx.single(stmts("timeout"), f"'timeout' in benchmark {b.name}")
        workdir = ctx.single(stmts("workdir"), f"'workdir' in benchmark {b.name}")
        warmup = check_warmup(ctx, ctx.single(stmts("warmup"), f"'warmup' in benchmark {b.name}"))
        measures = check_measures(ctx, [i for i in b.items if isinstance(i, ast.Measure)], b.name)
        out.append(
            model.Benchmark(
                name=b.name,
                command=run.value.value,
                measures=tuple(measures),
                factors=tuple(f.name for f in factors if f.name in used),
                hidden=tuple(h.name for h in hidden if h.name in used),
                setup=setup.value.value if setup else None,
                before=before.value.value if before else None,
                after=after.value.value if after else None,
                env=check_env(ctx, env_pairs),
                timeout=timeout.value.value if timeout else None,
                workdir=workdir.value.value if workdir else None,
                warmup=warmup,
            )
        )
    return out


WARMUP_HINT = "give the warm-up trials of each configuration as a whole number: warmup 2"


def warmup_count(value: ast.Value) -> int:
    """``warmup N``: a whole number of untimed trials of each configuration (docs/language.md)."""
    try:
        return s.count(0)(value)
    except s.Invalid as err:
        raise s.Invalid(err.message, WARMUP_HINT) from None


def check_warmup(ctx: Context, statement: ast.Statement | None) -> int | None:
    """``warmup N`` in a benchmark, or None when it has none (the design's applies)."""
    if statement is None:
        return None
    assert statement.value is not None  # warmup N
    try:
        return warmup_count(statement.value)
    except s.Invalid as err:
        ctx.error(f"warmup: {err.message}", statement.value.span, err.hint)
        return None


def check_runtime_use(
    ctx: Context, bench_ast: ast.Benchmark, bench: model.Benchmark, runtime: float | None
) -> None:
    if runtime is not None or "runtime" in bench.factors or "runtime" in ctx.broken_factors:
        return
    for item in bench_ast.items:
        value = getattr(item, "value", None)
        if isinstance(value, ast.Value) and value.kind == "string":
            for name, offset in placeholders(value.value):
                if name == "runtime":
                    ctx.error(
                        "placeholder {runtime} has no value",
                        ctx.span_in_string(value, offset, 9),
                        "set it in the design: design { runtime 30s }",
                    )


def check_unused_factors(
    ctx: Context,
    factors: list[model.Factor],
    benchmarks: list[model.Benchmark],
    nodes: list[ast.Factor],
    hidden: tuple[model.Hidden, ...] = (),
) -> None:
    used = {name for b in benchmarks for name in (*b.factors, *b.hidden)}
    spans = {f.name: f.span for f in nodes}
    named: list[model.Factor | model.Hidden] = [*factors, *(h for h in hidden if h.substituted)]
    for f in named:
        if f.name not in used:
            ctx.warn(
                f"factor '{f.name}' is not used by any benchmark",
                spans.get(f.name),
                f"reference it in a command as {{{f.name}}}",
            )


def check_measures(ctx: Context, measures: list[ast.Measure], bench: str) -> list[model.Measure]:
    ctx.unique(measures, f"measure in benchmark {bench}")
    out = []
    for m in measures:
        if m.builtin is not None:
            builtins = {**model.BUILTIN_MEASURES, **model.COUNTERS, **model.SIMULATED}
            if m.builtin not in builtins:
                hint = (
                    did_you_mean(m.builtin, builtins) or f"built-in measures: {', '.join(builtins)}"
                )
                ctx.error(f"unknown built-in measure '{m.builtin}'", m.builtin_span, hint)
                continue
            if m.series:
                ctx.error(
                    f"built-in measure '{m.builtin}' is a single number, not a series", m.span
                )
                continue
            out.append(model.Measure(m.name, source="builtin", builtin=m.builtin))
            continue
        assert m.stream is not None  # measure NAME from STREAM EXTRACTOR
        argument = m.argument.value if m.argument is not None else None
        if m.extractor == "regex":
            import re

            assert m.argument is not None  # regex STRING

            try:
                compiled = re.compile(m.argument.value)
            except re.error as err:
                ctx.error(f"invalid regular expression: {err}", m.argument.span)
                continue
            if compiled.groups > 1:
                ctx.error(
                    "the regular expression must have at most one group",
                    m.argument.span,
                    "the group (or the whole match) is the number",
                )
                continue
        column = m.argument if m.extractor == "column" else None
        if column is not None and column.kind == "int" and column.value < 1:
            ctx.error("columns are numbered from 1", column.span)
            continue
        if m.extractor == "lines" and not m.series:
            ctx.error(
                "'lines' reads one number per line: declare the measure as a series",
                m.span,
                f"measure {m.name} series from ...",
            )
            continue
        if m.extractor == "column" and not m.series:
            ctx.error(
                "'column' reads one number per row: declare the measure as a series",
                m.span,
                f"measure {m.name} series from ...",
            )
            continue
        out.append(
            model.Measure(
                m.name,
                series=m.series,
                source=m.stream,
                path=m.path.value if m.path is not None else None,
                extractor=m.extractor,
                argument=argument,
            )
        )
    if any(x.builtin in model.COUNTERS for x in out):
        spans = {m.name: m.span for m in measures}
        for x in out:
            if x.builtin in model.BUILTIN_MEASURES and x.builtin != "wall_time":
                ctx.error(
                    f"measure {x.name} = {x.builtin} cannot be taken beside perf counters in benchmark {bench}: the command runs under perf stat, whose own time and memory the rusage would include",
                    spans[x.name],
                    "count the command's own with task_clock or page_faults, or measure it in another benchmark",
                )
    return out


def measure_names(ctx: Context, benchmarks: list[model.Benchmark]) -> dict[str, bool]:
    names: dict[str, bool] = dict.fromkeys(model.BUILTIN_MEASURES, False)
    for b in benchmarks:
        for m in b.measures:
            names[m.name] = names.get(m.name, False) or m.series
    return names
