"""Reading a CSV file of per-trial data for people: clear errors, never a traceback."""

from __future__ import annotations

import csv
from pathlib import Path

from benchlang.errors import UserError


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows of a CSV file with a header, as dicts; UserError when unreadable or empty."""
    path = Path(path)
    try:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as err:
        raise UserError(f"{path} is not a readable CSV file: {err}") from None
    if not rows:
        raise UserError(f"{path} has no data rows")
    return rows
