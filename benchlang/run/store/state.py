"""What the store's reading and writing parts share: its path, its mode and its connection
(``core`` opens and closes it)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


class StoreState:
    """The state ``Store`` sets up and its mixed-in parts read."""

    path: Path
    writable: bool
    db: sqlite3.Connection | None
    _schema: int
    _unfolded: int

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection; a closed store raises what a closed connection raises."""
        if self.db is None:
            raise sqlite3.ProgrammingError(f"the store {self.path} is closed")
        return self.db
