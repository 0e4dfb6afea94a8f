"""Intervals from few clusters: the cluster-level t interval (Donald & Lang 2007).

With G clusters a cluster bootstrap reweights G numbers; below about 5 per level its SD is too
small and it over-rejects badly (Cameron, Gelbach & Miller, Rev. Econ. Stat. 90(3), 2008, §IV).
The two-step estimator of Donald & Lang ("Inference with difference-in-differences and other
panel data", Rev. Econ. Stat. 89(2), 2007, §2) aggregates to one number per cluster first and
uses Student's t on the G cluster values, exact when the cluster-level values are normal:

- paired (every cluster holds both levels, as hosts in the fully and host-balanced layouts and
  host blocks in the request-balanced one): d_g = log(mean_a,g / mean_b,g) (or the difference
  of means), interval mean(d) ± t(G - 1) · sd(d) / sqrt(G). This is CR2 with Bell–McCaffrey
  degrees of freedom for a within-cluster contrast in a balanced design (Bell & McCaffrey,
  Survey Methodology 28(2), 2002; Pustejovsky & Tipton, JBES 36(4), 2018, §3; Imbens &
  Kolesár, Rev. Econ. Stat. 98(4), 2016, §IV), whose df is G - 1 there.
- unpaired (every cluster holds one level, as hosts in the unbalanced layout): Welch's interval
  on the cluster-level log means with Welch–Satterthwaite degrees of freedom (its standard
  error equals HC2's for a binary regressor on the cluster means, Imbens & Kolesár 2016, §III;
  its df come from the sample variances, not from the design as Bell–McCaffrey's do).

The estimand is the geometric mean over clusters of the per-cluster ratio of means (the mean
per-cluster difference on the difference scale); in a balanced layout every cluster has the
same trials, so it is the layout's contrast. Where clusters mix the two structures the method
is not used. Coverage by simulation at G = 3 ... 20 (benchmarks/sim_few_clusters.py,
docs/ab-designs.md): ``MIN_CLUSTERS_T`` is the fewest clusters at which it held the nominal
level in every simulated condition; below it no interval is offered.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

MIN_CLUSTERS_T = {"paired": 3, "unpaired": 3}
"""Fewest clusters (per level) for the cluster-level t interval, from the coverage table of
benchmarks/sim_few_clusters.py (docs/ab-designs.md, "Few clusters"): from G = 3 on its 95%
intervals covered 93.8-97.6% (1,000 data sets a cell, Monte Carlo SE 0.7%: within two SEs of
the nominal level or above it) in every simulated condition (normal, skewed, unequal sizes). The
table starts at 3: with G = 2 one degree of freedom leaves an interval of ±12.7 SE, no answer a
reader can use, so nothing is offered below."""


def structure(level: np.ndarray, codes: np.ndarray, a: int, b: int) -> tuple[str | None, int]:
    """How the clusters holding levels a and b hold them: ``paired`` (every one holds both),
    ``unpaired`` (every one holds one), else None; and the clusters per level (the fewer)."""
    has_a = np.zeros(int(codes.max()) + 1, dtype=bool)
    has_b = has_a.copy()
    has_a[codes[level == a]] = True
    has_b[codes[level == b]] = True
    used = has_a | has_b
    if (has_a == used).all() and (has_b == used).all():
        return "paired", int(used.sum())
    if not (has_a & has_b).any():
        return "unpaired", int(min(has_a.sum(), has_b.sum()))
    return None, int(min(has_a.sum(), has_b.sum()))


def cluster_t_pairs(
    Y: np.ndarray,
    level: np.ndarray,
    codes: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    scale: str,
    confidence: float,
) -> dict[str, np.ndarray]:
    """Cluster-level t intervals of every pair for E data sets (rows of Y) on one design, with
    Bonferroni over the m pairs (each at 1 - α/m). Arrays of shape (E, m); ``df`` (m,). A pair
    whose clusters neither all pair nor all separate its levels gets nan."""
    from scipy.stats import t as student_t

    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    level = np.asarray(level, dtype=np.int64)
    codes = np.unique(np.asarray(codes), return_inverse=True)[1].ravel()
    k, C = int(level.max()) + 1, int(codes.max()) + 1
    col = level * C + codes
    counts = np.bincount(col, minlength=k * C).reshape(k, C)
    sums = np.stack([np.bincount(col, weights=row, minlength=k * C) for row in Y])
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums.reshape(Y.shape[0], k, C) / counts
        cell = np.log(means) if scale == "ratio" else means
    m = len(pairs)
    alpha = 1.0 - confidence / 100.0
    out: dict[str, np.ndarray] = {
        key: np.full((Y.shape[0], m), np.nan) for key in ("estimate", "se", "ci_low")
    }
    out["ci_high"] = np.full((Y.shape[0], m), np.nan)
    out["p_value"] = np.full((Y.shape[0], m), np.nan)
    df = np.full(m, np.nan)
    for i, (a, b) in enumerate(pairs):
        kind, _ = structure(level, codes, a, b)
        ga, gb = counts[a] > 0, counts[b] > 0
        if kind == "paired":
            d = cell[:, a, ga] - cell[:, b, ga]
            g = d.shape[1]
            if g < 2:
                continue
            theta, se, df[i] = d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(g), g - 1
        elif kind == "unpaired":
            xa, xb = cell[:, a, ga], cell[:, b, gb]
            na, nb = xa.shape[1], xb.shape[1]
            if min(na, nb) < 2:
                continue
            va, vb = xa.var(axis=1, ddof=1) / na, xb.var(axis=1, ddof=1) / nb
            theta, se = xa.mean(axis=1) - xb.mean(axis=1), np.sqrt(va + vb)
            with np.errstate(invalid="ignore", divide="ignore"):
                sat = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
            # One Satterthwaite df per data set; the median over data sets is reported.
            df[i] = float(np.nanmedian(sat)) if Y.shape[0] > 1 else float(sat[0])
            crit = student_t.ppf(1.0 - alpha / (2.0 * m), np.maximum(sat, 1.0))
            _fill(out, i, theta, se, crit, np.maximum(sat, 1.0), m)
            continue
        else:
            continue
        crit = student_t.ppf(1.0 - alpha / (2.0 * m), df[i])
        _fill(out, i, theta, se, crit, np.full(theta.shape, df[i]), m)
    est = out["estimate"]
    if scale == "ratio":
        out["estimate"] = np.exp(est)
        out["ci_low"], out["ci_high"] = np.exp(out["ci_low"]), np.exp(out["ci_high"])
    out["p_adjusted"] = np.minimum(1.0, out["p_value"] * m)
    out["df"] = df
    return out


def _fill(
    out: dict[str, np.ndarray],
    i: int,
    theta: np.ndarray,
    se: np.ndarray,
    crit: np.ndarray,
    df: np.ndarray,
    m: int,
) -> None:
    from scipy.stats import t as student_t

    out["estimate"][:, i] = theta
    out["se"][:, i] = se
    out["ci_low"][:, i] = theta - crit * se
    out["ci_high"][:, i] = theta + crit * se
    with np.errstate(invalid="ignore", divide="ignore"):
        out["p_value"][:, i] = np.where(se > 0, 2.0 * student_t.sf(np.abs(theta) / se, df), np.nan)


def offered(kind: str | None, clusters: int) -> bool:
    """Whether the cluster-level t interval is valid here (``MIN_CLUSTERS_T``)."""
    return kind is not None and clusters >= MIN_CLUSTERS_T[kind]
