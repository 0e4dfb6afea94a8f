"""Declarations of the built-in comparison methods (kind ``comparison``): parameters as data,
implementations named, imported when results are computed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from benchlang.stats.contract import Method, Parameter

P = Parameter
_CONFIDENCE = P("confidence", "percent", "confidence of the two-sided interval", default=95.0)

BOOTSTRAP = Method(
    "bootstrap",
    "comparison",
    "ratio (or difference) of means by a clustered reweighting bootstrap, k >= 2 levels",
    "Bakshy & Frachtenberg, WWW 2015, §5 (Eq. 5-6); Owen & Eckles, Ann. Appl. Stat. 6(3) 2012; "
    "Cameron, Gelbach & Miller, Rev. Econ. Stat. 90(3) 2008 (few clusters); Donald & Lang, "
    "Rev. Econ. Stat. 89(2) 2007 (cluster-level t from 3 clusters)",
    "benchlang.stats.methods.bootstrap_impl:bootstrap",
    (
        P(
            "cluster",
            "choice",
            "resampled unit (default auto: in a layout host clusters, Perflab §5.2-5.3; "
            "elsewhere the coarsest of host, series, round with at least 5 clusters per level, "
            "or 3 for the cluster-level t)",
            choices=("none", "iid", "request", "host", "host_block", "series", "round", "auto"),
        ),
        P("replicates", "count", "bootstrap replicates", default=10_000, minimum=10),
        P(
            "weights",
            "choice",
            "cluster weights (mean 1, variance 1)",
            default="poisson",
            choices=("poisson", "exponential"),
        ),
        P("log", "boolean", "difference of mean logs (two-version table)", default=False),
        P(
            "interval",
            "choice",
            "two-version interval: normal (CLT) or percentile",
            default="clt",
            choices=("clt", "percentile"),
        ),
        P(
            "pairs",
            "choice",
            "levels compared with the reference, or all pairs",
            default="reference",
            choices=("reference", "all"),
        ),
        P(
            "min_clusters",
            "count",
            "fewest clusters per level for an interval",
            default=5,
            minimum=2,
        ),
        _CONFIDENCE,
    ),
    min_samples=2,  # the clusters per level are checked by the method (min_clusters)
)

MIXED_EFFECTS = Method(
    "mixed_effects",
    "comparison",
    "two versions under crossed random effects of request, host and batch",
    "Bakshy & Frachtenberg, WWW 2015, §3 (Eq. 3-4); REML: Patterson & Thompson, Biometrika 58, "
    "1971; moments: Searle, Casella & McCulloch, Variance Components, 1992, ch. 4",
    "benchlang.stats.methods.bootstrap_impl:mixed_effects",
    (
        P(
            "method",
            "choice",
            "fit: REML (statsmodels), expected mean squares, or auto",
            default="auto",
            choices=("auto", "reml", "moments"),
        ),
    ),
    min_samples=2,
)


def _rank_needs(settings: Mapping[str, Any]) -> int:
    """Fewest trials per level (equal sizes) for an exact Hodges-Lehmann interval to exist:
    the two extreme Walsh differences carry 2 / C(2n, n) of the null mass."""
    alpha = 1.0 - float(settings.get("confidence", 95.0)) / 100.0
    n = 1
    while 2.0 / math.comb(2 * n, n) > alpha:
        n += 1
    return n


MANN_WHITNEY = Method(
    "mann_whitney",
    "comparison",
    "Wilcoxon-Mann-Whitney test with the Hodges-Lehmann shift and its distribution-free CI",
    "Hollander, Wolfe & Chicken, Nonparametric Statistical Methods, 3rd ed., Wiley 2014, "
    "§4.1-4.3 (Eq. 4.3, 4.14, 4.15); Lehmann, Nonparametrics, 1975, §2.6; "
    "Hodges & Lehmann, Ann. Math. Stat. 34, 1963",
    "benchlang.stats.methods.rank_impl:mann_whitney",
    (
        _CONFIDENCE,
        P(
            "exact",
            "choice",
            "exact null distribution (small samples, no ties) or normal approximation",
            default="auto",
            choices=("auto", "exact", "asymptotic"),
        ),
    ),
    min_samples=4,
    min_samples_for=_rank_needs,
)

_CLUSTERED = (
    "the cluster levels are host, series and round (top first); each level is "
    "resampled on its own, a stratified multistage bootstrap"
)

MEDIAN_RATIO = Method(
    "median_ratio",
    "comparison",
    "ratio of medians (treatment / control) with a stratified clustered bootstrap CI",
    "Davison & Hinkley, Bootstrap Methods and their Application, CUP 1997, §3.2, §3.8; "
    "Hesterberg, Am. Stat. 69(4) 2015, §4.2 (expanded percentile interval)",
    "benchlang.stats.methods.ratio_impl:median_ratio",
    (
        _CONFIDENCE,
        P("percentile", "percentile", "the statistic compared (50: the median)", default=50.0),
        P("replicates", "count", "bootstrap replicates", default=2000, minimum=100),
        P(
            "min_clusters",
            "count",
            "fewest top-level units per level for an interval (" + _CLUSTERED + ")",
            default=5,
            minimum=2,
        ),
    ),
    min_samples=5,
)

EQUIVALENCE = Method(
    "equivalence",
    "comparison",
    "TOST equivalence of the ratio of medians within a margin in % (a CI regression gate)",
    "Schuirmann, J. Pharmacokin. Biopharm. 15(6) 1987 (two one-sided tests); Wellek, Testing "
    "Statistical Hypotheses of Equivalence and Noninferiority, 2nd ed., 2010, §1.6-2.2",
    "benchlang.stats.methods.ratio_impl:equivalence",
    (
        P("margin", "percent", "equivalence margin: ratios within [1/(1+m), 1+m]", required=True),
        P(
            "alpha",
            "number",
            "level of each one-sided test",
            default=0.05,
            minimum=0.0005,
            maximum=0.4999,
        ),
        P("percentile", "percentile", "the statistic compared (50: the median)", default=50.0),
        P("replicates", "count", "bootstrap replicates", default=2000, minimum=100),
        P(
            "min_clusters",
            "count",
            "fewest top-level units per level for an interval",
            default=5,
            minimum=2,
        ),
    ),
    min_samples=5,
)
