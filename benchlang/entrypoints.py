"""One cached scan of the installed entry points, shared by every plugin group.

``importlib.metadata.entry_points()`` reads the metadata of every installed distribution
(about 20 ms with a hundred packages); each group asked afterwards is a filter on that one
scan, so `check` pays for it once however many registries (backends, statistics, factors,
importers) it consults.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Protocol


class _Installed(Protocol):
    """What ``entry_points()`` returns: SelectableGroups up to Python 3.11, EntryPoints since
    3.12; both select a group."""

    def select(self, *, group: str) -> Iterable[EntryPoint]: ...


@functools.cache
def _installed() -> _Installed:
    return entry_points()


def entry_points_of(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of one group, sorted by name (a stable order for listings)."""
    return tuple(sorted(_installed().select(group=group), key=lambda ep: ep.name))
