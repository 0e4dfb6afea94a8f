"""Per-configuration summary: trials, failures, median / min / max of each metric, and the
summaries papers print (mean with its design-respecting interval, SD, IQR, CV:
``stats.summaries``), per configuration and, where a run has several hosts, per host."""

from __future__ import annotations

import csv
import io
import math
import sys
from typing import Any, TextIO

import numpy as np

from benchlang.model import VERSION_FACTOR
from benchlang.report.data import ExperimentData
from benchlang.report.table import format_number, format_quantity, metric_scale, render_table


def _summary(values: np.ndarray) -> dict[str, float | None]:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {
        "n": int(v.size),
        "median": float(np.median(v)),
        "min": float(v.min()),
        "max": float(v.max()),
    }


def _groups(data: ExperimentData) -> list[tuple[np.ndarray, dict[str, Any]]]:
    """Trials summarised together: each configuration, or each version of an A/B layout
    (whose configurations are the many (version, request) pairs)."""
    table = data.table
    if data.experiment.design.layout is None:
        return [
            (
                table.configuration == index,
                {"index": index, "label": label, "benchmark": benchmark, "levels": levels},
            )
            for index, label, benchmark, levels in data.configurations()
        ]
    version = data.experiment.factor(VERSION_FACTOR)
    level = np.array([lv.get(VERSION_FACTOR) for lv in table.levels], dtype=object)
    benchmark = data.experiment.benchmarks[0].name
    return [
        (
            level == name,
            {
                "index": None,
                "label": f"{benchmark}[version={name}]",
                "benchmark": benchmark,
                "levels": {VERSION_FACTOR: name},
            },
        )
        for name in version.levels
    ]


def trial_clusters(data: ExperimentData) -> tuple[np.ndarray, list[str]]:
    """Each trial's (host, series, round) units, coarsest first, and the hosts' names."""
    table = data.table
    hosts = sorted(set(table.host.tolist()))
    code = {h: i for i, h in enumerate(hosts)}
    host = np.fromiter(map(code.__getitem__, table.host.tolist()), np.int64, len(table))
    return np.stack([host, table.series, table.round], axis=1), hosts


def _summaries(
    values: np.ndarray, mask: np.ndarray, clusters: np.ndarray, hosts: list[str]
) -> tuple[dict, dict | None]:
    """The configuration's summary, and one per host when it ran on several."""
    from benchlang.stats.summaries import summarize

    whole = summarize(values[mask], clusters[mask]).to_dict()
    present = np.unique(clusters[mask, 0])
    if present.size < 2:
        return whole, None
    per_host = {
        hosts[h]: summarize(
            values[mask & (clusters[:, 0] == h)], clusters[mask & (clusters[:, 0] == h)]
        ).to_dict()
        for h in present.tolist()
    }
    return whole, per_host


def results_rows(data: ExperimentData) -> list[dict[str, Any]]:
    table = data.table
    clusters, hosts = trial_clusters(data)
    rows = []
    for mask, configuration in _groups(data):
        entry: dict[str, Any] = {
            "configuration": configuration,
            "n": int((table.ok & mask).sum()),
            "failures": int((~table.ok & mask).sum()),
            "failed_trials": [
                {"trial": int(table.trial[i]), "reason": table.reason[i]}
                for i in np.flatnonzero(~table.ok & mask)
            ],
            "metrics": {},
        }
        for name, mv in data.metrics.items():
            summary = _summary(mv.values[mask])
            summary["unit"] = mv.metric.unit
            if mv.converged is not None:
                summary["not_converged"] = int((table.ok & mask & ~mv.converged).sum())
            summary["summary"], per_host = _summaries(mv.values, table.ok & mask, clusters, hosts)
            if per_host is not None:
                summary["hosts"] = per_host
            entry["metrics"][name] = summary
        rows.append(entry)
    return rows


def render_results(
    data: ExperimentData, stream: TextIO | None = None, *, hosts: bool = True
) -> None:
    """Per configuration: trials, failures, and each metric's median and range in human
    units (one unit per metric column), then the hosts (unless ``hosts`` is False) and any
    warning that they differ."""
    from benchlang.report.hosts import host_lines, host_warnings

    rows = results_rows(data)
    headers = ["configuration", "n", "failed"]
    align = ["left", "right", "right"]
    scales = {}
    for name, mv in data.metrics.items():
        scales[name] = metric_scale(mv.values[data.table.ok], mv.metric.unit)
        unit = f" ({scales[name][0]})" if scales[name][0] else ""
        headers += [f"{name} median{unit}", "range"]
        align += ["right", "right"]
    body = []
    for row in rows:
        line: list[Any] = [row["configuration"]["label"], row["n"], row["failures"]]
        for name in data.metrics:
            s = row["metrics"][name]
            factor = scales[name][1]

            def num(x: float | None, factor: float = factor) -> str:
                return format_quantity(x, None, scale=(None, factor))

            line += [num(s["median"]), f"{num(s['min'])}–{num(s['max'])}"]
        body.append(line)
    note = (
        f"; {data.left_out} warm-up/cool-down trials ran and are left out" if data.left_out else ""
    )
    render_table(
        headers,
        body,
        title=f"results: experiment {data.experiment.name}{note}",
        stream=stream,
        align=align,
    )
    render_summaries(data, rows, scales, stream)
    out = stream or sys.stdout
    for line in host_lines(data) if hosts else ():
        out.write(line + "\n")
    for warning in host_warnings(data):
        out.write(warning + "\n")


