"""What ``benchlang run`` prints after the record: the headline and the exports asked for."""

from __future__ import annotations

from pathlib import Path

from benchlang.report.data import ExperimentData
from benchlang.report.export_files import write_export
from benchlang.report.headline import headline, render_headline


def render_run_end(data: ExperimentData, analysis: list | None, args, store: str) -> None:
    """What ``benchlang run`` prints after the record: the headline (when the spec has KPIs)
    and the files asked for with ``--export-json/--export-csv/--export-markdown``."""
    if analysis is not None:
        headlines = headline(data, analysis)
        if headlines:
            render_headline(headlines)
            print(f"Per-series KPIs and independence tests: benchlang analyze --store {store}")
    for form in ("json", "csv", "markdown"):
        target = getattr(args, f"export_{form}", None)
        if target:
            with Path(target).open("w", encoding="utf-8") as out:
                write_export(data, form, out, analysis)
            print(f"wrote {form} to {target}")
