"""C sources shipped in the package, compiled on first use: the local backend's trial launcher
(``backends/launcher.c``) and the bootstrap's kernels (``stats/_kernels.c``).

A source is compiled with the system C compiler (``$BENCHLANG_CC``, else ``cc``) into
``$XDG_CACHE_HOME/benchlang/`` (default ``~/.cache``), named after the hash of its source and
the machine, and written by atomic rename, so concurrent first uses and upgrades never see a
half-written or stale build. Without a compiler each caller has a fallback and says what it
costs (docs/measures.md, docs/statistics.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

CC_ENV = "BENCHLANG_CC"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "benchlang"


def compiler() -> str:
    return os.environ.get(CC_ENV) or "cc"


def build(
    source: Path, name: str, flag_sets: Sequence[Sequence[str]], cc: str | None = None
) -> tuple[Path | None, str]:
    """The build of ``source`` for this machine, compiled now if missing: (its path, "") or
    (None, why there is none). ``flag_sets`` are tried in order (the first that compiles
    wins); ``name`` is the build's file name, before its hash."""
    text = source.read_bytes()
    digest = hashlib.sha256(text).hexdigest()[:16]
    target = cache_dir() / f"{name}-{digest}-{os.uname().machine}"
    if os.access(target, os.X_OK):
        return target, ""
    try:
        complaint = _compile(cc or compiler(), text, target, flag_sets)
    except OSError as err:
        complaint = f"cannot write {target.parent}: {err.strerror or err}"
    return (None, complaint) if complaint else (target, "")


def _compile(
    cc: str, source: bytes, target: Path, flag_sets: Sequence[Sequence[str]]
) -> str | None:
    """Build ``target`` atomically; return None, or the compiler's complaint."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    os.close(fd)
    complaint: list[str] = []
    try:
        for flags in flag_sets:
            try:
                done = subprocess.run(
                    [cc, *flags, "-o", tmp, "-x", "c", "-"],
                    input=source,
                    capture_output=True,
                    timeout=120,
                    check=False,
                )
            except (OSError, subprocess.SubprocessError) as err:
                return f"cannot run the C compiler {cc!r}: {getattr(err, 'strerror', None) or err}"
            if done.returncode == 0:
                os.chmod(tmp, 0o755)
                os.replace(tmp, target)
                return None
            complaint = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return f"{cc} failed: {' '.join(complaint)}"
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
