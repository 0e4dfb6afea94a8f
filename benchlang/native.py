"""The C programs shipped in the package: the local backend's trial launcher
(``backends/launcher.c``, an executable) and the bootstrap's kernels (``stats/_kernels.c``, a
shared library loaded with ctypes). Neither is a Python extension module.

Each build is named after the hash of its source and flags and the machine, so a build made
for another source is never used. ``find`` takes, in order:

1. the build shipped in the package (``benchlang/_native/``), made when the package was built
   (``hatch_build.py``: ``pip install .`` or ``pip install -e .``), so an installed benchlang
   needs no compiler; skipped when ``$BENCHLANG_CC`` asks for a build by that compiler;
2. the build in ``$XDG_CACHE_HOME/benchlang/`` (default ``~/.cache``), compiled on first use
   with ``$BENCHLANG_CC`` (else ``cc``) and written by atomic rename, so concurrent first uses
   and upgrades never see a half-written build;
3. none, with the reason: each caller has a fallback and says what it costs (the numpy forms,
   the process-group launcher; docs/measures.md, docs/statistics.md). ``BENCHLANG_NATIVE=0``
   goes straight there.

A compile that fails is tried once: its reason is kept in the cache beside where the build
would be (``NAME-HASH-MACHINE.failed-COMPILER``, COMPILER a hash of the compiler's path, size
and time), and later processes read it instead of running the compiler again (a failing
compiler cost each process its full time, 2 s for a stand-in that sleeps 2 s). Another source,
flags or compiler is another key, so an upgrade or a new compiler is tried afresh; removing the
file retries. ``benchlang system show`` says which build each program uses or why none.

Standard library only: ``hatch_build.py`` loads this file by path, without benchlang's
dependencies, so that the package build and first use compile the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

CC_ENV = "BENCHLANG_CC"
NATIVE_ENV = "BENCHLANG_NATIVE"
PACKAGE = Path(__file__).parent
SHIPPED = PACKAGE / "_native"


@dataclass(frozen=True)
class Program:
    """A C source of the package (``source``, relative to it) and how to build it: the flag
    sets are tried in order, the first that compiles wins."""

    name: str
    source: str
    flag_sets: tuple[tuple[str, ...], ...]

    def file_name(self, root: Path | None = None) -> str:
        """The build's file name: ``NAME-HASH-MACHINE``, HASH of the source and flags."""
        digest = hashlib.sha256(((root or PACKAGE) / self.source).read_bytes())
        digest.update(repr(self.flag_sets).encode())
        return f"{self.name}-{digest.hexdigest()[:16]}-{os.uname().machine}"


# Static first: no dynamic loader at start-up, ~0.2 ms less per trial.
LAUNCHER = Program("launcher", "backends/launcher.c", (("-O2", "-static"), ("-O2",)))
KERNELS = Program("kernels", "stats/_kernels.c", (("-O3", "-shared", "-fPIC"),))
PROGRAMS = (LAUNCHER, KERNELS)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "benchlang"


def choice() -> tuple[str | None, bool]:
    """What the environment asks for: ($BENCHLANG_CC or None, compiled code allowed)."""
    return os.environ.get(CC_ENV) or None, os.environ.get(NATIVE_ENV) != "0"


def find(
    program: Program, cc: str | None = None, enabled: bool = True, shipped: bool = True
) -> tuple[Path | None, str]:
    """The build of ``program`` for this machine: (its path, "") or (None, why there is none).
    The shipped build when there is one for this source (and ``cc`` is None), else the
    cached one, else compiled now with ``cc`` (default ``cc``) unless that compile has
    already failed (its recorded reason)."""
    if not enabled:
        return None, f"{NATIVE_ENV}=0"
    name = program.file_name()
    packaged = SHIPPED / name
    if shipped and cc is None and os.access(packaged, os.X_OK):
        return packaged, ""
    target = cache_dir() / name
    if os.access(target, os.X_OK):
        return target, ""
    marker = failure_marker(program, cc or "cc")
    recorded = _recorded(marker)
    if recorded is not None:
        return None, recorded
    try:
        complaint = compile_to(program, target, cc or "cc")
    except OSError as err:
        return None, f"cannot write {target.parent}: {err.strerror or err}"
    if complaint:
        _record(marker, complaint)
    return (None, complaint) if complaint else (target, "")


def compiler_key(cc: str) -> str:
    """A short hash of the compiler ``cc`` names: its resolved path, size and modification
    time (so a compiler installed or upgraded later is another key), or the bare name when
    it is not found."""
    found = shutil.which(cc)
    facts = [cc, found or ""]
    if found:
        with contextlib.suppress(OSError):
            info = os.stat(found)
            facts += [str(info.st_size), str(info.st_mtime_ns)]
    return hashlib.sha256("\0".join(facts).encode()).hexdigest()[:12]


def failure_marker(program: Program, cc: str = "cc") -> Path:
    """Where a failed compile of ``program`` (this source and flags) by ``cc`` is recorded."""
    return cache_dir() / f"{program.file_name()}.failed-{compiler_key(cc)}"


def _recorded(marker: Path) -> str | None:
    try:
        reason = marker.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return f"{reason} (recorded in {marker}; remove it to try again)"


def _record(marker: Path, complaint: str) -> None:
    """Keep the reason, atomically; a cache that cannot be written only means a retry."""
    with contextlib.suppress(OSError):
        fd, tmp = tempfile.mkstemp(prefix=marker.name + ".", dir=marker.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(complaint + "\n")
        os.replace(tmp, marker)


def status(program: Program, cc: str | None = None, enabled: bool = True) -> str:
    """Which build of ``program`` a process here would use, or why none, without compiling:
    for ``benchlang system show``."""
    if not enabled:
        return f"none ({NATIVE_ENV}=0)"
    name = program.file_name()
    packaged = SHIPPED / name
    if cc is None and os.access(packaged, os.X_OK):
        return f"shipped ({packaged})"
    target = cache_dir() / name
    if os.access(target, os.X_OK):
        return f"compiled at first use ({target})"
    recorded = _recorded(failure_marker(program, cc or "cc"))
    if recorded is not None:
        return f"none: compile failed once, not retried: {recorded}"
    return f"not built yet: compiled with {cc or 'cc'} at first use"


def compile_to(program: Program, target: Path, cc: str = "cc", root: Path | None = None) -> str:
    """Build ``program`` into ``target`` atomically; "" or the compiler's complaint."""
    import subprocess  # here: a process that finds a build never loads it (2 ms)

    source = ((root or PACKAGE) / program.source).read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    os.close(fd)
    complaint: list[str] = []
    try:
        for flags in program.flag_sets:
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
                return ""
            complaint = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return f"{cc} failed: {' '.join(complaint)}"
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def ship(directory: Path, cc: str = "cc", root: Path | None = None) -> dict[str, str]:
    """Build every program into ``directory`` (the package build's step): {name: "" or the
    complaint}. Earlier builds of a program there (another source) are removed."""
    done = {}
    for program in PROGRAMS:
        name = program.file_name(root)
        try:
            done[program.name] = compile_to(program, directory / name, cc, root)
        except OSError as err:
            done[program.name] = f"cannot write {directory}: {err.strerror or err}"
        for old in directory.glob(f"{program.name}-*"):
            if old.name != name and not done[program.name]:
                old.unlink()
    return done
