"""The report's summary (headline results, the reproducibility record, hashes, what failed),
its hosts (facts side by side, differences highlighted) and its failed trials."""

from __future__ import annotations

from benchlang import __version__
from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import esc, section, table, warning
from benchlang.report.table import format_quantity, metric_scale


def warnings_of(inputs: ReportInputs) -> list[str]:
    """Every assumption that failed or result that is missing, as one sentence each."""
    out = []
    for r in inputs.kpis:
        if r.analysis.descriptive_only:
            out.append(
                f"{r.configuration} / {r.metric}: DESCRIPTIVE ONLY: "
                + "; ".join(r.analysis.reasons)
            )
    for c in inputs.comparisons:
        out.extend(_comparison_failures(c))
    order = inputs.order
    if order is not None and order.dependence is not None and order.dependence.order_matters:
        flagged = ", ".join(order.dependence.significant)
        out.append(f"trial order changed the results of {flagged} (OrderSage fixed-vs-random test)")
    for agreement in inputs.equal_hosts:
        out.extend(agreement.findings())
    for w in inputs.warmup:
        if w.problem:
            out.append(f"warm-up advice for {w.metric}: {w.problem}")
    for p in inputs.profiles:
        if p.problem:
            out.append(f"profile {p.name}: {p.problem}")
    return out


def _comparison_failures(c) -> list[str]:
    """A compare without an interval, one whose result is descriptive only, and an ANOVA
    (or one host's) whose residuals are not normal: each a line of "What failed"."""
    from benchlang.report.html.comparisons import anova_failure, comparison_title

    what = comparison_title(c)
    if c.problem:
        return [f"{what}: no interval: {c.problem}"]
    o = c.outcome
    by_host = o.details.get("anova_hosts") if o is not None else None
    tables = [(f" on host {h.host}", h.anova) for h in by_host.tables] if by_host else []
    if c.comparison.method == "anova" and c.mixed is not None:
        tables.append(("", c.mixed))
    out = [
        f"{what}{where}: DESCRIPTIVE ONLY: {anova_failure(a)}"
        for where, a in tables
        if a is not None and not a.assumptions_hold
    ]
    if o is not None and o.descriptive_only and not tables:
        out.append(f"{what}: DESCRIPTIVE ONLY: {o.descriptive_only}")
    return out


def summary_section(inputs: ReportInputs) -> str:
    """The answer first (the headline as tables), then what failed, in a screen's height; the
    identity of the run, the full headline and the record are in "Details" (``details_section``)."""
    from benchlang.report.hosts import host_warnings
    from benchlang.report.html.answer import answer_html

    data = inputs.data
    t = data.table
    failed = int((~t.ok).sum())
    configurations = len(data.configurations())
    covers = f" in {len(inputs.stores)} sessions" if inputs.stores else ""
    body = [
        f"<p>{len(t):,} trials{covers} of {configurations} configuration"
        + "s" * (configurations != 1)
        + f", {failed} failed; details of the run in <a href='#details'>Details</a>.</p>"
    ]
    body += answer_html(inputs)
    if inputs.note:
        body.append(f"<p class='note'>{esc(inputs.note)}</p>")
    problems = warnings_of(inputs) + host_warnings(data)
    if failed:
        problems.append(f"{failed} of {len(t)} trials failed (see 'failed trials')")
    if problems:
        body.append("<h3>What failed</h3>")
        body += [warning(p, "failed" if "failed" in p else "descriptive") for p in problems]
    else:
        body.append("<p class='ok'>Every assumption that was tested held; no trial failed.</p>")
    return section("summary", "Summary", body)


def details_section(inputs: ReportInputs) -> str:
    """The identity of the run, the full headline (series KPIs, variability, confidences), the
    per-configuration tables and the reproducibility record."""
    from benchlang.report.html.answer import full_headline_html

    data = inputs.data
    exp, plan, t = data.experiment, data.plan, data.table
    identity = [
        ("experiment", exp.name),
        ("title", exp.title or "-"),
        ("stores (sessions)" if inputs.stores else "store", inputs.store),
        ("spec", plan.spec_path or "-"),
        ("spec hash", exp.spec_hash),
        ("plan hash (session 1)" if inputs.stores else "plan hash", plan.plan_hash),
        ("seed", plan.seed),
        ("benchlang", __version__),
        ("trials analysed", len(t)),
        ("failed trials", int((~t.ok).sum())),
    ]
    if data.left_out:
        identity.append(("warm-up/cool-down trials left out", data.left_out))
    body = [table(["", ""], identity, caption="identity of this run")]
    for h in inputs.headline:
        body.append(f"<h3>Headline of {esc(h.metric)} in full</h3>")
        body += full_headline_html(h)
    body += _results_table(inputs)
    body += _record(inputs)
    return section("details", "Details", body)


