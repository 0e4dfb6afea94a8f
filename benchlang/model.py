"""The validated experiment: frozen classes the checker builds from a spec.

Percentages are numbers in (0, 100) as written in the spec (95% -> 95.0); durations are
seconds. Nothing here refers to the syntax tree or to Lark.
"""

from __future__ import annotations

from typing import Any

import attrs

BUILTIN_MEASURES: dict[str, str] = {
    "wall_time": "s",
    "user_time": "s",
    "sys_time": "s",
    "cpu_time": "s",
    "max_rss": "KiB",
    "minor_faults": "count",
    "major_faults": "count",
    "memory_peak": "KiB",
    "throttled_periods": "count",
    "throttled_time": "s",
}
"""Measured by the backend for every trial; the last three only for a trial with machine-block
limits (its cgroup's memory peak; throttling under a CPU quota), docs/measures.md."""
COUNTERS: dict[str, tuple[str, str]] = {
    "cycles": ("cycles", "count"),
    "instructions": ("instructions", "count"),
    "cache_misses": ("cache-misses", "count"),
    "cache_references": ("cache-references", "count"),
    "branches": ("branches", "count"),
    "branch_misses": ("branch-misses", "count"),
    "page_faults": ("page-faults", "count"),
    "context_switches": ("context-switches", "count"),
    "cpu_migrations": ("cpu-migrations", "count"),
    "task_clock": ("task-clock", "ms"),
}
"""Built-in measures read by ``perf stat`` (its event name, and the unit): counters of the
command alone (DataMill §4: cache misses, page faults ...); see run/counters.py."""
SIMULATED: dict[str, tuple[str, str]] = {
    "sim_instructions": ("Ir", "count"),
    "sim_cycles": ("estimated cycles", "count"),
}
"""Built-in measures read from valgrind's cachegrind (what it counts, and the unit): counts of
every process of the trial under a pinned simulated cache; see run/cachegrind.py."""
AGGREGATES = ("mean", "median", "min", "max")
ORDERS = ("fixed", "random", "fixed_vs_random")
LAYOUTS = ("unbalanced", "request_balanced", "host_balanced", "fully_balanced")
VERSION_FACTOR = "version"
REQUEST_FACTOR = "request"


@attrs.frozen
class Hosts:
    kind: str = "local"
    settings: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Reset:
    """``reset "CMD" [reconnect]`` or ``reset reboot|power_cycle|reimage``: ``power`` names the
    action a backend's provider does (``Backend.power``, docs/plugins.md)."""

    command: str | None
    reboot: bool = False
    reconnect: bool = False
    power: str | None = None


@attrs.frozen
class Factor:
    """A factor and its levels. ``texts``, when given, is what ``{name}`` expands to for each
    level (the design's ``version`` factor: levels are the version names, texts their strings)."""

    name: str
    levels: tuple[Any, ...]
    coverage: float = 100.0
    texts: tuple[str, ...] | None = None

    def text(self, level: Any) -> Any:
        return level if self.texts is None else self.texts[self.levels.index(level)]


QUANTITY_UNITS = {
    "B": (1.0, "bytes"),
    "KB": (1e3, "bytes"),
    "MB": (1e6, "bytes"),
    "GB": (1e9, "bytes"),
    "TB": (1e12, "bytes"),
    "KiB": (2.0**10, "bytes"),
    "MiB": (2.0**20, "bytes"),
    "GiB": (2.0**30, "bytes"),
    "TiB": (2.0**40, "bytes"),
    "Hz": (1.0, "Hz"),
    "kHz": (1e3, "Hz"),
    "MHz": (1e6, "Hz"),
    "GHz": (1e9, "Hz"),
}
"""Units of sizes and frequencies in ``hosts where`` (K/M/G/T decimal, Ki/Mi/Gi/Ti binary):
unit -> (factor to base units, dimension)."""


@attrs.frozen
class HostFactor:
    """A hardware factor (DataMill, de Oliveira et al. ICPE 2013, §4.1): its levels are what
    ``provider`` (a ``benchlang.factors`` entry point) reads as ``key`` from each host's facts;
    ``coverage`` percent of the levels present must be covered by the chosen hosts."""

    name: str
    provider: str
    key: str
    coverage: float = 100.0


@attrs.frozen
class HostCondition:
    """One condition of ``hosts where``: ``fact op value``. ``value`` is a string, a number,
    a (number in base units, dimension) pair for a quantity (``2GB`` -> (2e9, "bytes")), or a
    tuple of those for ``in``; ``text`` is the condition as written."""

    fact: str
    op: str
    value: Any
    text: str


HIDDEN_BUILTINS = ("env_padding", "aslr", "link_order", "drop_caches", "reboot")
ENV_PADDING_VARIABLE = "BENCHLANG_ENV_PADDING"


