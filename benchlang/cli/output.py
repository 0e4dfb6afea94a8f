"""A command's standard output and error when they cannot be written (``cli.entry``,
``cli._dispatch``).

A closed pipe on the standard output (``benchlang ... | head`` after ``head`` left) ends a
command early with exit 0, as hyperfine does, except where the exit status is a verdict
(``VERDICTS``: a CI gate piped to ``head`` must fail closed): there the output goes to
``/dev/null`` from then on and the command goes on to its verdict. Any other failure to write
(a full disk, an I/O error, a character its encoding lacks) ends in one line, ``benchlang:
error: cannot write the output: ...``, and a non-zero exit (a verdict command's failing
verdict, else ``failing``), never a traceback. A standard output closed before the start
(``>&-``) is ``/dev/null``: nothing to write is no error (as Rust's standard streams, hence
hyperfine, treat a closed descriptor). The standard error (progress, messages) never stops a
command nor changes its status: what cannot be written there is dropped, and the rest with it.
Both streams are rebuilt on a raw layer of our own (``_Raw``) that tells these apart, buffered
as the interpreter's were: it sees the buffer's writes, one per 8 KiB, not each ``print``
(each one where Python runs unbuffered, as it did).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import io
import os
import sys
from typing import TextIO

VERDICTS = frozenset(
    {
        "run",
        "check",
        "compare",
        "diff",
        "bisect",
        "replicate",
        "system",
        "history check",
        "hosts release",
        "fmt --check",
    }
)
"""Commands (``history``/``hosts`` actions, ``fmt --check``) whose exit status is a verdict: a
run's failed trials (as hyperfine's), a spec's errors, a gate, a replication judged, a host
state checked, leases left unreleased, a commit's step of ``git bisect run``. A run also goes
on to its last trial: a closed pipe stops no run."""


class OutputError(OSError):
    """The standard output could not be written (not a closed pipe)."""


def is_verdict(args: argparse.Namespace) -> bool:
    """Whether the command's exit status is a verdict (``VERDICTS``): by its name, its action,
    or its ``--check`` flag."""
    command = getattr(args, "command", None)
    action = getattr(args, "action", None)
    return (
        command in VERDICTS
        or f"{command} {action}" in VERDICTS
        or (getattr(args, "check", None) is True and f"{command} --check" in VERDICTS)
    )


def failing(args: argparse.Namespace) -> int:
    """The status of a command whose output could not be written though it did its work: 1
    for ``run`` (every trial ran and was stored: a run's failing status, as a store that
    could not be written), else 2."""
    return 1 if getattr(args, "command", None) == "run" else 2


class _Raw(io.RawIOBase):
    """File descriptor ``fd`` written with ``os.write``. A closed pipe raises BrokenPipeError,
    any other error OutputError; with ``keep_going`` (a verdict to reach) both send the rest
    to ``/dev/null`` instead, the other error kept in ``failed`` for the end to say; with
    ``quiet`` (the standard error) every error does so and is forgotten."""

    def __init__(self, fd: int, keep_going: bool, quiet: bool = False) -> None:
        super().__init__()
        self._fd = fd
        self.keep_going = keep_going
        self.quiet = quiet
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
            if not (self.keep_going or self.quiet):
                raise
            silence(self._fd)
            return len(data)
        except OSError as err:
            self.fail(OutputError(err.errno, err.strerror))
            return len(data)

    def fail(self, err: OutputError) -> None:
        """Raise ``err``, or, going on, keep it (unless ``quiet``) and silence the rest."""
        if not (self.keep_going or self.quiet):
            raise err
        if not self.quiet:
            self.failed = self.failed or err
        silence(self._fd)


_RAW: list[_Raw] = []
_ORIGINAL: list[TextIO] = []
_FAILING = [2]
_UNENCODABLE = "benchlang.output"


def _unencodable(err: UnicodeError) -> tuple[str, int]:
    """The standard output's encoding error handler (in place of "strict"): a character its
    encoding lacks is a failure to write, not a traceback."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    char = err.object[err.start]
    _RAW[0].fail(
        OutputError(
            errno.EILSEQ,
            f"U+{ord(char):04X} is not in its encoding, {err.encoding} "
            "(PYTHONIOENCODING=utf-8 writes it)",
        )
    )
    return "?" * (err.end - err.start), err.end


