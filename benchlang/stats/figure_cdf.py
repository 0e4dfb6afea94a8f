"""The numbers of TriScale's CDF figures (Jacob et al., JSys 1(1) 2021): Fig. 7 (``cdf``, each
configuration's empirical CDF with its confidence band) and Fig. 10 (``cdf-overlay``, the bands
of all configurations on shared axes); docs/figures.md.

Both read one ``CDFPart`` per configuration, built once (``cdf_parts``): the report draws both
figures from the same step lines and bands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.stats.cdf import CDFBand
from benchlang.stats.figure_data import NAN, FigureData, ecdf

PAPER = "TriScale (Jacob et al., JSys 2021)"
COLUMNS = ("configuration", "part", "x", "y", "low", "high")
STEP_COLUMNS = 1400
"""Slices of a CDF's x range within which its step line keeps only its first and last step:
1,400 pixel columns, the width of the report's 7-in figure at ``savefig.dpi`` 200 (a panel, or
the paper style's 3.3 in, is narrower, so a slice is at most one pixel wide). Inside a slice
both lines rise from the same first point to the same last one, so the picture is the same at
that resolution; the band and the statistics use every value."""
BAND_WORK = 1_000_000
"""Percentiles x values of one band's binomial table (its cost; configurations with as many
values share it, ``stats.cdf``); beyond it the band is computed at every k-th percentile, and
the notes say so."""


@attrs.frozen
class CDFPart:
    """One configuration's step line (``x`` sorted, ``p`` the fraction at or below; only the
    points ``step_points`` keeps), how many values it has, and its band."""

    label: str
    x: np.ndarray = attrs.field(eq=False)
    p: np.ndarray = attrs.field(eq=False)
    n: int
    band: CDFBand
    step: int


def step_points(x: np.ndarray, columns: int = STEP_COLUMNS) -> np.ndarray:
    """Indices of the sorted ``x`` to draw its ECDF (steps ``where="post"``) with: the first and
    last of each of ``columns`` equal slices of its range. Between two kept points of adjacent
    slices nothing was dropped; inside a slice the full staircase and the kept corner span the
    same rectangle, less than a slice wide."""
    if x.size <= 2 * columns or x[-1] <= x[0]:
        return np.arange(x.size) if x.size <= 2 * columns else np.array([0, x.size - 1])
    col = np.minimum(((x - x[0]) * (columns / (x[-1] - x[0]))).astype(np.int64), columns - 1)
    first = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    return np.unique(np.r_[first, first[1:] - 1, x.size - 1])


def cdf_parts(
    labels: Sequence[str], values: Sequence[np.ndarray], confidence: float
) -> tuple[CDFPart, ...]:
    """Each configuration's step line and its band bounding every percentile 2..98 at
    ``confidence``, each on its own (pointwise, §5.4, ``stats.cdf.cdf_band``)."""
    from benchlang.stats.cdf import cdf_band

    out = []
    for label, v in zip(labels, values, strict=True):
        x, p = ecdf(v)
        keep = step_points(x)
        step = max(1, -(-97 * x.size // BAND_WORK))
        band = cdf_band(x, np.arange(2.0, 99.0, step), confidence=confidence)
        out.append(CDFPart(label, x[keep], p[keep], int(x.size), band, step))
    return tuple(out)


def cdf(
    parts: Sequence[CDFPart], confidence: float, metric: str, unit: str, overlay: bool = False
) -> FigureData:
    """Fig. 7 (each configuration's empirical CDF and its band) or Fig. 10 (``overlay``: the
    bands of all configurations on shared axes), from ``cdf_parts``."""
    rows: list[tuple[Any, ...]] = []
    left: list[str] = []
    merged = False
    for part in parts:
        label, band = part.label, part.band
        if not overlay:
            rows += [
                (label, "trial", x, p, NAN, NAN)
                for x, p in zip(part.x.tolist(), part.p.tolist(), strict=True)
            ]
            merged |= part.x.size < part.n
        if part.step > 1:
            left.append(f"{label}: band at every {part.step}th percentile ({part.n:,} values)")
        ok = np.isfinite(band.lower) & np.isfinite(band.upper)
        rows += [
            (label, "band", NAN, q / 100.0, lo, hi)
            for q, lo, hi in zip(
                band.percentiles[ok].tolist(),
                band.lower[ok].tolist(),
                band.upper[ok].tolist(),
                strict=True,
            )
        ]
        if not ok.any():
            left.append(f"{label}: {part.n} values bound no percentile at {confidence:g}%")
        elif not ok.all():
            left.append(
                f"{label}: band of percentiles {band.percentiles[ok][0]:g}-"
                f"{band.percentiles[ok][-1]:g} only ({part.n} values)"
            )
    what = (
        f"the {confidence:g}% confidence bands of the CDF of {metric}, all configurations on "
        "shared axes"
        if overlay
        else f"the empirical CDF of {metric} per configuration with its {confidence:g}% band"
    )
    figure = "Fig. 10" if overlay else "Fig. 7"
    caption = (
        f"{what[0].upper()}{what[1:]}: each percentile from 2 to 98 bounded below and above "
        f"at {confidence:g}% on its own (pointwise, §5.4)."
        + (
            f" The step line keeps the first and last step within each 1/{STEP_COLUMNS:,} of "
            f"its x range (the same picture up to {STEP_COLUMNS:,} pixels across); the band "
            "uses every value."
            if merged
            else ""
        )
        + f" After {PAPER} {figure}."
    )
    return FigureData(
        "cdf-overlay" if overlay else "cdf",
        f"{PAPER} {figure}",
        caption,
        COLUMNS,
        rows,
        tuple(left),
        {"x_label": f"{metric} ({unit})", "y_label": "fraction of trials"},
    )
