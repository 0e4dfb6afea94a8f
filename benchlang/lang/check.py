"""From syntax tree to validated model: every semantic error, each with its position."""

from __future__ import annotations

import hashlib
import math
import shutil
import string as _string
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from benchlang import model
from benchlang.errors import SettingError
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.ab_design import (
    AB_KEYS,
    NOT_WITH_LAYOUT,
    ABDesign,
    check_ab_design,
)
from benchlang.lang.diagnostics import Diagnostic, Source, Span, SpecError, did_you_mean
from benchlang.lang.shell import SHELL_WORDS, parse_template, text_of
from benchlang.lang.shell import placeholders as shell_placeholders
from benchlang.lang.syntax import decode, parse
from benchlang.stats.sizing import sizing

MAX_TRIALS = 10_000_000
MAX_EXCLUDE = 1000
NOT_SUPPORTED_HINT = (
    "this parses, but its execution is not built yet (see docs/language.md, 'Status')"
)
_STRUCTURE_PLACEHOLDERS = ("runtime",)
_KPI_SCHEMA = {
    "percentile": s.percentile,
    "confidence": s.percent,
    "bound": s.choice("upper", "lower"),
    "exclude": s.count(0, MAX_EXCLUDE),
}
_VARIABILITY_SCHEMA = {"percentile": s.percentile, "confidence": s.percent}
_CONVERGENCE_SCHEMA = {"confidence": s.percent, "tolerance": s.percent}
_DESIGN_SCHEMA = {
    "runs": s.count_or_auto,
    "series": s.count_or_auto,
    "runtime": s.duration,
    "span": s.duration,
    "order": s.choice(*model.ORDERS),
    "layout": None,
    "versions": None,
    "requests": None,
    "replicate": s.count(1),
    "warmup": s.count(0),
    "cooldown": s.count(0),
}
_ADAPTIVE_SCHEMA = {
    "ks": s.number(0.0, 1.0),
    "min": s.count(3),
    "max": s.count(3),
    "window": s.count(1),
    "tolerance": s.number(0.0, None),
    "constant_spread": s.number(0.0, None),
    "trend_alpha": s.number(0.0, 1.0),
    "acf_threshold": s.number(0.0, 1.0),
    "normal_p": s.number(0.0, 1.0),
    "lognormal_p": s.number(0.0, 1.0),
    "uniform_p": s.number(0.0, 1.0),
    "max_components": s.count(1),
    "confidence": s.percent,
    "bootstrap_replicates": s.count(10),
    "metric": s.word,
}
_COMPARE_SCHEMAS = {
    "bootstrap": {
        "cluster": s.choice("none", "iid", "request", "host", "host_block"),
        "replicates": s.count(10),
        "weights": s.choice("poisson", "exponential"),
        "log": s.boolean,
        "interval": s.choice("clt", "percentile"),
        "confidence": s.percent,
    },
    "mixed_effects": {"method": s.choice("auto", "reml", "moments")},
}
_ADAPTIVE_FIELDS = {"min": "min_n", "max": "max_n"}
_NOT_YET_DESIGN = ("replicate",)


@attrs.frozen
class Compiled:
    """A checked spec: the model, the warnings found on the way, and the text it came from."""

    experiment: model.Experiment
    warnings: tuple[Diagnostic, ...]
    source: Source


