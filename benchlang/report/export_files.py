"""A store's data written as an export (``results --format``, ``run --export-*``): the
per-trial exports of ``exports.py`` with, in the JSON document, the headline of ``analyze``;
Parquet from the same trial columns.
Above ``exports``, ``analysis`` and ``headline``, which do not import it."""

from __future__ import annotations

import io
import os
from typing import TextIO, cast

from benchlang.errors import UserError
from benchlang.report.analysis import analyze
from benchlang.report.atomic import replacing
from benchlang.report.data import ExperimentData
from benchlang.report.exports import results_markdown, write_results_json, write_trials_csv
from benchlang.report.headline import headline


def export_text(data: ExperimentData, form: str, analysis: list | None = None) -> str:
    """``data`` as ``form`` ("json", "csv" or "markdown"), as ``write_export`` writes it."""
    out = io.StringIO()
    write_export(data, form, out, analysis)
    return out.getvalue()


def write_export_file(
    data: ExperimentData, form: str, path: str | os.PathLike[str], analysis: list | None = None
) -> None:
    """``write_export`` into the file ``path``, replaced whole (``report.atomic``): an export
    that fails midway leaves the file that was there."""
    try:
        with replacing(path, "w", encoding="utf-8") as out:
            write_export(data, form, cast(TextIO, out), analysis)  # opened as text: "w"
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None


def write_trials_parquet(data: ExperimentData, path: str | os.PathLike[str]) -> str:
    """The trial columns (``report.trial_columns``, the CSV's) as a Parquet file with a fixed
    Arrow schema and the columns' units and types in its metadata; replaced whole."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError(
            "Parquet needs pyarrow, which is not installed", "pip install 'benchlang[parquet]'"
        ) from None
    from benchlang.report.trial_columns import arrow_table

    try:
        with replacing(path) as handle:
            pq.write_table(arrow_table(data), handle)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None
    return os.fspath(path)


def write_export(
    data: ExperimentData, form: str, out: TextIO, analysis: list | None = None
) -> None:
    """Write ``data`` as ``form`` ("json", "csv" or "markdown") to ``out``; the JSON document
    carries the headline when the spec has KPIs (``analysis``: ``report.analysis.analyze``'s
    results, computed when not given) and streams its trials."""
    if form == "csv":
        write_trials_csv(data, out)
        return
    if form == "markdown":
        out.write(results_markdown(data))
        return
    if form != "json":
        raise ValueError(f"unknown export format {form!r}")
    headlines, extra = None, None
    if data.experiment.kpis:
        analysis = analyze(data) if analysis is None else analysis
        headlines = headline(data, analysis)
        if data.experiment.population is not None and analysis:
            from benchlang.report.population import population_analysis

            found = population_analysis(data, analysis)
            if found is not None:  # a population factor: always found
                extra = {"population": found.to_dict()}
    write_results_json(data, out, headlines=headlines, extra=extra)
