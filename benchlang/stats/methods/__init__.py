"""benchlang's built-in statistics methods: declarations only (cheap to import), registered in
benchlang's pyproject under ``benchlang.statistics`` exactly as a third party registers its own.
Each declaration names its implementation, imported when results are computed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchlang.stats.contract import Method, Parameter
from benchlang.stats.methods.comparisons import (
    BOOTSTRAP,
    EQUIVALENCE,
    MANN_WHITNEY,
    MEDIAN_RATIO,
    MIXED_EFFECTS,
)

P = Parameter

THOMPSON = Method(
    "thompson",
    "kpi",
    "non-parametric confidence bound of a percentile (the KPI): one-sided, or with bound both "
    "the equal-tailed two-sided interval",
    "Jacob et al., TriScale, JSys 1(1) 2021, §4.2, Eq. 1-3; Thompson, Ann. Math. Stat. 7, 1936; "
    "two-sided: Hahn & Meeker, Statistical Intervals, 1991, §5.2",
    "benchlang.stats.kpi:kpi",
    (
        P("percentile", "percentile", "the percentile bounded, e.g. 50 or 95", required=True),
        P("confidence", "percent", "confidence of the bound", required=True),
        P(
            "bound",
            "choice",
            "which side is bounded (default: the worse side of `better`); both: the "
            "equal-tailed two-sided interval [X_(l), X_(u)]",
            choices=("upper", "lower", "both"),
        ),
        P(
            "exclude",
            "count",
            "largest/smallest samples excluded as outliers (TriScale Eq. 4)",
            default=0,
            minimum=0,
            maximum=1000,
        ),
    ),
    min_samples=1,
)


def _bootstrap_need(settings: Mapping[str, Any]) -> int:
    """The n from which the bootstrap bound's simulated coverage reaches the nominal level
    (``runs auto`` sizes to it); Thompson's sizing where no simulated n does (it then refuses)."""
    from benchlang.stats._kpi_bootstrap_table import needed_n
    from benchlang.stats._orderstat import min_samples

    p, c = settings["percentile"], settings["confidence"]
    bound = settings.get("bound", "upper")
    need, _ = needed_n(p, c, bound, settings.get("interval", "bca"))
    return need if need is not None else min_samples(p / 100, c / 100, bound)


def _bootstrap_refuses(settings: Mapping[str, Any]) -> str | None:
    """Never: where the bootstrap under-covers, the smoothed bootstrap or Thompson's
    order-statistic bound answers with a note (``kpi_bootstrap``)."""
    return None


KPI_BOOTSTRAP = Method(
    "kpi_bootstrap",
    "kpi",
    "bootstrap confidence bound of a percentile (the KPI): BCa or percentile interval",
    "Efron, JASA 82, 1987 (BCa); Efron & Tibshirani, An Introduction to the Bootstrap, 1993, "
    "Eq. 13.5, 14.9-14.15; DiCiccio & Efron, Stat. Sci. 11, 1996; below the n of nominal "
    "simulated coverage (benchmarks/sim_kpi_bootstrap_coverage.py) the smoothed bootstrap "
    "(Hall, DiCiccio & Romano, Ann. Stat. 17, 1989) or Thompson's bound answers, with a note",
    "benchlang.stats.kpi_bootstrap:kpi_bootstrap",
    (
        P("percentile", "percentile", "the percentile bounded, e.g. 50 or 95", required=True),
        P("confidence", "percent", "confidence of the bound", required=True),
        P(
            "bound",
            "choice",
            "which side is bounded (default: the worse side of `better`)",
            choices=("upper", "lower"),
        ),
        P(
            "interval",
            "choice",
            "bias-corrected and accelerated (Efron 1987) or plain percentile interval",
            default="bca",
            choices=("bca", "percentile"),
        ),
        P(
            "replicates",
            "count",
            "bootstrap replicates (the coverage table used 2000)",
            default=2000,
            minimum=1000,
            maximum=100000,
        ),
        P("seed", "count", "seed of the resamples (default: the experiment's seed)"),
    ),
    min_samples=10,
    min_samples_for=_bootstrap_need,
    refuses=_bootstrap_refuses,
)

VARIABILITY = Method(
    "variability",
    "variability",
    "variability score: a percentile range over the series KPIs",
    "Jacob et al., TriScale, JSys 1(1) 2021, §4.3, Eq. 5",
    "benchlang.stats.variability:variability",
    (
        P("percentile", "percentile", "the percentile of the series KPIs", required=True),
        P("confidence", "percent", "confidence of the two-sided range", required=True),
    ),
    min_samples=2,
)

ANOVA = Method(
    "anova",
    "factorial",
    "analysis of variance with interactions (anova M ~ A * B)",
    "de Oliveira et al., DataMill, ICPE 2013, §5; Montgomery, Design and Analysis of Experiments, 8th ed., ch. 5",
    "benchlang.stats.anova:anova",
    min_samples=3,
)

ORDER_DEPENDENCE = Method(
    "order_dependence",
    "order",
    "fixed vs random order per test: Kruskal-Wallis with Bonferroni, eta-squared, CI overlap",
    "Duplyakin et al., OrderSage, USENIX ATC 2023, §4; Kruskal & Wallis, JASA 47, 1952",
    "benchlang.stats.order_dependence:order_dependence",
    (
        P(
            "alpha",
            "number",
            "family-wise significance level",
            default=0.05,
            minimum=0.0,
            maximum=1.0,
        ),
    ),
    min_samples=3,
)

