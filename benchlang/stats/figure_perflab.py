"""The numbers of Perflab's figures (Bakshy & Frachtenberg, "Design and Analysis of
Benchmarking Experiments for Distributed Internet Services", WWW 2015), from an A/B layout's
trials and the A/B statistics (``stats.ab``): Fig. 1 (``requests``), 3 (``timeline``), 2/4
(``se-curves``), 5/6 (``aa-estimates``), 7 (``aa-ladder``) and 8 (``aa-empirical``);
docs/figures.md. Values are in the metric's own unit; ``meta["factor"]`` turns them into the
unit the CLI prints (``report.table.metric_scale``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchlang.stats.ab.simulate import AAResult, SchemeResult
from benchlang.stats.ab.sweep import SESweep
from benchlang.stats.binomial_rate import RateInterval, binomial_band, clopper_pearson
from benchlang.stats.figure_data import FigureData, spaced

PAPER = "Perflab (Bakshy & Frachtenberg, WWW 2015)"
NAN = float("nan")
TIMELINE_POINTS = 2000
"""Trials drawn per batch panel of ``timeline``, evenly spaced in position beyond it."""
SCHEME_WORDS = {"host": "host-clustered", "host_block": "host-block-clustered"}


def far_view(y: np.ndarray, unit: str, factor: float) -> tuple[dict[str, object], list[str]]:
    """When a few trials lie far out, the y range that keeps the rest readable (``meta``'s
    ``y_view``, in the metric's own unit) and a note naming them; else nothing. Far: beyond
    Tukey's far-out fences Q1 − 3 IQR and Q3 + 3 IQR (Exploratory Data Analysis, 1977, §2.4),
    and at most 1% of the trials (at least one), so a slow mode of many trials is drawn, not
    cut."""
    y = np.asarray(y, dtype=float)
    y = y[np.isfinite(y)]
    if y.size < 4:
        return {}, []
    q1, q3 = np.percentile(y, [25, 75])
    reach = 3.0 * (q3 - q1)
    far = (y < q1 - reach) | (y > q3 + reach)
    if reach <= 0 or not far.any() or far.sum() > max(1, 0.01 * y.size):
        return {}, []
    rest = y[~far]
    margin = 0.05 * float(rest.max() - rest.min()) or abs(float(rest.max())) * 0.05 or 1.0
    values = ", ".join(f"{v / factor:.4g}" for v in np.sort(y[far])[:5])
    k = int(far.sum())
    note = (
        f"{k} trial{'s' * (k > 1)} far outside the rest ({values}{' ...' * (k > 5)} {unit}) "
        "beyond the drawn range, so the others are not flattened"
    )
    return {"y_view": [float(rest.min() - margin), float(rest.max() + margin)]}, [note]


def requests(
    y: np.ndarray,
    version: np.ndarray,
    request: np.ndarray,
    versions: tuple[str, str],
    metric: str,
    meta: Mapping[str, Any],
) -> FigureData:
    """Fig. 1: the distribution of each request's trials under each version (quartiles, extremes,
    mean), requests ordered by their median over both versions: how much requests differ
    against how much one request varies (the request and residual terms of Eq. 3-4)."""
    y, version, request = np.asarray(y, float), np.asarray(version), np.asarray(request)
    names = np.unique(request)
    medians = np.array([np.median(y[request == r]) for r in names])
    rows = []
    for r in names[np.argsort(medians, kind="stable")]:
        for v, vname in enumerate(versions):
            x = y[(request == r) & (version == v)]
            if x.size:
                q = np.quantile(x, [0.0, 0.25, 0.5, 0.75, 1.0])
                rows.append((str(r), vname, int(x.size), *map(float, q), float(x.mean())))
    caption = (
        f"{metric} of every request under each version ({versions[0]}: control, {versions[1]}: "
        "treatment): a box per request and version (quartiles, whiskers at the extremes, the "
        f"mean marked), {names.size} requests ordered by their median. The spread between "
        "requests beside the spread within one is what the request term of the model "
        f"(Eq. 3-4) describes. After {PAPER} Fig. 1."
    )
    view, notes = far_view(y, _unit(meta), float(meta.get("factor") or 1.0))
    return FigureData(
        "requests",
        f"{PAPER} Fig. 1",
        caption,
        ("request", "version", "trials", "min", "q1", "median", "q3", "max", "mean"),
        rows,
        tuple(notes),
        {**meta, "versions": list(versions), **view},
    )


def _unit(meta: Mapping[str, Any]) -> str:
    """The unit the CLI prints for the metric, which the drawing's axes use."""
    return str(meta.get("display_unit") or meta.get("unit") or "the metric's unit")


