"""Judge a stopping rule by replaying recorded sample streams (Mittal et al., PMBS '23, §2).

A stream is a long series of samples of one configuration; its empirical distribution is the
ground truth. The rule sees the stream one sample at a time; where it stops, the stopped prefix
is compared with the whole stream by the two-sample Kolmogorov–Smirnov distance, and with the
*optimal* stopping point: the smallest k after which the KS distance of every longer prefix to
the full stream stays at or below the threshold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs
import numpy as np

if TYPE_CHECKING:
    from benchlang.stats.stopping import Decision

MIN_STREAM = 1000
_BLOCK = 256


class Rule(Protocol):
    def step(self, samples: np.ndarray, state: Any = None) -> tuple[Decision, Any]: ...


@attrs.frozen
class StreamEvaluation:
    """Where a rule stopped on one stream and how good the stopped prefix is.

    ``stop_n`` is the prefix length at the first stop (the stream length when the rule never
    stopped, with ``action`` "continue"); ``ks`` its KS distance to the full stream;
    ``optimal_n`` the optimal stopping point for ``ks_threshold``; ``ratio`` = stop_n /
    optimal_n; ``mean_error`` = |mean(prefix) − mean(stream)| / |mean(stream)|.
    """

    n: int
    stop_n: int
    action: str
    detected_class: str | None
    rule: str
    reason: str
    ks: float
    optimal_n: int
    ratio: float
    mean_error: float
    ks_threshold: float

    def passed(
        self,
        criterion: Literal["ks", "mean", "warn"] = "ks",
        ks_limit: float = 0.12,
        ratio_range: tuple[float, float] = (0.5, 2.0),
        mean_limit: float = 0.01,
    ) -> bool:
        """The stopping rule's target: KS ≤ ks_limit and ratio within ratio_range ("ks"), relative
        error of the mean ≤ mean_limit ("mean", for near-constant streams where KS ignores
        scale), or a stop with a warning ("warn", for drifting streams)."""
        if criterion == "warn":
            return self.action == "stop_warn"
        if self.action == "continue":
            return False
        if criterion == "mean":
            return self.mean_error <= mean_limit
        return self.ks <= ks_limit and ratio_range[0] <= self.ratio <= ratio_range[1]


def prefix_ks_distances(stream: np.ndarray) -> np.ndarray:
    """Exact two-sample KS distance of every prefix x[:k] (k = 1..n) to the whole stream.

    Both empirical CDFs jump only at the stream's distinct values, so the supremum is a
    maximum over them. Prefix counts per distinct value are cumulative sums of one-hot rows,
    evaluated in blocks of rows (O(n·m) numpy work, O(block·m) memory, m distinct values).
    Equals ``scipy.stats.ks_2samp(x[:k], x).statistic``.
    """
    x = np.asarray(stream, dtype=float).ravel()
    n = x.size
    values, code = np.unique(x, return_inverse=True)
    m = values.size
    full = np.cumsum(np.bincount(code, minlength=m)) / n
    out = np.empty(n)
    carry = np.zeros(m)
    for s in range(0, n, _BLOCK):
        e = min(n, s + _BLOCK)
        hits = np.zeros((e - s, m))
        hits[np.arange(e - s), code[s:e]] = 1.0
        counts = np.cumsum(hits, axis=0) + carry
        carry = counts[-1]
        prefix = np.cumsum(counts, axis=1) / np.arange(s + 1, e + 1)[:, None]
        out[s:e] = np.abs(prefix - full).max(axis=1)
    return out


def optimal_stop(distances: np.ndarray, ks_threshold: float) -> int:
    """Smallest k with distances[j-1] ≤ ks_threshold for every j ≥ k (Mittal et al. §2)."""
    above = np.flatnonzero(np.asarray(distances) > ks_threshold)
    return int(above[-1]) + 2 if above.size else 1


def evaluate(stream: np.ndarray, rule: Rule, ks_threshold: float = 0.1) -> StreamEvaluation:
    """Replay ``stream`` sample by sample through ``rule.step`` and judge where it stopped."""
    x = np.asarray(stream, dtype=float).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)):
        raise ValueError("a stream needs at least two finite samples")
    state = None
    decision = None
    start = max(1, int(getattr(rule, "min_n", 1)))
    for k in range(start, x.size + 1):
        decision, state = rule.step(x[:k], state)
        if decision.stopped:
            break
    assert decision is not None
    stop_n = k
    distances = prefix_ks_distances(x)
    optimal = optimal_stop(distances, ks_threshold)
    full_mean = float(x.mean())
    error = abs(float(x[:stop_n].mean()) - full_mean)
    return StreamEvaluation(
        n=x.size,
        stop_n=stop_n,
        action=decision.action,
        detected_class=decision.detected_class,
        rule=decision.rule,
        reason=decision.reason,
        ks=float(distances[stop_n - 1]),
        optimal_n=optimal,
        ratio=stop_n / optimal,
        mean_error=error / abs(full_mean) if full_mean != 0 else error,
        ks_threshold=ks_threshold,
    )


SYNTHETIC_CRITERIA: dict[str, Literal["ks", "mean", "warn"]] = {
    "normal": "ks",
    "lognormal": "ks",
    "multimodal": "ks",
    "cauchy": "ks",
    "autocorrelated_sine": "ks",
    "uniform": "ks",
    "log_uniform": "ks",
    "near_constant": "mean",
    "exponential": "ks",
    "drifting": "warn",
}


def synthetic_streams(seed: int = 5, n: int = MIN_STREAM) -> dict[str, np.ndarray]:
    """The ten synthetic streams of the stopping-rule evaluation, after Mittal et al. §3 (timings around 100).

    Every stream draws from its own generator spawned from ``seed``, so adding a stream
    never changes the others.
    """
    if n < MIN_STREAM:
        raise ValueError(f"synthetic streams need n >= {MIN_STREAM}, got {n}")
    g = dict(
        zip(
            SYNTHETIC_CRITERIA,
            np.random.default_rng(seed).spawn(len(SYNTHETIC_CRITERIA)),
            strict=True,
        )
    )
    t = np.arange(n)
    component = g["multimodal"].choice(3, size=n, p=[0.5, 0.3, 0.2])
    return {
        "normal": g["normal"].normal(100.0, 10.0, n),
        "lognormal": np.exp(g["lognormal"].normal(np.log(100.0), 0.5, n)),
        "multimodal": g["multimodal"].normal(
            np.array([100.0, 150.0, 220.0])[component], np.array([5.0, 8.0, 10.0])[component]
        ),
        "cauchy": 100.0 + 5.0 * g["cauchy"].standard_cauchy(n),
        "autocorrelated_sine": 100.0
        + 20.0 * np.sin(2 * np.pi * t / 25.0)
        + g["autocorrelated_sine"].normal(0.0, 5.0, n),
        "uniform": g["uniform"].uniform(50.0, 150.0, n),
        "log_uniform": np.exp(g["log_uniform"].uniform(np.log(10.0), np.log(1000.0), n)),
        "near_constant": g["near_constant"].normal(100.0, 0.5, n),
        "exponential": g["exponential"].exponential(100.0, n),
        "drifting": 100.0 + 0.5 * t + g["drifting"].normal(0.0, 10.0, n),
    }
