"""Errors meant for people: the CLI prints them without a traceback and exits with status 2.

This module is the bottom layer: every other layer may raise these. ``SettingError`` is the
error of a backend's settings (raised by backends, turned into a positioned diagnostic by the
checker, which must not import backends).
"""

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


class SettingError(Exception):
    """A ``hosts`` setting is wrong; ``key`` names it so the spec error points at it."""

    def __init__(self, key: str | None, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.hint = hint