def batch_offsets(y: np.ndarray, version: np.ndarray, batch: np.ndarray) -> np.ndarray:
    """Each trial's batch mean minus its version's mean: the batch's host, host x batch and
    request effects together (Eq. 3-4 cannot split them within one batch)."""
    y, version = np.asarray(y, float), np.asarray(version)
    inverse = np.unique(np.asarray(batch), return_inverse=True)[1]
    batch_mean = np.bincount(inverse, y) / np.bincount(inverse)
    version_mean = np.array(
        [y[version == v].mean() if (version == v).any() else NAN for v in (0, 1)]
    )
    offsets: np.ndarray = batch_mean[inverse] - version_mean[version]
    return offsets


def timeline(
    y: np.ndarray,
    version: np.ndarray,
    host: np.ndarray,
    batch: np.ndarray,
    position: np.ndarray,
    versions: tuple[str, str],
    components: Mapping[str, float] | None,
    metric: str,
    meta: Mapping[str, Any],
) -> FigureData:
    """Fig. 3: each trial's value by its position in its host batch, a panel per batch (one
    version on one host after a reset, §2.2), with the batch's offset from its version's mean;
    the variance components fitted by moments (§3) say how much hosts and batches weigh."""
    y, version, host = np.asarray(y, float), np.asarray(version), np.asarray(host)
    batch, position = np.asarray(batch), np.asarray(position)
    offset = batch_offsets(y, version, batch)
    rows, thinned = [], []
    for b in np.unique(batch):
        idx = np.flatnonzero(batch == b)
        idx = idx[np.argsort(position[idx], kind="stable")]
        keep = idx[spaced(idx.size, TIMELINE_POINTS)]
        if keep.size < idx.size:
            thinned.append(f"batch {b}: {keep.size} of {idx.size} trials drawn, evenly spaced")
        rows += [
            (
                int(b),
                str(host[i]),
                versions[int(version[i])],
                int(position[i]),
                float(y[i]),
                float(offset[i]),
            )
            for i in keep
        ]
    factor = float(meta.get("factor") or 1.0)
    view, notes = far_view(y, _unit(meta), factor)
    words = (
        f"; fitted standard deviations in {_unit(meta)} (method of "
        "moments, §3): "
        + ", ".join(f"{k} {max(v, 0.0) ** 0.5 / factor:.3g}" for k, v in components.items())
        if components
        else ""
    )
    caption = (
        f"{metric} of every measured trial by its position in its host batch (one version on "
        "one host, started after the reset), a panel per batch, colour = host, marker = version; "
        "the dashed line is the batch's mean, its offset from its version's mean printed (host, "
        f"host x batch and the batch's requests together){words}. After {PAPER} Fig. 3."
    )
    return FigureData(
        "timeline",
        f"{PAPER} Fig. 3",
        caption,
        ("batch", "host", "version", "position", "value", "batch_offset"),
        rows,
        (*thinned, *notes),
        {**meta, "versions": list(versions), "components": dict(components or {}), **view},
    )


def se_curves(
    sweep: SESweep, current: tuple[str, int, int, int], meta: Mapping[str, Any]
) -> FigureData:
    """Figs. 2 and 4: the SE of the estimated difference against requests per version, a line
    per layout and number of hosts, analytic (§4.2.1) from the store's fitted variance
    components, with the SD of simulated estimates as points (§6)."""
    rows = [
        (p.layout, p.hosts, p.requests, p.repetitions, p.analytic_se, p.simulated_sd)
        for p in sweep.points
    ]
    kind, H, R, T = current
    caption = (
        f"Standard error of the estimated difference (treatment − control, in "
        f"{_unit(meta)}) against requests per "
        f"version, a panel per layout, a line per number of hosts, with T = {T} repetitions: "
        "analytic from the variance components fitted on this store by moments and made "
        "conservative (§4.2.1), points the SD of the estimate over "
        f"{sweep.experiments} simulated experiments each (§6). The run's own design ({kind}, "
        f"H = {H}, R = {R}) is ringed. More requests stop helping at the floor the host terms "
        f"set; more hosts lower it. After {PAPER} Figs. 2 and 4."
    )
    return FigureData(
        "se-curves",
        f"{PAPER} Figs. 2, 4",
        caption,
        ("layout", "hosts", "requests", "repetitions", "analytic_se", "simulated_sd"),
        rows,
        sweep.skipped,
        {**meta, "layout": kind, "hosts": H, "requests": R, "repetitions": T},
    )


