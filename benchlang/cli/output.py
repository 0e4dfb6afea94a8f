"""A command's standard output when it cannot be written (``cli.entry``, ``cli._dispatch``).

A closed pipe (``benchlang ... | head`` after ``head`` left) ends a command early with exit 0, as
hyperfine does, except where the exit status is a verdict (``VERDICTS``: a CI gate piped to
``head`` must fail closed): there the output goes to ``/dev/null`` from then on and the command
goes on to its verdict. Any other failure to write (a full disk, an I/O error) ends in one line,
``benchlang: error: cannot write the output: ...``, and a non-zero exit (a verdict command's
failing verdict, else 2), never a traceback. The
standard output is rebuilt on a raw layer of our own (``_Raw``) that tells these apart, buffered
as the interpreter's was: it sees the buffer's writes, one per 8 KiB, not each ``print`` (each
one where Python runs unbuffered, as it did).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys

VERDICTS = frozenset(
    {"run", "check", "compare", "diff", "bisect", "replicate", "system", "history check"}
)
"""Commands (and ``history`` actions) whose exit status is a verdict: a run's failed trials (as
hyperfine's), a spec's errors, a gate, a replication judged, a host state checked, a commit's
step of ``git bisect run``. A run also goes on to its last trial: a closed pipe stops no run."""


class OutputError(OSError):
    """The standard output could not be written (not a closed pipe)."""


def is_verdict(args: argparse.Namespace) -> bool:
    """Whether the command's exit status is a verdict (``VERDICTS``)."""
    command = getattr(args, "command", None)
    action = getattr(args, "action", None)
    return command in VERDICTS or f"{command} {action}" in VERDICTS


class _Raw(io.RawIOBase):
    """File descriptor ``fd`` written with ``os.write``. A closed pipe raises BrokenPipeError,
    any other error OutputError; with ``keep_going`` (a verdict to reach) both send the rest
    to ``/dev/null`` instead, the other error kept in ``failed`` for the end to say."""

    def __init__(self, fd: int, keep_going: bool) -> None:
        super().__init__()
        self._fd = fd
        self.keep_going = keep_going
        self.failed: OSError | None = None

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data) -> int:  # type: ignore[no-untyped-def,override]
        try:
            return os.write(self._fd, data)
        except BrokenPipeError:
            if not self.keep_going:
                raise
            silence(self._fd)
            return len(data)
        except OSError as err:
            if not self.keep_going:
                raise OutputError(err.errno, err.strerror) from None
            self.failed = self.failed or err
            silence(self._fd)
            return len(data)


_RAW: list[_Raw] = []
_ORIGINAL: list[io.TextIOBase] = []


def install() -> None:
    """Standard output on ``_Raw`` (same encoding, errors and line buffering), before the
    arguments are parsed (``--help`` and ``--version`` write too: a failure is kept for the
    end to say, as argparse ignores it) until ``judge`` knows the command."""
    out = sys.stdout
    if not isinstance(out, io.TextIOWrapper):
        return
    try:
        fd = out.fileno()
        out.flush()
    except (OSError, ValueError):
        return
    _RAW.append(_Raw(fd, keep_going=True))  # argparse's help would swallow an error
    _ORIGINAL.append(out)
    unbuffered = isinstance(out.buffer, io.RawIOBase)  # python -u, PYTHONUNBUFFERED
    sys.stdout = io.TextIOWrapper(
        _RAW[0] if unbuffered else io.BufferedWriter(_RAW[0]),  # type: ignore[arg-type]
        encoding=out.encoding,
        errors=out.errors,
        line_buffering=out.line_buffering,
        write_through=out.write_through,
    )


def judge(args: argparse.Namespace) -> None:
    """The parsed command: one whose status is a verdict goes on past a closed pipe; the
    language server gets the interpreter's own standard output back (it owns its streams)."""
    if not _RAW:
        return
    if getattr(args, "command", None) == "lsp":
        sys.stdout.flush()
        sys.stdout = _ORIGINAL[0]
    _RAW[0].keep_going = is_verdict(args)


def status(code: object) -> int:
    """A ``SystemExit``'s code as an exit status (argparse's: None, 0 or 2)."""
    return code if isinstance(code, int) else 0 if code is None else 2


def silence(fd: int) -> None:
    """``fd`` onto ``/dev/null``: what is still buffered for it, and the interpreter's last
    flush, go nowhere instead of failing again."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def closed(args: argparse.Namespace) -> int:
    """The exit status of a command stopped by a closed pipe: 0 (hyperfine), 1 for one whose
    status is a verdict it could not reach (it fails closed)."""
    _silence_stdout()
    return 1 if is_verdict(args) else 0


def cannot_write(err: OSError, code: int) -> int:
    """Say that the output could not be written; the command's own failing status, else 2."""
    _silence_stdout()
    try:
        print(f"benchlang: error: cannot write the output: {err.strerror or err}", file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return code or 2


def flushed(code: int) -> int:
    """Standard output and error flushed at a command's end: its status, or a write failure's
    (a closed pipe now keeps the status: the command has finished)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except OSError as err:
        return cannot_write(err, code)
    if _RAW and _RAW[0].failed is not None:
        return cannot_write(_RAW[0].failed, code)
    try:
        sys.stderr.flush()
    except OSError:
        with contextlib.suppress(OSError, ValueError):
            silence(sys.stderr.fileno())
        return code or 2
    return code


def _silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError):
        silence(sys.stdout.fileno())
