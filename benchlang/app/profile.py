"""Profiling condition data: seasonal periods of a CSV column (TriScale §4.6)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from benchlang.csvrows import read_numeric_column
from benchlang.errors import UserError

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
        return profile_csv(item["path"], item.get("column"), item["period"])
    except UserError as err:
        raise UserError(f"profile {item['name']}: {err.message}", err.hint) from None