def _rate_interval(s: SchemeResult) -> RateInterval | None:
    """The false positive rate over the experiments the scheme could test (none when one
    cluster holds a version's trials: ``SchemeResult.degenerate``)."""
    return clopper_pearson(s.rejections, s.tested) if s.tested else None


def _rate_words(result: AAResult, cluster: str) -> str:
    s = next(s for s in result.schemes if s.cluster == cluster)
    ci = _rate_interval(s)
    if ci is None:
        return (
            "no false positive rate: one cluster holds each version's trials, so every "
            "bootstrap replicate gives the same difference (SE 0)"
        )
    return (
        f"{100 * ci.rate:.1f}% false positives (95% Clopper-Pearson {100 * ci.low:.1f}-"
        f"{100 * ci.high:.1f}%) at α = {result.alpha:g}"
    )


def aa_estimates(
    results: Mapping[str, tuple[AAResult, str]], meta: Mapping[str, Any], notes: Sequence[str] = ()
) -> FigureData:
    """Figs. 5 and 6: per layout, the estimates of simulated A/A experiments (their spread is
    the true SE) beside the bootstrap's view of them (each experiment's bootstrap SE), from
    the store's fitted components at its own H, R, T (§6)."""
    rows, said = [], []
    for kind, (res, cluster) in results.items():
        s = next(s for s in res.schemes if s.cluster == cluster)
        rejected = np.abs(s.estimates) > s.ses * _z(res.alpha)
        rows += [
            (kind, cluster, i, float(e), float(se), bool(r))
            for i, (e, se, r) in enumerate(zip(s.estimates, s.ses, rejected, strict=True))
        ]
        said.append(
            f"{kind}: SD of the estimates {res.simulated_sd:.3g}, analytic SE "
            f"{res.analytic_se:.3g}, mean {SCHEME_WORDS.get(cluster, cluster)} bootstrap SE "
            f"{s.mean_se if s.tested else 0:.3g}; {_rate_words(res, cluster)}"
        )
    first = next(iter(results.values()))[0]
    caption = (
        f"Estimates of {first.experiments} simulated A/A experiments per layout (histogram; the "
        "true difference is 0) beside the normal curve of the bootstrap's median SE (dashed) "
        "and of the analytic SE (dotted); each layout analysed with host clusters (host blocks "
        f"in request_balanced), {first.replicates} replicates, at the run's H = {first.hosts}, "
        f"R = {first.requests}, T = {first.repetitions} and its fitted components. "
        + "; ".join(said)
        + f". After {PAPER} Figs. 5 and 6."
    )
    return FigureData(
        "aa-estimates",
        f"{PAPER} Figs. 5, 6",
        caption,
        ("layout", "cluster", "experiment", "estimate", "bootstrap_se", "false_positive"),
        rows,
        tuple(notes),
        {**meta, "alpha": first.alpha},
    )


def _z(alpha: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2))


def _ranked(
    names: Sequence[object], estimate: np.ndarray, low: np.ndarray, high: np.ndarray, null: float
) -> list[tuple[Any, ...]]:
    """(rank, experiment, estimate, low, high, false positive) ranked by estimate."""
    order = np.argsort(estimate, kind="stable")
    return [
        (
            rank,
            names[i],
            float(estimate[i]),
            float(low[i]),
            float(high[i]),
            bool(low[i] > null or high[i] < null),
        )
        for rank, i in enumerate(order)
    ]


LADDER_COLUMNS = ("rank", "experiment", "estimate", "low", "high", "false_positive")