@attrs.frozen
class Hidden:
    """A hidden factor (DataMill, de Oliveira et al. ICPE 2013, §3): not crossed into the
    configurations but drawn per ``trial`` or per ``round`` from ``levels`` with a seeded
    stream, and stored with the trial as one of its levels.

    kind: ``factor`` (declared levels, substituted as ``{name}``), ``env_padding`` (levels are
    sizes in bytes of ENV_PADDING_VARIABLE), ``aslr`` (on/off), ``link_order`` (levels are
    the objects; each draw is a permutation, ``{link_order}``) or ``drop_caches``
    (kept/dropped).
    """

    name: str
    kind: str
    levels: tuple[Any, ...]
    per: str = "trial"

    @property
    def substituted(self) -> bool:
        """Whether ``{name}`` stands in commands for the drawn level."""
        return self.kind in ("factor", "link_order")


@attrs.frozen
class Measure:
    """How one number (or one raw series) is read from a trial.

    source: builtin | stdout | stderr | file; extractor: regex | json | column | lines.
    """

    name: str
    series: bool = False
    source: str = "builtin"
    builtin: str | None = None
    path: str | None = None
    extractor: str | None = None
    argument: Any = None


@attrs.frozen
class Benchmark:
    name: str
    command: str
    measures: tuple[Measure, ...] = ()
    factors: tuple[str, ...] = ()
    setup: str | None = None
    before: str | None = None
    after: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    timeout: float | None = None
    workdir: str | None = None
    hidden: tuple[str, ...] = ()
    """Hidden factors whose ``{name}`` its commands use (rendered per trial)."""
    warmup: int | None = None
    """Warm-up trials of each of its configurations (``warmup N`` in the benchmark); None
    takes the design's."""

    @property
    def counters(self) -> tuple[Measure, ...]:
        """Its measures that ``perf stat`` reads."""
        return tuple(m for m in self.measures if m.builtin in COUNTERS)

    @property
    def simulated(self) -> tuple[Measure, ...]:
        """Its measures that cachegrind reads (the command then runs under valgrind)."""
        return tuple(m for m in self.measures if m.builtin in SIMULATED)

    def measure(self, name: str) -> Measure | None:
        for m in self.measures:
            if m.name == name:
                return m
        if name in BUILTIN_MEASURES:
            return Measure(name, source="builtin", builtin=name)
        return None


@attrs.frozen
class Convergence:
    confidence: float = 95.0
    tolerance: float = 5.0


@attrs.frozen
class Trim:
    """Leading part of a raw series dropped before the metric (TriScale Fig. 4 remedy).

    kind: fraction (value in [0, 1)), samples (a count) or duration (seconds, needs runtime).
    """

    kind: str
    value: float


@attrs.frozen
class Expression:
    """Arithmetic of one trial's measures (a derived metric): op is ``name`` (value: the
    measure), ``number`` (value: the constant), ``neg``, or ``+ - * /`` over ``args``."""

    op: str
    args: tuple[Expression, ...] = ()
    value: Any = None

    def names(self) -> tuple[str, ...]:
        if self.op == "name":
            return (self.value,)
        return tuple(dict.fromkeys(n for a in self.args for n in a.names()))

    def text(self) -> str:
        if self.op == "name":
            return self.value
        if self.op == "number":
            return f"{self.value:g}"
        if self.op == "neg":
            return f"-{self.args[0].text()}"
        left, right = (
            a.text() if a.op in ("name", "number") else f"({a.text()})" for a in self.args
        )
        return f"{left} {self.op} {right}"


@attrs.frozen
class Metric:
    """``measure`` names the measure aggregated, or is the expression's text for a derived
    metric (``expression``), whose per-trial value is computed from the trial's measures."""

    name: str
    measure: str
    aggregate: str | float = "mean"
    unit: str | None = None
    better: str = "lower"
    convergence: Convergence | None = None
    trim: Trim | None = None
    expression: Expression | None = None


@attrs.frozen
class Kpi:
    """``method``: the kpi method of the statistics registry that computes it (``thompson``
    unless the spec says ``kpi M with NAME``); ``options`` its settings beyond the four."""

    metric: str
    percentile: float
    confidence: float
    bound: str
    exclude: int = 0
    method: str = "thompson"
    options: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class Variability:
    metric: str
    percentile: float
    confidence: float


@attrs.frozen
class Population:
    """``factor NAME in [...] population { percentile P confidence C }``: the factor's levels
    are a sample of a population of inputs (traces, prefixes, datasets) to generalise over
    (TriScale, Jacob et al. JSys 2021, §5.3). ``percentile``/``confidence`` None: each
    metric's KPI settings, applied to the inputs' KPIs."""

    factor: str
    percentile: float | None = None
    confidence: float | None = None


@attrs.frozen
class Layout:
    """An A/B layout (Bakshy & Frachtenberg, WWW 2015, §4, Table 2): ``hosts`` H in all,
    ``requests`` R per version, each repeated ``repetitions`` T times in its host batch, with
    ``warmup``/``cooldown`` trials run but not analysed at each end of every batch."""

    kind: str
    hosts: int
    requests: int
    repetitions: int = 1
    warmup: int = 0
    cooldown: int = 0