def install() -> None:
    """Standard output and error on ``_Raw`` (same encoding, errors and buffering), before the
    arguments are parsed (``--help`` and ``--version`` write too: a failure is kept for the
    end to say, as argparse ignores it) until ``judge`` knows the command. A descriptor closed
    before the start is ``/dev/null`` (a file opened later would take it otherwise)."""
    for fd in (1, 2):
        try:
            os.fstat(fd)
        except OSError:
            silence(fd)
    sys.stderr = _rebuilt(sys.stderr, _Raw(2, keep_going=True, quiet=True), "backslashreplace")
    out = sys.stdout
    if out is not None and not isinstance(out, io.TextIOWrapper):
        return
    codecs.register_error(_UNENCODABLE, _unencodable)
    _RAW.append(_Raw(1, keep_going=True))  # argparse's help would swallow an error
    if out is not None:
        _ORIGINAL.append(out)
    sys.stdout = _rebuilt(out, _RAW[0], _UNENCODABLE)


def _rebuilt(stream: TextIO | None, raw: _Raw, errors: str) -> TextIO:
    """A text stream on ``raw`` as ``stream`` was (or, for none, buffered UTF-8), with
    ``errors`` in place of "strict"."""
    if stream is not None and not isinstance(stream, io.TextIOWrapper):
        return stream  # a test's or a tool's own stream
    if stream is None:
        return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors=errors)
    with contextlib.suppress(OSError, ValueError):
        stream.flush()
    unbuffered = isinstance(stream.buffer, io.RawIOBase)  # python -u, PYTHONUNBUFFERED
    return io.TextIOWrapper(
        raw if unbuffered else io.BufferedWriter(raw),  # type: ignore[type-var]
        encoding=stream.encoding,
        errors=errors if stream.errors == "strict" else stream.errors,
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )


def judge(args: argparse.Namespace) -> None:
    """The parsed command: one whose status is a verdict goes on past a closed pipe; the
    language server gets the interpreter's own standard output back (it owns its streams)."""
    if not _RAW:
        return
    if getattr(args, "command", None) == "lsp" and _ORIGINAL:
        sys.stdout.flush()
        sys.stdout = _ORIGINAL[0]
    _RAW[0].keep_going = is_verdict(args)
    _FAILING[0] = failing(args)


def status(code: object) -> int:
    """A ``SystemExit``'s code as an exit status (argparse's: None, 0 or 2)."""
    return code if isinstance(code, int) else 0 if code is None else 2


def silence(fd: int) -> None:
    """``fd`` onto ``/dev/null``: what is still buffered for it, and the interpreter's last
    flush, go nowhere instead of failing again."""
    null = os.open(os.devnull, os.O_WRONLY)
    if null == fd:
        return
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
    """Say that the output could not be written; the command's own failing status, else
    ``failing``'s."""
    _silence_stdout()
    with contextlib.suppress(OSError, ValueError):
        print(f"benchlang: error: cannot write the output: {err.strerror or err}", file=sys.stderr)
        sys.stderr.flush()
    return code or _FAILING[0]


def flushed(code: int) -> int:
    """Standard output and error flushed at a command's end: its status, or a write failure's
    (a closed pipe now keeps the status: the command has finished). The standard error's
    failures change nothing."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except OSError as err:
        return cannot_write(err, code)
    if _RAW and _RAW[0].failed is not None:
        return cannot_write(_RAW[0].failed, code)
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except OSError:
        with contextlib.suppress(OSError, ValueError):
            silence(sys.stderr.fileno())
    return code


def _silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        silence(sys.stdout.fileno())
