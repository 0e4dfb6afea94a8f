"""A centred running median in numpy, for the commands (``history check``) that would
otherwise load ``scipy.ndimage`` for it (0.05-0.3 s of start-up)."""

from __future__ import annotations

import numpy as np


def median_filter_mirror(y: np.ndarray, size: int) -> np.ndarray:
    """The median of the ``size`` (odd) points centred on each point, the ends extended by
    reflection about the end points (``scipy.ndimage.median_filter(y, size, mode="mirror")``;
    Tukey, EDA 1977, ch. 7). Where half the window reaches past the series' far end, scipy's
    one-dimensional rank filter extends the series its own way, so that case is left to it.
    For finite values (a median of a window with nan is not defined alike)."""
    y = np.asarray(y, dtype=np.float64)
    half = size // 2
    if size % 2 == 0 or half >= y.size:
        from scipy.ndimage import median_filter

        return np.asarray(median_filter(y, size=size, mode="mirror"))
    padded = np.pad(y, half, mode="reflect")
    return np.asarray(np.median(np.lib.stride_tricks.sliding_window_view(padded, size), axis=1))
