"""Plugin discovery through entry points (``benchlang.backends``, ``benchlang.statistics``,
``benchlang.factors``). The built-ins register through the same groups in pyproject.toml."""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points
from typing import Any

GROUPS = ("benchlang.backends", "benchlang.statistics", "benchlang.factors")


def entry_points_of(group: str) -> tuple[EntryPoint, ...]:
    return tuple(sorted(entry_points(group=group), key=lambda ep: ep.name))


@functools.cache
def backend_kinds() -> dict[str, Any]:
    """Backend kind -> class, for every installed backend that loads."""
    kinds = {}
    for ep in entry_points_of("benchlang.backends"):
        try:
            kinds[ep.name] = ep.load()
        except (
            Exception
        ):  # a broken plugin must not break every spec; `benchlang plugins` shows why
            continue
    return kinds


def describe_plugins() -> list[dict[str, str]]:
    """Every registered entry point with its module, distribution and whether it loads."""
    rows = []
    for group in GROUPS:
        for ep in entry_points_of(group):
            dist = ep.dist
            try:
                ep.load()
                status = "ok"
            except Exception as err:  # reported to the user, not raised
                status = f"fails to load: {type(err).__name__}: {err}"
            rows.append(
                {
                    "group": group,
                    "name": ep.name,
                    "value": ep.value,
                    "distribution": f"{dist.name} {dist.version}" if dist else "?",
                    "status": status,
                }
            )
    return rows