def _results_table(inputs: ReportInputs) -> list[str]:
    from benchlang.report.results import results_rows

    rows = results_rows(inputs.data)
    names = list(inputs.data.metrics)
    headers = ["configuration", "n", "failed"]
    data = inputs.data
    scales = {
        n: metric_scale(data.metrics[n].values[data.table.ok], data.metrics[n].metric.unit)
        for n in names
    }
    for name in names:
        unit = f" ({scales[name][0]})" if scales[name][0] else ""
        headers += [f"{name} median{unit}", f"{name} min", f"{name} max"]
    body = []
    for row in rows:
        line: list[object] = [row["configuration"]["label"], row["n"], row["failures"]]
        for name in names:
            s, scale = row["metrics"][name], (None, scales[name][1])
            line += [format_quantity(s[k], None, scale=scale) for k in ("median", "min", "max")]
        body.append(line)
    from benchlang.report.results import SUMMARY_HEADERS, summary_table, summary_title

    summaries, reasons = summary_table(data, rows, scales)
    return [
        "<h3>Per configuration</h3>",
        table(headers, body),
        table(SUMMARY_HEADERS, summaries, caption=summary_title(data, scales)),
        *(f"<p class='note'>descriptive only (no interval): {esc(r)}</p>" for r in reasons),
    ]


def _record(inputs: ReportInputs) -> list[str]:
    if not inputs.kpis:
        return []
    from benchlang.report.analysis import build_record
    from benchlang.report.record import PARAMETERS

    record = build_record(inputs.data, inputs.kpis)
    columns = [m.rows() for m in record.metrics]
    rows = [[name] + [col[i][1] for col in columns] for i, name in enumerate(PARAMETERS)]
    headers = ["parameter"] + [m.label() for m in record.metrics]
    return [
        "<h3>Reproducibility record (TriScale §4.4)</h3>",
        table(headers, rows),
        *(f"<p class='mono'>{esc(h)}</p>" for h in record.hosts),
    ]


def hosts_section(inputs: ReportInputs) -> str | None:
    """Facts per host that ran trials; a fact that differs between hosts is highlighted."""
    data = inputs.data
    used = sorted({str(h) for h in data.table.host})
    if not used or not any(data.hosts.get(h) for h in used):
        return None
    keys = sorted({k for h in used for k in data.hosts.get(h, {})})
    rows, differ = [], []
    for i, key in enumerate(keys):
        values = [str(data.hosts.get(h, {}).get(key, "-")) for h in used]
        rows.append([key, *values])
        if len(set(values)) > 1:
            differ.append(i)
    note = (
        f"<p>{len(differ)} fact(s) differ between hosts (highlighted).</p>"
        if differ and len(used) > 1
        else "<p>One host, or no fact differs between hosts.</p>"
    )
    return section(
        "hosts",
        "Hosts",
        [note, table(["fact", *used], rows, highlight=differ if len(used) > 1 else ())],
    )


def failures_section(inputs: ReportInputs) -> str | None:
    if not inputs.failed:
        return None
    rows = [[f.trial, f.label, f.reason or "-", f.exit_status] for f in inputs.failed]
    body = [
        warning(f"{len(inputs.failed)} trials failed", "failed"),
        table(["trial", "configuration", "reason", "exit status"], rows),
    ]
    for f in inputs.failed[:50]:
        body.append(
            f"<details><summary>trial {f.trial} ({esc(f.label)}): output tails</summary>"
            f"<p>stdout</p><pre>{esc(f.stdout_tail or '(empty)')}</pre>"
            f"<p>stderr</p><pre>{esc(f.stderr_tail or '(empty)')}</pre></details>"
        )
    if len(inputs.failed) > 50:
        body.append(
            f"<p class='note'>output tails of the first 50 of {len(inputs.failed)} shown</p>"
        )
    return section("failures", "Failed trials", body)
