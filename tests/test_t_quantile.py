"""The numpy Student's t quantile (``stats._special.t_ppf``, one element of ``stdtrit``, for
commands that never load scipy) against ``scipy.special.stdtrit``, from 1 to a million degrees
of freedom (at 10,000 the Newton steps once never reached 1e-14 and ran 1,000 times, 1.4 s of
``analyze``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import stdtrit

from benchlang.stats import _special

Q = (0.5, 0.51, 0.6, 0.9, 0.975, 0.995, 0.9999)


@pytest.mark.parametrize("df", [1, 2, 2.5, 3, 5, 10, 17.3, 30, 99, 999, 9_999, 99_999, 1_000_000])
def test_t_ppf_agrees_with_scipy(df):
    for q in Q:
        want = float(stdtrit(df, q))
        tolerance = 1e-12 if df < 1_000 else 1e-9  # t_sf's own rounding at large df
        assert _special.t_ppf(q, df) == pytest.approx(want, rel=tolerance, abs=tolerance), (df, q)


def test_t_ppf_stops_at_the_rounding_floor_of_the_tail(monkeypatch):
    """At large df the Newton steps stop shrinking near 1e-12; the iteration stops there
    rather than running out its 1,000 steps (counted, not timed)."""
    calls = []
    real = _special._t_tail

    def counted(t, df):
        calls.append(t)
        return real(t, df)

    monkeypatch.setattr(_special, "_t_tail", counted)
    _special.t_ppf.cache_clear()
    for df in (9_999, 99_999, 1_000_000):
        calls.clear()
        value = _special.t_ppf(0.975, df)
        assert value == pytest.approx(float(stdtrit(df, 0.975)), rel=1e-9)
        assert 1 <= len(calls) <= 10, (df, len(calls))
    _special.t_ppf.cache_clear()


def test_t_sf_agrees_with_scipy_elementwise():
    """The tail the quantile inverts, for numbers and arrays of t and df, both signs."""
    from scipy.special import stdtr

    t = np.array([-40.0, -3.0, -0.5, 0.0, 0.5, 2.5, 3.0, 40.0, np.inf, -np.inf])
    for df in (1, 2, 3, 10, 999, 9_998, 1_000_000):
        want = stdtr(df, -t)
        np.testing.assert_allclose(_special.t_sf(t, df), want, rtol=1e-9, atol=1e-300)
    df = np.array([1.0, 2.5, 30.0, 5_000.0])
    np.testing.assert_allclose(_special.t_sf(2.0, df), stdtr(df, -2.0), rtol=1e-9)
    assert isinstance(_special.t_sf(1.0, 5), float) and np.isnan(_special.t_sf(np.nan, 5))
