"""Perflab's figures (Bakshy & Frachtenberg, WWW 2015): Fig. 1 ``requests``, 3 ``timeline``,
2/4 ``se-curves``, 5/6 ``aa-estimates``, 6 ``bootstrap-model``, 7 ``aa-ladder``, 8
``aa-empirical``, from an A/B layout's trials. Numbers from ``stats.figure_perflab`` (and
``stats.figure_perflab_model`` for Fig. 6); drawing here (matplotlib, lazily).

The two versions take the palette's first two colours in every Perflab figure (a layout's
configurations are version x request, too many to tell apart); values are drawn in the unit
the CLI prints (``report.table.metric_scale``). Drawings in ``perflab_draw``.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.model import REQUEST_FACTOR, VERSION_FACTOR
from benchlang.report.figures import FigureKind, Inputs, NotApplicable
from benchlang.report.figures.perflab_draw import (
    LAYOUT_ORDER,
    draw_aa_empirical,
    draw_aa_estimates,
    draw_aa_ladder,
    draw_bootstrap_model,
    draw_requests,
    draw_se_curves,
    draw_timeline,
)
from benchlang.stats import figure_perflab as fp
from benchlang.stats.figure_data import FigureData

AA_WORK = 4_000_000
"""Simulated values (experiments x trials) one A/A figure may draw: the experiments shrink
from 400 (at most) for large runs, at least 50, and the caption says how many."""


@attrs.frozen
class ABView:
    """One metric's measured trials of an A/B layout with their roles (§3, Eq. 3-4)."""

    metric: str
    unit: str
    y: np.ndarray
    version: np.ndarray
    request: np.ndarray
    host: np.ndarray
    batch: np.ndarray
    position: np.ndarray
    versions: tuple[str, str]
    texts: tuple[str, str]
    layout: Any
    seed: int
    notes: tuple[str, ...]
    meta: dict

    @property
    def design(self) -> Any:
        from benchlang.stats.ab.simulate import ABDesign

        codes = [np.unique(a, return_inverse=True)[1] for a in (self.request, self.host)]
        return ABDesign(self.version, codes[0], codes[1], self.batch)


def ab_view(inputs: Inputs, metric: str | None, figure: str) -> ABView:
    """The trials of ``metric`` (default: the first compared by version) with their roles."""
    from benchlang.report.table import metric_scale

    data = inputs.data
    exp = data.experiment
    if exp.design.layout is None:
        raise NotApplicable(
            f"{figure} draws an A/B layout (Bakshy & Frachtenberg) and this spec has none",
            hint='design { versions { a "..." b "..." } layout fully_balanced { hosts 4 '
            "requests 32 } requests [...] } (docs/ab-designs.md)",
        )
    if not exp.metrics:
        raise NotApplicable(f"{figure} draws a metric and the spec has none")
    compared = [c.metric for c in exp.comparisons if c.by == VERSION_FACTOR]
    name = metric or (compared[0] if compared else exp.metrics[0].name)
    if exp.metric(name) is None:
        raise NotApplicable(
            f"{figure}: no metric {name!r}",
            hint="metrics: " + ", ".join(m.name for m in exp.metrics),
        )
    factor = exp.factor(VERSION_FACTOR)
    versions = (str(factor.levels[0]), str(factor.levels[1]))
    t = data.table
    y = data.metrics[name].values
    level = [lv.get(VERSION_FACTOR) for lv in t.levels]
    version = np.array([versions.index(str(v)) if str(v) in versions else -1 for v in level])
    keep = t.ok & np.isfinite(y) & (version >= 0)
    notes = []
    if (~keep).any():
        notes.append(f"{int((~keep).sum())} trials failed or have no {name}: not drawn")
    if data.left_out:
        notes.append(f"{data.left_out} warm-up and cool-down trials: run, not analysed, not drawn")
    if keep.sum() < 4 or np.unique(version[keep]).size < 2:
        raise NotApplicable(f"{figure}: too few successful trials of both versions")
    unit = exp.metric(name).unit or ""
    display, scale = metric_scale(y[keep], unit)
    requests = np.array([str(lv.get(REQUEST_FACTOR)) for lv in t.levels], dtype=object)
    return ABView(
        name,
        unit,
        np.asarray(y[keep], float),
        version[keep].astype(np.int8),
        requests[keep],
        np.asarray(t.host[keep]),
        np.asarray(t.round[keep]),
        np.asarray(t.position[keep]),
        versions,
        (str(factor.text(factor.levels[0])), str(factor.text(factor.levels[1]))),
        exp.design.layout,
        int(exp.seed or 0),
        tuple(notes),
        {"metric": name, "unit": unit, "display_unit": display or "", "factor": scale},
    )


