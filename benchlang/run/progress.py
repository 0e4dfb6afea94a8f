"""Progress during a run: a rich bar on a terminal, sparse plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


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
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.console.print(message)
        else:
            print(message, file=self.stream, flush=True)

    def advance(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed)
        elif not self.quiet:
            now = time.monotonic()
            if now >= self._next_line or self.done == self.total:
                self._next_line = now + 5.0
                print(
                    f"trials {self.done}/{self.total}, failures {self.failed}, eta {self._eta(now)}",
                    file=self.stream,
                    flush=True,
                )

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
