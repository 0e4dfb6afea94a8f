"""Equivalence and regression gates on a ratio interval: TOST with a margin in percent.

Schuirmann, "A comparison of the two one-sided tests procedure and the power approach for
assessing the equivalence of average bioavailability", J. Pharmacokinetics and
Biopharmaceutics 15(6), 1987: two one-sided tests at level alpha each, equivalently the
two-sided (1 - 2 alpha) interval lying inside the margins. Wellek, *Testing Statistical
Hypotheses of Equivalence and Noninferiority*, 2nd ed., CRC 2010, §1.6-§2.2: the same interval
also decides the one-sided questions (non-inferiority; a regression beyond the margin).

Margins are symmetric on the log scale: a ratio within ``[1 / (1 + m), 1 + m]`` is equivalent.
``better`` orients the verdicts: with ``lower`` (times), a ratio above ``1 + m`` is worse.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from benchlang.jsonout import undefined

VERDICTS = ("equivalent", "worse", "better", "inconclusive")


@attrs.frozen
class Equivalence:
    """What the (1 - 2 alpha) ``interval`` of a ratio says against the margin ``margin``.

    ``worse``: the whole interval is beyond the margin on the bad side (a regression beyond
    the margin, one-sided test at level alpha); ``better`` the same on the good side;
    ``equivalent``: inside both margins (TOST at level alpha); else ``inconclusive``.
    """

    margin: float
    alpha: float
    lower: float
    upper: float
    better: str
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; the bounds of a ratio without an interval are null, with why."""
        return undefined(attrs.asdict(self), {"*": "the ratio has no interval (descriptive only)"})


def tost_confidence(alpha: float) -> float:
    """The two-sided confidence (percent) whose interval decides TOST at level ``alpha``."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    return 100.0 * (1.0 - 2.0 * alpha)


def equivalence(
    lower: float, upper: float, margin: float, *, alpha: float = 0.05, better: str = "lower"
) -> Equivalence:
    """The verdict of a ratio's (1 - 2 alpha) interval ``[lower, upper]`` against a margin
    (a fraction: 0.02 for 2%). A nan bound (a descriptive-only ratio) is ``inconclusive``."""
    if not margin > 0:
        raise ValueError(f"margin must be positive, got {margin!r}")
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    top, bottom = 1.0 + margin, 1.0 / (1.0 + margin)
    if not (math.isfinite(lower) and math.isfinite(upper)):
        verdict = "inconclusive"
    elif lower > top:
        verdict = "worse" if better == "lower" else "better"
    elif upper < bottom:
        verdict = "better" if better == "lower" else "worse"
    elif bottom <= lower and upper <= top:
        verdict = "equivalent"
    else:
        verdict = "inconclusive"
    return Equivalence(margin, alpha, lower, upper, better, verdict)
