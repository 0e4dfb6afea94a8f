"""The per-trial CSV's roles and their default columns (OrderSage's names), apart from its
reader: `benchlang import`'s arguments are made from them without loading numpy, which then
loads when the command runs (cli/import_data.py says why that matters)."""

from __future__ import annotations

ROLES = ("configuration", "order", "round", "position", "value", "series")
DEFAULT_COLUMNS: dict[str, str | None] = {
    "configuration": "test",
    "order": "order",
    "round": "run_seq",
    "position": "position",
    "value": "value",
    "series": None,
}
