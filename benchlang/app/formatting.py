"""Formatting spec files (``benchlang fmt``): read, lay out, and write back only on change."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import attrs

from benchlang.lang.format import format_text
from benchlang.lang.syntax import decode
from benchlang.report.atomic import replacing

STDIN = "-"


@attrs.frozen
class Formatted:
    """A spec's text as read and in the canonical layout."""

    path: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff from the file to its formatted text (empty when unchanged)."""
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                f"{self.path} (original)",
                f"{self.path} (formatted)",
            )
        )


def format_spec(path: str) -> Formatted:
    """Format one spec file (``-``: standard input); raises SpecError on a syntax error or
    text that is not UTF-8, with the diagnostics ``benchlang check`` prints."""
    data = sys.stdin.buffer.read() if path == STDIN else Path(path).read_bytes()
    before = decode(path, data).text
    return Formatted(path, before, format_text(before, path))


def write_formatted(formatted: Formatted) -> None:
    """Replace the file by its formatted text atomically (a crash leaves the old or the new
    file, never half of one), keeping its permissions."""
    with replacing(formatted.path, "w", encoding="utf-8", newline="") as out:
        out.write(formatted.after)
