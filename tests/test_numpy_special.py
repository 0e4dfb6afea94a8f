"""The numpy forms of scipy's normal CDF and quantile and of its mirrored running median
(``stats._special.ndtr``/``ndtri``, ``stats._running.median_filter_mirror``), which keep
``scipy`` out of ``history``'s change-point search, against scipy itself."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
from scipy.ndimage import median_filter

from benchlang.stats._running import median_filter_mirror
from benchlang.stats._special import ndtr, ndtri


def test_ndtr_agrees_with_scipy_into_the_far_tails():
    x = np.concatenate([np.linspace(-37.0, 9.0, 20_001), [0.0, 1e-300, -1e-300]])
    np.testing.assert_allclose(ndtr(x), sp.ndtr(x), rtol=1e-12, atol=0.0)
    assert ndtr(np.inf) == 1.0 and ndtr(-np.inf) == 0.0 and np.isnan(ndtr(np.nan))
    assert isinstance(ndtr(0.3), float) and ndtr(0.3) == pytest.approx(float(sp.ndtr(0.3)))


def test_ndtri_agrees_with_scipy_over_the_unit_interval():
    p = np.concatenate([np.linspace(1e-12, 1 - 1e-12, 20_001), [1e-300, 1e-17, 0.5, 0.975]])
    want = sp.ndtri(p)
    np.testing.assert_allclose(ndtri(p), want, rtol=1e-14, atol=1e-14)
    assert ndtri(0.0) == -np.inf and ndtri(1.0) == np.inf
    assert np.isnan(ndtri(-0.1)) and np.isnan(ndtri(1.1)) and np.isnan(ndtri(np.nan))


@pytest.mark.parametrize("size", [1, 3, 5, 11, 13, 21, 31])
def test_running_median_is_scipys_mirror_median_filter(size):
    """Equal to the last bit on finite series of every length, ties included; short series
    (half the window past the far end) are scipy's own answer."""
    rng = np.random.default_rng(size)
    for n in range(1, 90):
        for y in (rng.normal(size=n), np.round(rng.normal(size=n))):
            np.testing.assert_array_equal(
                median_filter_mirror(y, size), median_filter(y, size=size, mode="mirror")
            )


def test_stdtrit_agrees_with_scipy_elementwise():
    """The vectorised t quantile of ``history``'s prediction bounds (stats/prediction.py)."""
    from benchlang.stats._special import stdtrit

    df = np.array([1, 2, 2.5, 3, 5, 10, 17.3, 30, 99, 999, 9_999])
    for p in (0.001, 0.05, 0.5, 0.51, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9999):
        np.testing.assert_allclose(stdtrit(df, p), sp.stdtrit(df, p), rtol=1e-11, atol=1e-11)
    k = np.arange(2, 501)
    np.testing.assert_allclose(stdtrit(k - 1, 0.95), sp.stdtrit(k - 1, 0.95), rtol=1e-11)
    assert isinstance(stdtrit(3, 0.975), float)
    assert stdtrit(3, 0.975) == pytest.approx(float(sp.stdtrit(3, 0.975)), rel=1e-13)
