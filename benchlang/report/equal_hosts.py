"""Equal hosts that disagree: the check of ``design { redundancy N }`` (DataMill §4.2) per
metric, shown by ``run`` and ``analyze``, in ``analyze --json`` and the record."""

from __future__ import annotations

import sys
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table
from benchlang.stats.equal_hosts import EqualHosts


@attrs.frozen
class HostAgreement:
    """One metric's equal-hosts check, with the names its codes stand for."""

    metric: str
    result: EqualHosts
    hosts: tuple[str, ...]
    labels: dict[int, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "method": "equal_hosts",
            "alpha": self.result.alpha,
            "configurations": [
                {
                    "configuration": self.labels[c.configuration],
                    "hosts": {
                        self.hosts[h]: {"n": n, "median": m}
                        for h, n, m in zip(c.hosts, c.counts, c.medians, strict=True)
                    },
                    "delta_percent": None if np.isnan(c.delta_percent) else c.delta_percent,
                    "p": c.p,
                    "adjusted_p": c.adjusted_p,
                    "differ": c.differ,
                    "not_tested": c.why,
                }
                for c in self.result.configurations
            ],
        }

    def findings(self) -> list[str]:
        """One sentence per configuration whose equal hosts differ (the "what failed" lines)."""
        return [
            f"{self.metric} of {self.labels[c.configuration]} differs between equal hosts "
            + ", ".join(
                f"{self.hosts[h]} (median {m:.4g})" for h, m in zip(c.hosts, c.medians, strict=True)
            )
            + f": Δ {c.delta_percent:.3g}%, Holm-adjusted p {c.adjusted_p:.2g} < {self.result.alpha:g}"
            for c in self.result.differing
        ]


def host_agreement(data: ExperimentData) -> list[HostAgreement]:
    """Every metric's equal-hosts check, when the design is redundant (else nothing)."""
    settings = data.experiment.equal_hosts
    if settings is None:
        return []
    from benchlang.stats.registry import statistics_methods

    check = statistics_methods()["equal_hosts"].load()
    names, host = np.unique(data.table.host.astype(str), return_inverse=True)
    labels = {c: label for c, label, _, _ in data.configurations()}
    out = []
    for name, metric in data.metrics.items():
        result = check(metric.values, host, data.table.configuration, **settings)
        if result.configurations:
            out.append(HostAgreement(name, result, tuple(str(n) for n in names), labels))
    return out


def render_host_agreement(found: list[HostAgreement], stream: TextIO | None = None) -> None:
    """The table of equal hosts per configuration, and a note for each that disagrees."""
    out = stream or sys.stdout
    for agreement in found:
        rows = []
        for c in agreement.result.configurations:
            hosts = ", ".join(
                f"{agreement.hosts[h]} ({n}: {m:.4g})"
                for h, n, m in zip(c.hosts, c.counts, c.medians, strict=True)
            )
            verdict = "DIFFER" if c.differ else "agree" if c.p is not None else "not tested"
            p = "-" if c.adjusted_p is None else f"{c.adjusted_p:.2g}"
            rows.append(
                [agreement.labels[c.configuration], hosts, f"{c.delta_percent:.3g}", p, verdict]
            )
        render_table(
            ["configuration", "hosts (n: median)", "Δ%", "p (Holm)", "result"],
            rows,
            title=(
                f"equal hosts, {agreement.metric} (redundancy, DataMill §4.2): Kruskal-Wallis "
                f"per configuration, Holm over {len(rows)}, alpha {agreement.result.alpha:g}"
            ),
            stream=out,
        )
        for line in agreement.findings():
            out.write(f"note: {line}: a host-specific effect the hardware levels do not explain\n")
        for c in agreement.result.untested:
            out.write(f"note: {agreement.labels[c.configuration]}: not tested: {c.why}\n")
