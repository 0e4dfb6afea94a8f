"""Exports users expect: a versioned JSON document, per-trial CSV, and a Markdown table with a
relative column (in the manner of hyperfine's ``--export-markdown``). Schema: docs/exports.md.

Also the host facts check: trials that ran on hosts whose CPU model, governor or kernel differ
are warned about, since their numbers may not be comparable.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang import __version__
from benchlang.jsonout import dumps
from benchlang.report.data import ExperimentData
from benchlang.report.hosts import host_warnings
from benchlang.report.table import format_quantity, metric_scale
from benchlang.report.trial_columns import Column, trial_columns

SCHEMA = 1
"""Version of the JSON document; raised whenever a field changes meaning or goes away."""

"""Host facts that make numbers incomparable when they differ between hosts."""


def _clean(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, nan/inf to None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _deep_clean(value: Any) -> Any:
    """A JSON-safe copy: dicts and sequences walked, scalars through ``_clean``."""
    if isinstance(value, dict):
        return {str(k): _deep_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_deep_clean(v) for v in value]
    return _clean(value)


def trial_rows(data: ExperimentData, failures: dict[int, dict] | None = None) -> list[dict]:
    """Every trial: where and what it ran, its status and failure reason, every measure and
    every metric value (None when missing). ``failures`` adds, per failed trial, the exit
    status and the last stderr line (from the store)."""
    failures = data.failures if failures is None else failures
    columns = trial_columns(data)
    return [_one_row(data, columns, i, failures) for i in range(len(data.table))]


def results_document(
    data: ExperimentData,
    failures: dict[int, dict] | None = None,
    headlines: Iterable | None = None,
) -> dict:
    """The versioned JSON document (``"schema": SCHEMA``); docs/exports.md lists its fields."""
    doc = _document(data, headlines)
    doc["trials"] = trial_rows(data, failures)
    return _deep_clean(doc)


def _document(
    data: ExperimentData, headlines: Iterable | None, columns: list[Column] | None = None
) -> dict:
    """The document's fields, with a placeholder for the trials."""
    from benchlang.report.results import results_rows

    plan = data.plan
    configurations = results_rows(data)
    for row in configurations:
        row["relative"] = None
    rel = relative(data)
    for row in configurations:
        row["relative"] = rel.get(row["configuration"]["label"])
    doc = {
        "schema": SCHEMA,
        "kind": "benchlang.results",
        "benchlang_version": __version__,
        "experiment": data.experiment.name,
        "plan_hash": plan.plan_hash,
        "spec_hash": plan.spec_hash,
        "seed": plan.seed,
        "left_out": data.left_out,
        "hosts": data.hosts,
        "host_warnings": host_warnings(data),
        "configurations": configurations,
        "trial_columns": [c.describe() for c in columns or trial_columns(data)],
        "trials": _TRIALS,
    }
    if headlines is not None:
        doc["headline"] = [h.to_dict() for h in headlines]
    return doc


_TRIALS = "@@benchlang trials@@"


def results_json(data: ExperimentData, failures=None, headlines=None) -> str:
    out = io.StringIO()
    write_results_json(data, out, failures, headlines)
    return out.getvalue()


def write_results_json(
    data: ExperimentData, out: TextIO, failures=None, headlines=None, extra: dict | None = None
) -> None:
    """``json.dumps(results_document(...), indent=2)`` and a newline, written to ``out`` with
    the trials streamed (``trial_json``): a million trials without a million dicts; ``extra``
    adds top-level fields (the population KPIs)."""
    columns = trial_columns(data)
    doc = {**_document(data, headlines, columns), **(extra or {})}
    text = json.dumps(_deep_clean(doc), indent=2, allow_nan=False)
    head, *tail = text.split(json.dumps(_TRIALS))
    if len(tail) != 1:  # the placeholder also appears in a user's text: the slow way
        out.write(dumps(results_document(data, failures, headlines)) + "\n")
        return
    out.write(head)
    first = True
    for chunk in trial_json(data, failures, columns=columns):
        out.write(("[\n" if first else ",\n") + chunk)
        first = False
    out.write(("[]" if first else "\n  ]") + tail[0] + "\n")


