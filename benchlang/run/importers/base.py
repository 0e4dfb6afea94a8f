"""The importer contract: another tool's results as a table of trials (docs/plugins.md).

An importer is a class registered under the ``benchlang.importers`` entry-point group (the
built-ins register in benchlang's own pyproject, exactly as a third party would). It reads
one file into :class:`ImportedTrials`, a tool-neutral table in execution order; benchlang
turns that table into a plan, a generated spec and stored trials
(:func:`benchlang.run.importers.writer.write_trials`), so results, analyze, order, report and
diff work on imported data as on a benchlang run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import attrs
import numpy as np

from benchlang import jsonin
from benchlang.errors import UserError

__all__ = [
    "ImportFileError",
    "ImportedMetric",
    "ImportedTrials",
    "Importer",
    "fields",
    "listed",
    "load_json",
    "measurements",
    "text",
    "whole_numbers",
]


class ImportFileError(UserError):
    """A file an importer cannot read: said in one line with a hint, exit 2. The file's own
    text in the message (a column name, a label) is a stranger's: its control characters and
    newlines are escaped and a long message is cut, so the refusal stays one line."""

    WIDTH = 400

    def __init__(self, message: str, hint: str | None = None) -> None:
        from benchlang.run.progress import printable  # its asyncio costs an import 20 ms

        def line(text: str) -> str:
            text = printable(text, one_line=True)
            return text if len(text) <= self.WIDTH else text[: self.WIDTH - 3] + "..."

        super().__init__(line(message), None if hint is None else line(hint))


def load_json(path: Path, what: str, hint: str | None = None) -> Any:
    """The JSON document in ``path``, or one line saying why not: unreadable, not UTF-8, not
    JSON, or nested past ``jsonin.MAX_DEPTH`` levels (tools' exports nest 4-5)."""
    try:
        return jsonin.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as err:
        raise ImportFileError(f"cannot read {path}: {err.strerror or err}") from None
    except jsonin.TooDeep as err:
        raise ImportFileError(f"{path}: JSON {err}: not {what}", hint) from None
    except (UnicodeDecodeError, ValueError) as err:
        raise ImportFileError(f"{path}: not a JSON file ({err}): not {what}", hint) from None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def measurements(values: object, where: str, *, negative: bool = False) -> np.ndarray:
    """A JSON list of measured values as floats, refusing the values that cannot be: a
    non-number, an infinity or NaN, a negative time or size (unless ``negative``); the
    refusal names ``where`` and the index."""
    if not isinstance(values, list):
        raise ImportFileError(f"{where} is {_kind(values)}, not a list of numbers")
    for i, value in enumerate(values):
        if not _is_number(value):
            raise ImportFileError(f"{where}[{i}] is {_kind(value)}, not a number: refused")
        if not math.isfinite(value):
            raise ImportFileError(f"{where}[{i}] is {value}, not a finite number: refused")
        if value < 0 and not negative:
            raise ImportFileError(
                f"{where}[{i}] is {value:g}, a negative measurement: refused",
                "a time or a size is never negative: the file is damaged or not the tool's",
            )
    return np.asarray(values, dtype=float)


def whole_numbers(values: object, where: str, *, length: int, none: int = 0) -> np.ndarray:
    """A JSON list of ``length`` whole numbers (exit codes), ``none`` for a null; a list
    of another length is refused, since a missing entry cannot be guessed."""
    if not isinstance(values, list):
        raise ImportFileError(f"{where} is {_kind(values)}, not a list of whole numbers")
    if len(values) != length:
        raise ImportFileError(
            f"{where} has {len(values)} entries for {length} runs: refused",
            "each run needs its entry; a missing one cannot be counted as a success",
        )
    out = np.empty(length, dtype=np.int64)
    for i, value in enumerate(values):
        if value is None:
            out[i] = none
        elif type(value) is int and -(2**31) <= value < 2**32:
            out[i] = value
        else:
            raise ImportFileError(f"{where}[{i}] is {_kind(value)}, not a whole number: refused")
    return out


def _kind(value: object) -> str:
    """How a stranger's JSON value is named in a refusal (its type, a short value)."""
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    if value is None:
        return "null"
    text = json.dumps(value) if isinstance(value, (str, bool)) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def text(value: object, where: str) -> str:
    """A JSON string (a name, a unit), else a refusal naming ``where``."""
    if not isinstance(value, str):
        raise ImportFileError(f"{where} is {_kind(value)}, not a string: refused")
    return value


def fields(value: object, where: str) -> Mapping[str, Any]:
    """A JSON object, else a refusal naming ``where``."""
    if not isinstance(value, dict):
        raise ImportFileError(f"{where} is {_kind(value)}, not a JSON object")
    return value


def listed(value: object, where: str, *, optional: bool = True) -> Sequence[Any]:
    """A JSON array (absent or null: empty when ``optional``), else a refusal naming ``where``."""
    if value is None and optional:
        return []
    if not isinstance(value, list):
        raise ImportFileError(f"{where} is {_kind(value)}, not a list")
    return value


@attrs.frozen
class ImportedMetric:
    """A measure of the imported trials that becomes a metric of the generated spec."""

    name: str
    unit: str | None = None
    better: str = "lower"


def _as_int_array(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


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
    rounds: np.ndarray = attrs.field(converter=_as_int_array)
    positions: np.ndarray = attrs.field(converter=_as_int_array)
    series: np.ndarray = attrs.field(converter=_as_int_array)
    orders: np.ndarray = attrs.field(converter=_as_text_array)
    exit_statuses: np.ndarray = attrs.field(converter=_as_int_array)
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
        orders = set(self.orders.tolist())
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
