"""A/B layouts (Bakshy & Frachtenberg, WWW 2015): advice from a pilot run, variance
components for A/A simulation, and a spec's layout. statsmodels and scipy load only here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchlang.app.spec import compile_spec
from benchlang.app.stores import load_store
from benchlang.errors import UserError

if TYPE_CHECKING:
    from benchlang.report.data import ExperimentData
    from benchlang.report.warmup import WarmupAdvice
    from benchlang.stats.ab import Advice, CostModel, MixedEffectsResult, VarianceComponents
    from benchlang.stats.ab.sweep import SESweep


def _pilot_arrays(data: ExperimentData, comparison: Any) -> tuple[np.ndarray, Any]:
    from benchlang.report.comparison_data import ab_arrays

    y, design, n_control, n_treatment = ab_arrays(data, comparison)
    if min(n_control, n_treatment) < 2:
        raise UserError("the pilot has fewer than two successful trials on one side")
    return y, design


def advise_layout(
    spec_path: str | Path,
    pilot: str | Path,
    cost: CostModel,
    *,
    max_hosts: int,
    budget: float | None = None,
    target_se: float | None = None,
) -> tuple[MixedEffectsResult, Advice]:
    """Fit the pilot's variance components, then rank layouts and sizes (§3.1.2)."""
    from benchlang.stats.ab import advise_from_pilot

    experiment = compile_spec(spec_path).experiment
    if not experiment.comparisons:
        raise UserError("the spec has no 'compare METRIC by FACTOR' analysis to advise on")
    if budget is None and target_se is None:
        raise UserError("give --budget or --target-se")
    data = load_store(pilot)
    if data.experiment.name != experiment.name:
        raise UserError(
            f"the pilot store holds experiment {data.experiment.name}, not {experiment.name}"
        )
    y, design = _pilot_arrays(data, experiment.comparisons[0])
    goal = {"budget": budget} if budget is not None else {"target_se": target_se}
    try:
        return advise_from_pilot(y, design, cost, max_hosts=max_hosts, **goal)
    except ValueError as err:
        raise UserError(str(err)) from None


def pilot_warmup(pilot: str | Path) -> list[WarmupAdvice]:
    """Warm-up and cool-down advice from every trial a layout pilot ran, its own warm-up and
    cool-down included (report.warmup; Bakshy & Frachtenberg §2.2)."""
    from benchlang.report.warmup import warmup_advice

    return warmup_advice(load_store(pilot, all_phases=True, every_measure=False))


def pilot_components(pilot: str | Path) -> VarianceComponents:
    """Variance components fitted (method of moments) on a pilot run, made conservative."""
    from benchlang.stats.ab.advisor import conservative_components
    from benchlang.stats.ab.mixed import fit_mixed

    data = load_store(pilot)
    comparison = next((c for c in data.experiment.comparisons if c.method != "anova"), None)
    if comparison is None:
        raise UserError(
            f"the pilot in {pilot} has no 'compare METRIC by FACTOR' analysis to take roles from"
        )
    y, design = _pilot_arrays(data, comparison)
    if comparison.settings.get("log"):
        if (y <= 0).any():
            raise UserError("the pilot's compare uses log true, but some values are not positive")
        y = np.log(y)
    try:
        return conservative_components(fit_mixed(y, design, "moments"))
    except (ValueError, np.linalg.LinAlgError) as err:
        raise UserError(f"cannot fit the pilot's variance components: {err}") from None


def spec_layout(spec_path: str | Path) -> dict[str, Any]:
    """The layout and H, R, T of a spec's A/B design."""
    layout = compile_spec(spec_path).experiment.design.layout
    if layout is None:
        raise UserError(
            f"{spec_path} has no A/B layout",
            "add: design { versions {...} layout fully_balanced { hosts 4 } requests [...] }",
        )
    return {
        "layout": layout.kind,
        "hosts": layout.hosts,
        "requests": layout.requests,
        "repetitions": layout.repetitions,
    }


def layout_sweep(
    spec_path: str | Path,
    pilot: str | Path,
    *,
    hosts: tuple[int, ...] | None = None,
    requests: tuple[int, int] | None = None,
    experiments: int = 200,
    seed: int = 0,
) -> tuple[SESweep, dict[str, Any] | None, str]:
    """The SE of every layout against requests per version and hosts (Bakshy & Frachtenberg
    Figs. 2/4) from the pilot's components; around the spec's layout unless given. Returns the
    sweep, the spec's layout (None without one) and the scale of the SEs: "log" when the
    compare has ``log true`` (as ``pilot_components`` fits), else the metric's unit."""
    from benchlang.stats.ab.sweep import request_grid, se_sweep

    experiment = compile_spec(spec_path).experiment
    layout = experiment.design.layout
    H, R, T = (layout.hosts, layout.requests, layout.repetitions) if layout else (16, 64, 1)
    hosts = hosts or tuple(sorted({max(2, H // 2), H, 2 * H, 4 * H}))
    low, high = requests or (max(2, R // 4), 8 * R)
    if min(hosts) < 1 or not 1 <= low <= high:
        raise UserError("hosts must be positive and requests LOW:HIGH with 1 <= LOW <= HIGH")
    try:
        sweep = se_sweep(
            pilot_components(pilot),
            hosts,
            request_grid(low, high, 9),
            T,
            experiments=experiments,
            seed=seed,
        )
    except ValueError as err:
        raise UserError(str(err)) from None
    compare = next((c for c in experiment.comparisons if c.method != "anova"), None)
    metric = experiment.metric(compare.metric) if compare else None
    scale = "log" if compare and compare.settings.get("log") else (metric and metric.unit) or ""
    return sweep, (spec_layout(spec_path) if layout else None), scale