def trial_json(
    data: ExperimentData,
    failures: dict[int, dict] | None = None,
    chunk: int = 16384,
    columns: list[Column] | None = None,
) -> Iterator[str]:
    """``trial_rows`` as the text ``json.dumps(..., indent=2)`` gives them inside the
    document (each at depth 2, joined by ",\n"), ``chunk`` rows at a time. A row without a
    reason or failure details is its configuration's template (the row dumped once, with
    placeholders) filled with its numbers; the others are dumped one by one."""
    table = data.table
    failures = data.failures if failures is None else failures
    columns = trial_columns(data) if columns is None else columns
    simple = np.array([r is None for r in table.reason.tolist()], dtype=bool)
    if failures:
        simple &= ~np.isin(table.trial, np.fromiter(failures, np.int64, len(failures)))
    sources = [
        c for c in columns
        if c.field in _NUMBER_FIELDS or c.field.startswith(("measures.", "metrics."))
    ]  # fmt: skip
    templates: dict[tuple, str | None] = {}
    for start in range(0, len(table), chunk):
        part = slice(start, start + chunk)
        keys = zip(  # levels by identity: the table shares one dict per configuration
            table.label[part].tolist(),
            table.benchmark[part].tolist(),
            map(id, table.levels[part]),
            table.host[part].tolist(),
            table.phase[part].tolist(),
            table.ok[part].tolist(),
            table.order_kind[part].tolist(),
            strict=True,
        )
        cells = [_json_column(column, part) for column in sources]
        rows: list[str] = []
        for i, key, values in zip(
            range(start, len(table)), keys, zip(*cells, strict=True), strict=False
        ):
            template = templates.get(key, "")
            if template == "":
                template = templates[key] = _template(data, columns, i, len(sources))
            if simple[i] and template is not None:
                rows.append(template % values)
            else:
                row = _deep_clean(_one_row(data, columns, i, failures))
                rows.append("    " + dumps(row).replace("\n", "\n    "))
        yield ",\n".join(rows)


_NUMBER_FIELDS = ("trial", "series", "round", "position", "exit_status", "started", "ended")


def _json_column(column: Column, part: slice, missing: str = "null") -> list[str]:
    """A column's cells as JSON text: an int64 column held as floats (NaN missing) as whole
    numbers, the others as ``_json_numbers``."""
    values = column.values[part]
    if column.type == "int64" and values.dtype.kind == "f":
        return [missing if v != v else str(int(v)) for v in values.tolist()]
    return _json_numbers(values, missing)


def _json_numbers(column: np.ndarray, missing: str = "null") -> list[str]:
    """Each value as ``json.dumps`` writes it once cleaned: an int's or a float's repr (the
    list's repr makes them in C), ``missing`` where a float is not finite."""
    text = repr(column.tolist())[1:-1].split(", ") if column.size else []
    if column.dtype.kind == "f":
        for i in np.flatnonzero(~np.isfinite(column)).tolist():
            text[i] = missing
    return text


def _template(data: ExperimentData, columns: list[Column], i: int, count: int) -> str | None:
    """Trial ``i``'s row dumped at depth 2 with ``%s`` where its numbers go (in
    ``_NUMBER_FIELDS``, measure, metric order); None when a placeholder is ambiguous."""
    mark = "@@benchlang %d@@"
    row = _one_row(data, columns, i, {})
    row["reason"] = None
    for k, field in enumerate(_NUMBER_FIELDS):
        row[field] = mark % k
    k = len(_NUMBER_FIELDS)
    for group in ("measures", "metrics"):
        for name in row[group]:
            row[group][name] = mark % k
            k += 1
    text = "    " + dumps(_deep_clean(row)).replace("\n", "\n    ")
    pieces = text.replace("%", "%%").split('"@@benchlang ')
    if len(pieces) != count + 1:
        return None
    out = pieces[0]
    for k, piece in enumerate(pieces[1:]):
        number, sep, rest = piece.partition('@@"')
        if number != str(k) or not sep:
            return None
        out += "%s" + rest
    return out


def _cell(column: Column, i: int) -> Any:
    value = column.values[i]
    if column.type == "string":
        return value
    value = float(value)
    if not math.isfinite(value):
        return None
    return int(value) if column.type == "int64" else value


