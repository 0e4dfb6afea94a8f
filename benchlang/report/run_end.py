"""How ``benchlang run`` ends: the record, the exports asked for, then the answer
for a person: what was run and what failed, and the headline last, where the eye lands."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from benchlang.report.data import ExperimentData
from benchlang.report.export_files import write_export_file
from benchlang.report.headline import headline, render_headline
from benchlang.report.record import Record
from benchlang.report.table import render_table, write_wrapped
from benchlang.report.wording import plural


def render_record(record: Record, stream: TextIO | None = None, terminal: bool | None = None):
    """The record as a table drawn for a terminal, or as Markdown when ``stream`` is not one
    (a pipe, a file, CI logs) so it pastes into a paper or an issue unchanged."""
    out = stream or sys.stdout
    terminal = out.isatty() if terminal is None else terminal
    if not terminal or not record.metrics:
        out.write(record.to_markdown())
        return
    write_wrapped(record.header_lines(markdown=False), out, terminal=True)
    headers, rows = record.grid()
    align = ["left"] + ["right"] * (len(headers) - 1)
    render_table(headers, rows, stream=out, plain=False, align=align)


def write_exports(data: ExperimentData, analysis: list | None, args) -> None:
    """The files asked for with ``--export-json/--export-csv/--export-markdown``."""
    for form in ("json", "csv", "markdown"):
        target = getattr(args, f"export_{form}", None)
        if target:
            write_export_file(data, form, target, analysis)
            print(f"wrote {form} to {target}")


def ran_line(data: ExperimentData, store: str) -> str:
    """What was run, in one sentence: trials, configurations, series and hosts, and how many
    failed (the store is named where a run stored nothing)."""
    t = data.table
    n, failed = len(t), int((~t.ok).sum())
    configurations = len(data.configurations())
    hosts = sorted({str(h) for h in t.host.tolist()})
    series = len(set(t.series.tolist()))
    where = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    if not n:
        return f"Ran no trial of {data.experiment.name} (store {store})"
    return (
        f"Ran {plural(n, 'trial')} of {data.experiment.name} "
        f"({plural(configurations, 'configuration')} x {plural(series, 'series')} on {where}): "
        f"{failed} failed"
    )


def render_run_end(
    data: ExperimentData,
    analysis: list | None,
    store: str,
    failures: Sequence[str] = (),
    stream: TextIO | None = None,
    *,
    verbose: bool = True,
    more: bool = True,
) -> None:
    """The closing answer: what was run and what failed (one line per failure), then the
    answer when the spec has KPIs: the short ranking (``report.short_answer``) with where the
    rest is (unless ``more`` is False: a store about to be removed), or with ``verbose`` the
    whole headline."""
    out = stream or sys.stdout
    out.write("\n" + ran_line(data, store) + "\n")
    for line in failures:
        out.write(line + "\n")
    if analysis is None:
        return
    headlines = headline(data, analysis)
    if not headlines:
        return
    if verbose:
        out.write("\n")
        render_headline(headlines, out)
        out.write(f"Per-series KPIs and independence tests: benchlang analyze {store}\n")
        return
    from benchlang.report.short_answer import answer_lines, more_lines

    for line in [*answer_lines(data, headlines), *(more_lines(store) if more else [])]:
        out.write(line + "\n")
