"""The installed importers (entry-point group ``benchlang.importers``), loaded when used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchlang.entrypoints import declared_in
from benchlang.run.importers.base import ImportFileError

GROUP = "benchlang.importers"


def importer_names() -> tuple[str, ...]:
    return tuple(ep.name for ep in declared_in(GROUP))


def load_importer(name: str) -> Any:
    """The importer class registered as ``name``; ImportFileError naming the installed ones."""
    points = {ep.name: ep for ep in declared_in(GROUP)}
    if name not in points:
        raise ImportFileError(
            f"no importer named '{name}' is installed",
            f"importers: {', '.join(sorted(points))} (see 'benchlang plugins')",
        )
    return points[name].load()


BROAD = ("hyperfine", "pyperf", "csv")  # recognise any JSON with results/benchmarks, any .csv


def detect_importer(path: Path) -> Any:
    """The first installed importer (by name) that recognizes the file (or a directory,
    e.g. criterion's ``target/criterion``, with an empty head); the broad built-ins, whose
    keys other suites share, are asked last."""
    try:
        if path.is_dir():
            head = b""
        else:
            with path.open("rb") as handle:
                head = handle.read(4096)
    except OSError as err:
        raise ImportFileError(f"cannot read {path}: {err.strerror or err}") from None
    for name in sorted(importer_names(), key=lambda n: n in BROAD):
        try:
            importer = load_importer(name)
        except Exception:  # a broken plugin is shown by `benchlang plugins`, not here
            continue
        if importer.recognizes(path, head):
            return importer
    raise ImportFileError(
        f"cannot tell which tool wrote {path}",
        f"name its format with --format ({', '.join(importer_names())})",
    )
