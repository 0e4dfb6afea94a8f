"""``cluster auto`` in an A/B layout: the scheme Perflab validates, and what to do with few hosts
(Bakshy & Frachtenberg, WWW 2015, §5.2-5.3, Fig. 6-8, Table 3).

The paper's A/A tests (§5.2, Table 3; §5.3, Fig. 8) show that host clusters (host blocks in
the request-balanced layout: hosts that ran the same requests) keep the Type I error near the
nominal level in every layout; request clusters treat a request's differences as independent
although they share host (RB) and host x batch (FB) effects, and reject a true A/A hypothesis
far too often in the request- and fully balanced layouts (Table 3: 0.725 and 0.500 at 5%). In
the host-balanced layout the paper's rate is near iid's; benchlang's own simulation with host x
batch effects (benchmarks/sim_cluster_auto.py) finds request clusters liberal there too on two
hosts, so they are not chosen there either. So the rule is, for the layout's two versions:

1. host blocks (= hosts outside RB) with at least 5 per version: the clustered bootstrap (§5);
2. with 3 or 4 (``MIN_CLUSTERS_T``): the cluster-level t interval
   (:mod:`benchlang.stats.ab.fewclusters`, Donald & Lang 2007);
3. fewer (two local slots): request clusters only as a conditional answer, when
   ``CONDITIONAL`` allows it for the layout and the check on the run's own data passes: the
   host x batch variance fitted by moments (:func:`~benchlang.stats.ab.mixed.fit_mixed`), and
   the Type I error of the request-clustered interval simulated on those components with
   simulate-aa's machinery (:func:`~benchlang.stats.ab.simulate.simulate_outcomes`), at most
   ``CONDITIONAL_TYPE1``;
4. otherwise the difference is descriptive, with the advisor's fix: how many hosts give a
   valid interval, and about how wide (:func:`~benchlang.stats.ab.designs.layout_se` on the
   run's components).

The whole rule (choice and check together) was simulated in benchmarks/sim_cluster_auto.py
(docs/ab-designs.md, "cluster auto").
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.design.layouts import hosts_per_version
from benchlang.stats.ab.bootstrap import MIN_CLUSTERS, host_blocks
from benchlang.stats.ab.designs import VarianceComponents, layout_se
from benchlang.stats.ab.fewclusters import MIN_CLUSTERS_T
from benchlang.stats.ab.simulate import ABDesign

CONDITIONAL: dict[str, bool] = {
    "unbalanced": False,
    "request_balanced": False,
    "host_balanced": False,
    "fully_balanced": False,
}
"""Layouts where the conditional request-clustered answer is offered at all, from the whole
rule's simulation (benchmarks/sim_cluster_auto.py): True only where its Type I error stayed
near the nominal level for host x batch variances from 0 up to the request variance."""
CONDITIONAL_TYPE1 = 0.075
"""Largest simulated Type I error (at a nominal 5%) of the request-clustered interval on the
run's components for the conditional answer (1.5 times nominal: a choice of this module, not a
number from the paper; unused while no layout offers the conditional answer)."""
CHECK_EXPERIMENTS = 400
CHECK_REPLICATES = 200


@attrs.frozen
class RequestCheck:
    """The check of the assumption behind request clusters on one run's data."""

    host_batch: float
    request: float
    type1: float
    experiments: int
    passed: bool

    @property
    def share(self) -> float:
        """Host x batch variance as a share of a request mean's variance in its batch, what
        request clusters see (request x batch + residual / T, plus the request variance where
        requests do not run under both versions); nan when that is 0."""
        return self.host_batch / self.request if self.request > 0 else math.nan

    def words(self) -> str:
        share = f"{self.share:.0%}" if math.isfinite(self.share) else "n/a"
        return (
            f"host x batch variance estimated at {share} of a request mean's variance; simulated "
            f"Type I error {self.type1:.1%} of request clusters on this run's components "
            f"({self.experiments} A/A experiments, nominal 5%)"
        )


@attrs.frozen
class HostFix:
    """The advisor's fix: ``hosts`` in all give a valid interval of about ± ``half_width``
    (the cluster-level t's), ``bootstrap_hosts`` one of about ± ``bootstrap_half_width``."""

    hosts: int
    added: int
    clusters: int
    half_width: float | None
    scale: str
    bootstrap_hosts: int = 0
    bootstrap_half_width: float | None = None

    def _size(self, half: float | None) -> str:
        if half is None or not math.isfinite(half):
            return ""
        if self.scale == "ratio" and half > 0.2:  # far from symmetric as a percent
            return f" of about ×/÷{math.exp(half):.3g}"
        if self.scale == "ratio":
            return f" of about ±{100 * math.expm1(half):.2g}%"
        return f" of about ±{half:.3g}"

    def words(self) -> str:
        s = "" if self.added == 1 else "s"
        text = (
            f"{self.added} more host{s} ({self.hosts} in all) give{'s' if not s else ''} a valid "
            f"host-clustered interval{self._size(self.half_width)}"
        )
        if self.bootstrap_hosts > self.hosts:
            text += (
                f", {self.bootstrap_hosts} hosts one{self._size(self.bootstrap_half_width)}"
                if self.half_width is not None
                else f", {self.bootstrap_hosts} hosts a bootstrap one"
            )
        if self.half_width is not None:
            text += " (sizes from this run's variance components)"
        return text


