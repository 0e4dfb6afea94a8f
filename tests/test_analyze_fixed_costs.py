"""What analyze of a small store pays for besides its arithmetic: the
forms that cut it give the numbers of the forms they replace."""

from __future__ import annotations

import numpy as np
import pytest

from benchlang.stats._multistage import multistage_weights
from benchlang.stats._weighted import _WINDOWED_FROM, replicate_percentiles, weighted_percentile


@pytest.mark.parametrize("size", [_WINDOWED_FROM, 300, 1_000])
def test_small_groups_windowed_equal_the_direct_form(size: int) -> None:
    """Groups of a few hundred values take the windowed form now; each replicate's
    percentile is still the direct form's, bit for bit (rounds of 10 configurations drawn
    as a bootstrap draws them, a replicate with no weight, one crossing far outside)."""
    rng = np.random.default_rng(size)
    configurations = 10
    leaves = size * configurations
    clusters = np.column_stack([np.arange(leaves) // configurations, np.arange(leaves)])
    weights, leaf = multistage_weights(clusters, 200, rng)
    weights[100] = 0
    groups = []
    for j in range(configurations):
        cols = leaf[j::configurations]
        groups.append((np.sort(rng.lognormal(-3 + 0.01 * j, 0.1, cols.size)), cols))
    weights[110, groups[0][1][:5]] += 10_000
    for percentile in (50, 95, 5):
        blocks = [lambda: weights[:40], lambda: weights[40:]]
        got = replicate_percentiles(groups, blocks, percentile)
        for j, (values, cols) in enumerate(groups):
            direct = weighted_percentile(values, weights, percentile, columns=cols)
            assert np.array_equal(got[:, j], direct, equal_nan=True), (percentile, j)
        assert np.isnan(got[100]).all()


def test_finite_median_is_numpys_bit_for_bit() -> None:
    """The carry-over test's medians (``_groups.finite_median``) against ``numpy.median``:
    odd and even sizes, ties, integers, signed zeros."""
    from benchlang.stats._groups import finite_median

    rng = np.random.default_rng(31)
    cases: list[np.ndarray] = [rng.lognormal(-3, 0.1, n) for n in (1, 2, 3, 4, 49, 50, 451)]
    cases += [np.round(rng.normal(size=60), 1), rng.integers(-4, 4, 11)]
    cases += [np.array([-0.0]), np.array([-0.0, -0.0]), np.array([0.0, -0.0, -0.0])]
    for x in cases:
        want = float(np.median(x))
        got = finite_median(x)
        assert got == want and np.signbit(got) == np.signbit(want), x
    assert np.isnan(finite_median(np.array([])))
