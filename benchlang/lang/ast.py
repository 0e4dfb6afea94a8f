"""The syntax tree of a spec: plain frozen classes with source spans, free of Lark objects."""

from __future__ import annotations

from typing import Any

import attrs

from benchlang.lang.diagnostics import Span


@attrs.frozen
class Value:
    """A literal. kind: string, int, float, percent, duration, word, list, range.

    percent holds the number before '%' (95% -> 95.0); duration holds seconds; quantity
    holds (number, unit) as written (2GB -> (2.0, "GB"));
    list holds a tuple of Value; range holds (start, stop, step) with step None when absent.
    """

    kind: str
    value: Any
    span: Span

    def describe(self) -> str:
        return {
            "string": "a string",
            "int": "an integer",
            "float": "a number",
            "percent": "a percentage",
            "duration": "a duration",
            "word": "a word",
            "list": "a list",
            "range": "a range",
            "quantity": "a quantity",
        }[self.kind]


@attrs.frozen
class Setting:
    key: str
    span: Span
    value: Value | None = None
    block: Settings | None = None
    file: Value | None = None
    env: Value | None = None
    """``key from env "NAME"``: the value is read from the environment when the backend
    opens (a secret never written in the spec)."""


@attrs.frozen
class Settings:
    items: tuple[Setting, ...]
    span: Span


@attrs.frozen
class Statement:
    """A simple statement: ``keyword value`` (title, seed, setup, run, unit, ...)."""

    keyword: str
    span: Span
    value: Value | None = None
    flag: str | None = None


@attrs.frozen
class EnvPair:
    name: str
    value: Value
    span: Span


@attrs.frozen
class Hosts:
    kind: str
    span: Span
    settings: Settings | None


@attrs.frozen
class Condition:
    """``FACT OP VALUE`` or ``FACT in [...]`` of ``hosts where`` (op ``in`` for the list)."""

    fact: str
    span: Span
    op: str
    value: Value


@attrs.frozen
class HostsWhere:
    """``hosts where C and C ...``: the inventory constraints."""

    span: Span
    conditions: tuple[Condition, ...]


@attrs.frozen
class Factor:
    name: str
    span: Span
    levels: Value | None
    coverage: Value | None
    hidden: Span | None
    hidden_settings: Settings | None = None
    """``hidden { per round ... }``; a factor without ``in`` (levels None) is a built-in."""
    provider: Value | None = None
    """``factor NAME from PROVIDER "KEY"``: a word (the provider) and a string (the key);
    the levels come from the host inventory (a hardware factor)."""
    key: Value | None = None
    population: Span | None = None
    population_settings: Settings | None = None
    """``population { percentile P confidence C }``: the levels are a sample of inputs to
    generalise over (TriScale §5.3)."""


@attrs.frozen
class Measure:
    """``measure NAME [series] = BUILTIN`` or ``measure NAME [series] from STREAM EXTRACTOR``."""

    name: str
    span: Span
    series: bool
    builtin: str | None = None
    builtin_span: Span | None = None
    stream: str | None = None
    """``stdout``, ``stderr`` or ``file`` (then ``path`` names the file)."""
    path: Value | None = None
    extractor: str | None = None
    """``regex``, ``json``, ``column`` or ``lines``; ``argument`` is its pattern, key or
    column (None for ``lines``)."""
    argument: Value | None = None


@attrs.frozen
class Benchmark:
    name: str
    span: Span
    items: tuple[Any, ...]


@attrs.frozen
class Arith:
    """An arithmetic expression of a trial's measures: op is ``name``, ``number``, ``neg``
    or a binary operator (``+ - * /``, and ``:``, which the checker refuses)."""

    op: str
    span: Span
    args: tuple[Arith, ...] = ()
    value: Any = None


@attrs.frozen
class Metric:
    name: str
    span: Span
    items: tuple[Statement, ...]
    convergence: Settings | None
    convergence_span: Span | None
    expression: Arith | None = None
    """``metric NAME = EXPRESSION``: a derived metric."""


@attrs.frozen
class Block:
    """``kpi NAME {...}``, ``variability NAME {...}``, ``design {...}``, ``machine {...}``."""

    keyword: str
    name: str | None
    span: Span
    settings: Settings
    method: str | None = None
    """``kpi M with NAME {...}``: the statistics method named (None: the default)."""
    method_span: Span | None = None


@attrs.frozen
class Stop:
    """``stop after N``, ``stop adaptive {...}``, ``stop NAME {...}`` (kind ``method``) or
    ``stop when kpi METRIC width < W max N`` (kind ``when``)."""

    kind: str
    span: Span
    count: Value | None = None
    settings: Settings | None = None
    metric: str | None = None
    width: Value | None = None
    max_count: Value | None = None
    name: str | None = None
    """``stop NAME {...}``: the stopping method named (kind ``method``)."""


@attrs.frozen
class Compare:
    metric: str
    by: str
    method: str | None
    span: Span
    method_span: Span | None
    settings: Settings | None


@attrs.frozen
class AnalysisItem:
    """``order_dependence {...}``, ``anova M ~ A * B``, ``profile NAME from file F ...``, and
    ``NAME {...}`` (keyword ``method``, name the statistics method) for any installed method."""

    keyword: str
    span: Span
    settings: Settings | None = None
    name: str | None = None
    terms: tuple[str, ...] = ()
    path: Value | None = None


@attrs.frozen
class Experiment:
    name: str
    span: Span
    items: tuple[Any, ...]
    version: Value | None
