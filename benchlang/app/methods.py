"""The installed statistics methods, described for people (``benchlang plugins --describe``)
and for the reproducibility record (which package and version computed what)."""

from __future__ import annotations

from typing import Any

from benchlang import model
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


def methods_used(experiment: model.Experiment) -> list[dict[str, str]]:
    """Every statistics method the experiment's analysis uses, with its package and version."""
    names: list[str] = []
    if experiment.kpis:
        names.append("thompson")
    if experiment.variabilities:
        names.append("variability")
    names.extend(c.method for c in experiment.comparisons)
    if experiment.stop is not None:
        names.append(experiment.stop.kind)
    if getattr(experiment, "order_dependence", None):
        names.append("order_dependence")
    catalogue = statistics_methods()
    out = []
    for name in dict.fromkeys(names):
        if name not in catalogue:
            out.append({"method": name, "package": "not installed", "version": ""})
            continue
        package, version = catalogue.distribution(name)
        out.append(
            {
                "method": name,
                "package": package,
                "version": version,
                "source": catalogue[name].source,
            }
        )
    return out
