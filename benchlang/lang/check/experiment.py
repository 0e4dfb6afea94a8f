"""The experiment pass: runs every other pass in dependency order and builds the model."""

from __future__ import annotations

import hashlib
from typing import Any

from benchlang import model
from benchlang.lang import ast
from benchlang.lang.ab_design import AB_KEYS, check_ab_design
from benchlang.lang.check.analysis import (
    check_analysis,
    check_equal_hosts,
    check_family,
    check_order_dependence,
    check_profiles,
    check_sample_sizes,
    method_needs,
    named_order_analyses,
)
from benchlang.lang.check.benchmarks import (
    check_benchmarks,
    check_runtime_use,
    check_templates,
    check_unused_factors,
    measure_names,
)
from benchlang.lang.check.context import Context
from benchlang.lang.check.design import (
    check_ab_benchmarks,
    check_ab_restrictions,
    check_design,
    check_plan_size,
)
from benchlang.lang.check.factors import check_factors
from benchlang.lang.check.hidden import check_hidden_support
from benchlang.lang.check.hosts import (
    check_env,
    check_hosts,
    check_reset,
    check_reset_capability,
)
from benchlang.lang.check.inventory import check_host_factors, check_host_where
from benchlang.lang.check.machine import check_machine
from benchlang.lang.check.metrics import check_kpis, check_metrics, check_variabilities
from benchlang.lang.check.population import check_population
from benchlang.lang.check.stop import check_stop


