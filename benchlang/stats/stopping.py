"""Stopping rules: after each new trial, stop, continue, or stop with a warning.

Three rules share one interface, ``decide(samples) -> Decision`` (stateless) and
``step(samples, state) -> (Decision, state)`` (incremental, for the executor and the replay
harness, which append one sample at a time):

- ``FixedStop``: ``stop after N``.
- ``KpiWidthStop``: TriScale's feedback loop (Jacob et al., JSys 1(1) 2021, §7): add trials
  until the KPI's one-sided confidence bound lies within a width of the sample median.
- ``AdaptiveStop``: the meta-rule of Mittal, Bruel, Milojicic & Frachtenberg, "Adaptive Stopping
  Rule for Performance Measurements", PMBS '23, §2.1: classify the samples seen so far and apply
  a stopping rule fit for the class.

See docs/stopping.md for every parameter, the calibration and the measured results.
"""

from __future__ import annotations

import hashlib
import math
from typing import Literal

import attrs
import numpy as np

from benchlang.stats.mixtures import MixtureGrid, fit_mixtures, initial_mixtures
from benchlang.stats.sizing import sizing

Action = Literal["continue", "stop", "stop_warn"]

CONSTANT = "constant"
MONOTONIC = "monotonic"
DRIFTING = "drifting"
AUTOCORRELATED = "autocorrelated"
GAUSSIAN = "gaussian"
LOGNORMAL = "lognormal"
MULTIMODAL = "multimodal"
UNIFORM = "uniform"
UNCLASSIFIED = "unclassified"


@attrs.frozen
class Decision:
    """What to do after the samples seen so far, and why.

    ``detected_class`` is the distribution class the adaptive rule saw (None for the other
    rules); ``rule`` names the criterion that produced the action.
    """

    action: Action
    reason: str
    detected_class: str | None
    rule: str

    @property
    def stopped(self) -> bool:
        return self.action != "continue"

    @property
    def warned(self) -> bool:
        return self.action == "stop_warn"


def _as_samples(samples: np.ndarray) -> np.ndarray:
    x = np.asarray(samples, dtype=float).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("samples must be finite numbers")
    return x


@attrs.frozen
class FixedStop:
    """``stop after N``: a fixed number of trials (also what ``runs auto`` derives)."""

    n: int = attrs.field(validator=attrs.validators.ge(1))

    def decide(self, samples: np.ndarray) -> Decision:
        n = _as_samples(samples).size
        if n >= self.n:
            return Decision("stop", f"{n} of {self.n} trials done", None, "fixed")
        return Decision("continue", f"{n} of {self.n} trials done", None, "fixed")

    def step(self, samples: np.ndarray, state: None = None) -> tuple[Decision, None]:
        return self.decide(samples), None


@attrs.frozen
class KpiWidthStop:
    """``stop when kpi METRIC width < X``: TriScale's suggested feedback loop (§7).

    Continue until the KPI (the one-sided ``confidence`` bound of the ``percentile``,
    TriScale §4.5, Eq. 1-3) lies within ``width`` of the sample median: ``width`` is a
    fraction of the median when ``relative``, else an absolute distance. Never stops below
    the minimal N for that KPI (TriScale Eq. 4); at ``max_n`` it stops with a warning.
    Percentile and confidence are in percent, as in the spec.
    """

    percentile: float
    confidence: float
    bound: Literal["upper", "lower"] = "upper"
    width: float = 0.05
    relative: bool = True
    max_n: int = 400

    @property
    def min_n(self) -> int:
        return sizing(self.percentile, self.confidence)

    def decide(self, samples: np.ndarray) -> Decision:
        from benchlang.stats.kpi import kpi

        x = _as_samples(samples)
        n, need = x.size, self.min_n
        if n < need:
            return Decision("continue", f"{n} < minimal N {need} for the KPI", None, "kpi-width")
        value = float(kpi(x, self.percentile, self.confidence, self.bound).value)
        median = float(np.median(x))
        limit = self.width * abs(median) if self.relative else self.width
        distance = abs(value - median)
        what = f"|KPI {value:.6g} - median {median:.6g}| = {distance:.6g}"
        if math.isfinite(value) and distance <= limit:
            return Decision("stop", f"{what} <= {limit:.6g}", None, "kpi-width")
        if n >= self.max_n:
            return Decision(
                "stop_warn", f"max {self.max_n} reached, {what} > {limit:.6g}", None, "kpi-width"
            )
        return Decision("continue", f"{what} > {limit:.6g}", None, "kpi-width")

    def step(self, samples: np.ndarray, state: None = None) -> tuple[Decision, None]:
        return self.decide(samples), None


