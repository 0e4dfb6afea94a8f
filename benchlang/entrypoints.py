"""One cached scan of the installed entry points, shared by every plugin group.

``importlib.metadata.entry_points()`` reads the metadata of every installed distribution
(about 20 ms with a hundred packages); each group asked afterwards is a filter on that one
scan, so `check` pays for it once however many registries (backends, statistics, factors,
importers) it consults.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, EntryPoints, entry_points


@functools.cache
def _installed() -> EntryPoints:
    return entry_points()


def entry_points_of(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of one group, sorted by name (a stable order for listings)."""
    return tuple(sorted(_installed().select(group=group), key=lambda ep: ep.name))
