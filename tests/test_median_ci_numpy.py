"""The order report's median CI ranks from numpy's Binomial(n, 1/2) CDF are
the ranks scipy's kernels give, including where a bound falls exactly on a CDF value; the
"too few trials" check agrees with the exact coverage; and the order report of a store runs
without importing scipy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from benchlang.stats.order_dependence import (
    _REL_TOL,
    _half_binomial_cdf,
    achieved_level,
    below_level,
    median_ci_rank_pairs,
)

# 0.75 and 1 - 2**-4 put the tail on a CDF value of small n exactly (B(0) of n = 3, 5)
LEVELS = [0.5, 0.75, 0.9, 0.95, 1 - 2**-4, 0.995, 1 - 0.05 / 45, 1 - 0.05 / 20]


def _scipy_ranks(n: np.ndarray, level: float) -> np.ndarray:
    stats = pytest.importorskip("scipy.stats")
    tail = (1.0 - level) / 2.0
    t = stats.binom.ppf(tail, n, 0.5).astype(np.int64)
    t = np.where(stats.binom.cdf(t, n, 0.5) <= tail * (1 + _REL_TOL), t, t - 1)
    return np.clip(t + 1, 1, (n + 1) // 2)


@pytest.mark.parametrize("level", LEVELS)
def test_rank_pairs_are_scipys(level: float) -> None:
    n = np.concatenate([np.arange(1, 600), np.arange(600, 120_000, 1_733), [10**6]])
    j, k = median_ci_rank_pairs(n, level)
    assert np.array_equal(j, _scipy_ranks(n, level))
    assert np.array_equal(k, n + 1 - j)


def test_numpy_cdf_is_close_to_scipys() -> None:
    """Within 1e-10 of the kernel the ranks came from (boost's, behind scipy.stats.binom),
    far inside the 1e-7 margin past which numpy's comparison decides a rank."""
    ufuncs = pytest.importorskip("scipy.special._ufuncs")
    for n in (1, 2, 7, 40, 1_999, 2_001, 50_000, 10**6, 10**7):
        table = _half_binomial_cdf(n)
        reference = ufuncs._binom_cdf(np.arange(table.size, dtype=float), n, 0.5)
        big = reference > 1e-300
        assert np.allclose(table[big], reference[big], rtol=1e-10, atol=0)


@pytest.mark.parametrize("level", LEVELS)
def test_below_level_is_the_exact_comparison(level: float) -> None:
    for n in [*range(1, 80), 101, 1_000, 4_001]:
        j, k = (int(x[0]) for x in median_ci_rank_pairs(np.array([n]), level))
        assert below_level((j, k), n, level) == (achieved_level((j, k), n) < level)


def test_order_report_without_scipy(tmp_path) -> None:
    """A store with fixed- and random-order rounds: analyze's order report imports no scipy."""
    rng = np.random.default_rng(5)
    csv = tmp_path / "trials.csv"
    lines = ["test,order,run_seq,position,value"]
    for r in range(200):
        order = "fixed" if r % 2 == 0 else "random"
        configs = range(3) if order == "fixed" else rng.permutation(3).tolist()
        lines += [
            f"t{c},{order},{r},{p},{rng.lognormal(-3, 0.1):.6g}" for p, c in enumerate(configs)
        ]
    csv.write_text("\n".join(lines) + "\n")
    store = tmp_path / "s.sqlite"
    run = [sys.executable, "-m", "benchlang", "import", str(csv), "--store", str(store)]
    subprocess.run(run, check=True, capture_output=True)
    code = (
        "import sys, io, contextlib\n"
        "from benchlang.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main(['analyze', {str(store)!r}])\n"
        "assert 'Order dependence' in out.getvalue(), out.getvalue()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "[]"
