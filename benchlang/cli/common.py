"""Printing helpers shared by the commands (not a command): a spec's diagnostics, a profile.

Kept light at import time: ``benchlang.cli.main`` imports this module for every command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchlang import model
    from benchlang.app.profile import Profiled


class SpecFailed(Exception):
    """The spec had errors, already printed; exit with status 2."""


def load_experiment(path: str | Path) -> model.Experiment:
    """Compile a spec once; print its warnings, or every error and raise SpecFailed."""
    from benchlang.app.spec import compile_spec
    from benchlang.lang.diagnostics import SpecError, render

    try:
        compiled = compile_spec(path)
    except SpecError as err:
        print(str(err), file=sys.stderr)
        raise SpecFailed from None
    for warning in compiled.warnings:
        print(render(compiled.source, warning), file=sys.stderr)
    return compiled.experiment


def render_profile(profiled: Profiled) -> None:
    """The profile of one condition-data column: ACF peaks, periods, recommended span."""
    from benchlang.report.record import format_duration
    from benchlang.report.table import render_table

    result, seconds = profiled.result, profiled.seconds
    span = result.recommended_span
    print(
        f"{profiled.path} [{profiled.column}]: {result.n} samples every {format_duration(seconds)}"
        f" ({result.missing} missing), i.i.d.: {'yes' if result.independence.passed else 'no'}"
    )
    rows = [
        [lag, format_duration(lag * seconds), acf, "yes" if lag in result.periods else ""]
        for lag, acf in zip(result.peaks, result.peak_acf, strict=True)
    ]
    if rows:
        render_table(["lag", "time", "acf", "period"], rows, title="Significant ACF peaks")
    else:
        print("No significant autocorrelation peak: no seasonal component found.")
    if span is None:
        print("Recommended series span: any (no seasonal component)")
    else:
        periods = ", ".join(format_duration(p * seconds) for p in result.periods)
        print(f"Seasonal periods: {periods}")
        print(f"Recommended series span: at least {format_duration(span)}")


def print_spec_profile(item: dict[str, Any]) -> None:
    """Profile and print one ``analysis { profile ... }`` item of a spec."""
    from benchlang.app.profile import profile_spec_item

    render_profile(profile_spec_item(item))
