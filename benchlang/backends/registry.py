"""Plugin discovery through entry points (``benchlang.backends``, ``benchlang.statistics``,
``benchlang.factors``). The built-ins register through the same groups in pyproject.toml."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from benchlang.entrypoints import Point, declared_in, entry_points_of

__all__ = ["GROUPS", "BackendCatalogue", "backend_kinds", "describe_plugins", "entry_points_of"]

GROUPS = (
    "benchlang.backends",
    "benchlang.statistics",
    "benchlang.factors",
    "benchlang.importers",
)


class BackendCatalogue(MutableMapping[str, Any]):
    """Backend kind -> class, loading a plugin only when its kind is asked for.

    A spec uses one kind; importing every installed backend (and what each imports) would
    make `check` pay for plugins it never touches. A kind whose plugin fails to load is
    absent (`benchlang plugins` shows why); iteration lists the registered names. A class
    can also be registered directly (tests, applications embedding benchlang). Given a
    function, the entry points are found when first needed: a spec without a ``hosts``
    block never asks.
    """

    def __init__(self, points: tuple[Point, ...] | Callable[[], tuple[Point, ...]]) -> None:
        self._found = points
        self._loaded: dict[str, Any] = {}

    @functools.cached_property
    def _points(self) -> dict[str, Point]:
        found = self._found() if callable(self._found) else self._found
        return {ep.name: ep for ep in found}

    def __getitem__(self, kind: str) -> Any:
        if kind not in self._loaded:
            point = self._points[kind]  # KeyError: not installed
            try:
                self._loaded[kind] = point.load()
            except Exception as err:  # a broken plugin must not break every spec
                raise KeyError(kind) from err
        return self._loaded[kind]

    def __setitem__(self, kind: str, cls: Any) -> None:
        self._loaded[kind] = cls

    def __delitem__(self, kind: str) -> None:
        if kind not in self._loaded and kind not in self._points:
            raise KeyError(kind)
        self._loaded.pop(kind, None)
        self._points.pop(kind, None)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._points, *self._loaded]))

    def __len__(self) -> int:
        return len(self._points.keys() | self._loaded.keys())


@functools.cache
def backend_kinds() -> BackendCatalogue:
    """The installed backends, by kind (each loaded on first use; the entry points read by
    the quick reader, ``declared_in``, when first asked for)."""
    return BackendCatalogue(lambda: declared_in("benchlang.backends"))


def describe_plugins() -> list[dict[str, str]]:
    """Every registered entry point with its module, distribution, whether it loads and, for a
    backend, its protocol version (docs/plugins.md)."""
    rows = []
    for group in GROUPS:
        for ep in entry_points_of(group):
            dist = ep.dist
            protocol = ""
            try:
                loaded = ep.load()
                status = "ok"
                if group == "benchlang.backends":
                    protocol = _protocol_status(loaded)
            except Exception as err:  # reported to the user, not raised
                status = f"fails to load: {type(err).__name__}: {err}"
            rows.append(
                {
                    "group": group,
                    "name": ep.name,
                    "value": ep.value,
                    "distribution": f"{dist.name} {dist.version}" if dist else "?",
                    "status": status,
                    "protocol": protocol,
                }
            )
    return rows


def _protocol_status(cls: Any) -> str:
    """A backend's protocol, said when it is older than this benchlang's."""
    from benchlang.backends.base import PROTOCOL_VERSION, protocol_of

    version = protocol_of(cls)
    if version >= PROTOCOL_VERSION:
        return str(version)
    return f"{version}: run with a lease that allocates nothing (no acquire/release)"