@attrs.frozen
class Design:
    runs: int
    runs_reason: str
    series: int
    series_reason: str
    order: str = "random"
    runtime: float | None = None
    span: float | str | None = None
    """Seconds each series runs over (TriScale §4.6), or "auto" until the plan resolves it."""
    layout: Layout | None = None
    span_reason: str | None = None
    replicate: int = 1
    """DataMill's replications: ``runs`` holds them all, in this many contiguous blocks of
    rounds per series; the block is the trial's ``replicate`` level."""
    redundancy: int = 1
    """DataMill's purposeful redundancy (§4.2): every configuration runs on this many hosts
    with the same hardware levels, each host all its rounds (plan.redundancy)."""
    warmup: int = 0
    """Warm-up trials of each configuration before its measured trials, in the first round of
    each series on each host (``design { warmup N }``; plan.warmup); run and stored as
    ``warmup``, left out of every analysis."""


@attrs.frozen
class Stop:
    """When to stop measuring. kind: after | adaptive | kpi_width."""

    kind: str
    count: int | None = None
    settings: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Comparison:
    """``compare METRIC by FACTOR with METHOD {...}``: treatment (second level) minus control
    (first level). method: bootstrap | mixed_effects."""

    metric: str
    by: str
    method: str
    settings: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Machine:
    """A ``machine { ... }`` block: the limits every trial runs under and the host state the
    run requires (docs/machine.md). Limits are part of the plan hash; the required state is
    checked before the first trial and written into the record.

    ``cpus``: the CPUs every process of a trial is pinned to (empty: not pinned).
    ``memory``: the memory limit of a trial in bytes (swap capped at zero where possible).
    ``cpu_time``: the CPU-time limit of a trial in seconds, watched and enforced by a kill
    (never a bandwidth quota, which throttles the times being measured).
    ``cpu_quota``: a CFS bandwidth quota in CPUs, only when the spec asks for one by name.
    ``require``: host state as (knob, wanted value) pairs: governor, turbo, smt, aslr.
    """

    cpus: tuple[int, ...] = ()
    memory: int | None = None
    cpu_time: float | None = None
    cpu_quota: float | None = None
    require: tuple[tuple[str, str], ...] = ()

    @property
    def limits_trials(self) -> bool:
        """Whether any per-trial limit is set (pinning, memory, CPU time or a quota)."""
        return bool(self.cpus) or any(
            v is not None for v in (self.memory, self.cpu_time, self.cpu_quota)
        )


@attrs.frozen
class Experiment:
    name: str
    title: str | None
    seed: int
    hosts: Hosts
    benchmarks: tuple[Benchmark, ...]
    factors: tuple[Factor, ...]
    metrics: tuple[Metric, ...]
    kpis: tuple[Kpi, ...]
    variabilities: tuple[Variability, ...]
    design: Design
    stop: Stop | None = None
    setup: str | None = None
    teardown: str | None = None
    reset: Reset | None = None
    before: str | None = None
    after: str | None = None
    timeout: float | None = None
    env: tuple[tuple[str, str], ...] = ()
    workdir: str | None = None
    spec_hash: str = ""
    spec_path: str = ""
    order_dependence: dict[str, Any] | None = None
    equal_hosts: dict[str, Any] | None = None
    """The settings of the equal-hosts check (``design { redundancy N }``; stats.equal_hosts)."""
    comparisons: tuple[Comparison, ...] = ()
    family: dict[str, Any] | None = None
    """``analysis { family { correction holm|bh|none level 5% } }``: the one family every
    comparison joins (app.comparisons); ``level`` only when the spec gives it (else the
    compares' own confidence); None: the default, Holm."""
    profiles: tuple[dict[str, Any], ...] = ()
    hidden: tuple[Hidden, ...] = ()
    hardware: tuple[HostFactor, ...] = ()
    host_where: tuple[HostCondition, ...] = ()
    machine: Machine | None = None
    """The ``machine`` block, the ``hosts`` block's own ``machine { ... }`` merged over it key by
    key (lang.check.machine): one block for every host of the spec's one ``hosts`` block."""
    population: Population | None = None
    """The factor whose levels are a sample of inputs (TriScale §5.3), if one is declared."""

    @property
    def needs_inventory(self) -> bool:
        """Whether planning needs the hosts' facts (a hardware factor or ``hosts where``)."""
        return bool(self.hardware or self.host_where)

    def factor(self, name: str) -> Factor:
        return next(f for f in self.factors if f.name == name)

    @property
    def drawn_levels(self) -> tuple[str, ...]:
        """Levels a trial holds beside its configuration's: the replicate block and the
        hidden factors' draws (not part of what the configuration is)."""
        return (
            *(["replicate"] if self.design.replicate > 1 else []),
            *(h.name for h in self.hidden),
        )

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)

    def kpi(self, metric: str) -> Kpi | None:
        return next((k for k in self.kpis if k.metric == metric), None)

    def variability(self, metric: str) -> Variability | None:
        return next((v for v in self.variabilities if v.metric == metric), None)
