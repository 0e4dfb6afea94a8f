"""Speed of the adaptive stopping rule: one decision at n = 400 must take <= 20 ms (issue 5).

For each synthetic stream, the rule first sees samples 1..399 one at a time (building its
state), then the decision at n = 400 is timed (median and max of repeated calls on the same
state). Baselines, side by side:

- fresh: ``AdaptiveStop.decide`` without state, which recomputes the whole stability window
  (window + 1 prefixes, cold EM starts) - what a stateless rule would cost;
- scipy: the mixture grid of one prefix fitted the naive way, one ``scipy.optimize.minimize``
  (L-BFGS-B) per model on the mixture log-likelihood; a stateless naive decision needs
  window + 1 of these, so this is a lower bound of its cost.

Usage: python benchmarks/bench_stopping.py
"""

from __future__ import annotations

import time

import numpy as np
from scipy import optimize, special, stats

from benchlang.stats.stopping import AdaptiveStop
from benchlang.stats.stopping_eval import synthetic_streams

TARGET_MS = 20.0
N = 400
REPEATS = 20
STREAMS = (
    "normal",
    "lognormal",
    "multimodal",
    "autocorrelated_sine",
    "exponential",
    "cauchy",
    "log_uniform",
    "uniform",
)


def incremental_ms(rule: AdaptiveStop, x: np.ndarray) -> tuple[float, float, str]:
    state = None
    for n in range(1, N):
        _, state = rule.step(x[:n], state)
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        decision, _ = rule.step(x[:N], state)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times)), 1e3 * max(times), str(decision.detected_class)


def fresh_ms(rule: AdaptiveStop, x: np.ndarray) -> float:
    start = time.perf_counter()
    rule.decide(x[:N])
    return 1e3 * (time.perf_counter() - start)


def _negative_loglik(theta: np.ndarray, z: np.ndarray, k: int, tied: bool) -> float:
    logits = np.concatenate(([0.0], theta[: k - 1]))
    means = theta[k - 1 : 2 * k - 1]
    log_var = np.repeat(theta[2 * k - 1 :], k) if tied else theta[2 * k - 1 :]
    logp = (logits - special.logsumexp(logits))[:, None] + stats.norm.logpdf(
        z[None, :], means[:, None], np.exp(0.5 * log_var)[:, None]
    )
    return -float(special.logsumexp(logp, axis=0).sum())


def scipy_grid_ms(x: np.ndarray, max_components: int = 6) -> float:
    z = (x - x.mean()) / x.std()
    start = time.perf_counter()
    for k in range(1, max_components + 1):
        for tied in (False,) if k == 1 else (False, True):
            theta = np.concatenate(
                (
                    np.zeros(k - 1),
                    np.quantile(z, (np.arange(k) + 0.5) / k),
                    np.full(1 if tied else k, -2 * np.log(k)),
                )
            )
            optimize.minimize(
                _negative_loglik,
                theta,
                args=(z, k, tied),
                method="L-BFGS-B",
                options={"maxiter": 200},
            )
    return 1e3 * (time.perf_counter() - start)


def main() -> int:
    rule = AdaptiveStop()
    streams = synthetic_streams(5)
    print(f"one adaptive decision at n = {N} (target <= {TARGET_MS:g} ms); window {rule.window}")
    print(
        f"{'stream':22s} {'class':15s} {'step ms':>8s} {'max ms':>8s} {'fresh ms':>9s} {'fresh/step':>10s}"
    )
    worst = 0.0
    for name in STREAMS:
        x = streams[name]
        median, slowest, cls = incremental_ms(rule, x)
        fresh = fresh_ms(rule, x)
        worst = max(worst, median)
        print(
            f"{name:22s} {cls:15s} {median:8.2f} {slowest:8.2f} {fresh:9.1f} {fresh / median:10.1f}"
        )
    print(
        f"worst median step: {worst:.2f} ms, target {TARGET_MS:g} ms: {'met' if worst <= TARGET_MS else 'MISSED'}"
    )
    x = streams["multimodal"][:N]
    naive = scipy_grid_ms(x, rule.max_components)
    median, _, _ = incremental_ms(rule, streams["multimodal"])
    print(
        f"naive scipy mixture grid, one prefix of the multimodal stream: {naive:.0f} ms "
        f"(x {rule.window + 1} prefixes per stateless decision); incremental step {median:.2f} ms, "
        f"ratio {naive / median:.0f}x for one prefix alone"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