SUMMARY_HEADERS = ("configuration", "n", "mean", "95% interval", "over", "SD", "IQR", "CV")


def summary_table(
    data: ExperimentData, rows: list[dict[str, Any]], scales: dict[str, tuple]
) -> tuple[list[list[Any]], list[str]]:
    """Per configuration (and per host where it ran on several) and metric, the cells of
    ``SUMMARY_HEADERS`` (``stats.summaries``), and why the descriptive rows have no interval."""
    body, reasons = [], []
    for row in rows:
        for name in data.metrics:
            m = row["metrics"][name]
            label = row["configuration"]["label"] + (f" {name}" if len(data.metrics) > 1 else "")
            entries = [(label, m["summary"], "")]
            hosts = (m.get("hosts") or {}).items()
            entries += [(f"  host {h}", s, " (per host)") for h, s in hosts]
            for text, s, where in entries:
                body.append(_summary_cells(text, s, scales[name][1]))
                if s["reason"] and s["reason"] + where not in reasons:
                    reasons.append(s["reason"] + where)
    return body, reasons


def summary_title(data: ExperimentData, scales: dict[str, tuple]) -> str:
    units = {name: scales[name][0] for name in data.metrics if scales[name][0]}
    unit = f" ({', '.join(f'{k}: {u}' for k, u in units.items())})" if units else ""
    return f"summaries{unit}: the mean's interval is t(G-1) over G cluster means"


def render_summaries(
    data: ExperimentData,
    rows: list[dict[str, Any]],
    scales: dict[str, tuple],
    stream: TextIO | None = None,
) -> None:
    """The ``summary_table`` as text; a descriptive row's reason below it."""
    body, reasons = summary_table(data, rows, scales)
    render_table(
        SUMMARY_HEADERS,
        body,
        title=summary_title(data, scales),
        stream=stream,
        align=["left", "right", "right", "right", "left", "right", "right", "right"],
    )
    out = stream or sys.stdout
    for reason in reasons:
        out.write(f"descriptive only (no interval): {reason}\n")


def _summary_cells(label: str, s: dict, factor: float) -> list[Any]:
    def num(x: float | None) -> str:
        return format_quantity(x, None, scale=(None, factor))

    interval = s["mean_interval"]
    if s["descriptive"]:
        bounds, over = "-", "descriptive"
    else:
        bounds = f"[{num(interval['lower'])}, {num(interval['upper'])}]"
        over = f"{interval['clusters']} {interval['level']}"
    cv = "-" if s["cv"] is None else f"{100 * s['cv']:.1f}%"
    return [label, s["n"], num(s["mean"]), bounds, over, num(s["sd"]), num(s["iqr"]), cv]


def render_run_summary(data: ExperimentData, stream: TextIO | None = None) -> None:
    """The results table at the end of ``run``, unless the headline carries all it says:
    with KPIs, no A/B layout, nothing left out and no failed trial, the headline's table
    has each configuration's trials and the record its hosts."""
    exp = data.experiment
    covered = (
        bool(exp.kpis)
        and exp.design.layout is None
        and not data.left_out
        and bool(data.table.ok.all())
    )
    if not covered:
        render_results(data, stream, hosts=not exp.kpis)


def results_csv(data: ExperimentData) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    header = ["configuration", "benchmark", "n", "failures"]
    for name in data.metrics:
        header += [f"{name}_median", f"{name}_min", f"{name}_max"]
    writer.writerow(header)
    for row in results_rows(data):
        line = [
            row["configuration"]["label"],
            row["configuration"]["benchmark"],
            row["n"],
            row["failures"],
        ]
        for name in data.metrics:
            s = row["metrics"][name]
            line += [
                "" if s[k] is None or (isinstance(s[k], float) and math.isnan(s[k])) else repr(s[k])
                for k in ("median", "min", "max")
            ]
        writer.writerow(line)
    return out.getvalue()


def failure_lines(store, plan_hash: str, limit: int = 5) -> list[str]:
    lines = []
    for i, (trial, label, reason, _exit, _out, err) in enumerate(store.failed_trials(plan_hash)):
        if i >= limit:
            lines.append(
                "  ... (benchlang results STORE --format json lists every trial with its status,"
                " failure reason, exit status and last stderr line)"
            )
            break
        last = [x for x in (err or b"").decode(errors="replace").splitlines() if x.strip()]
        lines.append(
            f"  trial {trial} {label}: {reason}" + (f" | stderr: {last[-1][:120]}" if last else "")
        )
    return lines


__all__ = [
    "failure_lines",
    "format_number",
    "render_results",
    "render_run_summary",
    "results_csv",
    "results_rows",
    "summary_table",
    "summary_title",
    "trial_clusters",
]