def aa_ladder(
    result: AAResult, cluster: str, meta: Mapping[str, Any], notes: Sequence[str] = ()
) -> FigureData:
    """Fig. 7: the intervals of simulated A/A experiments of the run's own layout, ranked by
    their estimate; those that exclude 0 are false positives, about α of them when the
    interval is honest (§6)."""
    s = next(s for s in result.schemes if s.cluster == cluster)
    half = _z(result.alpha) * s.ses
    rows = _ranked(
        list(range(s.estimates.size)), s.estimates, s.estimates - half, s.estimates + half, 0.0
    )
    ci = _rate_interval(s)
    caption = (
        f"{100 * (1 - result.alpha):g}% intervals of {result.experiments} simulated A/A "
        f"experiments of the run's layout ({result.layout}, H = {result.hosts}, R = "
        f"{result.requests}, T = {result.repetitions}, its fitted components), "
        f"{SCHEME_WORDS.get(cluster, cluster)} bootstrap with {result.replicates} replicates, "
        f"ranked by estimate; red: the interval excludes 0 (a false positive). "
        f"{_rate_words(result, cluster)}. After {PAPER} Fig. 7."
    )
    return FigureData(
        "aa-ladder",
        f"{PAPER} Fig. 7",
        caption,
        LADDER_COLUMNS,
        rows,
        tuple(notes),
        {
            **meta,
            "alpha": result.alpha,
            **(
                {"rate": ci.rate, "rate_low": ci.low, "rate_high": ci.high}
                if ci is not None
                else {}
            ),
        },
    )


def aa_ladder_runs(
    test: str,
    runs: Sequence[str],
    estimate: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    no_change: float,
    alpha: float,
) -> FigureData:
    """Fig. 7 from real A/A runs (``aa-check --ladder``): each store's interval of one compare,
    ranked by estimate; those that exclude no change (1 for a ratio, 0 for a difference) are
    false positives."""
    estimate, low, high = (np.asarray(a, float) for a in (estimate, low, high))
    rows = _ranked(list(runs), estimate, low, high, no_change)
    ci = clopper_pearson(sum(r[5] for r in rows), len(rows))
    scale = "ratio" if no_change == 1.0 else "difference"
    caption = (
        f"{100 * (1 - alpha):g}% intervals of {test} in {len(rows)} real A/A runs (stores whose "
        f"two versions are identical), ranked by estimate; red: the interval excludes "
        f"{no_change:g} (a false positive). {ci.count} of {ci.runs} ({100 * ci.rate:.1f}%, 95% "
        f"Clopper-Pearson {100 * ci.low:.1f}-{100 * ci.high:.1f}%) at α = {alpha:g}. After "
        f"{PAPER} Fig. 7."
    )
    return FigureData(
        "aa-ladder",
        f"{PAPER} Fig. 7",
        caption,
        LADDER_COLUMNS,
        rows,
        (),
        {
            "alpha": alpha,
            "rate": ci.rate,
            "rate_low": ci.low,
            "rate_high": ci.high,
            "no_change": no_change,
            "x_label": "A/A run (store), ranked by estimate",
            "y_label": f"{test}: treatment {'/' if scale == 'ratio' else '−'} control",
        },
    )


def aa_empirical(
    tests: Sequence[tuple[str, int, int, float]],
    notes: Sequence[str] = (),
    confidence: float = 0.95,
) -> FigureData:
    """Fig. 8: the empirical Type I error of each compare (metric, method) over real A/A runs
    (stores of a spec whose two versions are identical): false positives / runs with its
    Clopper-Pearson interval, beside the band in which an honest test at its level ``alpha``
    lands with ``confidence`` when the runs are independent (Binomial(runs, alpha) / runs)."""
    rows = []
    for label, runs, positives, alpha in tests:
        ci = clopper_pearson(positives, runs, confidence)
        lo, hi = binomial_band(runs, alpha, confidence)
        rows.append((label, runs, positives, alpha, ci.rate, ci.low, ci.high, float(lo), float(hi)))
    levels = sorted({t[3] for t in tests})
    caption = (
        "Empirical Type I error of each compare over real A/A runs (stores whose two versions "
        "are identical): the share of runs whose interval excludes no change, with its "
        f"{100 * confidence:g}% Clopper-Pearson interval; the grey band is where the rate of an "
        f"honest test at its level (α = {', '.join(f'{a:g}' for a in levels)}) falls with "
        f"{100 * confidence:g}% probability over that many independent runs (binomial). After "
        f"{PAPER} Fig. 8."
    )
    return FigureData(
        "aa-empirical",
        f"{PAPER} Fig. 8",
        caption,
        (
            "test",
            "runs",
            "false_positives",
            "alpha",
            "rate",
            "low",
            "high",
            "band_low",
            "band_high",
        ),
        rows,
        tuple(notes),
        {"confidence": confidence},
    )
