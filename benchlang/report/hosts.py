"""The hosts that ran a store's trials in one line each, and a warning for each fact that
differs between them: shared by ``results``, ``analyze``, the record, the exports and the
HTML report."""

from __future__ import annotations

from benchlang.report.data import ExperimentData

COMPARED_FACTS = ("cpu_model", "governor", "kernel")
"""Host facts whose differences between hosts are warned about."""


def host_warnings(data: ExperimentData) -> list[str]:
    """One warning per fact in ``COMPARED_FACTS`` that differs between hosts that ran trials."""
    used = sorted({str(h) for h in data.table.host})
    facts = {h: data.hosts.get(h, {}) for h in used}
    out = []
    for key in COMPARED_FACTS:
        seen: dict[str, list[str]] = {}
        for host in used:
            if key in facts[host]:
                seen.setdefault(str(facts[host][key]), []).append(host)
        if len(seen) > 1:
            parts = "; ".join(f"{v} on {', '.join(hs)}" for v, hs in sorted(seen.items()))
            out.append(f"warning: trials ran on hosts whose {key} differs: {parts}")
    return out


def host_lines(data: ExperimentData) -> list[str]:
    """One short line per host that ran trials: CPU, cores, governor, kernel."""
    used = sorted({str(h) for h in data.table.host})
    lines = []
    for host in used:
        f = data.hosts.get(host, {})
        parts = [
            f.get("cpu_model"),
            f"{f['cores']} cores" if "cores" in f else None,
            f"governor {f['governor']}" if "governor" in f else None,
            f.get("kernel"),
        ]
        text = ", ".join(p for p in parts if p) or "no facts recorded"
        where = f" ({f['address']})" if f.get("address") else ""
        lines.append(f"host {host}{where}: {text}")
    return lines