@attrs.frozen
class ClusterChoice:
    """What ``cluster auto`` chose in a layout, why, and what it assumes."""

    layout: str
    hosts: int
    scheme: str | None
    method: str
    why: str
    assumption: str | None = None
    check: RequestCheck | None = None
    fix: HostFix | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "hosts": self.hosts,
            "scheme": self.scheme,
            "method": self.method,
            "why": self.why,
            "assumption": self.assumption,
            "check": None
            if self.check is None
            else {**attrs.asdict(self.check), "share": _num(self.check.share)},
            "fix": None
            if self.fix is None
            else {**attrs.asdict(self.fix), "words": self.fix.words()},
        }


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def layout_kind(design: ABDesign) -> str:
    """The layout of a two-version design, from who ran what: hosts holding both versions
    (HB, FB) or one (UB, RB); requests run under both versions (RB, FB) or one (UB, HB)."""
    v = np.asarray(design.version)
    both_hosts = all(np.unique(v[design.host == h]).size == 2 for h in np.unique(design.host))
    both_requests = all(
        np.unique(v[design.request == r]).size == 2 for r in np.unique(design.request)
    )
    if both_hosts:
        return "fully_balanced" if both_requests else "host_balanced"
    return "request_balanced" if both_requests else "unbalanced"


def host_scheme(design: ABDesign) -> tuple[str, np.ndarray]:
    """Host blocks (§5.2), named ``host`` where every block is one host."""
    blocks = host_blocks(design.request, design.host)
    same = np.unique(blocks).size == np.unique(design.host).size
    return ("host" if same else "host_block"), blocks


def _per_version(version: np.ndarray, codes: np.ndarray) -> int:
    return min(int(np.unique(codes[version == v]).size) for v in (0, 1))


def fit_components(y: np.ndarray, design: ABDesign) -> VarianceComponents | None:
    """The run's components by moments, made conservative (None when they cannot be fitted)."""
    from benchlang.stats.ab.advisor import conservative_components
    from benchlang.stats.ab.mixed import fit_mixed

    try:
        return conservative_components(fit_mixed(y, design, "moments"))
    except (ValueError, np.linalg.LinAlgError):
        return None


def request_type1(
    design: ABDesign,
    components: VarianceComponents,
    rng: np.random.Generator,
    experiments: int = CHECK_EXPERIMENTS,
    replicates: int = CHECK_REPLICATES,
) -> float:
    """Simulated Type I error of the request-clustered interval (T(G - 1), as compared) on
    these components and this design (simulate-aa's machinery, §6)."""
    from benchlang.stats.ab.levels import compare_levels_many
    from benchlang.stats.ab.simulate import simulate_outcomes

    Y = simulate_outcomes(design, components, experiments, rng)
    out = compare_levels_many(
        Y,
        np.asarray(design.version, dtype=np.int64),
        design.request,
        scale="difference",
        replicates=replicates,
        rng=rng,
    )
    return float(np.mean((out["ci_low"][:, 0] > 0) | (out["ci_high"][:, 0] < 0)))


def check_requests(
    y: np.ndarray,
    design: ABDesign,
    rng: np.random.Generator,
    components: VarianceComponents | None = None,
    experiments: int = CHECK_EXPERIMENTS,
    replicates: int = CHECK_REPLICATES,
) -> RequestCheck | None:
    """The conditional answer's check; None when it cannot be made (host x batch not
    separable from the other terms, or no fit)."""
    from benchlang.stats.ab.mixed import identifiability

    if "host_batch" in identifiability(design).not_identifiable:
        return None
    comps = components if components is not None else fit_components(y, design)
    if comps is None:
        return None
    rate = request_type1(design, comps, rng, experiments, replicates)
    cells = np.unique(np.stack([design.request, design.version]), axis=1).shape[1]
    per_cell = design.size / cells
    kind = layout_kind(design)
    shared = comps.request if kind in ("unbalanced", "host_balanced") else 0.0
    return RequestCheck(
        host_batch=comps.host_batch,
        request=shared + comps.request_batch + comps.residual / per_cell,
        type1=rate,
        experiments=experiments,
        passed=rate <= CONDITIONAL_TYPE1,
    )


