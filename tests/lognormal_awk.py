"""An awk program that prints one lognormal value per trial, drawn from the trial's seed, so a
test's real run (local backend, store) measures values of a known distribution and none of this
machine's noise (tests/test_kpi_bootstrap*.py).

The trial's ``BENCHLANG_SEED`` is made a uniform u in (0, 1), then a standard normal z by the
rational approximation of the normal quantile (Abramowitz & Stegun 1964, 26.2.23; absolute
error below 4.5e-4), then ``median * exp(sigma * z)``."""

from __future__ import annotations


def lognormal_awk(name: str, median: float, sigma: float, number: str, unit: str = "") -> str:
    """The program: it prints ``NAME=VALUEUNIT``, the value in the printf format ``number``
    (e.g. ``%.12g``, ``%.3f``)."""
    return (
        "BEGIN {\n"
        '  u = (ENVIRON["BENCHLANG_SEED"] % 2147483648 + 0.5) / 2147483648; '
        "p = u < 0.5 ? u : 1 - u\n"
        "  t = sqrt(-2 * log(p))\n"
        "  z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / "
        "(1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)\n"
        "  if (u < 0.5) z = -z\n"
        f'  printf "{name}={number}{unit}\\n", {median:g} * exp({sigma:g} * z)\n'
        "}\n"
    )