def _one_row(
    data: ExperimentData, columns: list[Column], i: int, failures: dict[int, dict]
) -> dict[str, Any]:
    """Trial ``i``'s row of ``trial_rows``: the export columns (``trial_columns``) with the
    levels, measures and metrics nested as their ``field`` says."""
    row: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {"measures": {}, "metrics": {}}
    for column in columns:
        group, _, name = column.field.partition(".")
        if group == "levels":
            continue
        if name:
            nested[group][name] = _cell(column, i)
            continue
        row[column.field] = _cell(column, i)
        if column.field == "configuration_index":
            row["levels"] = dict(data.table.levels[i])
    row.update(nested)
    trial = int(data.table.trial[i])  # a campaign's rows show each store's own numbers
    if trial in failures:
        row.update(failures[trial])
    return row


def results_trials_csv(data: ExperimentData, failures: dict[int, dict] | None = None) -> str:
    """Per-trial CSV: one row per trial, a column per factor, measure and metric."""
    out = io.StringIO()
    write_trials_csv(data, out, failures)
    return out.getvalue()


def write_trials_csv(
    data: ExperimentData, out: TextIO, failures: dict[int, dict] | None = None, chunk: int = 16384
) -> None:
    """``results_trials_csv`` written to ``out`` column by column, ``chunk`` rows at a time
    (the cells of ``trial_rows``: no dict per trial)."""
    table = data.table
    columns = trial_columns(attrs.evolve(data, failures=failures) if failures else data)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in columns])
    for start in range(0, len(table), chunk):
        part = slice(start, start + chunk)
        cells = [
            ["" if v is None else v for v in c.values[part].tolist()]
            if c.type == "string"
            else _json_column(c, part, "")
            for c in columns
        ]
        writer.writerows(zip(*cells, strict=True))


def _blank(value: Any) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def _main_metric(data: ExperimentData) -> str | None:
    for k in data.experiment.kpis:
        return k.metric
    return next(iter(data.metrics), None)


def relative(data: ExperimentData) -> dict[str, float]:
    """Each configuration's median of the main metric (the first KPI's, else the first
    metric) over the best configuration's: 1.00 for the best, > 1 for the others."""
    from benchlang.report.results import results_rows

    name = _main_metric(data)
    if name is None:
        return {}
    better = data.metrics[name].metric.better
    medians = {
        r["configuration"]["label"]: r["metrics"][name]["median"] for r in results_rows(data)
    }
    finite = {k: v for k, v in medians.items() if v is not None and math.isfinite(v) and v > 0}
    if not finite:
        return {}
    best = min(finite.values()) if better == "lower" else max(finite.values())
    return {k: (v / best if better == "lower" else best / v) for k, v in finite.items()}


def results_markdown(data: ExperimentData) -> str:
    """A Markdown table in hyperfine's manner: per configuration the median, min and max of
    the main metric in human units, trials, failures, and the relative column."""
    from benchlang.report.results import results_rows

    name = _main_metric(data)
    rows = results_rows(data)
    rel = relative(data)
    if name is None:
        lines = ["| Configuration | Trials | Failures |", "|:---|---:|---:|"]
        lines += [
            f"| `{_md(r['configuration']['label'])}` | {r['n']} | {r['failures']} |" for r in rows
        ]
        return "\n".join(lines) + "\n"
    unit = data.metrics[name].metric.unit
    shown, factor = metric_scale(data.metrics[name].values[data.table.ok], unit)
    suffix = f" [{shown}]" if shown else ""
    lines = [
        f"| Configuration | {name} median{suffix} | Min{suffix} | Max{suffix} | Trials "
        "| Failures | Relative |",
        "|:---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = r["metrics"][name]
        label = r["configuration"]["label"]
        cells = [
            format_quantity(s[k], None, scale=(None, factor)) for k in ("median", "min", "max")
        ]
        ratio = rel.get(label)
        lines.append(
            f"| `{_md(label)}` | {' | '.join(cells)} | {r['n']} | {r['failures']} | "
            + ("-" if ratio is None else f"{ratio:.2f}")
            + " |"
        )
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", r"\|").replace("`", "'")
