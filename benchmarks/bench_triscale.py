"""Speed of benchlang's TriScale statistics against a straightforward loop implementation.

Run: python benchmarks/bench_triscale.py [--tables]. With --tables it also prints the
simulation tables of docs/statistics.md (independence calibration and power, and the
literal TriScale independence test on i.i.d. data). The baseline implements the same methods the
plain way TriScale's published code does (a Python loop over windows, over binomial terms,
over ACF lags), in this script, so both run on the same machine. Targets (issue 3):
1M-point percentile metric with convergence <= 100 ms, KPI on 1,000 values <= 1 ms,
any sizing call <= 5 ms.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy import stats

from benchlang.report.table import render_table
from benchlang.stats import kpi, metric, sizing, variability


def best_of(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


# ---- baseline: the same methods, written with loops --------------------------------------


def loop_metric(x: np.ndarray, measure, confidence=95.0, tolerance=5.0) -> float:
    n = x.size
    w = -(-n // 2)
    k = min(100, n - w + 1)
    step = (n - w) / (k - 1) if k > 1 else 0
    vals, centres = [], []
    for i in range(k):
        s = round(i * step)
        window = x[s : s + w]
        vals.append(np.mean(window) if measure == "mean" else np.percentile(window, measure))
        centres.append(s + (w - 1) / 2)
    vals, centres = np.array(vals), np.array(centres)
    lo, hi = x.min(), x.max()
    xs = 2 * (centres - centres[0]) / (centres[-1] - centres[0]) - 1
    ys = (2 * vals - (lo + hi)) / (hi - lo)
    res = stats.theilslopes(ys, xs, alpha=confidence / 100)
    ok = -tolerance / 100 <= res.low_slope and res.high_slope <= tolerance / 100
    return float(np.median(vals)) if ok else math.nan


def loop_pmf(k: int, n: int, p: float) -> float:
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


def loop_upper_rank(n: int, p: float, c: float):
    total = 0.0
    for k in range(n):
        total += loop_pmf(k, n, p)
        if total >= c:
            return k + 1
    return None


def loop_independence(x: list[float], alpha=0.05) -> bool:
    n = len(x)
    order = sorted(range(n), key=lambda i: x[i])
    ranks = [0.0] * n
    for r, i in enumerate(order):
        ranks[i] = r + 1.0
    mr, mt = (n + 1) / 2, (n + 1) / 2
    num = sum((ranks[i] - mr) * (i + 1 - mt) for i in range(n))
    den = math.sqrt(sum((r - mr) ** 2 for r in ranks) * sum((i + 1 - mt) ** 2 for i in range(n)))
    rho = num / den
    t = rho * math.sqrt((n - 2) / max(1 - rho * rho, 1e-300))
    trend_p = 2 * stats.t.sf(abs(t), n - 2)
    h = int(min(10, max(1, min(n - 2, round(math.log(n)) - 2))))
    mean = sum(x) / n
    d = [v - mean for v in x]
    c0 = sum(v * v for v in d)
    q = 0.0
    for lag in range(1, h + 1):
        r = sum(d[i] * d[i + lag] for i in range(n - lag)) / c0
        q += r * r / (n - lag)
    lb_p = stats.chi2.sf(n * (n + 2) * q, h)
    return trend_p > alpha / 2 and lb_p > alpha / 2


def loop_kpi(values: np.ndarray, p: float, c: float):
    xs = sorted(values.tolist())
    rank = loop_upper_rank(len(xs), p / 100, c / 100)
    return (xs[rank - 1] if rank else math.nan), loop_independence(values.tolist())


def loop_variability(values: np.ndarray, p: float, c: float):
    xs = sorted(values.tolist())
    n = len(xs)
    ru = loop_upper_rank(n, 1 - p / 100, c / 100)
    rl = n + 1 - loop_upper_rank(n, 1 - p / 100, c / 100)
    return xs[ru - 1] - xs[rl - 1], loop_independence(values.tolist())


def loop_sizing(p: float, c: float, r: int) -> int:
    q = max(p, 100 - p) / 100
    n = math.ceil(math.log(1 - c / 100) / math.log(q))
    while True:
        if 1 - sum(loop_pmf(k, n, 1 - q) for k in range(r + 1)) >= c / 100:
            return n
        n += 1


def scipy_loop_sizing(p: float, c: float, r: int) -> int:
    """TriScale's own loop: a frozen scipy binomial and pmf terms per candidate N."""
    q = max(p, 100 - p) / 100
    n = max(math.ceil(math.log(1 - c / 100) / math.log(q)), 2 * (r + 1))
    while True:
        bd = stats.binom(n, 1 - q)
        if 1 - np.cumsum([bd.pmf(k) for k in range(r + 1)])[-1] >= c / 100:
            return n
        n += 1


# ---- the run -------------------------------------------------------------------------------


