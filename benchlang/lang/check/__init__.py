"""From syntax tree to validated model: every semantic error, each with its position.

The checker is a set of passes (one module each) over a shared diagnostics sink
(``context.Context``): hosts, factors, benchmarks (templates, shell quoting, measures),
metrics (KPIs, variability), design, stop rules, analysis; ``experiment`` runs them in order.
A/B designs are checked in lang.ab_design. The spec is parsed once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from benchlang import model
from benchlang.lang.check.benchmarks import placeholders
from benchlang.lang.check.context import MAX_TRIALS, Context
from benchlang.lang.check.design import NOT_YET_DESIGN
from benchlang.lang.check.experiment import check_experiment
from benchlang.lang.diagnostics import Diagnostic, Source, SpecError
from benchlang.lang.syntax import decode, parse

__all__ = [
    "MAX_TRIALS",
    "NOT_YET_DESIGN",
    "Compiled",
    "check_file",
    "check_source",
    "compile_source",
    "load",
    "placeholders",
]


@attrs.frozen
class Compiled:
    """A checked spec: the model, the warnings found on the way, and the text it came from."""

    experiment: model.Experiment
    warnings: tuple[Diagnostic, ...]
    source: Source


def check_file(
    path: str | Path,
    *,
    display_path: str | None = None,
    backends: Mapping[str, Any] | None = None,
) -> Compiled:
    """Read, parse and check a spec file once; raise SpecError listing every problem."""
    path = Path(path)
    shown = display_path or str(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise SpecError(
            Source(shown, ""), [Diagnostic(f"cannot read the spec: {err.strerror}", None)]
        ) from None
    return check_source(decode(shown, data), base_dir=path.parent, backends=backends)


def check_source(
    source: Source,
    base_dir: Path | None = None,
    *,
    backends: Mapping[str, Any] | None = None,
) -> Compiled:
    """Parse and check a spec once. ``backends`` (kind -> backend class) validates the
    ``hosts`` settings; None accepts any kind (a spec re-read from a store needs no backend)."""
    tree = parse(source)
    ctx = Context(source, base_dir or Path("."), backends)
    experiment = check_experiment(ctx, tree)
    if experiment is None or ctx.has_errors():
        raise SpecError(source, ctx.diagnostics)
    warnings = tuple(d for d in ctx.diagnostics if d.severity == "warning")
    return Compiled(experiment, warnings, source)


def compile_source(
    source: Source,
    base_dir: Path | None = None,
    *,
    backends: Mapping[str, Any] | None = None,
) -> model.Experiment:
    """The checked model of a spec (``check_source`` without the warnings)."""
    return check_source(source, base_dir, backends=backends).experiment


def load(
    path: str | Path,
    *,
    display_path: str | None = None,
    backends: Mapping[str, Any] | None = None,
) -> model.Experiment:
    """The checked model of a spec file (``check_file`` without the warnings)."""
    return check_file(path, display_path=display_path, backends=backends).experiment
