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
from benchlang.report.sessions_text import SPREAD, render_session_shares, session_count, share_rows
from benchlang.report.table import format_number, format_quantity, metric_scale, render_table
from benchlang.stats.campaign import session_share


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


def trial_units(data: ExperimentData) -> tuple[np.ndarray, tuple[str, ...], list[str]]:
    """Each trial's units coarsest first, their levels' names and the hosts' names: (host,
    series, round) in one store; (session, host, series, round) in a campaign, whose sessions
    are the top clusters (``report.sessions_text``)."""
    clusters, hosts = trial_clusters(data)
    if session_count(data) < 2:
        return clusters, LEVELS, hosts
    return np.column_stack([data.table.sessions, clusters]), ("session", *LEVELS), hosts


LEVELS = ("host", "series", "round")


def _summaries(
    values: np.ndarray,
    mask: np.ndarray,
    units: tuple[np.ndarray, tuple[str, ...], list[str]],
) -> tuple[dict, dict | None, list[dict] | None]:
    """The configuration's summary, one per host when it ran on several (the host column,
    wherever it sits among the levels), and in a campaign one per session."""
    from benchlang.stats.summaries import summarize

    clusters, names, hosts = units
    whole = summarize(values[mask], clusters[mask], names).to_dict()
    column = clusters[:, names.index("host")]
    present = np.unique(column[mask])
    per_host = None
    if present.size >= 2:
        per_host = {
            hosts[h]: summarize(
                values[mask & (column == h)], clusters[mask & (column == h)], names
            ).to_dict()
            for h in present.tolist()
        }
    if names[0] != "session":
        return whole, per_host, None
    per_session = [
        {
            "session": int(s) + 1,
            "summary": summarize(
                values[mask & (clusters[:, 0] == s)], clusters[mask & (clusters[:, 0] == s), 1:]
            ).to_dict(),
        }
        for s in np.unique(clusters[:, 0]).tolist()
    ]
    return whole, per_host, per_session


def results_rows(data: ExperimentData) -> list[dict[str, Any]]:
    """Per configuration its trials, failures and each metric's summaries; in a campaign the
    summary uses sessions as the top clusters, with one per session and the between-session
    share (``between_sessions``: ``stats.campaign``)."""
    table = data.table
    units = trial_units(data)
    shares = {(r.metric, r.configuration): r.share for r in share_rows(data, data.metrics)}
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
            summary: dict[str, Any] = _summary(mv.values[mask])
            summary["unit"] = mv.metric.unit
            if mv.converged is not None:
                summary["not_converged"] = int((table.ok & mask & ~mv.converged).sum())
            summary["summary"], per_host, per_session = _summaries(
                mv.values, table.ok & mask, units
            )
            if per_host is not None:
                summary["hosts"] = per_host
            if per_session is not None:
                summary["sessions"] = per_session
                share = shares.get((name, configuration["label"]))
                if share is None:  # an A/B layout's version: its trials' share
                    share = session_share(
                        mv.values[table.ok & mask], table.sessions[table.ok & mask]
                    )
                summary["between_sessions"] = share.to_dict()
            entry["metrics"][name] = summary
        rows.append(entry)
    return rows


def render_results(
    data: ExperimentData,
    stream: TextIO | None = None,
    *,
    hosts: bool = True,
    stores: list[str] | None = None,
) -> None:
    """Per configuration: trials, failures, and each metric's median and range in human
    units (one unit per metric column), then the hosts (unless ``hosts`` is False) and any
    warning that they differ. In a campaign (``stores``: its sessions' stores, in order) the
    summaries use sessions as clusters, each session has its rows, and the between-session
    share follows."""
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
    sessions = session_count(data)
    pooled = f", {sessions} sessions pooled" if sessions > 1 else ""
    render_table(
        headers,
        body,
        title=f"results: experiment {data.experiment.name}{pooled}{note}",
        stream=stream,
        align=align,
    )
    out = stream or sys.stdout
    if sessions > 1:
        named = stores or [str(i + 1) for i in range(sessions)]
        out.write("sessions: " + ", ".join(f"{i + 1} = {s}" for i, s in enumerate(named)) + "\n")
    render_summaries(data, rows, scales, stream)
    if sessions > 1:
        render_session_shares(
            share_rows(data, data.metrics), sessions, stream, using="The summaries above use"
        )
    for text in host_lines(data) if hosts else ():
        out.write(text + "\n")
    for warning in host_warnings(data):
        out.write(warning + "\n")


SUMMARY_HEADERS = ("configuration", "n", "mean", "95% interval", "over", "SD", "IQR", "CV")


def summary_table(
    data: ExperimentData, rows: list[dict[str, Any]], scales: dict[str, tuple]
) -> tuple[list[list[Any]], list[str]]:
    """Per configuration (and per host where it ran on several, per session in a campaign)
    and metric, the cells of ``SUMMARY_HEADERS`` (``stats.summaries``), and why the descriptive rows have no interval."""
    body, reasons = [], []
    for row in rows:
        for name in data.metrics:
            m = row["metrics"][name]
            label = row["configuration"]["label"] + (f" {name}" if len(data.metrics) > 1 else "")
            entries = [(label, m["summary"], "")]
            hosts = (m.get("hosts") or {}).items()
            entries += [(f"  host {h}", s, " (per host)") for h, s in hosts]
            entries += [
                (f"  session {e['session']}", e["summary"], " (per session)")
                for e in m.get("sessions") or ()
            ]
            for text, s, where in entries:
                body.append(_summary_cells(text, s, scales[name][1]))
                if s["reason"] and s["reason"] + where not in reasons:
                    reasons.append(s["reason"] + where)
    return body, reasons


def summary_title(data: ExperimentData, scales: dict[str, tuple]) -> str:
    units = {name: scales[name][0] for name in data.metrics if scales[name][0]}
    unit = f" ({', '.join(f'{k}: {u}' for k, u in units.items())})" if units else ""
    title = f"summaries{unit}: the mean's interval is t(G-1) over G cluster means"
    if session_count(data) > 1:
        title += f";\n{SPREAD}"
    return title


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
    "trial_units",
]
