"""Progress during a run: a rich bar on a terminal, sparse plain lines otherwise."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from typing import TextIO

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
# isolates that reorder what a terminal shows.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character a trial could have written (escape sequences,
    carriage returns, backspaces, bells, bidirectional overrides) shown as ``\\xNN`` /
    ``\\uNNNN`` instead of acted on by the terminal; ``one_line`` also escapes newlines."""

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    text = _UNPRINTABLE.sub(escape, text)
    return text.replace("\n", "\\n") if one_line else text


DRAW_INTERVAL = 0.05
"""Seconds between two updates of the terminal's bar (rich redraws it 10 times a second)."""


class Progress:
    """Counts trials done and failed; shows done/total, failures and ETA."""

    def __init__(
        self, total: int, done: int = 0, *, quiet: bool = False, stream: TextIO | None = None
    ) -> None:
        self.total, self.done, self.failed = total, done, 0
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.started = time.monotonic()
        self._start_done = done
        self._bar = None
        self._next_line = 0.0
        self._draw_due = False
        if not quiet and self.stream.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("trials"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("failures {task.fields[failed]}"),
                TimeRemainingColumn(),
                transient=True,
                redirect_stdout=False,
            )
            self._task = self._bar.add_task("run", total=total, completed=done, failed=0)
            self._bar.start()

    def note(self, message: str) -> None:
        """One line for the user; control characters in it (it may quote a trial's output)
        are escaped, and rich markup in it is not interpreted."""
        if self.quiet:
            return
        message = printable(message)
        if self._bar is not None:
            self._bar.console.print(message, markup=False, highlight=False, emoji=False)
        else:
            print(message, file=self.stream, flush=True)

    def advance(self, failed: bool) -> None:
        """Count a trial. The bar takes the counts at most every ``DRAW_INTERVAL`` (and the
        last trial's), sparse lines every 5 s: a trial of `true` lasts under a millisecond,
        and the runner's time between trials is measured (benchmarks/bench_runner.py)."""
        self.done += 1
        self.failed += failed
        if self.quiet:
            return
        now = time.monotonic()
        if now < self._next_line and self.done != self.total:
            if self._bar is not None and not self._draw_due:
                self._draw_later()
            return
        if self._bar is not None:
            self._draw(now)
        else:
            self._next_line = now + 5.0
            print(
                f"trials {self.done}/{self.total}, failures {self.failed}, eta {self._eta(now)}",
                file=self.stream,
                flush=True,
            )

    def _draw(self, now: float) -> None:
        self._next_line = now + DRAW_INTERVAL
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed)

    def _draw_later(self) -> None:
        """Draw the counts an update left out once ``DRAW_INTERVAL`` passed, when the event
        loop is free: the next trial may last minutes, and its predecessors' counts (a
        failure) must show meanwhile (tests/test_runner_review.py)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # counted outside a run's loop: the next update draws them
            return
        self._draw_due = True
        loop.call_later(DRAW_INTERVAL, self._draw_left_out)

    def _draw_left_out(self) -> None:
        self._draw_due = False
        if self._bar is not None:
            self._draw(time.monotonic())

    def _eta(self, now: float) -> str:
        ran = self.done - self._start_done
        if ran <= 0:
            return "?"
        left = (now - self.started) / ran * (self.total - self.done)
        return f"{left:.0f}s" if left < 120 else f"{left / 60:.1f}m"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
