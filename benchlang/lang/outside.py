"""Files a spec names (``... from file "F"``) outside a stranger's bundle are not read
before the user consents to run it (docs/replicate.md).

``replicate`` compiles and previews a bundle's spec under :func:`confined_to` its directory;
every reader of a spec-named file asks :func:`check_readable` first, which refuses (an
``OSError``, so each reader's own "cannot read" path applies, with the path and never the
contents) a file outside and records it, so the consent text can list what was not read.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

_CONFINED: ContextVar[tuple[Path, list[str]] | None] = ContextVar("confined", default=None)

NOT_READ = "outside the bundle, not read before consent"


class NotRead(OSError):
    """A spec-named file outside the bundle, refused before consent."""


@contextlib.contextmanager
def confined_to(root: str | Path) -> Iterator[list[str]]:
    """Within the block, spec-named files outside ``root`` are refused; yields the list of
    those refused (in order, once each)."""
    refused: list[str] = []
    token = _CONFINED.set((Path(root).resolve(), refused))
    try:
        yield refused
    finally:
        _CONFINED.reset(token)


def check_readable(path: str | Path) -> None:
    """Raise :class:`NotRead` when ``path`` resolves outside the confined root (symlinks
    followed); nothing outside a :func:`confined_to` block."""
    confined = _CONFINED.get()
    if confined is None:
        return
    root, refused = confined
    if not Path(path).resolve().is_relative_to(root):
        if str(path) not in refused:
            refused.append(str(path))
        raise NotRead(errno.EACCES, NOT_READ, str(path))


def is_outside(path: str | Path, root: str | Path) -> bool:
    return not Path(path).resolve().is_relative_to(Path(root).resolve())
