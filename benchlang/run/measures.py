"""Reading measures out of a trial: rusage built-ins, regex / JSON path / column / lines
extractors over stdout, stderr or a file the command wrote."""

from __future__ import annotations

import codecs
import collections.abc
import csv
import io
import json
import math
import re
from typing import Any

import numpy as np

from benchlang.model import Measure


class MeasureError(Exception):
    """A measure could not be read; the trial is stored as failed with this reason."""


def _number(text: Any, what: str) -> float:
    if isinstance(text, bool):
        raise MeasureError(f"{what}: expected a number, got {text!r}")
    try:
        number = float(text)
    except (TypeError, ValueError):
        raise MeasureError(f"{what}: expected a number, got {str(text)[:60]!r}") from None
    if not math.isfinite(number):
        raise MeasureError(f"{what}: expected a finite number, got {str(text)[:60]!r}")
    return number


def _finite(values: np.ndarray, where: str) -> np.ndarray:
    """A raw series must hold samples, all finite (nan or inf would poison every statistic)."""
    if values.size == 0:
        raise MeasureError(f"{where} holds no number")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise MeasureError(f"{where}: value {bad[0] + 1} is {values[bad[0]]}, not a finite number")
    return values


def json_path(document: Any, path: str) -> Any:
    """Follow ``$.a.b[0]`` or ``a.b.0`` into a parsed JSON document."""
    steps = re.findall(r"[^.\[\]]+", path.removeprefix("$"))
    node = document
    for step in steps:
        if isinstance(node, list):
            try:
                node = node[int(step)]
            except (ValueError, IndexError):
                raise MeasureError(f"json path {path!r}: no element {step!r}") from None
        elif isinstance(node, dict):
            if step not in node:
                raise MeasureError(f"json path {path!r}: no key {step!r}")
            node = node[step]
        else:
            raise MeasureError(
                f"json path {path!r}: cannot index {type(node).__name__} with {step!r}"
            )
    return node


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        lines = [line for line in text.splitlines() if line.strip()]
        if lines:
            try:
                return json.loads(lines[-1])
            except json.JSONDecodeError:
                pass
        raise MeasureError(f"{where} is not JSON (nor is its last line)") from None


def _column(text: str, column: int | str, where: str) -> np.ndarray:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise MeasureError(f"{where} is empty")
    if "," in lines[0]:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
    else:
        rows = [line.split() for line in lines]
    header = rows[0]
    if isinstance(column, str):
        if column not in header:
            raise MeasureError(
                f"{where} has no column {column!r} (header: {', '.join(header)[:80]})"
            )
        index, body = header.index(column), rows[1:]
    else:
        index = column - 1
        body = rows
        try:
            float(header[index])
        except (ValueError, IndexError):
            body = rows[1:]
    try:
        return np.array([float(r[index]) for r in body], dtype=float)
    except IndexError:
        raise MeasureError(f"{where}: a row has no column {column}") from None
    except ValueError as err:
        raise MeasureError(f"{where}: column {column}: {err}") from None


def extract(measure: Measure, text: str, where: str) -> float | np.ndarray:
    """Apply a measure's extractor to text from ``where`` (stdout, stderr, a file)."""
    kind, argument = measure.extractor, measure.argument
    if kind == "regex":
        pattern = re.compile(argument)
        values = [m.group(1) if pattern.groups else m.group(0) for m in pattern.finditer(text)]
        if not values:
            raise MeasureError(f"no match for regex {argument!r} in {where}")
        if measure.series:
            return np.array([_number(v, f"regex {argument!r}") for v in values])
        return _number(values[-1], f"regex {argument!r} in {where}")
    if kind == "json":
        value = json_path(_parse_json(text, where), argument)
        if measure.series:
            if not isinstance(value, list):
                raise MeasureError(
                    f"json path {argument!r} in {where}: expected a list for a series"
                )
            return np.array([_number(v, f"json path {argument!r}") for v in value])
        return _number(value, f"json path {argument!r} in {where}")
    if kind == "column":
        return _finite(_column(text, argument, where), where)
    if kind == "lines":
        try:
            return _finite(np.array([float(line) for line in text.split()], dtype=float), where)
        except ValueError as err:
            raise MeasureError(f"{where}: {err}") from None
    raise MeasureError(f"unknown extractor {kind!r}")


def extract_output(
    measure: Measure, kept: bytes, size: int | None, path: str | None, where: str
) -> float | np.ndarray:
    """A measure over a trial's stdout or stderr, of which a backend keeps the last bytes
    (``kept``) of ``size`` and may leave the whole stream in the file ``path``.

    A stream kept whole is read as it is. A cut stream is read whole from ``path`` (a regex
    for one value scans the file through a memory map, so a 200 MB output costs no 200 MB
    string); without the file, the last match of a regex is still the last match of the
    stream, and every other extractor fails saying that the output was cut, never reading
    a wrong number out of its end.
    """
    if size is None or size <= len(kept):
        return extract(measure, kept.decode(errors="replace"), where)
    if path is not None:
        try:
            return _extract_file(measure, path, where)
        except OSError:
            pass
    cut = f"{where} was cut to its last {len(kept):,} of {size:,} bytes"
    if measure.extractor == "regex" and not measure.series:
        try:
            return extract(measure, kept.decode(errors="replace"), where)
        except MeasureError as err:
            raise MeasureError(f"{err} ({cut})") from None
    raise MeasureError(f"{cut}: write the values to a file and measure it with `from file`")


def _extract_file(measure: Measure, path: str, where: str) -> float | np.ndarray:
    with open(path, "rb") as handle:
        if measure.extractor != "regex":
            return extract(measure, handle.read().decode(errors="replace"), where)
        pattern = re.compile(measure.argument)
        values = list(_regex_values(handle, pattern, keep_all=measure.series))
    if not values:
        raise MeasureError(f"no match for regex {measure.argument!r} in {where}")
    if measure.series:
        return np.array([_number(v, f"regex {measure.argument!r}") for v in values])
    return _number(values[-1], f"regex {measure.argument!r} in {where}")


SCAN_BLOCK = 1 << 20
SCAN_MARGIN = 1 << 16


def _regex_values(
    stream: io.BufferedReader, pattern: re.Pattern[str], *, keep_all: bool
) -> collections.abc.Iterator[str]:
    """The matches of ``pattern`` over a stream as if over its whole decoded text, read one
    block at a time (memory bounded by a block, not by the stream). A match is taken once it
    ends more than ``SCAN_MARGIN`` characters before the end of what has been read, so that
    ``$``, lookaheads and greedy repeats see what follows it; the search resumes where a
    search of the whole text would, with the text before that point kept so that ``^`` and
    lookbehinds see their context. (A single match longer than the margin may be missed.)
    The last value only, unless ``keep_all``."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text, position, last = "", 0, None
    while True:
        block = stream.read(SCAN_BLOCK)
        text += decoder.decode(block, final=not block)
        limit = len(text) - SCAN_MARGIN if block else len(text) + 1
        resume = max(position, limit)
        for match in pattern.finditer(text, position):
            if match.end() >= limit:
                resume = match.start()
                break
            last = match.group(1) if pattern.groups else match.group(0)
            if keep_all:
                yield last
        if not block:
            break
        drop = max(0, resume - SCAN_MARGIN)
        text, position = text[drop:], resume - drop
    if not keep_all and last is not None:
        yield last
