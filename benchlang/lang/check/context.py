"""The diagnostics sink every pass writes to, and what passes share about the spec.

Passes are plain functions ``pass(ctx, nodes, ...) -> model part``: they read syntax nodes, add
diagnostics to ``ctx`` and return what later passes need (the pattern of lang.ab_design).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from benchlang.lang.diagnostics import Diagnostic, Source, Span

MAX_TRIALS = 10_000_000
MAX_EXCLUDE = 1000
NOT_SUPPORTED_HINT = (
    "this parses, but its execution is not built yet (see docs/language.md, 'Status')"
)
STRUCTURE_PLACEHOLDERS = ("runtime",)


class Context:
    """Diagnostics found so far, and the spec's source, directory and backend catalogue."""

    def __init__(
        self,
        source: Source,
        base_dir: Path,
        backends: Mapping[str, Any] | None = None,
        methods: Any = None,
    ) -> None:
        self.source = source
        self.base_dir = base_dir
        self.backends = backends
        self.methods = methods  # a statistics MethodCatalogue; None: the installed one
        self.diagnostics: list[Diagnostic] = []
        self.broken_factors: set[str] = set()  # declared, with an error already reported
        self.broken_kpis: set[str] = set()  # declared, with an error already reported
        self.local = False  # hosts local: commands run here, so their programs can be looked up
        self.hardware_factors: set[str] = set()  # from the host inventory, not placeholders

    def error(self, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(message, span, hint))

    def warn(self, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(message, span, hint, severity="warning"))

    def not_supported(self, what: str, span: Span) -> None:
        self.error(f"{what} is not supported yet", span, NOT_SUPPORTED_HINT)

    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)

    def single(self, items: Iterable[Any], what: str) -> Any:
        """The one item of a kind that may appear once; an error for each extra one."""
        items = list(items)
        for extra in items[1:]:
            self.error(
                f"{what} is given twice", extra.span, f"first given on line {items[0].span.line}"
            )
        return items[0] if items else None

    def unique(self, items: list[Any], what: str) -> dict[str, Any]:
        """Items by name; an error for each name declared again."""
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

    def span_in_string(self, value: Any, offset: int, width: int) -> Span:
        """The span of ``width`` characters at ``offset`` inside a one-line string literal."""
        if value.span.end_line != value.span.line or offset < 0:
            return value.span
        column = value.span.column + 1 + offset
        return Span(value.span.line, column, value.span.line, column + width)
