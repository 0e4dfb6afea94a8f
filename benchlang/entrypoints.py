"""One cached scan of the installed entry points, shared by every plugin group.

``importlib.metadata.entry_points()`` reads the metadata of every installed distribution
(about 20 ms with a hundred packages); each group asked afterwards is a filter on that one
scan, so `check` pays for it once however many registries (backends, statistics, factors,
importers) it consults. :func:`declared_in` finds the same entry points without importing
``importlib.metadata`` (for `import` and `analyze`, whose registries need only names and
``load``).
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Iterable, Iterator
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint


class _Installed(Protocol):
    """What ``entry_points()`` returns: SelectableGroups up to Python 3.11, EntryPoints since
    3.12; both select a group."""

    def select(self, *, group: str) -> Iterable[EntryPoint]: ...


@functools.cache
def _installed() -> _Installed:
    from importlib.metadata import entry_points

    return entry_points()


def entry_points_of(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of one group, sorted by name (a stable order for listings)."""
    return tuple(sorted(_installed().select(group=group), key=lambda ep: ep.name))


class Point(Protocol):
    """What a registry reads of an entry point: an ``EntryPoint`` or a :class:`Declared`."""

    @property
    def name(self) -> str: ...

    @property
    def dist(self) -> Any: ...

    def load(self) -> Any: ...


class Declared:
    """One entry point as a distribution's ``entry_points.txt`` declares it, read without
    ``importlib.metadata`` (whose import and scan of every distribution cost 20-25 ms a
    process): what a registry needs to list a name and load it; ``dist`` builds the same
    ``PathDistribution`` the full scan would, when a listing asks for a package's version.
    A plain class: an attrs class costs its module a millisecond to build."""

    __slots__ = ("group", "name", "path", "value")

    def __init__(self, name: str, value: str, group: str, path: str) -> None:
        self.name, self.value, self.group, self.path = name, value, group, path

    def __repr__(self) -> str:
        return f"Declared(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def load(self) -> Any:
        """The object named, as ``EntryPoint.load`` finds it."""
        match = re.match(_VALUE, self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r}: malformed value {self.value!r}")
        found = importlib.import_module(match.group("module"))
        for attr in filter(None, (match.group("attr") or "").split(".")):
            found = getattr(found, attr)
        return found

    @property
    def dist(self) -> Any:
        from importlib.metadata import PathDistribution

        return PathDistribution(Path(self.path))


_VALUE = r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"
"""``EntryPoint.pattern`` (compiled on first use, by ``re``'s cache)."""


class _Unsure(Exception):
    """The quick read cannot vouch for matching ``importlib.metadata``: use the full scan."""


def declared_in(group: str) -> tuple[Point, ...]:
    """The entry points of one group, sorted by name, as :func:`entry_points_of` finds them:
    the same distributions, in the same order (``sys.path``'s, first of a name wins), read
    straight from their ``*.dist-info``/``*.egg-info`` directories. Falls back to the full
    scan whenever the layout is one the quick read does not mirror (a zip or egg on
    ``sys.path``, another finder of distributions, a malformed file)."""
    found = _quick_scan()
    if found is None:
        return entry_points_of(group)
    return tuple(sorted((d for d in found if d.group == group), key=lambda d: d.name))


@functools.cache
def _quick_scan() -> tuple[Declared, ...] | None:
    try:
        return tuple(_scan())
    except _Unsure:
        return None


def _scan() -> Iterator[Declared]:
    found = _distributions()
    if found is None:
        raise _Unsure
    for _name, path in found:
        yield from _declared(path)


def quick_declared(group: str) -> tuple[Declared, ...] | None:
    """The entry points of one group as :func:`declared_in` finds them by its quick read, or
    None where that read cannot vouch for matching ``importlib.metadata``. Parses only the
    files that declare the group (``history add``'s check of the kept points' code,
    app/history/kept.py)."""
    found = _distributions()
    if found is None:
        return None
    header = f"[{group}]"
    try:
        points = [
            d
            for _name, path in found
            if header in _entry_points_text(path)
            for d in _declared(path)
            if d.group == group
        ]
    except _Unsure:
        return None
    return tuple(sorted(points, key=lambda d: d.name))


def installed_paths(names: Iterable[str]) -> dict[str, str | None] | None:
    """The ``*.dist-info``/``*.egg-info`` directory of each distribution named (None: not
    installed), the first of its name on ``sys.path`` as ``importlib.metadata`` finds it,
    without importing it or ``importlib.metadata``; None where the quick read cannot vouch
    for that. Its version: :func:`version_at`."""
    found = _distributions()
    if found is None:
        return None
    paths = dict(found)
    return {name: paths.get(_normalize(name)) for name in names}


def version_at(path: str) -> str | None:
    """A ``*.dist-info``/``*.egg-info`` directory's version: its name's (``name-version``,
    as installers write it), else its ``METADATA``/``PKG-INFO`` header."""
    version = os.path.basename(path).rpartition(".")[0].partition("-")[2].partition("-")[0]
    if version:
        return version
    for name in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(path, name), encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        break
                    if line.startswith("Version:"):
                        return line.partition(":")[2].strip() or None
        except (OSError, ValueError):
            continue
    return None


def rescan() -> None:
    """Forget the read of the installed distributions that :func:`installed_paths` and
    :func:`quick_declared` share (not the entry points the registries loaded from): the
    next call reads them as they are now."""
    _distributions.cache_clear()


@functools.cache
def _distributions() -> tuple[tuple[str, str], ...] | None:
    try:
        return tuple(_found())
    except _Unsure:
        return None


def _found() -> Iterator[tuple[str, str]]:
    """``importlib.metadata``'s discovery (3.10-3.13: ``MetadataPathFinder`` over
    ``sys.path``, ``Lookup``'s grouping, ``unique_everseen`` on the normalized name) for
    the plain case of directories on the path: (normalized name, directory), first of a
    name only."""
    if any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    ):
        raise _Unsure
    seen: set[str] = set()
    for root in sys.path:
        if not isinstance(root, str) or os.path.basename(root).lower().endswith(".egg"):
            raise _Unsure
        try:
            children = os.listdir(root or ".")
        except FileNotFoundError:
            continue
        except OSError:
            raise _Unsure from None
        infos: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                if not child.endswith((".dist-info", ".egg-info")):
                    raise _Unsure  # the full scan names this one from its metadata
                name = _normalize(low.rpartition(".")[0].partition("-")[0])
                if not name:
                    raise _Unsure
                infos.setdefault(name, []).append(child)
        for name, dirs in infos.items():
            for child in dirs:
                if name in seen:
                    continue
                seen.add(name)
                yield name, os.path.join(root, child)


def _entry_points_text(path: str) -> str:
    try:
        with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as handle:
            return handle.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return ""
    except (OSError, ValueError):
        raise _Unsure from None


def _declared(path: str) -> Iterator[Declared]:
    text = _entry_points_text(path)
    group = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        if group is None:
            continue
        if "=" not in line:
            raise _Unsure
        name, value = line.split("=", 1)
        yield Declared(name.strip(), value.strip(), group, path)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")
