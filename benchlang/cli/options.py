"""Argument types shared by the commands."""

from __future__ import annotations

import argparse


def percent_argument(text: str) -> float:
    """A percentage in (0, 100): ``95``, ``95%`` or ``99.9``."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not 0.0 < value < 100.0:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 100: {text!r}")
    return value
