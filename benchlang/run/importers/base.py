"""The importer contract: another tool's results as a table of trials (docs/plugins.md).

An importer is a class registered under the ``benchlang.importers`` entry-point group (the
built-ins register in benchlang's own pyproject, exactly as a third party would). It reads
one file into :class:`ImportedTrials`, a tool-neutral table in execution order; benchlang
turns that table into a plan, a generated spec and stored trials
(:func:`benchlang.run.importers.writer.write_trials`), so results, analyze, order, report and
diff work on imported data as on a benchlang run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import attrs
import numpy as np

from benchlang.errors import UserError

__all__ = ["ImportFileError", "ImportedMetric", "ImportedTrials", "Importer"]


class ImportFileError(UserError):
    """A file an importer cannot read: said in one line with a hint, exit 2."""


@attrs.frozen
class ImportedMetric:
    """A measure of the imported trials that becomes a metric of the generated spec."""

    name: str
    unit: str | None = None
    better: str = "lower"


def _as_array(dtype: type) -> Any:
    return lambda values: np.asarray(values, dtype=dtype)


def _as_text_array(values: Any) -> np.ndarray:
    """An array of str as given, else the strings as objects: a label repeated a million
    times stays one string, not a million fixed-width copies."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "UO":
        return values
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


@attrs.frozen
class ImportedTrials:
    """One row per trial, in the order the tool ran them.

    ``labels`` names each trial's configuration (any sequence of str; kept as an array) (hyperfine's parameters are in its command);
    ``rounds`` and
    ``positions`` place a trial in the design (a round is a block the tool ran together);
    ``orders`` says whether a round's order was fixed or random. ``measures`` holds one array
    per measure, NaN where a trial has none. ``exit_statuses`` marks failed trials (non-zero).
    ``facts`` are the host's facts; ``notes`` say what the tool's file could not give.
    """

    tool: str
    source: str
    labels: np.ndarray = attrs.field(converter=_as_text_array)
    measures: Mapping[str, np.ndarray]
    metrics: tuple[ImportedMetric, ...]
    rounds: np.ndarray = attrs.field(converter=_as_array(np.int64))
    positions: np.ndarray = attrs.field(converter=_as_array(np.int64))
    series: np.ndarray = attrs.field(converter=_as_array(np.int64))
    orders: np.ndarray = attrs.field(converter=_as_text_array)
    exit_statuses: np.ndarray = attrs.field(converter=_as_array(np.int64))
    host: str = "imported"
    facts: Mapping[str, str] = attrs.field(factory=dict)
    notes: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        n = self.labels.size
        sizes = {
            "rounds": self.rounds.size,
            "positions": self.positions.size,
            "series": self.series.size,
            "orders": self.orders.size,
            "exit_statuses": self.exit_statuses.size,
            **{f"measure {k}": np.asarray(v).size for k, v in self.measures.items()},
        }
        wrong = {k: v for k, v in sizes.items() if v != n}
        if wrong:
            raise ValueError(f"{n} trials but {wrong}")
        if n == 0:
            raise ImportFileError(f"{self.source} holds no trials")
        orders = set(np.unique(self.orders).tolist())
        if not orders <= {"fixed", "random"}:
            raise ImportFileError(
                f"{self.source}: orders {sorted(orders - {'fixed', 'random'})}; "
                "expected fixed or random"
            )
        missing = [m.name for m in self.metrics if m.name not in self.measures]
        if missing or not self.metrics:
            raise ValueError(f"metrics without measures: {missing}")


@runtime_checkable
class Importer(Protocol):
    """A reader of one tool's result files."""

    name: ClassVar[str]
    description: ClassVar[str]

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        """Whether ``path`` (whose first 4 KiB are ``head``) is this tool's format; cheap."""
        ...

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        """The file's trials; ImportFileError (one line, a hint) when it cannot be read."""
        ...
