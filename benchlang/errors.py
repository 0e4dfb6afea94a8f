"""Errors meant for people: the CLI prints them without a traceback and exits with status 2."""

from __future__ import annotations


class UserError(Exception):
    """A problem with what the user asked for (bad input file, bad option, missing store).

    The message is printed as ``benchlang: error: <message>``, followed by ``hint: ...``
    when a hint is given, and the process exits with status 2.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
