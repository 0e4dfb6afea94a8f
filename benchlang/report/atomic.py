"""Every file benchlang produces (a bundle, an export, a report, a figure) is written whole or
not at all: a full disk, a killed process or a failing writer leaves the file that was there.

The content goes to a temporary file in the target's directory (same file system, so the
rename is atomic), is flushed and fsync'ed, then ``os.replace`` puts it in place and the
directory is fsync'ed so the rename itself survives a crash (the protocol of
`rename(2)`/`fsync(2)` as in SQLite's and git's lock files). A target that exists and is not a
regular file (``/dev/stdout``, a FIFO), itself or through links, is written in place: it
cannot be replaced; a symbolic link to a regular file is followed, and the file it names is
replaced (the link stays). Databases
(stores, histories) are not written this way: they change by transactions.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["replacing", "write_atomic"]


def _temporary(target: Path) -> tuple[int, Path]:
    """A new file beside ``target``, created with the mode a plain ``open`` would give it."""
    while True:
        path = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), path
        except FileExistsError:
            continue


def _fsync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot fsync a directory
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


@contextlib.contextmanager
def replacing(
    path: str | os.PathLike[str],
    mode: str = "wb",
    encoding: str | None = None,
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` when the block ends without an error;
    on an error (OSError, or any exception of the writer) the temporary file is removed and
    ``path`` is left as it was. ``mode`` is "wb" or "w" (text: ``encoding``, ``newline`` as
    ``open`` takes them); the new file keeps the old one's permissions."""
    if mode not in ("w", "wb"):
        raise ValueError(f"replacing() writes a file anew: mode 'w' or 'wb', not {mode!r}")
    try:
        existing = os.stat(path)  # through links: /dev/stdout names a pipe's pipe:[N]
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(path, mode, encoding=encoding, newline=newline) as handle:
            yield handle
        return
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    descriptor, temporary = _temporary(target)
    try:
        with os.fdopen(descriptor, mode, encoding=encoding, newline=newline) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if existing is not None:
            os.chmod(temporary, stat.S_IMODE(existing.st_mode))
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_directory(target.parent)


def write_atomic(path: str | os.PathLike[str], content: bytes | str) -> None:
    """Replace ``path`` by ``content`` (str as UTF-8) atomically; OSError leaves it as it was."""
    if isinstance(content, str):
        with replacing(path, "w", encoding="utf-8") as handle:
            handle.write(content)
    else:
        with replacing(path, "wb") as handle:
            handle.write(content)
