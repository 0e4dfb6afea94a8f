"""The pure-Python Student's t quantile (``stats._special.t_ppf``, for commands that never load
scipy) against ``scipy.special.stdtrit``, from 1 to a million degrees of freedom (issue 53: at
10,000 the Newton steps never reached 1e-14 and ran 1,000 times, 1.4 s in ``analyze``)."""

from __future__ import annotations

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


def test_t_ppf_stops_at_the_rounding_floor_of_t_sf(monkeypatch):
    """At large df the Newton steps stop shrinking near 1e-12; the iteration stops there
    rather than running out its 1,000 steps (counted, not timed)."""
    calls = []
    real = _special.t_sf

    def counted(t, df):
        calls.append(t)
        return real(t, df)

    monkeypatch.setattr(_special, "t_sf", counted)
    _special.t_ppf.cache_clear()
    for df in (9_999, 99_999):
        calls.clear()
        value = _special.t_ppf(0.975, df)
        assert value == pytest.approx(float(stdtrit(df, 0.975)), rel=1e-10)
        assert len(calls) <= 10, (df, len(calls))
    _special.t_ppf.cache_clear()