# --- the adaptive meta-rule ---


@attrs.frozen
class Interval:
    """The interval a class rule tracks on one prefix: a centre and the interval's half-width.

    ``width`` is the statistic whose relative change decides stability: the relative standard
    error (Gaussian), the HDI width in log units (log-normal), or the CI width (block bootstrap,
    mixture log-likelihood per sample).
    """

    width: float
    centre: float
    half: float


@attrs.frozen
class AdaptiveState:
    """What the adaptive rule remembers between decisions on a growing series of samples.

    ``history`` caches each class's interval by (class, prefix length), so the stability
    window is not recomputed; ``classes`` holds the class detected at each recent prefix;
    ``mixtures`` warm-starts the next EM fit; ``fingerprint`` identifies the series (a hash of
    its first samples; a different series starts fresh). Samples must only grow by appending.
    """

    fingerprint: bytes = b""
    history: tuple[tuple[str, int, Interval], ...] = ()
    classes: tuple[tuple[int, str], ...] = ()
    mixtures: MixtureGrid | None = None


def _fingerprint(x: np.ndarray, k: int) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(x[:k]).tobytes(), digest_size=16).digest()


def _max_autocorrelation(x: np.ndarray, max_lag: int) -> float:
    """Largest sample autocorrelation over lags 1..max_lag (biased estimator, via FFT)."""
    d = x - x.mean()
    f = np.fft.rfft(d, 2 * d.size)
    acov = np.fft.irfft(f * np.conj(f))[: max_lag + 1]
    if acov[0] <= 0:
        return 0.0
    return float(np.max(acov[1:] / acov[0]))