def host_fix(
    kind: str,
    H: int,
    R: int,
    T: int,
    components: VarianceComponents | None,
    scale: str,
    confidence: float = 95.0,
) -> HostFix:
    """The fewest hosts whose host clusters give a valid interval in this layout, and its
    expected half-width (t quantile x the layout's analytic SE, §4.2.1)."""
    from scipy.stats import t as student_t

    paired = kind != "unbalanced"
    per_host = 2 if kind in ("unbalanced", "request_balanced") else 1

    def enough(clusters: int) -> tuple[int, float | None]:
        hosts = max(H + 1, clusters * per_host)
        hosts += hosts % per_host
        if components is None:
            return hosts, None
        k = hosts_per_version(kind, hosts)
        se = layout_se(kind, hosts, max(k, math.ceil(R / k) * k), T, components)
        g = hosts // per_host
        df = g - 1 if paired else 2 * (g - 1)
        return hosts, float(student_t.ppf(0.5 + confidence / 200, df) * se)

    hosts, half = enough(MIN_CLUSTERS_T["paired" if paired else "unpaired"])
    boot_hosts, boot_half = enough(MIN_CLUSTERS)
    return HostFix(hosts, hosts - H, hosts // per_host, half, scale, boot_hosts, boot_half)


def choose_layout_cluster(
    y: np.ndarray,
    design: ABDesign,
    *,
    scale: str,
    seed: int,
    floor: int = MIN_CLUSTERS,
    confidence: float = 95.0,
) -> ClusterChoice:
    """The rule of the module docstring for a two-version layout run (``y`` on the compared
    scale's own terms: log values for ratios)."""
    kind = layout_kind(design)
    H = int(np.unique(design.host).size)
    name, blocks = host_scheme(design)
    unit = "host blocks" if name == "host_block" else "hosts"
    got = _per_version(np.asarray(design.version), blocks)
    paired = kind != "unbalanced"
    if got >= floor:
        return ClusterChoice(
            kind,
            H,
            name,
            "bootstrap",
            f"{got} {unit} per version: host clusters are what Perflab validates for every "
            "layout (§5.2-5.3)",
        )
    if got >= MIN_CLUSTERS_T["paired" if paired else "unpaired"]:
        return ClusterChoice(
            kind,
            H,
            name,
            "cluster_t",
            f"{got} {unit} per version: too few for the bootstrap (5), enough for the "
            "cluster-level t interval (Donald & Lang 2007; coverage in docs/ab-designs.md)",
        )
    R = int(np.unique(design.request[design.version == 1]).size)
    cells = np.unique(np.stack([design.request, design.version]), axis=1).shape[1]
    T = max(1, round(design.size / cells))
    components = fit_components(y, design)
    fix = host_fix(kind, H, R, T, components, scale, confidence)
    too_few = f"{got} {unit[:-1] if got == 1 else unit} per version"
    if kind in ("unbalanced", "request_balanced") and got == 1:
        why = (
            f"{too_few}: each version ran on its own hosts, so the difference between versions "
            "cannot be told from the difference between hosts; no interval is valid"
        )
        return ClusterChoice(kind, H, None, "descriptive", why, fix=fix)
    check = check_requests(y, design, np.random.default_rng(seed), components)
    assumption = (
        "assumes no host x batch effect: the differences of a request are treated as "
        "independent, although its trials share their host and host batch"
    )
    if CONDITIONAL[kind] and check is not None and check.passed:
        return ClusterChoice(
            kind,
            H,
            "request",
            "conditional",
            f"{too_few}: too few for a host-clustered interval; request clusters as a "
            "conditional answer (Perflab shows them too liberal when host x batch effects exist)",
            assumption=assumption,
            check=check,
            fix=fix,
        )
    need = MIN_CLUSTERS_T["paired" if paired else "unpaired"]
    why = f"{too_few}: too few for a host-clustered interval (at least {need} per version needed)"
    if not CONDITIONAL[kind]:
        why += (
            "; request clusters are not offered: with so few hosts the host x batch effect they "
            "assume away cannot be checked well enough to keep a 5% Type I error "
            "(docs/ab-designs.md, cluster auto)"
        )
        if check is not None:
            why += f"; on this run: {check.words()}"
    elif check is not None:
        why += f"; request clusters fail their check ({check.words()})"
    else:
        why += "; the host x batch effect request clusters assume away cannot be estimated here"
    return ClusterChoice(kind, H, None, "descriptive", why, assumption=None, check=check, fix=fix)