def check_file(
    path: str | Path,
    *,
    display_path: str | None = None,
    backends: Mapping[str, Any] | None = None,
) -> Compiled:
    """Read, parse and check a spec file once; raise SpecError listing every problem."""
    path = Path(path)
    shown = display_path or str(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise SpecError(
            Source(shown, ""), [Diagnostic(f"cannot read the spec: {err.strerror}", None)]
        ) from None
    return check_source(decode(shown, data), base_dir=path.parent, backends=backends)


def check_source(
    source: Source,
    base_dir: Path | None = None,
    *,
    backends: Mapping[str, Any] | None = None,
) -> Compiled:
    """Parse and check a spec once. ``backends`` (kind -> backend class) validates the
    ``hosts`` settings; None accepts any kind (a spec re-read from a store needs no backend)."""
    tree = parse(source)
    checker = _Checker(source, base_dir or Path("."), backends)
    experiment = checker.check(tree)
    if experiment is None or any(d.severity == "error" for d in checker.diagnostics):
        raise SpecError(source, checker.diagnostics)
    warnings = tuple(d for d in checker.diagnostics if d.severity == "warning")
    return Compiled(experiment, warnings, source)


def compile_source(
    source: Source,
    base_dir: Path | None = None,
    *,
    backends: Mapping[str, Any] | None = None,
) -> model.Experiment:
    """The checked model of a spec (``check_source`` without the warnings)."""
    return check_source(source, base_dir, backends=backends).experiment


def load(
    path: str | Path,
    *,
    display_path: str | None = None,
    backends: Mapping[str, Any] | None = None,
) -> model.Experiment:
    """The checked model of a spec file (``check_file`` without the warnings)."""
    return check_file(path, display_path=display_path, backends=backends).experiment


def placeholders(template: str) -> list[tuple[str, int]]:
    """``{name}`` fields in a command template with their offsets; ``{{`` escapes a brace."""
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


def _bounded_sizing(percentile: float, confidence: float, exclude: int = 0) -> int:
    """Thompson sizing, or a cheap lower estimate when that is beyond MAX_TRIALS anyway
    (the exact search with excluded samples costs time and memory linear in N)."""
    first = sizing(percentile, confidence)
    estimate = first + exclude / (1.0 - max(percentile, 100.0 - percentile) / 100.0)
    return math.ceil(estimate) if estimate > MAX_TRIALS else sizing(percentile, confidence, exclude)


class _Checker:
    def __init__(
        self, source: Source, base_dir: Path, backends: Mapping[str, Any] | None = None
    ) -> None:
        self.source = source
        self.base_dir = base_dir
        self.backends = backends
        self.diagnostics: list[Diagnostic] = []
        self.broken_factors: set[str] = set()  # declared, with an error already reported
        self.local = False  # hosts local: commands run here, so their programs can be looked up

    def error(self, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(message, span, hint))

    def warn(self, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(message, span, hint, severity="warning"))

    def not_supported(self, what: str, span: Span) -> None:
        self.error(f"{what} is not supported yet", span, NOT_SUPPORTED_HINT)

    def _single(self, items: Iterable[Any], what: str) -> Any:
        items = list(items)
        for extra in items[1:]:
            self.error(
                f"{what} is given twice", extra.span, f"first given on line {items[0].span.line}"
            )
        return items[0] if items else None

    def _unique(self, items: list[Any], what: str) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for item in items:
            if item.name in seen:
                self.error(
                    f"duplicate {what} '{item.name}'",
                    item.span,
                    f"first declared on line {seen[item.name].span.line}",
                )
            else:
                seen[item.name] = item
        return seen

    def check(self, tree: ast.Experiment) -> model.Experiment | None:
        if tree.version is not None and tree.version.value != 1:
            self.error(
                f"unknown language version {tree.version.value}",
                tree.version.span,
                "this benchlang reads 'benchlang 1'",
            )
        items = tree.items
        of = lambda cls, kw=None: [
            i
            for i in items
            if isinstance(i, cls) and (kw is None or getattr(i, "keyword", None) == kw)
        ]
        statement = lambda kw: self._single(of(ast.Statement, kw), f"'{kw}'")  # noqa: E731

        title = statement("title")
        seed_stmt = statement("seed")
        setup = statement("setup")
        teardown = statement("teardown")
        before = statement("before")
        after = statement("after")
        timeout = statement("timeout")
        workdir = statement("workdir")
        reset = self._reset(statement("reset"))
        hosts = self._hosts(self._single(of(ast.Hosts), "'hosts'"))
        self.local = hosts.kind == "local"
        env = self._env(of(ast.EnvPair))

        design_block = self._single(of(ast.Block, "design"), "'design'")
        ab = check_ab_design(self, design_block)
        if (
            ab is None
            and design_block is not None
            and design_block.settings is not None
            and any(i.key in AB_KEYS for i in design_block.settings.items)
        ):
            self.broken_factors.update((model.VERSION_FACTOR, model.REQUEST_FACTOR))
        factors = self._factors(of(ast.Factor))
        declared = list(factors)
        if ab is not None:
            factors += [ab.version, ab.request]
        benchmarks = self._benchmarks(of(ast.Benchmark), factors)
        self._check_unused_factors(declared, benchmarks, of(ast.Factor))
        if ab is not None:
            benchmarks = self._ab_benchmarks(ab, benchmarks, of(ast.Benchmark))
        measures = self._measure_names(benchmarks)
        units = {
            m.name: model.BUILTIN_MEASURES[m.builtin]
            for b in benchmarks
            for m in b.measures
            if m.source == "builtin"
        }
        metrics = self._metrics(of(ast.Metric), measures, units)
        kpis = self._kpi_blocks(of(ast.Block, "kpi"), metrics)
        variabilities = self._variability_blocks(of(ast.Block, "variability"), metrics)
        stop_node = self._single(of(ast.Stop), "'stop'")
        stop = self._stop(stop_node, metrics, kpis)
        design = self._design(
            design_block, kpis, variabilities, stop, ab, stop_node.span if stop_node else None
        )
        comparisons = self._analysis(
            of(ast.Block, "analysis"), of(ast.Compare), of(ast.AnalysisItem), metrics, factors
        )
        order_dependence = self._order_dependence(of(ast.AnalysisItem, "order_dependence"))
        profiles = self._profiles(of(ast.AnalysisItem, "profile"))
        runtime = design.runtime if design else None
        for metric_ast in of(ast.Metric):
            m = next((x for x in metrics if x.name == metric_ast.name), None)
            if (
                m is not None
                and m.trim is not None
                and m.trim.kind == "duration"
                and runtime is None
            ):
                self.error(
                    f"metric '{m.name}': trim by duration needs the design's runtime to convert it to samples",
                    metric_ast.span,
                    "set design { runtime 30s }, or trim a fraction (trim 10%) or a sample count (trim 100)",
                )
        for bench_ast, bench in zip(of(ast.Benchmark), benchmarks, strict=False):
            self._check_runtime_use(bench_ast, bench, runtime)
        reset_template = next(
            (
                i
                for i in items
                if isinstance(i, ast.Statement) and i.keyword == "reset" and i.value is not None
            ),
            None,
        )
        for stmt in (setup, teardown, before, after):
            if stmt is not None:
                self._check_templates(
                    stmt.value, {f.name: f for f in factors}, runtime, allow_factors=False
                )
        if reset_template is not None:
            per_batch = (model.VERSION_FACTOR,) if ab is not None else False
            why = (
                "the reset runs before each host batch, which runs one version"
                if ab is not None
                else "the reset runs before each round, not per configuration"
            )
            self._check_templates(
                reset_template.value,
                {f.name: f for f in factors},
                runtime,
                allow_factors=per_batch,
                where=why,
            )
        if ab is not None:
            self._ab_restrictions(ab, items, reset, kpis, variabilities, order_dependence)

        reset_stmt = next(
            (i for i in items if isinstance(i, ast.Statement) and i.keyword == "reset"), None
        )
        if reset is not None and (reset.reboot or reset.reconnect) and self.backends is not None:
            backend = self.backends.get(hosts.kind)
            if backend is not None and not getattr(backend, "supports_reboot", False):
                self.error(
                    f"hosts {hosts.kind} cannot reboot or reconnect between rounds",
                    reset_stmt.span,
                    "a rebooting reset needs remote hosts (hosts ssh { ... }); use a plain reset command here",
                )
        if seed_stmt is not None and seed_stmt.value.value >= 2**63:
            self.error("the seed must be below 2**63", seed_stmt.value.span)
        if design is not None:
            self._check_plan_size(factors, benchmarks, design, design_block or tree)
        if not benchmarks and not any(isinstance(i, ast.Benchmark) for i in items):
            self.error(
                "the experiment declares no benchmark",
                tree.span,
                'add: benchmark NAME { run "command" }',
            )
        if any(d.severity == "error" for d in self.diagnostics):
            return None
        return model.Experiment(
            name=tree.name,
            title=title.value.value if title else None,
            seed=seed_stmt.value.value if seed_stmt else 0,
            hosts=hosts,
            benchmarks=tuple(benchmarks),
            factors=tuple(factors),
            metrics=tuple(metrics),
            kpis=tuple(kpis),
            variabilities=tuple(variabilities),
            design=design,
            stop=stop,
            setup=setup.value.value if setup else None,
            teardown=teardown.value.value if teardown else None,
            reset=reset,
            before=before.value.value if before else None,
            after=after.value.value if after else None,
            timeout=timeout.value.value if timeout else None,
            env=env,
            workdir=workdir.value.value if workdir else None,
            spec_hash="sha256:" + hashlib.sha256(self.source.text.encode()).hexdigest(),
            spec_path=self.source.path,
            order_dependence=order_dependence,
            comparisons=comparisons,
            profiles=profiles,
        )

    def _check_plan_size(
        self,
        factors: list[model.Factor],
        benchmarks: list[model.Benchmark],
        design: model.Design,
        where: Any,
    ) -> None:
        from benchlang.design.counting import covered_count, trial_count

        kept = {f.name: covered_count(len(f.levels), f.coverage) for f in factors}
        trials = trial_count(
            design, sum(math.prod(kept.get(n, 1) for n in b.factors) for b in benchmarks)
        )
        if trials > MAX_TRIALS:
            self.error(
                f"the plan would have {trials} trials, more than benchlang plans ({MAX_TRIALS})",
                where.span,
                "use fewer runs, series or levels (coverage N% keeps a share of a factor's levels)",
            )

    def _reset(self, stmt: ast.Statement | None) -> model.Reset | None:
        if stmt is None:
            return None
        if stmt.flag == "reboot" or stmt.flag == "reconnect":
            return model.Reset(
                stmt.value.value if stmt.value else None,
                reboot=stmt.flag == "reboot",
                reconnect=stmt.flag == "reconnect",
            )
        return model.Reset(stmt.value.value)

    def _hosts(self, hosts: ast.Hosts | None) -> model.Hosts:
        if hosts is None:
            return model.Hosts()
        kinds = self.backends
        if kinds is not None and hosts.kind not in kinds:
            hint = (
                did_you_mean(hosts.kind, kinds)
                or f"installed backends: {', '.join(sorted(kinds))} (see 'benchlang plugins')"
            )
            self.error(f"no backend named '{hosts.kind}' is installed", hosts.span, hint)
            return model.Hosts(hosts.kind)
        values: dict[str, Any] = {}
        for item in hosts.settings.items if hosts.settings else ():
            if item.key in values:
                self.error(f"'{item.key}' is set twice in hosts {hosts.kind}", item.span)
                continue
            if item.file is not None:
                values[item.key] = {"file": str(self.base_dir / item.file.value)}
            elif item.block is not None:
                self.error(
                    f"'{item.key}' in hosts {hosts.kind} takes a value, not a block", item.span
                )
            else:
                values[item.key] = s.literal(item.value)
        if kinds is None:
            return model.Hosts(hosts.kind, values)
        try:
            kinds[hosts.kind].check_settings(values)
        except SettingError as err:
            span = (
                next((i.span for i in hosts.settings.items if i.key == err.key), hosts.span)
                if hosts.settings
                else hosts.span
            )
            self.error(f"hosts {hosts.kind}: {err.message}", span, err.hint)
        return model.Hosts(hosts.kind, values)

    def _env(self, pairs: list[ast.EnvPair]) -> tuple[tuple[str, str], ...]:
        seen: dict[str, Span] = {}
        out = []
        for pair in pairs:
            if pair.name in seen:
                self.error(
                    f"environment variable '{pair.name}' is set twice",
                    pair.span,
                    f"first set on line {seen[pair.name].line}",
                )
                continue
            seen[pair.name] = pair.span
            if pair.value.kind in ("list", "range"):
                self.error(
                    f"env {pair.name}: expected a string or a number, got {pair.value.describe()}",
                    pair.value.span,
                )
                continue
            out.append((pair.name, str(pair.value.value)))
        return tuple(out)

    def _factors(self, factors: list[ast.Factor]) -> list[model.Factor]:
        out = []
        self._unique(factors, "factor")
        reserved = set(_STRUCTURE_PLACEHOLDERS) | {"version", "request"}
        for f in factors:
            if f.name in reserved:
                self.error(f"'{f.name}' is reserved for the design and cannot be a factor", f.span)
                continue
            levels = self._levels(f)
            if levels is None:
                self.broken_factors.add(f.name)
            if f.hidden is not None:
                self.not_supported("a hidden factor", f.hidden)
            coverage = 100.0
            if f.coverage is not None:
                coverage = f.coverage.value
                if not 0.0 < coverage <= 100.0:
                    self.error(f"coverage {coverage:g}% is outside (0%, 100%]", f.coverage.span)
            if levels is not None and f.name not in {x.name for x in out}:
                out.append(model.Factor(f.name, levels, coverage))
        return out

    def _levels(self, f: ast.Factor) -> tuple[Any, ...] | None:
        value = f.levels
        if value.kind == "range":
            start, stop, step = value.value
            step = 1 if step is None else step
            if step <= 0:
                self.error("a range step must be positive", value.span)
                return None
            if stop < start:
                self.error(
                    f"the range {start}..{stop} is empty",
                    value.span,
                    "write the smaller bound first",
                )
                return None
            if not all(math.isfinite(x) for x in (start, stop, step)):
                self.error("a range needs finite bounds and step", value.span)
                return None
            count = math.floor((stop - start) / step + 1e-9) + 1
            if count > MAX_TRIALS:
                self.error(
                    f"the range {start}..{stop} has {count} levels, more than a plan can hold ({MAX_TRIALS})",
                    value.span,
                    "use a coarser step",
                )
                return None
            if all(isinstance(x, int) for x in (start, stop, step)):
                return tuple(start + i * step for i in range(count))
            return tuple(float(f"{start + i * step:.15g}") for i in range(count))  # 0.1 * 3 -> 0.3
        if value.kind != "list":
            self.error(
                f"factor '{f.name}' needs a list or a range of levels, got {value.describe()}",
                value.span,
                'e.g. factor tool in ["xz", "bzip2"] or factor level in 1..9',
            )
            return None
        if not value.value:
            self.error(f"factor '{f.name}' has no levels", value.span)
            return None
        levels, seen = [], set()
        for item in value.value:
            if item.kind in ("list", "range"):
                self.error("a factor level must be a string or a number", item.span)
                return None
            if item.kind == "float" and not math.isfinite(item.value):
                self.error("a factor level must be a finite number", item.span)
                return None
            key = (type(item.value).__name__, item.value)
            if key in seen:
                self.error(f"level {item.value!r} is listed twice", item.span)
                continue
            seen.add(key)
            levels.append(item.value)
        return tuple(levels)

    def _check_templates(
        self,
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
        known = [*factor_names, *_STRUCTURE_PLACEHOLDERS]
        if shell:
            self._check_shell_contexts(value, factor_names)
        found = shell_placeholders(value.value) if shell else placeholders(value.value)
        for name, offset in found:
            span = self._span_in_string(value, offset, len(name) + 2)
            if offset < 0:
                self.error(
                    "unbalanced '{' or '}' in a command template",
                    value.span,
                    "write '{{' and '}}' for literal braces",
                )
                continue
            if name in factor_names and (
                allow_factors is True or (allow_factors and name in allow_factors)
            ):
                used.append(name)
            elif name == "runtime":
                if runtime is None:
                    self.error(
                        "placeholder {runtime} has no value",
                        span,
                        "set it in the design: design { runtime 30s }",
                    )
            elif name in factor_names:
                self.error(f"placeholder {{{name}}} cannot be used here: {where}", span)
            elif name not in self.broken_factors:
                if name in (model.VERSION_FACTOR, model.REQUEST_FACTOR):
                    hint = f"{{{name}}} comes from an A/B design: design {{ versions {{ ... }} layout KIND {{ hosts H }} requests [...] }}"
                else:
                    hint = did_you_mean(name, known) or (
                        f"declare it: factor {name} in [...]" if name.isidentifier() else None
                    )
                self.error(f"placeholder {{{name}}} is not a declared factor", span, hint)
        return tuple(dict.fromkeys(used))

    def _check_shell_contexts(
        self, value: ast.Value, factor_names: dict[str, model.Factor]
    ) -> None:
        """Each placeholder must be quotable where it stands (lang.shell); a level with spaces
        as a command's program, or a non-number in $((...)), fails every trial."""
        for ph in parse_template(value.value).placeholders:
            span = self._span_in_string(value, ph.offset, ph.width)
            factor = factor_names.get(ph.name)
            if ph.problem is not None:
                self.error(
                    f"placeholder {{{ph.name}}} {ph.problem}",
                    span,
                    "a level is always one literal word: put the placeholder unquoted, or in"
                    " '...', \"...\" or $(...)",
                )
            elif ph.context == "arithmetic" and factor is not None:
                bad = [lv for lv in factor.levels if not isinstance(lv, int | float)]
                if bad:
                    self.error(
                        f"placeholder {{{ph.name}}} is inside $((...)), but level {bad[0]!r} is not a number",
                        span,
                        "use numeric levels, or move the placeholder out of the arithmetic",
                    )
            elif ph.program and not ph.code and factor is not None:
                spaced = [t for t in map(text_of, factor.texts or factor.levels) if " " in t]
                if spaced:
                    self.warn(
                        f"{{{ph.name}}} is the program of the command, but level {spaced[0]!r} has a space:"
                        " a level is one word, so the shell looks for a program with that whole name",
                        span,
                        f"if the levels are commands, write {{{ph.name}!code}} to run each as shell code",
                    )

    def _check_programs(self, value: ast.Value, factor_names: dict[str, model.Factor]) -> None:
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
            if shutil.which(program) is None:
                self.warn(
                    f"program '{program}' is not found on PATH",
                    value.span,
                    "install it, or give its path; every trial on hosts local would fail (status 127)",
                )

    def _span_in_string(self, value: ast.Value, offset: int, width: int) -> Span:
        if value.span.end_line != value.span.line or offset < 0:
            return value.span
        column = value.span.column + 1 + offset
        return Span(value.span.line, column, value.span.line, column + width)

    def _benchmarks(
        self, benchmarks: list[ast.Benchmark], factors: list[model.Factor]
    ) -> list[model.Benchmark]:
        self._unique(benchmarks, "benchmark")
        factor_names = {f.name: f for f in factors}
        out = []
        for b in benchmarks:
            stmts = lambda kw, b=b: [
                i for i in b.items if isinstance(i, ast.Statement) and i.keyword == kw
            ]
            run = self._single(stmts("run"), f"'run' in benchmark {b.name}")
            if run is None:
                self.error(
                    f"benchmark '{b.name}' has no 'run' command", b.span, 'add: run "your command"'
                )
                continue
            used = list(self._check_templates(run.value, factor_names, 1.0))
            setup = self._single(stmts("setup"), f"'setup' in benchmark {b.name}")
            before = self._single(stmts("before"), f"'before' in benchmark {b.name}")
            after = self._single(stmts("after"), f"'after' in benchmark {b.name}")
            for stmt in (setup, before, after):
                if stmt is not None:
                    used.extend(self._check_templates(stmt.value, factor_names, 1.0))
            env_pairs = [i for i in b.items if isinstance(i, ast.EnvPair)]
            for pair in env_pairs:
                used.extend(self._check_templates(pair.value, factor_names, 1.0, shell=False))
            if self.local and run.value is not None and run.value.kind == "string":
                self._check_programs(run.value, factor_names)
            timeout = self._single(stmts("timeout"), f"'timeout' in benchmark {b.name}")
            workdir = self._single(stmts("workdir"), f"'workdir' in benchmark {b.name}")
            measures = self._measures([i for i in b.items if isinstance(i, ast.Measure)], b.name)
            out.append(
                model.Benchmark(
                    name=b.name,
                    command=run.value.value,
                    measures=tuple(measures),
                    factors=tuple(f.name for f in factors if f.name in used),
                    setup=setup.value.value if setup else None,
                    before=before.value.value if before else None,
                    after=after.value.value if after else None,
                    env=self._env(env_pairs),
                    timeout=timeout.value.value if timeout else None,
                    workdir=workdir.value.value if workdir else None,
                )
            )
        return out

    def _check_runtime_use(
        self, bench_ast: ast.Benchmark, bench: model.Benchmark, runtime: float | None
    ) -> None:
        if runtime is not None:
            return
        for item in bench_ast.items:
            value = getattr(item, "value", None)
            if isinstance(value, ast.Value) and value.kind == "string":
                for name, offset in placeholders(value.value):
                    if name == "runtime":
                        self.error(
                            "placeholder {runtime} has no value",
                            self._span_in_string(value, offset, 9),
                            "set it in the design: design { runtime 30s }",
                        )

    def _check_unused_factors(
        self,
        factors: list[model.Factor],
        benchmarks: list[model.Benchmark],
        nodes: list[ast.Factor],
    ) -> None:
        used = {name for b in benchmarks for name in b.factors}
        spans = {f.name: f.span for f in nodes}
        for f in factors:
            if f.name not in used:
                self.warn(
                    f"factor '{f.name}' is not used by any benchmark",
                    spans.get(f.name),
                    f"reference it in a command as {{{f.name}}}",
                )

    def _measures(self, measures: list[ast.Measure], bench: str) -> list[model.Measure]:
        self._unique(measures, f"measure in benchmark {bench}")
        out = []
        for m in measures:
            if m.builtin is not None:
                if m.builtin not in model.BUILTIN_MEASURES:
                    hint = (
                        did_you_mean(m.builtin, model.BUILTIN_MEASURES)
                        or f"built-in measures: {', '.join(model.BUILTIN_MEASURES)}"
                    )
                    self.error(f"unknown built-in measure '{m.builtin}'", m.builtin_span, hint)
                    continue
                if m.series:
                    self.error(
                        f"built-in measure '{m.builtin}' is a single number, not a series", m.span
                    )
                    continue
                out.append(model.Measure(m.name, source="builtin", builtin=m.builtin))
                continue
            argument = m.argument.value if m.argument is not None else None
            if m.extractor == "regex":
                import re

                try:
                    compiled = re.compile(argument)
                except re.error as err:
                    self.error(f"invalid regular expression: {err}", m.argument.span)
                    continue
                if compiled.groups > 1:
                    self.error(
                        "the regular expression must have at most one group",
                        m.argument.span,
                        "the group (or the whole match) is the number",
                    )
                    continue
            if m.extractor == "column" and m.argument.kind == "int" and argument < 1:
                self.error("columns are numbered from 1", m.argument.span)
                continue
            if m.extractor == "lines" and not m.series:
                self.error(
                    "'lines' reads one number per line: declare the measure as a series",
                    m.span,
                    f"measure {m.name} series from ...",
                )
                continue
            if m.extractor == "column" and not m.series:
                self.error(
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
        return out

    def _measure_names(self, benchmarks: list[model.Benchmark]) -> dict[str, bool]:
        names: dict[str, bool] = dict.fromkeys(model.BUILTIN_MEASURES, False)
        for b in benchmarks:
            for m in b.measures:
                names[m.name] = names.get(m.name, False) or m.series
        return names

    def _metrics(
        self, metrics: list[ast.Metric], measures: dict[str, bool], builtin_units: dict[str, str]
    ) -> list[model.Metric]:
        """``builtin_units``: the unit of each measure that renames a built-in (``measure time = wall_time``)."""
        self._unique(metrics, "metric")
        out = []
        for m in metrics:
            stmts = lambda kw, m=m: [i for i in m.items if i.keyword == kw]  # noqa: E731
            of = self._single(stmts("of"), f"'of' in metric {m.name}")
            measure_name = of.value.value if of else m.name
            if measure_name not in measures:
                span = of.value.span if of else m.span
                hint = (
                    did_you_mean(measure_name, measures)
                    or f"declare it in a benchmark (measure {measure_name} ...) or use 'of' to name a measure"
                )
                self.error(
                    f"metric '{m.name}' refers to no measure named '{measure_name}'", span, hint
                )
                continue
            aggregate: str | float = "mean"
            agg = self._single(stmts("measure"), f"'measure' in metric {m.name}")
            if agg is not None:
                if agg.flag == "percentile":
                    try:
                        aggregate = s.percentile(agg.value)
                    except s.Invalid as err:
                        self.error(err.message, agg.value.span, err.hint)
                        continue
                else:
                    aggregate = agg.value.value
            unit = self._single(stmts("unit"), f"'unit' in metric {m.name}")
            better = self._single(stmts("better"), f"'better' in metric {m.name}")
            trim = self._trim(self._single(stmts("trim"), f"'trim' in metric {m.name}"))
            convergence = None
            if m.convergence is not None:
                checked = s.check_settings(
                    m.convergence,
                    _CONVERGENCE_SCHEMA,
                    f"convergence of metric {m.name}",
                    self.diagnostics,
                )
                convergence = model.Convergence(**checked.values)
            series = measures[measure_name]
            if (convergence is not None or trim is not None) and not series:
                what = "a convergence test" if convergence is not None else "trim"
                self.error(
                    f"metric '{m.name}': {what} needs a raw series per trial, but '{measure_name}' is a single number",
                    m.convergence_span or m.span,
                    f"declare it as: measure {measure_name} series from ...",
                )
                continue
            out.append(
                model.Metric(
                    name=m.name,
                    measure=measure_name,
                    aggregate=aggregate,
                    unit=unit.value.value
                    if unit
                    else model.BUILTIN_MEASURES.get(measure_name, builtin_units.get(measure_name)),
                    better=better.value.value if better else "lower",
                    convergence=convergence,
                    trim=trim,
                )
            )
        return out

    def _trim(self, stmt: ast.Statement | None) -> model.Trim | None:
        if stmt is None:
            return None
        v = stmt.value
        if v.kind == "percent":
            if not 0.0 <= v.value < 100.0:
                self.error(f"trim {v.value:g}% must lie in [0%, 100%)", v.span)
                return None
            return model.Trim("fraction", v.value / 100.0)
        if v.kind == "duration":
            return model.Trim("duration", v.value)
        return model.Trim("samples", float(v.value))

    def _metric_of_block(
        self, block: ast.Block, metrics: list[model.Metric]
    ) -> model.Metric | None:
        metric = next((m for m in metrics if m.name == block.name), None)
        if metric is None:
            names = [m.name for m in metrics]
            hint = (
                did_you_mean(block.name, names)
                or f"declare it first: metric {block.name} {{ ... }}"
            )
            self.error(f"{block.keyword} on undeclared metric '{block.name}'", block.span, hint)
        return metric

    def _required(self, checked: s.Checked, keys: tuple[str, ...], block: ast.Block) -> bool:
        missing = [k for k in keys if k not in checked.values and k not in checked.spans]
        for k in missing:
            self.error(f"{block.keyword} {block.name} needs '{k}'", block.span)
        return not missing and all(k in checked.values for k in keys)

    def _kpi_blocks(self, blocks: list[ast.Block], metrics: list[model.Metric]) -> list[model.Kpi]:
        out, seen = [], {}
        for block in blocks:
            if block.name in seen:
                self.error(
                    f"duplicate kpi for metric '{block.name}'",
                    block.span,
                    f"first declared on line {seen[block.name].line}",
                )
                continue
            seen[block.name] = block.span
            metric = self._metric_of_block(block, metrics)
            checked = s.check_settings(
                block.settings, _KPI_SCHEMA, f"kpi {block.name}", self.diagnostics
            )
            if metric is None or not self._required(checked, ("percentile", "confidence"), block):
                continue
            v = checked.values
            default_bound = "upper" if metric.better == "lower" else "lower"
            out.append(
                model.Kpi(
                    metric.name,
                    v["percentile"],
                    v["confidence"],
                    v.get("bound", default_bound),
                    v.get("exclude", 0),
                )
            )
        return out

    def _variability_blocks(
        self, blocks: list[ast.Block], metrics: list[model.Metric]
    ) -> list[model.Variability]:
        out, seen = [], {}
        for block in blocks:
            if block.name in seen:
                self.error(
                    f"duplicate variability for metric '{block.name}'",
                    block.span,
                    f"first declared on line {seen[block.name].line}",
                )
                continue
            seen[block.name] = block.span
            metric = self._metric_of_block(block, metrics)
            checked = s.check_settings(
                block.settings, _VARIABILITY_SCHEMA, f"variability {block.name}", self.diagnostics
            )
            if metric is None or not self._required(checked, ("percentile", "confidence"), block):
                continue
            out.append(
                model.Variability(
                    metric.name, checked.values["percentile"], checked.values["confidence"]
                )
            )
        return out

    def _stop(
        self, stop: ast.Stop | None, metrics: list[model.Metric], kpis: list[model.Kpi]
    ) -> model.Stop | None:
        if stop is None:
            return None
        metric_names = [m.name for m in metrics]
        if stop.kind == "after":
            if stop.count.value < 1:
                self.error("stop after needs at least 1 trial", stop.count.span)
                return None
            return model.Stop("after", count=stop.count.value)
        if stop.kind == "adaptive":
            checked = s.check_settings(
                stop.settings, _ADAPTIVE_SCHEMA, "stop adaptive", self.diagnostics
            )
            values = dict(checked.values)
            metric = values.pop("metric", None) or (
                kpis[0].metric if kpis else metric_names[0] if metric_names else "wall_time"
            )
            if "metric" in checked.values and metric not in metric_names:
                self.error(
                    f"stop adaptive: no metric named '{metric}'",
                    checked.spans["metric"],
                    did_you_mean(metric, metric_names),
                )
                return None
            settings = {_ADAPTIVE_FIELDS.get(k, k): v for k, v in values.items()}
            if "confidence" in settings:
                settings["confidence"] = settings["confidence"] / 100.0
            settings.setdefault("min_n", 10)
            settings.setdefault("max_n", 400)
            if settings["min_n"] > settings["max_n"]:
                self.error(
                    f"stop adaptive: min {settings['min_n']} exceeds max {settings['max_n']}",
                    stop.span,
                )
                return None
            return model.Stop(
                "adaptive", count=settings["max_n"], settings={"metric": metric, **settings}
            )
        if stop.metric not in metric_names:
            self.error(
                f"stop when kpi: no metric named '{stop.metric}'",
                stop.span,
                did_you_mean(stop.metric, metric_names),
            )
            return None
        kpi = next((k for k in kpis if k.metric == stop.metric), None)
        if kpi is None:
            self.error(
                f"stop when kpi {stop.metric}: the metric has no kpi",
                stop.span,
                f"declare one: kpi {stop.metric} {{ percentile 50 confidence 95% }}",
            )
            return None
        width = stop.width
        if width.kind == "percent" and not 0 < width.value < 100:
            self.error("the width must lie in (0%, 100%)", width.span)
            return None
        if width.kind != "percent" and float(width.value) <= 0:
            self.error("the width must be positive", width.span)
            return None
        max_n = stop.max_count.value if stop.max_count is not None else 400
        need = _bounded_sizing(kpi.percentile, kpi.confidence, kpi.exclude)
        if max_n < need:
            self.error(
                f"stop when kpi {kpi.metric}: max {max_n} is below the {need} trials the kpi needs",
                stop.max_count.span if stop.max_count else stop.span,
                f"use max {need} or more",
            )
            return None
        return model.Stop(
            "kpi_width",
            count=max_n,
            settings={
                "metric": kpi.metric,
                "percentile": kpi.percentile,
                "confidence": kpi.confidence,
                "bound": kpi.bound,
                "width": width.value / 100.0 if width.kind == "percent" else float(width.value),
                "relative": width.kind == "percent",
                "max_n": max_n,
            },
        )

    def _design(
        self,
        block: ast.Block | None,
        kpis: list[model.Kpi],
        variabilities: list[model.Variability],
        stop: model.Stop | None,
        ab: ABDesign | None,
        stop_span: Span | None = None,
    ) -> model.Design:
        checked = s.check_settings(
            block.settings if block else None,
            _DESIGN_SCHEMA,
            "design",
            self.diagnostics,
            blocks=AB_KEYS,
        )
        for key in _NOT_YET_DESIGN:
            if key in checked.spans:
                self.not_supported(f"design '{key}'", checked.spans[key])
        for key in ("warmup", "cooldown"):
            if key in checked.spans:
                self.error(
                    f"'{key}' belongs in the layout block",
                    checked.spans[key],
                    f"layout fully_balanced {{ hosts 4 {key} 2 }}",
                )
        if ab is not None:
            return self._layout_design(ab, checked, stop, stop_span)
        v = checked.values
        span = block.span if block else None
        runs_wanted = v.get("runs")
        kpi_needs = [(_bounded_sizing(k.percentile, k.confidence, k.exclude), k) for k in kpis]
        if stop is not None:
            if runs_wanted is not None:
                self.error(
                    "give either 'runs' in the design or a stop rule, not both (the stop rule sets the number of runs)",
                    checked.spans.get("runs"),
                )
            runs_wanted = stop.count
        if runs_wanted == "auto" or (runs_wanted is None and kpi_needs):
            if not kpi_needs:
                self.error(
                    "runs auto needs a kpi to size the experiment",
                    checked.spans.get("runs", span),
                    "declare a kpi, or give a number: runs 30",
                )
                runs, reason = 1, ""
            else:
                runs, kpi = max(kpi_needs, key=lambda x: x[0])
                reason = (
                    f"minimal N for kpi {kpi.metric} (percentile {kpi.percentile:g}, confidence {kpi.confidence:g}%"
                    + (f", {kpi.exclude} excluded" if kpi.exclude else "")
                    + ") by Thompson's order statistics (TriScale Eq. 4)"
                )
        elif runs_wanted is None:
            runs, reason = 1, "default: one trial per configuration and series (no kpi declared)"
        else:
            runs = int(runs_wanted)
            reason = {
                None: "given in the spec",
                "after": "stop after N",
                "adaptive": f"at most {runs}: stop adaptive (Mittal et al., PMBS '23) ends each configuration earlier when its samples allow",
                "kpi_width": f"at most {runs}: stop when the kpi bound is narrow enough (TriScale §7)",
            }[stop.kind if stop else None]
            for need, kpi in kpi_needs:
                if runs < need:
                    where = (
                        checked.spans.get("runs", span)
                        if stop is None or stop.kind != "after"
                        else span
                    )
                    self.error(
                        f"impossible design: {runs} runs are too few for kpi {kpi.metric} (percentile {kpi.percentile:g}, confidence {kpi.confidence:g}%): it needs at least {need}",
                        where,
                        f"use 'runs auto' or 'runs {need}'",
                    )
        series_wanted = v.get("series")
        var_needs = [(_bounded_sizing(x.percentile, x.confidence), x) for x in variabilities]
        if series_wanted == "auto" or (series_wanted is None and var_needs):
            if not var_needs:
                series, series_reason = 1, "auto without a variability score: one series"
            else:
                series, var = max(var_needs, key=lambda x: x[0])
                series_reason = f"minimal number of series for variability {var.metric} (percentile {var.percentile:g}, confidence {var.confidence:g}%) (TriScale §4.3, Eq. 4)"
        elif series_wanted is None:
            series, series_reason = 1, "default: one series"
        else:
            series, series_reason = int(series_wanted), "given in the spec"
            for need, var in var_needs:
                if series < need:
                    self.error(
                        f"impossible design: {series} series are too few for variability {var.metric} (percentile {var.percentile:g}, confidence {var.confidence:g}%): it needs at least {need}",
                        checked.spans.get("series", span),
                        f"use 'series auto' or 'series {need}'",
                    )
        if "span" in v and series == 1:
            self.warn(
                "'span' spreads series over time, but there is only one series",
                checked.spans["span"],
            )
        return model.Design(
            runs=runs,
            runs_reason=reason,
            series=series,
            series_reason=series_reason,
            order=v.get("order", "random"),
            runtime=v.get("runtime"),
            span=v.get("span"),
        )

    def _layout_design(
        self, ab: ABDesign, checked: s.Checked, stop: model.Stop | None, stop_span: Span | None
    ) -> model.Design:
        layout = ab.layout
        for key in NOT_WITH_LAYOUT:
            if key in checked.spans:
                self.error(
                    f"'{key}' does not apply to a layout design",
                    checked.spans[key],
                    "the layout sets the trials: each request runs 'repetitions' times in its host batch",
                )
        if stop is not None:
            self.error(
                "a stop rule does not apply to a layout design",
                stop_span or ab.span,
                "the layout fixes every trial in advance; remove the stop rule",
            )
        return model.Design(
            runs=layout.repetitions,
            runs_reason="repetitions of each request in its host batch (layout)",
            series=1,
            series_reason="a layout runs one series",
            order="random",
            runtime=checked.values.get("runtime"),
            layout=layout,
        )

    def _ab_benchmarks(
        self, ab: ABDesign, benchmarks: list[model.Benchmark], nodes: list[ast.Benchmark]
    ) -> list[model.Benchmark]:
        """A layout runs one benchmark, crossed with the versions and the requests only."""
        if len(benchmarks) > 1:
            self.error(
                f"a layout design runs one benchmark; this experiment has {len(benchmarks)}",
                nodes[1].span,
                "compare other benchmarks in separate experiments",
            )
        spans = {b.name: b.span for b in nodes}
        out = []
        for bench in benchmarks:
            others = [
                f for f in bench.factors if f not in (model.VERSION_FACTOR, model.REQUEST_FACTOR)
            ]
            for name in others:
                self.error(
                    f"benchmark '{bench.name}' uses factor '{name}', but a layout design varies only the version and the request",
                    spans.get(bench.name),
                    "compare versions in one experiment and vary other factors in another",
                )
            for name, what in (
                (model.VERSION_FACTOR, "both versions run the same command (an A/A test)"),
                (model.REQUEST_FACTOR, "every request runs the same command"),
            ):
                if name not in bench.factors:
                    self.warn(
                        f"benchmark '{bench.name}' does not use {{{name}}}: {what}",
                        spans.get(bench.name),
                        f"put {{{name}}} in its run command",
                    )
            out.append(attrs.evolve(bench, factors=(model.VERSION_FACTOR, model.REQUEST_FACTOR)))
        return out

    def _ab_restrictions(
        self,
        ab: ABDesign,
        items: list[Any],
        reset: model.Reset | None,
        kpis: list[model.Kpi],
        variabilities: list[model.Variability],
        order_dependence: dict[str, Any] | None,
    ) -> None:
        """What a layout design cannot be combined with, and a warning for batches without a reset."""
        hint = "a layout design is analysed with: analysis { compare METRIC by version }"
        for block in (
            i for i in items if isinstance(i, ast.Block) and i.keyword in ("kpi", "variability")
        ):
            self.error(f"{block.keyword} does not apply to a layout design", block.span, hint)
        if order_dependence is not None:
            item = next(
                i
                for i in items
                if isinstance(i, ast.AnalysisItem) and i.keyword == "order_dependence"
            )
            self.error(
                "order_dependence does not apply to a layout design (it needs fixed and random rounds)",
                item.span,
                hint,
            )
        if ab.layout.kind in ("host_balanced", "fully_balanced") and reset is None:
            self.warn(
                f"layout {ab.layout.kind} runs two batches per host, but there is no reset: the second batch starts in the state the first left",
                ab.span,
                'reset "systemctl restart my-service" (it may use {version}) runs before every batch',
            )

    def _analysis(
        self,
        blocks: list[ast.Block],
        compares: list[ast.Compare],
        items: list[ast.AnalysisItem],
        metrics: list[model.Metric],
        factors: list[model.Factor],
    ) -> tuple[model.Comparison, ...]:
        self._single(blocks, "'analysis'")
        metric_names = [m.name for m in metrics]
        out = []
        for c in compares:
            if c.metric not in metric_names:
                self.error(
                    f"compare on undeclared metric '{c.metric}'",
                    c.span,
                    did_you_mean(c.metric, metric_names),
                )
                continue
            factor = next((f for f in factors if f.name == c.by), None)
            if factor is None and c.by in self.broken_factors:
                continue
            if factor is None:
                self.error(
                    f"compare by '{c.by}': no such factor",
                    c.span,
                    did_you_mean(c.by, [f.name for f in factors])
                    or "compare by a factor with two levels: control first, treatment second",
                )
                continue
            kept = math.ceil(factor.coverage / 100.0 * len(factor.levels) - 1e-9)
            if len(factor.levels) != 2 or kept < 2:
                self.error(
                    f"compare by '{c.by}' needs a factor with exactly two levels (control, treatment); it has {min(len(factor.levels), kept)}",
                    c.span,
                )
                continue
            method = c.method or "bootstrap"
            if method not in _COMPARE_SCHEMAS:
                self.error(
                    f"unknown comparison method '{method}'",
                    c.method_span or c.span,
                    did_you_mean(method, _COMPARE_SCHEMAS)
                    or f"methods: {', '.join(_COMPARE_SCHEMAS)}",
                )
                continue
            checked = s.check_settings(
                c.settings, _COMPARE_SCHEMAS[method], f"compare with {method}", self.diagnostics
            )
            out.append(model.Comparison(c.metric, c.by, method, checked.values))
        factor_names = [f.name for f in factors]
        for item in items:
            if item.keyword != "anova":
                continue
            if item.name not in metric_names:
                self.error(
                    f"anova on undeclared metric '{item.name}'",
                    item.span,
                    did_you_mean(item.name, metric_names),
                )
                continue
            unknown = [t for t in item.terms if t not in factor_names]
            for term in unknown:
                self.error(
                    f"anova term '{term}' is not a factor",
                    item.span,
                    did_you_mean(term, factor_names),
                )
            if not unknown:
                out.append(
                    model.Comparison(
                        item.name,
                        "+".join(item.terms),
                        "anova",
                        {"terms": item.terms, "operators": item.path.value},
                    )
                )
        return tuple(out)

    def _profiles(self, items: list[ast.AnalysisItem]) -> tuple[dict[str, Any], ...]:
        out = []
        for item in items:
            checked = s.check_settings(
                item.settings,
                {"period": s.duration, "column": s.string},
                f"profile {item.name}",
                self.diagnostics,
            )
            if "period" not in checked.values:
                if "period" not in checked.spans:
                    self.error(
                        f"profile {item.name} needs the sampling period",
                        item.span,
                        f'profile {item.name} from file "{item.path.value}" period 2h',
                    )
                continue
            if checked.values["period"] <= 0:
                self.error("the period must be positive", checked.spans["period"])
                continue
            out.append(
                {"name": item.name, "path": str(self.base_dir / item.path.value), **checked.values}
            )
        return tuple(out)

    def _order_dependence(self, items: list[ast.AnalysisItem]) -> dict[str, Any] | None:
        item = self._single(items, "'order_dependence'")
        if item is None:
            return None
        checked = s.check_settings(
            item.settings, {"alpha": s.number(0.0, 1.0)}, "order_dependence", self.diagnostics
        )
        alpha = checked.values.get("alpha", 0.05)
        if not 0.0 < alpha < 1.0:
            self.error(
                "alpha must lie strictly between 0 and 1", checked.spans.get("alpha", item.span)
            )
        return {"alpha": alpha}
