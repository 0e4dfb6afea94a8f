"""The statistics method contract (docs/plugins.md, "Statistics methods").

A method is a *declaration* (:class:`Method`: name, kind, parameters as data, the smallest
sample it needs, its source) that loads without numpy-heavy imports, so ``benchlang check``
validates a spec's settings offline, and an *implementation* named by a ``module:function``
string that is imported only when results are computed. Each kind returns one frozen result
shape (:class:`ComparisonOutcome` for comparisons), serialised by :func:`to_plain` without a
hand-written ``to_dict``. Confidences are percents everywhere in the contract.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from typing import Any

import attrs

KINDS = ("kpi", "variability", "comparison", "factorial", "stopping", "order")
"""kpi: a percentile bound of one metric; variability: its spread across series; comparison:
two or more levels of one factor; factorial: ANOVA-like decompositions; stopping: when to stop
measuring; order: order, position and carry-over analyses."""

TYPES = (
    "number",
    "count",
    "percent",
    "percentile",
    "amount",
    "choice",
    "boolean",
    "word",
    "string",
    "duration",
)
"""``amount``: a number, or a percentage of a reference (``5%``), kept as ("percent", 5.0)."""


@attrs.frozen
class Parameter:
    """One setting of a method, as data: the checker validates it, ``plugins --describe``
    prints it. ``minimum``/``maximum`` bound numbers and counts (inclusive); ``choices`` lists
    the words a ``choice`` takes; ``default`` None means "computed" (the doc says how)."""

    name: str
    type: str
    doc: str
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    required: bool = False

    def __attrs_post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"parameter {self.name}: unknown type {self.type!r}; types: {TYPES}")
        if self.type == "choice" and not self.choices:
            raise ValueError(f"parameter {self.name}: a choice needs its choices")

    def describe_range(self) -> str:
        if self.type == "choice":
            return " | ".join(self.choices)
        if self.type == "percent" and self.maximum is not None:
            return f"[{self.minimum or 0:g}%, {self.maximum:g}%]"
        if self.type == "percent":
            return "(0%, 100%)"
        if self.type == "percentile":
            return "(0, 100)"
        if self.type == "boolean":
            return "true | false"
        if self.minimum is None and self.maximum is None:
            return ""
        low = "-inf" if self.minimum is None else f"{self.minimum:g}"
        high = "inf" if self.maximum is None else f"{self.maximum:g}"
        return f"[{low}, {high}]"


@attrs.frozen
class Method:
    """A statistics method's declaration, the object an entry point of ``benchlang.statistics``
    names. ``implementation`` is ``"module:function"``, loaded by :meth:`load` on first use.
    ``min_samples`` is the fewest successful trials per compared level (per series for a KPI)
    the method needs; ``min_samples_for(settings)`` may refine it (``runs auto`` asks it).
    ``refuses(settings)`` says, in words, why the method never answers with these settings
    (``check`` reports it at the spec's block), None when it may."""

    name: str
    kind: str
    summary: str
    source: str
    implementation: str
    parameters: tuple[Parameter, ...] = ()
    min_samples: int = 2
    min_samples_for: Callable[[Mapping[str, Any]], int] | None = attrs.field(default=None, eq=False)
    refuses: Callable[[Mapping[str, Any]], str | None] | None = attrs.field(default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"method {self.name}: unknown kind {self.kind!r}; kinds: {KINDS}")
        if ":" not in self.implementation:
            raise ValueError(f"method {self.name}: implementation must be 'module:function'")

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.parameters if p.default is not None}

    def needs(self, settings: Mapping[str, Any]) -> int:
        """The smallest sample the method needs with these settings."""
        if self.min_samples_for is not None:
            return int(self.min_samples_for(settings))
        return self.min_samples

    def refusal(self, settings: Mapping[str, Any]) -> str | None:
        """Why the method never answers with these settings; None when it may."""
        return None if self.refuses is None else self.refuses(settings)

    def load(self) -> Callable[..., Any]:
        """The implementation (imported now, not when the declaration was read)."""
        module, _, attr = self.implementation.partition(":")
        target: Any = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
        implementation: Callable[..., Any] = target
        return implementation


@attrs.frozen
class ComparisonSample:
    """What a comparison method receives: the successful trials of every level of the
    compared factor, and every clustering role a trial has. Pure numpy, no store.

    ``level`` indexes ``names`` (declared order); ``reference`` is the control's index;
    ``request`` codes the rest of the configuration (benchmark, other factors), ``host`` the
    host, ``series`` the series, ``round`` the round (unique across series), ``batch`` the A/B
    batch; ``better`` is the metric's direction; ``layout`` says an A/B layout made the plan."""

    y: Any
    level: Any
    names: tuple[str, ...]
    reference: int
    request: Any
    host: Any
    series: Any
    round: Any
    batch: Any
    seed: int
    better: str = "lower"
    layout: bool = False


@attrs.frozen
class ComparisonOutcome:
    """The result of a comparison, the same shape for every method.

    ``estimate`` compares the treatment with the control on ``scale``: ``ratio`` (treatment /
    control), ``difference`` (treatment - control) or ``shift`` (a location shift, treatment -
    control). ``ci_low``/``ci_high`` is the two-sided interval at ``confidence`` percent and
    ``achieved_confidence`` the confidence it really has (exact rank intervals step, so it can
    exceed the nominal), nan when not known. ``significant`` says whether the interval
    excludes no change; ``p_value`` when the method has one. ``descriptive_only`` gives the
    reason no interval or test can be trusted (then the numbers are estimates only).
    ``verdict`` is for tests that decide (equivalent, worse, better, inconclusive).
    ``details`` holds method-specific frozen results, serialised with the rest."""

    method: str
    estimate: float
    scale: str
    ci_low: float = math.nan
    ci_high: float = math.nan
    confidence: float = math.nan
    achieved_confidence: float = math.nan
    significant: bool | None = None
    p_value: float | None = None
    verdict: str | None = None
    notes: tuple[str, ...] = ()
    descriptive_only: str | None = None
    details: Mapping[str, Any] = attrs.field(factory=dict)


def to_plain(value: Any) -> Any:
    """A result as JSON-ready data: attrs classes by field (or their own ``to_dict``),
    mappings, sequences and numpy scalars/arrays as Python values; nan becomes None."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return to_plain(to_dict())
    if attrs.has(type(value)):
        return {f.name: to_plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return to_plain(tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