def _components(v: ABView, figure: str) -> Any:
    from benchlang.stats.ab.auto import fit_components

    comps = fit_components(v.y, v.design)
    if comps is None:
        raise NotApplicable(f"{figure}: the variance components cannot be fitted on this run")
    return comps


def _with_notes(data: FigureData, notes: tuple[str, ...]) -> FigureData:
    return attrs.evolve(data, notes=(*notes, *data.notes)) if notes else data


def requests_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = ab_view(inputs, metric, "requests")
    data = fp.requests(v.y, v.version, v.request, v.versions, v.metric, v.meta)
    return _with_notes(data, v.notes)


def timeline_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.stats.ab.mixed import fit_mixed

    v = ab_view(inputs, metric, "timeline")
    try:
        comps = fit_mixed(v.y, v.design, "moments").components
    except (ValueError, np.linalg.LinAlgError):
        comps = None
    data = fp.timeline(
        v.y, v.version, v.host, v.batch, v.position, v.versions, comps, v.metric, v.meta
    )
    return _with_notes(data, v.notes)


def se_curves_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.stats.ab.sweep import request_grid, se_sweep

    v = ab_view(inputs, metric, "se-curves")
    lay = v.layout
    hosts = sorted({max(2, lay.hosts // 2), lay.hosts, 2 * lay.hosts, 4 * lay.hosts})
    grid = request_grid(max(2, lay.requests // 4), 8 * lay.requests, 7)
    grid = tuple(sorted({*grid, lay.requests}))  # the run's own design, to ring
    sweep = se_sweep(
        _components(v, "se-curves"), hosts, grid, lay.repetitions, simulate_every=3, seed=v.seed
    )
    data = fp.se_curves(sweep, (lay.kind, lay.hosts, lay.requests, lay.repetitions), v.meta)
    return _with_notes(data, v.notes)


def _cluster(kind: str) -> str:
    return "host_block" if kind == "request_balanced" else "host"


def _simulate(v: ABView, kind: str, comps: Any, most: int) -> tuple[Any, str]:
    from benchlang.stats.ab.simulate import simulate_aa

    lay = v.layout
    experiments = int(np.clip(AA_WORK // (2 * lay.requests * lay.repetitions), 50, most))
    result = simulate_aa(
        kind,
        lay.hosts,
        lay.requests,
        lay.repetitions,
        comps,
        experiments,
        100,
        v.seed,
        schemes=(_cluster(kind),),
    )
    return result, _cluster(kind)


def _few(kinds_results: list[tuple[str, Any]]) -> list[str]:
    """Layouts whose host clusters per version are too few for a bootstrap interval, said once
    per count."""
    from benchlang.design.layouts import hosts_per_version
    from benchlang.stats.ab.bootstrap import MIN_CLUSTERS

    by_k: dict[int, list[str]] = {}
    for kind, result in kinds_results:
        k = hosts_per_version(kind, result.hosts)
        if k < MIN_CLUSTERS:
            by_k.setdefault(k, []).append(kind)
    return [
        f"{', '.join(kinds)}: {k} host cluster{'s' * (k != 1)} per version, under the "
        f"{MIN_CLUSTERS} a bootstrap interval needs (Cameron, Gelbach & Miller 2008); drawn as "
        "they come out, not claimed valid"
        for k, kinds in by_k.items()
    ]


def aa_estimates_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.design.layouts import check_layout

    v = ab_view(inputs, metric, "aa-estimates")
    comps = _components(v, "aa-estimates")
    lay = v.layout
    results, notes = {}, list(v.notes)
    for kind in LAYOUT_ORDER:
        try:
            check_layout(kind, lay.hosts, lay.requests, lay.repetitions)
        except ValueError as err:
            notes.append(f"{kind}: not simulated ({err})")
            continue
        results[kind] = _simulate(v, kind, comps, 400)
    notes += _few([(kind, res) for kind, (res, _c) in results.items()])
    return fp.aa_estimates(results, v.meta, notes)


def bootstrap_model_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.stats import figure_perflab_model as fm
    from benchlang.stats.ab.auto import host_scheme
    from benchlang.stats.ab.bootstrap import MIN_CLUSTERS, clusters_per_version

    v = ab_view(inputs, metric, "bootstrap-model")
    design = v.design
    cluster, codes = host_scheme(design)
    per_version = clusters_per_version(design.version, codes)
    if min(per_version) < 2:
        raise NotApplicable(
            f"bootstrap-model: one {cluster} cluster holds a version's trials, so every "
            "bootstrap replicate gives the same difference (SE 0)",
            hint="a layout with several hosts per version (docs/ab-designs.md)",
        )
    notes = list(v.notes)
    if min(per_version) < MIN_CLUSTERS:
        notes.append(
            f"{min(per_version)} {cluster} clusters per version, under the {MIN_CLUSTERS} a "
            "bootstrap interval needs (Cameron, Gelbach & Miller 2008): drawn as it comes out, "
            "not claimed valid"
        )
    check = fm.model_check(
        v.y, design, _components(v, "bootstrap-model"), codes, cluster, seed=v.seed
    )
    return fm.bootstrap_model(check, v.meta, tuple(notes))


def aa_ladder_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = ab_view(inputs, metric, "aa-ladder")
    result, cluster = _simulate(v, v.layout.kind, _components(v, "aa-ladder"), 200)
    return fp.aa_ladder(result, cluster, v.meta, (*v.notes, *_few([(v.layout.kind, result)])))


def aa_empirical_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = ab_view(inputs, metric, "aa-empirical")
    if v.texts[0] != v.texts[1]:
        raise NotApplicable(
            f"aa-empirical counts false positives of A/A runs; this is an A/B store (version "
            f"{v.versions[0]} = {v.texts[0]!r}, {v.versions[1]} = {v.texts[1]!r}), whose real "
            "effect would read as false positives",
            hint="run a spec whose two versions are the same, several times, then "
            "benchlang aa-check STORE... -o aa-empirical.pdf",
        )
    raise NotApplicable(
        "aa-empirical counts false positives over several A/A stores, and this is one",
        hint="benchlang aa-check STORE1 STORE2 ... -o aa-empirical.pdf (docs/ab-designs.md)",
    )


FIGURES = (
    FigureKind(
        "requests",
        "per-request distributions of the metric by version (Perflab Fig. 1)",
        requests_data,
        draw_requests,
    ),
    FigureKind(
        "timeline",
        "value by position in each host batch, colour = host, batch offsets (Perflab Fig. 3)",
        timeline_data,
        draw_timeline,
    ),
    FigureKind(
        "se-curves",
        "SE against requests per layout and hosts, analytic and simulated (Perflab Figs. 2, 4)",
        se_curves_data,
        draw_se_curves,
    ),
    FigureKind(
        "aa-estimates",
        "simulated A/A estimates per layout beside the bootstrap's SE (Perflab Figs. 5, 6)",
        aa_estimates_data,
        draw_aa_estimates,
    ),
    FigureKind(
        "bootstrap-model",
        "the store's bootstrap distribution beside 10,000 estimates simulated from its fitted "
        "model (Perflab Fig. 6)",
        bootstrap_model_data,
        draw_bootstrap_model,
    ),
    FigureKind(
        "aa-ladder",
        "ranked intervals of simulated A/A runs, false positives marked (Perflab Fig. 7)",
        aa_ladder_data,
        draw_aa_ladder,
    ),
    FigureKind(
        "aa-empirical",
        "empirical Type I error per metric over real A/A stores, binomial band (Perflab Fig. 8)",
        aa_empirical_data,
        draw_aa_empirical,
    ),
)
