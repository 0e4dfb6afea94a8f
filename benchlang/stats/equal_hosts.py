"""Do equal hosts agree? The check behind DataMill's purposeful redundancy.

DataMill (de Oliveira et al., "DataMill: Rigorous Performance Evaluation Made Easy", ICPE
2013, §4.2) runs each configuration on several machines with the same hardware, so that a
failed machine loses nothing and a result that depends on one particular machine shows. With
``design { redundancy N }`` every configuration runs all its rounds on N equal hosts; here,
per configuration, the hosts' values are compared:

* the test is Kruskal–Wallis across the hosts (Kruskal & Wallis, JASA 47, 1952; the exact
  permutation p-value for small groups, :func:`benchlang.stats.order_dependence.kruskal_h`),
  which assumes the trials of a host are independent draws of its distribution;
* the family of a metric's configurations is corrected with Holm's step-down procedure
  (Holm, Scand. J. Statist. 6, 1979), so that when every pair of equal hosts agrees the
  chance of flagging any configuration is at most ``alpha``;
* the effect is the spread of the hosts' medians, Δ% = (largest − smallest) / smallest × 100.

A configuration is flagged when its adjusted p-value is below ``alpha``. A configuration
whose hosts hold too few trials for any arrangement of them to reach ``alpha`` is not
tested: that is said, and its hosts' medians are descriptive only.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from benchlang.stats.order_dependence import kruskal_h


@attrs.frozen
class HostsOfConfiguration:
    """One configuration's values on its equal hosts. ``hosts`` are host codes; ``medians``,
    ``counts`` align with them. ``p``/``adjusted_p`` are None when not tested (``why``)."""

    configuration: int
    hosts: tuple[int, ...]
    counts: tuple[int, ...]
    medians: tuple[float, ...]
    delta_percent: float
    p: float | None
    adjusted_p: float | None
    differ: bool
    why: str | None = None


@attrs.frozen
class EqualHosts:
    """Every configuration run on more than one host, with the family-wise verdict."""

    alpha: float
    configurations: tuple[HostsOfConfiguration, ...]

    @property
    def differing(self) -> tuple[HostsOfConfiguration, ...]:
        return tuple(c for c in self.configurations if c.differ)

    @property
    def untested(self) -> tuple[HostsOfConfiguration, ...]:
        return tuple(c for c in self.configurations if c.p is None)


def holm(p: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979): the i-th smallest of K p-values is
    multiplied by K - i + 1, made monotone, and capped at 1."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(p, kind="stable")
    scaled = p[order] * (p.size - np.arange(p.size))
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


def smallest_p(counts: ArrayLike) -> float:
    """The smallest p-value Kruskal–Wallis can give for groups of these sizes: that of
    perfectly separated groups (no arrangement of the ranks is more extreme)."""
    counts = np.asarray(counts, dtype=int)
    edges = np.concatenate([[0], np.cumsum(counts)])
    return kruskal_h(*(np.arange(a, b, dtype=float) for a, b in itertools.pairwise(edges)))[1]


def equal_hosts(
    values: ArrayLike, host: ArrayLike, configuration: ArrayLike, alpha: float = 0.01
) -> EqualHosts:
    """Per configuration with values on two or more hosts: do its hosts agree? ``values``,
    ``host`` (codes) and ``configuration`` (codes) align, one entry per successful trial."""
    every = np.asarray(values, dtype=float)
    keep = np.isfinite(every)
    v = every[keep]
    host_codes, config_codes = np.asarray(host)[keep], np.asarray(configuration)[keep]
    rows: list[dict[str, Any]] = []
    for c in np.unique(config_codes):
        mine = config_codes == c
        hosts, codes, counts = np.unique(host_codes[mine], return_inverse=True, return_counts=True)
        if hosts.size < 2:
            continue
        groups = [v[mine][codes == i] for i in range(hosts.size)]
        medians = np.array([np.median(g) for g in groups])
        low = medians.min()
        rows.append(
            {
                "configuration": int(c),
                "hosts": tuple(int(h) for h in hosts),
                "counts": tuple(int(n) for n in counts),
                "medians": tuple(float(m) for m in medians),
                "delta_percent": float((medians.max() - low) / low * 100) if low > 0 else np.nan,
                "groups": groups,
            }
        )
    family = len(rows)
    tested = []
    for row in rows:
        reach = smallest_p(row["counts"])
        if reach * family >= alpha:
            row["why"] = (
                f"too few trials per host ({', '.join(map(str, row['counts']))}) for any "
                f"difference to reach alpha {alpha:g} over {family} configurations "
                f"(the smallest possible p is {reach:.2g})"
            )
            continue
        row["p"] = kruskal_h(*row["groups"])[1]
        tested.append(row)
    adjusted = holm([row["p"] for row in tested]) if tested else np.empty(0)
    for row, q in zip(tested, adjusted, strict=True):
        row["adjusted_p"] = float(q)
    return EqualHosts(
        alpha,
        tuple(
            HostsOfConfiguration(
                configuration=row["configuration"],
                hosts=row["hosts"],
                counts=row["counts"],
                medians=row["medians"],
                delta_percent=row["delta_percent"],
                p=row.get("p"),
                adjusted_p=row.get("adjusted_p"),
                differ=row.get("adjusted_p", 1.0) < alpha,
                why=row.get("why"),
            )
            for row in rows
        ),
    )