POSITION_EFFECTS = Method(
    "position_effects",
    "order",
    "effect of a trial's position in its round, and carry-over from its predecessor",
    "Duplyakin et al., OrderSage, USENIX ATC 2023, §5; Kruskal & Wallis, JASA 47, 1952",
    "benchlang.stats.position_effects:position_views",
    (P("alpha", "number", "significance level", default=0.05, minimum=0.0, maximum=1.0),),
    min_samples=3,
)

EQUAL_HOSTS = Method(
    "equal_hosts",
    "factorial",
    "do the equal hosts of a redundant design agree? Kruskal-Wallis per configuration, Holm",
    "de Oliveira et al., DataMill, ICPE 2013, §4.2; Kruskal & Wallis, JASA 47, 1952; "
    "Holm, Scand. J. Statist. 6, 1979",
    "benchlang.stats.equal_hosts:equal_hosts",
    (
        P(
            "alpha",
            "number",
            "family-wise level over a metric's configurations",
            default=0.01,
            minimum=0.0,
            maximum=1.0,
        ),
    ),
    min_samples=2,
)

AFTER = Method(
    "after",
    "stopping",
    "a fixed number of trials per configuration and series (stop after N)",
    "Jacob et al., TriScale, JSys 1(1) 2021, §4.5 (sizing)",
    "benchlang.stats.stopping:FixedStop",
    (P("count", "count", "trials per configuration and series", required=True, minimum=1),),
    min_samples=1,
)

KPI_WIDTH = Method(
    "kpi_width",
    "stopping",
    "until the KPI's bound lies within a width of the median (stop when kpi M width < W)",
    "Jacob et al., TriScale, JSys 1(1) 2021, §4.2; sequential use as in Mittal et al., PMBS 2023, §3",
    "benchlang.stats.stopping:KpiWidthStop",
    (
        P("metric", "word", "the metric whose kpi is watched", required=True),
        P(
            "width",
            "amount",
            "largest distance of the bound from the median (a % is relative)",
            required=True,
            minimum=0.0,
        ),
        P("max", "count", "most trials per configuration and series", default=400, minimum=1),
    ),
    min_samples=1,
)

_R = P  # parameters of the adaptive rule (Mittal et al., PMBS 2023, §3-§4)
ADAPTIVE = Method(
    "adaptive",
    "stopping",
    "classify the distribution seen so far and apply a rule fit for it, with a cap",
    "Mittal, Bruel, Milojicic & Frachtenberg, PMBS 2023, §3-§4 (the meta-rule and its classes)",
    "benchlang.stats.stopping:AdaptiveStop",
    (
        _R(
            "ks",
            "number",
            "target Kolmogorov-Smirnov distance to the full distribution",
            default=0.1,
            minimum=0.0,
            maximum=1.0,
        ),
        _R("min", "count", "fewest trials before any rule may stop", default=10, minimum=3),
        _R("max", "count", "most trials (the cap)", default=400, minimum=3),
        _R("window", "count", "trials a stable estimate must hold over", default=20, minimum=1),
        _R("tolerance", "number", "relative half-width that stops (default: from ks)", minimum=0.0),
        _R(
            "constant_spread",
            "number",
            "relative spread below which data count as constant",
            default=0.10,
            minimum=0.0,
        ),
        _R(
            "trend_alpha",
            "number",
            "significance of the trend test",
            default=1e-3,
            minimum=0.0,
            maximum=1.0,
        ),
        _R(
            "acf_threshold",
            "number",
            "autocorrelation above which data count as autocorrelated",
            default=0.8,
            minimum=0.0,
            maximum=1.0,
        ),
        _R(
            "normal_p",
            "number",
            "p-value above which data count as Gaussian",
            default=0.2,
            minimum=0.0,
            maximum=1.0,
        ),
        _R(
            "lognormal_p",
            "number",
            "p-value above which data count as log-normal",
            default=0.2,
            minimum=0.0,
            maximum=1.0,
        ),
        _R(
            "uniform_p",
            "number",
            "p-value above which data count as uniform",
            default=0.2,
            minimum=0.0,
            maximum=1.0,
        ),
        _R(
            "max_components",
            "count",
            "most mixture components for multimodal data",
            default=6,
            minimum=1,
            maximum=10,
        ),
        _R("confidence", "percent", "confidence of the rules' intervals", default=95.0),
        _R(
            "bootstrap_replicates",
            "count",
            "replicates of the block bootstrap",
            default=500,
            minimum=10,
        ),
        _R("metric", "word", "the metric watched (default: the first kpi's)"),
    ),
    min_samples=3,
)

__all__ = [
    "ADAPTIVE",
    "AFTER",
    "ANOVA",
    "BOOTSTRAP",
    "EQUIVALENCE",
    "KPI_BOOTSTRAP",
    "KPI_WIDTH",
    "MANN_WHITNEY",
    "MEDIAN_RATIO",
    "MIXED_EFFECTS",
    "ORDER_DEPENDENCE",
    "POSITION_EFFECTS",
    "THOMPSON",
    "VARIABILITY",
]