def main() -> None:
    rng = np.random.default_rng(2021)
    rows = []

    def add(name, ours, base, target=None, baseline="loops"):
        ok = "-" if target is None else ("yes" if ours <= target else "NO")
        tgt = "-" if target is None else f"{target * 1e3:g} ms"
        rows.append(
            [
                name,
                f"{ours * 1e3:.3f}",
                f"{base * 1e3:.3f}",
                baseline,
                f"{base / ours:.1f}x",
                tgt,
                ok,
            ]
        )

    for n in (1_000, 10_000, 100_000, 1_000_000):
        x = rng.normal(100, 5, size=n)
        for measure in ("mean", 95):
            reps = 20 if n < 1_000_000 else 7
            ours = best_of(lambda x=x, m=measure: metric(x, m, (95, 5)), reps)
            base = best_of(lambda x=x, m=measure: loop_metric(x, m), 3 if n >= 100_000 else 10)
            assert math.isclose(
                metric(x, measure, (95, 5)).value, loop_metric(x, measure), rel_tol=1e-9
            )
            label = "p95" if measure == 95 else "mean"
            target = 0.1 if (n == 1_000_000 and measure == 95) else None
            add(f"metric {label} + convergence, N={n:,}", ours, base, target, "loop over windows")

    for n in (100, 1_000):
        v = rng.lognormal(size=n)
        assert kpi(v, 95, 95).value == loop_kpi(v, 95, 95)[0]
        ours = best_of(lambda v=v: kpi(v, 95, 95), 50)
        base = best_of(lambda v=v: loop_kpi(v, 95, 95), 5)
        add(
            f"KPI p95/C95 (+ independence), N={n:,}",
            ours,
            base,
            1e-3 if n == 1000 else None,
            "loop over binomial terms",
        )
        assert variability(v, 25, 75).score == loop_variability(v, 25, 75)[0]
        ours = best_of(lambda v=v: variability(v, 25, 75), 50)
        base = best_of(lambda v=v: loop_variability(v, 25, 75), 5)
        add(
            f"variability p25/C75 (+ independence), N={n:,}",
            ours,
            base,
            None,
            "loop over binomial terms",
        )

    assert sizing(99, 99.9, 3) == loop_sizing(99, 99.9, 3) == scipy_loop_sizing(99, 99.9, 3)
    ours = best_of(lambda: sizing(99, 99.9, 3), 50)
    add(
        "sizing p99/C99.9 r=3",
        ours,
        best_of(lambda: loop_sizing(99, 99.9, 3), 3),
        5e-3,
        "loop over N and terms",
    )
    add(
        "sizing p99/C99.9 r=3",
        ours,
        best_of(lambda: scipy_loop_sizing(99, 99.9, 3), 3),
        5e-3,
        "TriScale-style scipy pmf loop",
    )
    ours = best_of(lambda: sizing(95, 95), 50)
    add(
        "sizing p95/C95 (Table 2)",
        ours,
        best_of(lambda: loop_sizing(95, 95, 0), 5),
        5e-3,
        "loop over N and terms",
    )

    render_table(
        ["case", "ours ms", "baseline ms", "baseline", "speed-up", "target", "met"],
        rows,
        title="benchlang TriScale statistics (best of several runs)",
        plain=True,
    )


def literal_triscale_independence(x: np.ndarray) -> tuple[bool, bool]:
    """TriScale's helpers.py, literally: min-max scaled Theil-Sen 50%/10%, all ACF lags."""
    n = x.size
    xs = 2 * np.arange(n) / (n - 1) - 1
    ys = (2 * x - (x.min() + x.max())) / (x.max() - x.min())
    r = stats.theilslopes(ys, xs, alpha=0.5)
    stationary = r.low_slope >= -0.1 and r.high_slope <= 0.1
    d = x - x.mean()
    ac = np.correlate(d, d, "full")[n - 1 :]
    ac /= ac.max()
    return stationary, bool(np.all(np.abs(ac[1:]) < 1.96 / np.sqrt(n)))


def tables() -> None:
    from scipy.signal import lfilter

    from benchlang.stats.independence import independence_batch, ljung_box_lags

    rng = np.random.default_rng(2021)
    reps = 4000

    def ar1(n, phi):
        e = rng.normal(size=(reps, n))
        e[:, 0] /= math.sqrt(1 - phi**2)
        return lfilter([1.0], [1.0, -phi], e, axis=1)

    def passing(x):
        return float(independence_batch(x)["passed"].mean())

    rows = []
    for n in (10, 20, 30, 50, 100, 200, 500, 1000):
        oracle = stats.norm.cdf(math.sqrt(n * (n + 1) / (12 * (n - 1))) - 1.96)
        trend = rng.normal(size=(reps, n)) + np.linspace(0, 1, n)
        rows.append(
            [
                n,
                ljung_box_lags(n),
                passing(rng.normal(size=(reps, n))),
                passing(rng.exponential(size=(reps, n))),
                1 - passing(ar1(n, 0.5)),
                1 - passing(ar1(n, 0.9)),
                1 - passing(trend),
                oracle,
            ]
        )
    render_table(
        [
            "N",
            "lags",
            "iid normal pass",
            "iid exp pass",
            "AR.5 fail",
            "AR.9 fail",
            "1SD trend fail",
            "oracle",
        ],
        rows,
        title="independence test",
        plain=True,
    )
    rng = np.random.default_rng(5)
    rows = []
    for n in (10, 30, 50, 100, 500):
        res = np.array(
            [
                literal_triscale_independence(rng.normal(size=n))
                for _ in range(400 if n < 500 else 150)
            ]
        )
        rows.append([n, res[:, 0].mean(), res[:, 1].mean(), (res[:, 0] & res[:, 1]).mean()])
    render_table(
        ["N", "stationarity", "all-lag ACF", "both"],
        rows,
        title="literal TriScale independence test on i.i.d. normal data",
        plain=True,
    )


if __name__ == "__main__":
    import sys

    main()
    if "--tables" in sys.argv[1:]:
        tables()
