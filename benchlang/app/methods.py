"""The installed statistics methods, described for people (``benchlang plugins --describe``)."""

from __future__ import annotations

from typing import Any

from benchlang.errors import UserError
from benchlang.lang.diagnostics import did_you_mean
from benchlang.stats.registry import statistics_methods


def describe_method(name: str) -> dict[str, Any]:
    """A method's declaration as data: kind, summary, source, package, parameters."""
    catalogue = statistics_methods()
    if name not in catalogue:
        hint = did_you_mean(name, list(catalogue)) or (
            f"installed statistics methods: {', '.join(catalogue)}"
        )
        raise UserError(f"no statistics method named '{name}'", hint)
    method = catalogue[name]
    package, version = catalogue.distribution(name)
    return {
        "name": method.name,
        "kind": method.kind,
        "summary": method.summary,
        "source": method.source,
        "package": package,
        "version": version,
        "implementation": method.implementation,
        "min_samples": method.min_samples,
        "parameters": [
            {
                "name": p.name,
                "type": p.type,
                "default": p.default,
                "range": p.describe_range(),
                "choices": list(p.choices),
                "required": p.required,
                "doc": p.doc,
            }
            for p in method.parameters
        ],
    }
