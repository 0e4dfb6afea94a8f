"""Profiling condition data: seasonal periods of a CSV column (TriScale §4.6)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from benchlang import model
from benchlang.csvrows import read_numeric_column
from benchlang.errors import UserError
from benchlang.lang.outside import NotRead, check_readable

if TYPE_CHECKING:
    from benchlang.stats.profile import Profile


@attrs.frozen
class Profiled:
    """One profiled column: where it came from, its sampling period and the profile."""

    path: str
    column: str
    seconds: float
    result: Profile


def profile_csv(
    path: str | Path, column: str | None, seconds: float, max_lag: int | None = None
) -> Profiled:
    """Profile one numeric column (empty cells are missing samples)."""
    from benchlang.stats.profile import profile  # scipy.signal and statsmodels: only here

    values, name = read_numeric_column(path, column)
    try:
        result = profile(values, seconds, max_lag)
    except ValueError as err:
        raise UserError(f"{path}: {err}") from None
    return Profiled(str(path), name, seconds, result)


def profile_spec_item(item: dict[str, Any]) -> Profiled:
    """``analysis { profile NAME from file F period P }`` of a spec."""
    try:
        check_readable(item["path"])
        return profile_csv(item["path"], item.get("column"), item["period"])
    except NotRead as err:
        raise UserError(f"profile {item['name']}: {err.filename}: {err.strerror}") from None
    except UserError as err:
        raise UserError(f"profile {item['name']}: {err.message}", err.hint) from None


_SPAN = re.compile(r"\bspan\s+[0-9]")


def span_warnings(path: str | Path, experiment: model.Experiment) -> list[str]:
    """``check``'s warning when a profile recommends a longer span than the spec declares
    (TriScale §4.6: a series shorter than the longest seasonal period samples only part of
    it). Runs the profiles, so only specs that have one pay for scipy and statsmodels."""
    from benchlang.lang.diagnostics import Diagnostic, Source, Span, render
    from benchlang.report.record import format_duration

    span = experiment.design.span
    if not experiment.profiles or not isinstance(span, float):
        return []
    text = Path(path).read_text(encoding="utf-8")
    where = None
    for number, line in enumerate(text.splitlines(), 1):
        found = _SPAN.search(line.split("#", 1)[0])
        if found:
            where = Span(number, found.start() + 1, number, found.end())
            break
    out = []
    for item in experiment.profiles:
        recommended = profile_spec_item(item).result.recommended_span
        if recommended is not None and recommended > span:
            out.append(
                render(
                    Source(str(path), text),
                    Diagnostic(
                        f"profile {item['name']} recommends a span of "
                        f"{format_duration(recommended)}, longer than the declared "
                        f"{format_duration(span)}: each series would sample only part of the "
                        "conditions' longest seasonal period (TriScale §4.6)",
                        where,
                        f"use span {format_duration(recommended)}, or span auto",
                        "warning",
                    ),
                )
            )
    return out
