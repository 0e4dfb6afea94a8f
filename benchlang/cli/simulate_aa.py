"""``benchlang simulate-aa``: Type I error of each bootstrap scheme for an A/B layout (Bakshy & Frachtenberg §6, Table 3)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from benchlang.app.ab import pilot_components, spec_layout
from benchlang.cli import add_command
from benchlang.design.layouts import LAYOUTS
from benchlang.errors import UserError
from benchlang.jsonout import document, dumps, undefined
from benchlang.report.table import render_table

if TYPE_CHECKING:
    from benchlang.stats.ab import AAResult, VarianceComponents
    from benchlang.stats.ab.simulate import SchemeResult

SCHEME_NAMES = {"none": "iid", "request": "request", "host": "host", "host_block": "host-block"}


def parse_components(text: str) -> VarianceComponents:
    """``request=0.5,host=0.1,...``: standard deviations of the random terms (as in Table 1)."""
    from benchlang.stats.ab.designs import COMPONENTS, VarianceComponents

    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip().replace("-", "_").replace(":", "_")
        if not sep or name not in COMPONENTS:
            raise UserError(
                f"bad component {part!r}",
                hint=f"write name=sd pairs separated by commas; names: {', '.join(COMPONENTS)}",
            )
        try:
            values[name] = float(value)
        except ValueError:
            raise UserError(f"component {name} is not a number: {value!r}") from None
        if not values[name] >= 0:
            raise UserError(f"component {name} must be a standard deviation >= 0")
    if not values:
        raise UserError(
            "no components given", hint="e.g. --components 'request=1,host=0.1,residual=0.1'"
        )
    return VarianceComponents.from_sd(values)


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang simulate-aa``; the lazy table in benchlang.cli calls this."""
    p.description = "Simulate A/A experiments of an A/B layout from variance components (Bakshy & Frachtenberg, WWW 2015, Eq. 3-4) and report the Type I error of the iid, request-, host- and host-block-clustered reweighting bootstraps (§5, §6, Table 3)."
    p.add_argument(
        "spec",
        nargs="?",
        metavar="SPEC",
        help="take the layout, H, R and T from this spec's design",
    )
    p.add_argument("--layout", choices=LAYOUTS, help="default fully_balanced")
    p.add_argument("--hosts", type=int, help="H, all hosts (default 16)")
    p.add_argument("--requests", type=int, help="R, requests per version (default 512)")
    p.add_argument("--repetitions", type=int, help="T, repetitions of each request (default 1)")
    p.add_argument(
        "--pilot",
        metavar="STORE",
        help="fit the components on this pilot run (method of moments) instead of --components",
    )
    p.add_argument(
        "--components",
        help="standard deviations, e.g. 'request=1,host=0.1,request_batch=0.1,host_batch=0.08,residual=0.1'",
    )
    p.add_argument(
        "--experiments", type=int, default=2000, help="simulated A/A experiments (default 2000)"
    )
    p.add_argument(
        "--replicates",
        type=int,
        default=200,
        help="bootstrap replicates per experiment (default 200)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="test level (default 0.05)")
    p.add_argument("--seed", type=int, default=0, help="the simulation's seed (default: 0)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=run)


DEFAULT_DESIGN: dict[str, Any] = {
    "layout": "fully_balanced",
    "hosts": 16,
    "requests": 512,
    "repetitions": 1,
}


def _design(args: argparse.Namespace) -> dict[str, Any]:
    """The layout and H, R, T: from the spec's design, else the options (or their defaults)."""
    given = {k: getattr(args, k) for k in DEFAULT_DESIGN if getattr(args, k) is not None}
    if args.spec is None:
        return {**DEFAULT_DESIGN, **given}
    if given:
        raise UserError(
            f"--{next(iter(given))} cannot be combined with SPEC: the spec's layout sets it"
        )
    return spec_layout(args.spec)


def _components(args: argparse.Namespace) -> VarianceComponents:
    if (args.components is None) == (args.pilot is None):
        raise UserError(
            "give the variance components: --components 'request=1,host=0.1,...' or --pilot STORE"
        )
    if args.components is not None:
        return parse_components(args.components)
    return pilot_components(args.pilot)


def run(args: argparse.Namespace) -> int:
    design = _design(args)
    components = _components(args)
    if args.experiments < 2 or args.replicates < 2:
        raise UserError("--experiments and --replicates must be at least 2")
    if not 0 < args.alpha < 1:
        raise UserError("--alpha must lie in (0, 1)")
    from benchlang.stats.ab.simulate import simulate_aa

    try:
        result = simulate_aa(
            design["layout"],
            design["hosts"],
            design["requests"],
            design["repetitions"],
            components,
            args.experiments,
            args.replicates,
            args.seed,
            alpha=args.alpha,
        )
    except ValueError as err:
        raise UserError(str(err)) from None
    if args.json:
        print(dumps(document("simulate-aa", 1, to_json(result))))
    else:
        report(result)
    return 0


def to_json(result: AAResult) -> dict[str, object]:
    """The simulation with each rate's Monte Carlo interval (Clopper-Pearson, 95%) and every
    experiment's estimate and bootstrap SE per scheme (what ``aa-estimates`` and ``aa-ladder``
    draw)."""
    from benchlang.stats.binomial_rate import clopper_pearson

    return {
        "layout": result.layout,
        "hosts": result.hosts,
        "requests": result.requests,
        "repetitions": result.repetitions,
        "experiments": result.experiments,
        "replicates": result.replicates,
        "alpha": result.alpha,
        "analytic_se": result.analytic_se,
        "simulated_sd": result.simulated_sd,
        "schemes": [
            undefined(
                {
                    "cluster": SCHEME_NAMES[s.cluster],
                    "clusters": s.clusters,
                    "clusters_per_version": list(s.clusters_per_version),
                    "tested": s.tested,
                    "type_i_error": s.rejection_rate,
                    "type_i_error_interval": (
                        clopper_pearson(s.rejections, s.tested).to_dict() if s.tested else None
                    ),
                    "mean_se": s.mean_se,
                    **({"note": _scheme_words(s)} if s.degenerate or s.below_floor else {}),
                    "estimates": s.estimates.tolist(),
                    "ses": s.ses.tolist(),
                },
                {
                    "ses": "fewer than two bootstrap replicates gave both versions weight",
                    "*": "one cluster holds each version's trials: every bootstrap replicate "
                    "gives the same difference (SE 0)",
                },
            )
            for s in result.schemes
        ],
    }


def report(result: AAResult) -> None:
    from benchlang.stats.binomial_rate import clopper_pearson

    rows: list[list[Any]] = []
    notes: dict[str, list[str]] = {}
    for s in result.schemes:
        name = SCHEME_NAMES[s.cluster]
        if s.degenerate or s.below_floor or s.tested < result.experiments:
            notes.setdefault(_scheme_words(s), []).append(name)
        if s.degenerate:
            rows.append([name, s.clusters, "-", "-", 0.0])
            continue
        ci = clopper_pearson(s.rejections, s.tested)
        rows.append([name, s.clusters, s.rejection_rate, f"{ci.low:.3f}-{ci.high:.3f}", s.mean_se])
    title = (
        f"A/A simulation: {result.layout}, H={result.hosts}, R={result.requests}, "
        f"T={result.repetitions}; {result.experiments} experiments x {result.replicates} replicates; "
        f"analytic SE {result.analytic_se:.4g}, simulated SD {result.simulated_sd:.4g}"
    )
    render_table(
        [
            "bootstrap",
            "clusters",
            f"Type I error (alpha={result.alpha:g})",
            "95% Monte Carlo interval",
            "mean SE",
        ],
        rows,
        title,
    )
    for words, names in notes.items():
        print(f"{', '.join(names)}: {words}")
    print(
        f"Monte Carlo interval: Clopper-Pearson over the {result.experiments} simulated "
        "experiments (more --experiments narrow it); per-experiment estimates in --json"
    )


def _scheme_words(s: SchemeResult) -> str:
    """Why a scheme's rate is missing, rests on fewer experiments, or is not what benchlang's
    own analysis would report (``bootstrap.MIN_CLUSTERS``)."""
    from benchlang.stats.ab.bootstrap import MIN_CLUSTERS

    counts = sorted(set(s.clusters_per_version))
    per_version = " or ".join(str(c) for c in counts)
    if s.degenerate:
        return (
            f"{per_version} cluster(s) per version: with one, every bootstrap replicate gives "
            "the same difference (SE 0), so no rate is given"
        )
    words = []
    if s.below_floor:
        words.append(
            f"{per_version} clusters per version, under the {MIN_CLUSTERS} benchlang's analysis "
            "needs for an interval (Cameron, Gelbach & Miller 2008): what such a bootstrap "
            "would do, not an interval benchlang gives"
        )
    untested = s.estimates.size - s.tested
    if untested:
        words.append(
            f"{untested} experiment(s) without an SE (every replicate left a version without "
            "weight) are not in the rate"
        )
    return "; ".join(words)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang simulate-aa`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "simulate-aa")
