"""The HTML report (``benchlang report``, ``run --report``): one self-contained page with the
plots each method calls for, every plot with a text alternative and its data in the page.

docs/report.md describes the page; ``render_report`` builds it from ``ReportInputs``.
"""

from __future__ import annotations

from benchlang.report.html.inputs import FailedTrial, ProfileView, ReportInputs

SECTIONS = (
    "summary",
    "sessions",
    "population",
    "figures",
    "details",
    "timescales",
    "order",
    "comparisons",
    "stopping",
    "profile",
    "hosts",
    "failures",
)
"""Section ids in page order: the answer, the figures, then the details; a section is left out
when the store has no data for it."""


def render_report(inputs: ReportInputs, figures: bool = True) -> str:
    """The whole HTML document; without the papers' figures unless ``figures``."""
    from benchlang.report.html.comparisons import ab_section, order_section
    from benchlang.report.html.conditions import profile_section, stopping_section
    from benchlang.report.html.page import document
    from benchlang.report.html.paper_figures import figures_section
    from benchlang.report.html.population import population_section
    from benchlang.report.html.sessions import sessions_section
    from benchlang.report.html.summary import (
        details_section,
        failures_section,
        hosts_section,
        summary_section,
    )
    from benchlang.report.html.timescales import timescales_section

    builders = {
        "summary": (summary_section, "Summary"),
        "sessions": (sessions_section, "Between sessions"),
        "population": (population_section, "Population (TriScale §5.3)"),
        "details": (details_section, "Details"),
        "timescales": (timescales_section, "Timescales (TriScale)"),
        "order": (order_section, "Order analysis"),
        "comparisons": (ab_section, "A/B comparisons"),
        "stopping": (stopping_section, "Stopping"),
        "profile": (profile_section, "Profile"),
        "figures": (figures_section, "Figures of the papers"),
        "hosts": (hosts_section, "Hosts"),
        "failures": (failures_section, "Failed trials"),
    }
    parts = []
    for ident in SECTIONS:
        if ident == "figures" and not figures:
            continue
        build, title = builders[ident]
        html = build(inputs)
        if html:
            parts.append((ident, title, html))
    exp = inputs.data.experiment
    plan = inputs.data.plan
    where = (
        f"{len(inputs.stores)} sessions · stores {inputs.store}"
        if inputs.stores
        else f"plan {plan.plan_hash[:19]} · store {inputs.store}"
    )
    subtitle = f"{exp.title + ' · ' if exp.title else ''}{where}"
    return document(f"benchlang report: {exp.name}", subtitle, parts)


__all__ = ["SECTIONS", "FailedTrial", "ProfileView", "ReportInputs", "render_report"]
