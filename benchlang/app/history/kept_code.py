"""What computed a run's kept points (docs/history.md#kept-points): recorded beside them by
``run`` and compared by ``history add``, which takes them only when what it would compute them
with now is the same, else compiles. benchlang's ``__version__`` is one constant across
commits, and a statistics plugin, numpy or scipy upgraded after the run computes other
numbers from the same trials (tests/test_reader3_kept_plugin.py).

The record: Python's version; benchlang's; the installed version of each of ``LIBRARIES``
(from its ``*.dist-info`` directory's name: neither it nor ``importlib.metadata`` imported);
each distribution that declares a statistics method (``benchlang.statistics``, benchlang's
built-ins included) and its version, and each method's entry point; a digest of the sources
of benchlang and of those methods' packages, as ``import`` finds them first on ``sys.path``
(every file's relative path, size and mtime in ns, ``__pycache__`` left out). And a *seal*:
SHA-256 of the versions read and of the ``sys.path`` entries that held a distribution, with
their mtimes, so that ``add`` reads the installed distributions again only where one of those
directories changed (installing, upgrading or removing a distribution creates or removes a
directory in it) or another entry holds one; the sources it digests each time.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any

from benchlang import __version__

LIBRARIES = ("benchlang", "numpy", "scipy", "pandas", "statsmodels")
"""The distributions whose installed version the record holds: benchlang's own distribution
and the libraries the analysis computes with (or reads the trials with: pandas)."""

STATISTICS = "benchlang.statistics"
"""``stats.registry.GROUP`` (not imported: ``benchlang.model`` would cost ``add``'s kept path
20 ms; tests/test_history_kept.py checks they are one)."""

Files = list[tuple[str, int, int]]


def code() -> dict[str, Any] | None:
    """The code record as it is now; None where the quick read of the installed
    distributions cannot vouch for what it finds (then ``run`` keeps nothing and ``add``
    compiles)."""
    found = _versions()
    if found is None:
        return None
    try:
        sources = _digests(found[0]["methods"])
    except OSError:
        return None
    return _record(found[0], sources)


MARGIN_NS = 20_000_000
"""A source or distribution changed this close to the process's start (20 ms: the start is
known to a clock tick, 10 ms, rounded down, and a file's mtime to the kernel's coarse clock)
counts as changed after it: nothing is kept (a recompute, never a wrong point)."""


def record(first_trial: float | None) -> dict[str, Any] | None:
    """What ``run`` keeps with the points: the code record and its seal; None (keep nothing)
    where the record cannot be read, or where a source digested or a distribution recorded
    may have changed after this process loaded it: newer than the process's start less
    ``MARGIN_NS`` (without ``/proc``, than the plan's first trial, ``first_trial``), the points
    would be recorded with code that did not compute them."""
    from benchlang.entrypoints import rescan

    state = _path_state()
    rescan()  # as installed now: one installed during the run is newer than its start
    found = _versions()
    if found is None:
        return None
    versions, newest = found
    try:
        files = {name: _sources(name) for name in _packages(versions["methods"])}
    except OSError:
        return None
    newest = max([newest, *(t for f in files.values() if f for _, _, t in f)])
    started = _started_ns()
    if started is None and first_trial is not None:
        started = int(first_trial * 10**9)
    if started is None or newest >= started - MARGIN_NS:
        return None
    sources = {name: _digest(f) for name, f in files.items()}
    return {"code": _record(versions, sources), "roots": state, "seal": _seal(versions, state)}


def current(kept: dict[str, Any]) -> bool:
    """Whether the points kept with this record would be computed by the same code now."""
    recorded = kept.get("code")
    if not isinstance(recorded, dict):
        return False
    if recorded.get("python") != sys.version or recorded.get("benchlang") != __version__:
        return False
    versions = {k: v for k, v in recorded.items() if k in _VERSIONS}
    if not _sealed(kept, versions):
        found = _versions()
        if found is None or found[0] != versions:
            return False
    try:
        return bool(recorded.get("sources") == _digests(versions.get("methods", {})))
    except (OSError, AttributeError):
        return False


_VERSIONS = ("libraries", "statistics", "methods")


def _record(versions: dict[str, Any], sources: dict[str, str | None]) -> dict[str, Any]:
    return {"python": sys.version, "benchlang": __version__, **versions, "sources": sources}


def _versions() -> tuple[dict[str, Any], int] | None:
    """The versions part of the record, and the newest mtime (ns) of the ``*.dist-info``
    directories it was read from."""
    from benchlang.entrypoints import installed_paths, quick_declared, version_at

    libraries = installed_paths(LIBRARIES)
    methods = quick_declared(STATISTICS)
    if libraries is None or methods is None:
        return None
    read = {path for path in libraries.values() if path} | {m.path for m in methods}
    try:
        newest = max((os.stat(path).st_mtime_ns for path in read), default=0)
    except OSError:
        return None
    providers = {_dist_name(m.path): version_at(m.path) for m in methods}
    return {
        "libraries": {n: p and version_at(p) for n, p in libraries.items()},
        "statistics": {name: providers[name] for name in sorted(providers)},
        "methods": {m.name: m.value for m in methods},
    }, newest


def _dist_name(path: str) -> str:
    return os.path.basename(path).rpartition(".")[0].partition("-")[0]


def _packages(methods: dict[str, str]) -> list[str]:
    """benchlang and the top-level package of each method's entry point."""
    return sorted({"benchlang"} | {v.partition(":")[0].partition(".")[0] for v in methods.values()})


def _digests(methods: dict[str, str]) -> dict[str, str | None]:
    return {name: _digest(_sources(name)) for name in _packages(methods)}


def _digest(files: Files | None) -> str | None:
    return None if files is None else hashlib.sha256(repr(files).encode()).hexdigest()


def _seal(versions: dict[str, Any], roots: list[Any] | None) -> str | None:
    if roots is None:
        return None
    text = json.dumps([versions, roots], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _path_state() -> list[Any] | None:
    """Each ``sys.path`` entry that holds a distribution, in order, with its mtime (ns);
    None where an entry cannot be listed as a directory (the seal then never holds)."""
    roots: list[Any] = []
    for entry in sys.path:
        try:
            mtime = os.stat(entry or ".").st_mtime_ns
        except FileNotFoundError:
            continue
        except (OSError, TypeError, ValueError):
            return None
        holds = _holds_distributions(entry)
        if holds is None:
            return None
        if holds:
            roots.append([entry, mtime])
    return roots


def _sealed(kept: dict[str, Any], versions: dict[str, Any]) -> bool:
    """Whether the installed distributions are the ones read when the points were kept,
    without reading them: the record's seal holds, each ``sys.path`` entry that held one
    is there in the same order with the same mtime, and no other entry holds one. The
    current directory (``python -m``) or a script's directory may change or differ."""
    roots = kept.get("roots")
    if not isinstance(roots, list) or kept.get("seal") != _seal(versions, roots):
        return False
    at = 0
    for entry in sys.path:
        if at < len(roots) and entry == roots[at][0]:
            try:
                if os.stat(entry or ".").st_mtime_ns != roots[at][1]:
                    return False
            except (OSError, TypeError, ValueError):
                return False
            at += 1
        elif _holds_distributions(entry) is not False:
            return False
    return at == len(roots)


def _holds_distributions(entry: Any) -> bool | None:
    """Whether a ``sys.path`` entry holds a ``*.dist-info``/``*.egg-info`` (None: unsure)."""
    if not isinstance(entry, str):
        return None
    try:
        names = os.listdir(entry or ".")
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return None
    return any(n.lower().endswith((".dist-info", ".egg-info")) for n in names)


def _sources(package: str) -> Files | None:
    """The path (relative to the package), size and mtime (ns) of every file of a top-level
    package or module (``__pycache__`` left out), found as ``import`` finds it, sorted; None
    where it is not found (its methods then fail to load either way)."""
    from importlib.machinery import PathFinder

    module = sys.modules.get(package)
    if module is not None:
        where = list(getattr(module, "__path__", None) or [getattr(module, "__file__", "")])
    else:
        spec = PathFinder.find_spec(package)
        if spec is None:
            return None
        where = list(spec.submodule_search_locations or [spec.origin or ""])
    files: Files = []
    for root in where:
        files.append((os.path.abspath(root), -1, -1))  # where it lives: a copied tree differs
        if os.path.isdir(root):
            _files(root, "", files)
        else:
            info = os.stat(root)
            files.append((os.path.basename(root), info.st_size, info.st_mtime_ns))
    return sorted(files)


def _files(folder: str, prefix: str, files: Files) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    _files(entry.path, f"{prefix}{entry.name}/", files)
            elif not entry.name.endswith(".pyc"):
                info = entry.stat()
                files.append((prefix + entry.name, info.st_size, info.st_mtime_ns))


def _started_ns() -> int | None:
    """When this process started (Linux: ``/proc/self/stat``'s start in clock ticks since
    boot, against ``CLOCK_BOOTTIME`` now: to a tick, 10 ms, rounded down, so never later than
    it did); None elsewhere."""
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            ticks = int(handle.read().rpartition(")")[2].split()[19])  # field 22, starttime
        since_boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        return time.time_ns() - since_boot + ticks * 10**9 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