def check_experiment(ctx: Context, tree: ast.Experiment) -> model.Experiment | None:
    if tree.version is not None and tree.version.value != 1:
        ctx.error(
            f"unknown language version {tree.version.value}",
            tree.version.span,
            "this benchlang reads 'benchlang 1'",
        )
    items = tree.items

    def of(cls: type, kw: str | None = None) -> list[Any]:
        return [
            i
            for i in items
            if isinstance(i, cls) and (kw is None or getattr(i, "keyword", None) == kw)
        ]

    def statement(kw: str) -> Any:
        return ctx.single(of(ast.Statement, kw), f"'{kw}'")

    title = statement("title")
    seed_stmt = statement("seed")
    setup = statement("setup")
    teardown = statement("teardown")
    before = statement("before")
    after = statement("after")
    timeout = statement("timeout")
    workdir = statement("workdir")
    reset = check_reset(ctx, statement("reset"))
    hosts = check_hosts(ctx, ctx.single(of(ast.Hosts), "'hosts'"))
    ctx.local = hosts.kind == "local"
    env = check_env(ctx, of(ast.EnvPair))

    design_block = ctx.single(of(ast.Block, "design"), "'design'")
    ab = check_ab_design(ctx, design_block)
    if (
        ab is None
        and design_block is not None
        and design_block.settings is not None
        and any(i.key in AB_KEYS for i in design_block.settings.items)
    ):
        ctx.broken_factors.update((model.VERSION_FACTOR, model.REQUEST_FACTOR))
    factors, hidden = check_factors(ctx, of(ast.Factor))
    ctx.hardware_factors = {f.name for f in of(ast.Factor) if f.provider is not None}
    hardware = check_host_factors(ctx, [f for f in of(ast.Factor) if f.provider is not None])
    host_where = check_host_where(ctx, of(ast.HostsWhere))
    if ab is not None and hardware:
        ctx.error(
            "hardware factors are not crossed into an A/B layout",
            next(f for f in of(ast.Factor) if f.provider is not None).span,
            "an A/B layout places its versions on hosts itself; use 'hosts where' to pick the hosts",
        )
    declared = list(factors)
    if ab is not None:
        factors += [ab.version, ab.request]
    benchmarks = check_benchmarks(ctx, of(ast.Benchmark), factors, tuple(hidden))
    check_unused_factors(ctx, declared, benchmarks, of(ast.Factor), tuple(hidden))
    if ab is not None:
        benchmarks = check_ab_benchmarks(ctx, ab, benchmarks, of(ast.Benchmark))
    measures = measure_names(ctx, benchmarks)
    units = {
        m.name: model.BUILTIN_MEASURES.get(m.builtin)
        or {**model.COUNTERS, **model.SIMULATED}[m.builtin][1]
        for b in benchmarks
        for m in b.measures
        if m.source == "builtin" and m.builtin is not None
    }
    metrics = check_metrics(ctx, of(ast.Metric), measures, units)
    kpis = check_kpis(ctx, of(ast.Block, "kpi"), metrics)
    population = check_population(ctx, of(ast.Factor), declared, kpis)
    variabilities = check_variabilities(ctx, of(ast.Block, "variability"), metrics)
    stop_node = ctx.single(of(ast.Stop), "'stop'")
    stop = check_stop(ctx, stop_node, metrics, kpis)
    design = check_design(
        ctx,
        design_block,
        kpis,
        variabilities,
        stop,
        ab,
        stop_node.span if stop_node else None,
        profiles=len(of(ast.AnalysisItem, "profile")),
        method_needs=method_needs(ctx, of(ast.Compare)),
    )
    blocking = ("host", *(["replicate"] if design and design.replicate > 1 else []))
    comparisons = check_analysis(
        ctx,
        of(ast.Block, "analysis"),
        of(ast.Compare),
        of(ast.AnalysisItem),
        metrics,
        factors,
        (*blocking, *(h.name for h in hidden), *(f.name for f in hardware)),
    )
    if design is not None:
        check_sample_sizes(ctx, comparisons, of(ast.Compare), design)
    order_dependence = check_order_dependence(
        ctx,
        of(ast.AnalysisItem, "order_dependence")
        + named_order_analyses(ctx, of(ast.AnalysisItem, "method")),
    )
    equal_hosts = check_equal_hosts(
        ctx, of(ast.AnalysisItem, "method"), design.redundancy if design else 1
    )
    profiles = check_profiles(ctx, of(ast.AnalysisItem, "profile"))
    family = check_family(ctx, of(ast.AnalysisItem, "method"))
    runtime = design.runtime if design else None
    runtime_factor = next((f for f in of(ast.Factor) if f.name == "runtime"), None)
    if runtime is not None and runtime_factor is not None:
        ctx.error(
            "runtime is given twice: in the design and as a factor",
            runtime_factor.span,
            "keep one; factor runtime in [30s, 60s] runs the protocol at each runtime",
        )
    for metric_ast in of(ast.Metric):
        m = next((x for x in metrics if x.name == metric_ast.name), None)
        if m is not None and m.trim is not None and m.trim.kind == "duration" and runtime is None:
            ctx.error(
                f"metric '{m.name}': trim by duration needs the design's runtime to convert it to samples",
                metric_ast.span,
                "set design { runtime 30s }, or trim a fraction (trim 10%) or a sample count (trim 100)",
            )
    for bench_ast, bench in zip(of(ast.Benchmark), benchmarks, strict=False):
        check_runtime_use(ctx, bench_ast, bench, runtime)
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
            check_templates(
                ctx, stmt.value, {f.name: f for f in factors}, runtime, allow_factors=False
            )
    if reset_template is not None:
        per_batch = (model.VERSION_FACTOR,) if ab is not None else False
        why = (
            "the reset runs before each host batch, which runs one version"
            if ab is not None
            else "the reset runs before each round, not per configuration"
        )
        check_templates(
            ctx,
            reset_template.value,
            {f.name: f for f in factors},
            runtime,
            allow_factors=per_batch,
            where=why,
        )
    if ab is not None:
        check_ab_restrictions(ctx, ab, list(items), reset, kpis, variabilities, order_dependence)

    reset_stmt = next(
        (i for i in items if isinstance(i, ast.Statement) and i.keyword == "reset"), None
    )
    if reset is not None and (reset.reboot or reset.reconnect) and ctx.backends is not None:
        assert reset_stmt is not None  # check_reset made the reset from it
        check_reset_capability(ctx, reset, reset_stmt.span, hosts.kind)
    check_hidden_support(ctx, hidden, hosts, of(ast.Factor), ab is not None)
    machine = check_machine(
        ctx, of(ast.Block, "machine"), next(iter(of(ast.Hosts)), None), hosts, hidden
    )
    if seed_stmt is not None and seed_stmt.value.value >= 2**63:
        ctx.error("the seed must be below 2**63", seed_stmt.value.span)
    if design is not None:
        check_plan_size(ctx, factors, benchmarks, design, design_block or tree)
    if not benchmarks and not any(isinstance(i, ast.Benchmark) for i in items):
        ctx.error(
            "the experiment declares no benchmark",
            tree.span,
            'add: benchmark NAME { run "command" }',
        )
    if any(d.severity == "error" for d in ctx.diagnostics):
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
        spec_hash="sha256:" + hashlib.sha256(ctx.source.text.encode()).hexdigest(),
        spec_path=ctx.source.path,
        order_dependence=order_dependence,
        equal_hosts=equal_hosts,
        comparisons=comparisons,
        family=family,
        profiles=profiles,
        hidden=tuple(hidden),
        hardware=tuple(hardware),
        host_where=tuple(host_where),
        machine=machine,
        population=population,
    )