@attrs.frozen
class AdaptiveStop:
    """Mittal et al., PMBS '23, §2.1: classify the distribution so far, then stop by class.

    In order, after ``min_n`` samples:
    1. constant (max − min < ``constant_spread`` × |mean|) → stop;
    2. monotonic (every step up, or every step down) → stop_warn; benchlang adds *drifting*
       (Mann–Kendall: Kendall's tau of value vs index, p < ``trend_alpha`` once
       n ≥ ``trend_min_n``, with residuals of the fitted line not autocorrelated) → stop_warn;
    3. autocorrelated (some lag ≤ min(``acf_max_lag``, n/4) has ACF > ``acf_threshold``) →
       stop when the moving-block-bootstrap CI of the mean is stable;
    4. Gaussian (Shapiro–Wilk p > ``normal_p``) → stop when the CI built on the standard error
       is stable (its width tracked relative to the mean);
    5. log-normal (all > 0, Shapiro–Wilk on logs p > ``lognormal_p``) → stop when the 95%
       highest-density interval (Kruschke, DBDA 2nd ed. 2015) of the posterior of the log-mean
       is stable;
    6. multimodal (BIC picks ≥ 2 components among mixtures of 1..``max_components`` Gaussians,
       per-component or shared variance) → stop when the log-likelihood per sample of the
       selected mixture and its CI are stable;
    7. uniform (Kolmogorov–Smirnov against U(min, max), p > ``uniform_p``) → stop_warn;
    8. otherwise continue; at ``max_n`` stop_warn.
    A warning class (drifting, uniform) must be detected at each of the last ``window`` + 1
    prefixes before it stops the series (a strictly monotonic prefix stays monotonic).

    *Stable* (benchlang's precise reading of the paper's "converges"): over the last ``window``
    prefixes j = n − window … n − 1, the interval's width statistic w satisfies
    max |w_n − w_j| ≤ tol·w_n, and its centre c satisfies max |c_n − c_j| ≤ half-width_n (the
    estimate never left the current interval). tol defaults to window / (2·⌈1/ks²⌉): a width
    that shrinks like 1/√n changes by about window/(2n) over the window, so tol is met near
    n = 1/ks², where the Kolmogorov–Smirnov distance of an i.i.d. sample to its distribution is
    of order ks (√n·D_n tends to the Kolmogorov distribution, median 0.83).
    """

    ks: float = 0.1
    min_n: int = 10
    max_n: int = 400
    window: int = 20
    tolerance: float | None = None
    constant_spread: float = 0.10
    trend_alpha: float = 1e-3
    trend_min_n: int = 20
    acf_threshold: float = 0.8
    acf_max_lag: int = 50
    normal_p: float = 0.2
    lognormal_p: float = 0.2
    uniform_p: float = 0.2
    max_components: int = 6
    confidence: float = 95.0
    bootstrap_replicates: int = 500
    em_max_iter: int = 200
    em_tol: float = 1e-4

    def __attrs_post_init__(self) -> None:
        if not 0.0 < self.ks < 1.0:
            raise ValueError(f"ks must lie in (0, 1), got {self.ks!r}")
        if not 3 <= self.min_n <= self.max_n:
            raise ValueError(f"need 3 <= min_n <= max_n, got min {self.min_n}, max {self.max_n}")
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window!r}")
        if not 1 <= self.max_components <= 10:
            raise ValueError(f"max_components must lie in 1..10, got {self.max_components!r}")
        if not 0.0 < self.confidence < 100.0:
            raise ValueError(f"confidence must lie in (0, 100) percent, got {self.confidence!r}")

    @property
    def tol(self) -> float:
        """The stability tolerance (see the class docstring for its derivation)."""
        if self.tolerance is not None:
            return float(self.tolerance)
        return self.window / (2.0 * math.ceil(1.0 / self.ks**2))

    def decide(self, samples: np.ndarray) -> Decision:
        """Decide on a fresh state: replays the stability window, then decides at len(samples)."""
        x = _as_samples(samples)
        state = AdaptiveState()
        decision = Decision("continue", "no samples", None, "min")
        for j in range(max(1, x.size - self.window), x.size + 1):
            decision, state = self.step(x[:j], state)
        return decision

    def step(
        self, samples: np.ndarray, state: AdaptiveState | None = None
    ) -> tuple[Decision, AdaptiveState]:
        """Decide after the last appended sample, reusing and returning the cached state."""
        x = _as_samples(samples)
        n = x.size
        fp = _fingerprint(x, self.min_n)
        if state is None or state.fingerprint != fp:
            state = AdaptiveState(fingerprint=fp)
        if n < self.min_n:
            return Decision("continue", f"{n} < min {self.min_n} samples", None, "min"), state
        cls, action, reason, interval, state = self._classify(x, state)
        classes = (*(c for c in state.classes if n - self.window <= c[0] < n), (n, cls))
        state = attrs.evolve(state, classes=classes)
        if action == "stop_warn" and cls != MONOTONIC:
            seen = sum(1 for c in classes if c[1] == cls)
            if seen <= self.window:
                action = None
                reason = (
                    f"{reason}; seen at {seen} of the {self.window + 1} prefixes needed to warn"
                )
        if action is not None:
            return Decision(action, reason, cls, cls), state
        rule = _RULE_NAMES.get(cls, "max")
        if interval is not None:
            state = self._remember(state, cls, n, interval)
            stable, detail, state = self._stable(x, cls, state)
            kept = tuple(h for h in state.history if h[1] >= n - self.window)
            state = attrs.evolve(state, history=kept)
            if stable:
                return Decision("stop", f"{cls}: {detail}", cls, rule), state
            reason = f"{cls}: {detail}"
        if n >= self.max_n:
            return Decision("stop_warn", f"max {self.max_n} reached; {reason}", cls, "max"), state
        return Decision("continue", reason, cls, rule), state

    def _classify(
        self, x: np.ndarray, state: AdaptiveState
    ) -> tuple[str, Action | None, str, Interval | None, AdaptiveState]:
        from scipy import stats

        n = x.size
        mean = float(x.mean())
        spread = float(x.max() - x.min())
        if spread < self.constant_spread * abs(mean):
            why = f"max - min = {spread:.4g} < {self.constant_spread:g} x |mean| {abs(mean):.4g}"
            return CONSTANT, "stop", why, None, state
        d = np.diff(x)
        if np.all(d > 0) or np.all(d < 0):
            why = "every sample moves the same way: misconfigured or unstable"
            return MONOTONIC, "stop_warn", why, None, state
        if n >= self.trend_min_n:
            tau = stats.kendalltau(np.arange(n), x)
            if tau.pvalue < self.trend_alpha and self._trend_explains(x):
                why = f"trend: Kendall tau {tau.statistic:.3f} vs index, p = {tau.pvalue:.2g} < {self.trend_alpha:g}"
                return DRIFTING, "stop_warn", why, None, state
        acf = _max_autocorrelation(x, max(1, min(self.acf_max_lag, n // 4)))
        if acf > self.acf_threshold:
            interval, state = self._interval(x, AUTOCORRELATED, state)
            return (
                AUTOCORRELATED,
                None,
                f"max ACF {acf:.3f} > {self.acf_threshold:g}",
                interval,
                state,
            )
        p = stats.shapiro(x).pvalue
        if p > self.normal_p:
            interval, state = self._interval(x, GAUSSIAN, state)
            return GAUSSIAN, None, f"Shapiro-Wilk p = {p:.3f} > {self.normal_p:g}", interval, state
        if x.min() > 0:
            p = stats.shapiro(np.log(x)).pvalue
            if p > self.lognormal_p:
                interval, state = self._interval(x, LOGNORMAL, state)
                why = f"Shapiro-Wilk on logs p = {p:.3f} > {self.lognormal_p:g}"
                return LOGNORMAL, None, why, interval, state
        interval, k, state = self._mixture(x, state)
        if k >= 2:
            return MULTIMODAL, None, f"BIC picks {k} components", interval, state
        p = stats.kstest(x, "uniform", args=(x.min(), spread)).pvalue
        if p > self.uniform_p:
            return (
                UNIFORM,
                "stop_warn",
                f"uniform: KS p = {p:.3f} > {self.uniform_p:g}",
                None,
                state,
            )
        return UNCLASSIFIED, None, "no class fits", None, state

    def _trend_explains(self, x: np.ndarray) -> bool:
        """A drift, not a slow oscillation: the residuals of the least-squares line are not
        autocorrelated (Box, Jenkins & Reinsel, Time Series Analysis, §2.1)."""
        t = np.arange(x.size)
        residual = x - np.polyval(np.polyfit(t, x, 1), t)
        max_lag = max(1, min(self.acf_max_lag, x.size // 4))
        return _max_autocorrelation(residual, max_lag) <= self.acf_threshold

    def _interval(
        self, x: np.ndarray, cls: str, state: AdaptiveState
    ) -> tuple[Interval, AdaptiveState]:
        """The interval a class tracks, on one prefix."""
        from scipy import stats

        n = x.size
        z = stats.norm.ppf(0.5 + self.confidence / 200)
        if cls == GAUSSIAN:
            mean, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(n))
            return Interval(se / abs(mean), mean, z * se), state
        if cls == LOGNORMAL:
            # Prior p(mu, sigma) ~ 1/sigma: the posterior of the log-mean is Student t (Gelman
            # et al., BDA3 §3.2), symmetric and unimodal, so its HDI is the central interval.
            y = np.log(x)
            half = float(
                stats.t.ppf(0.5 + self.confidence / 200, n - 1) * y.std(ddof=1) / math.sqrt(n)
            )
            return Interval(2 * half, float(y.mean()), half), state
        if cls == AUTOCORRELATED:
            half = z * self._block_bootstrap_se(x)
            return Interval(2 * half, float(x.mean()), half), state
        interval, _, state = self._mixture(x, state)
        return interval, state

    def _block_bootstrap_se(self, x: np.ndarray) -> float:
        """Moving-block-bootstrap standard error of the mean (Künsch, Ann. Stat. 17(3), 1989).

        Block length ⌈n^(1/3)⌉ (Hall, Horowitz & Jing, Biometrika 82(3), 1995). The draws are
        seeded from the series' first samples and laid out on a fixed grid, so successive
        prefixes reuse the same random numbers and the width changes with the data only.
        """
        n = x.size
        b = math.ceil(n ** (1 / 3))
        blocks = math.ceil(n / b)
        seed = int.from_bytes(_fingerprint(x, self.min_n)[:8], "little")
        u = np.random.default_rng(seed).random((self.bootstrap_replicates, self.max_n))[:, :blocks]
        first = np.floor(u * (n - b + 1)).astype(np.int64)
        idx = (first[:, :, None] + np.arange(b)).reshape(self.bootstrap_replicates, -1)[:, :n]
        return float(x[idx].mean(axis=1).std(ddof=1))

    def _mixture(self, x: np.ndarray, state: AdaptiveState) -> tuple[Interval, int, AdaptiveState]:
        """The BIC-selected mixture (Schwarz 1978): CI of its log-likelihood per sample, and K."""
        from scipy import stats

        mu, sd = x.mean(), x.std()
        z = (x - mu) / sd
        start = state.mixtures
        if start is None or start.sizes.size != 2 * self.max_components - 1:
            start = initial_mixtures(z, self.max_components)
        fit, lse = fit_mixtures(z, start, self.em_max_iter, self.em_tol)
        bic = -2 * lse.sum(axis=1) + fit.n_parameters() * math.log(x.size)
        best = int(np.argmin(bic))
        per_sample = lse[best] - math.log(sd)
        half = (
            stats.norm.ppf(0.5 + self.confidence / 200)
            * float(per_sample.std(ddof=1))
            / math.sqrt(x.size)
        )
        interval = Interval(2 * half, float(per_sample.mean()), half)
        return interval, int(fit.sizes[best]), attrs.evolve(state, mixtures=fit)

    def _remember(
        self, state: AdaptiveState, cls: str, n: int, interval: Interval
    ) -> AdaptiveState:
        history = tuple(h for h in state.history if not (h[0] == cls and h[1] == n))
        return attrs.evolve(state, history=(*history, (cls, n, interval)))

    def _stable(
        self, x: np.ndarray, cls: str, state: AdaptiveState
    ) -> tuple[bool, str, AdaptiveState]:
        n = x.size
        if n - self.window < self.min_n:
            return False, f"stability window needs {self.min_n + self.window} samples", state
        known = {h[1]: h[2] for h in state.history if h[0] == cls}
        for j in range(n - self.window, n):
            if j not in known:
                known[j], state = self._interval(x[:j], cls, state)
                state = self._remember(state, cls, j, known[j])
        now = known[n]
        past = [known[j] for j in range(n - self.window, n)]
        change = max(abs(p.width - now.width) for p in past)
        shift = max(abs(p.centre - now.centre) for p in past)
        limit = self.tol * abs(now.width)
        stable = change <= limit and shift <= now.half
        detail = (
            f"{_STAT_NAMES[cls]} changed {change:.3g} ({'<=' if change <= limit else '>'} {limit:.3g}), "
            f"centre moved {shift:.3g} ({'<=' if shift <= now.half else '>'} half-width {now.half:.3g}) "
            f"over the last {self.window}"
        )
        return stable, detail, state


_RULE_NAMES = {
    AUTOCORRELATED: "block-bootstrap",
    GAUSSIAN: "standard-error",
    LOGNORMAL: "hdi",
    MULTIMODAL: "mixture-likelihood",
}
_STAT_NAMES = {
    AUTOCORRELATED: "block-bootstrap CI width",
    GAUSSIAN: "relative standard error",
    LOGNORMAL: "HDI width of the log-mean",
    MULTIMODAL: "CI width of the log-likelihood per sample",
}
