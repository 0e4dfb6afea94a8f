"""The base protocol of LSP over stdio, read strictly: headers, then a body of Content-Length
bytes (the LSP specification, "Base Protocol"). pygls' own loop skips a header it cannot read
and then takes the next body for headers, so after ``Content-Length: abc`` it never answered
again.

What the client sends wrong is answered with a JSON-RPC error (JSON-RPC 2.0, section 5.1:
id null, -32700 parse error, -32600 invalid request). A body that is not JSON or larger than
MAX_MESSAGE is skipped and the next message served; a header that does not say how long its
body is leaves no way to find the next message, so the connection is closed after the error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, NoReturn

MAX_MESSAGE = 64 << 20
"""Largest message body read (64 MiB); a larger one is discarded unread and answered with an
error. Documents above the checker's bound (benchlang.lang.syntax.MAX_BYTES) are read but not
checked."""
MAX_HEADER_LINE = 8192
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_HEADER = re.compile(rb"([A-Za-z0-9-]+):[ \t]*(.*?)[ \t]*\r?\n")
_CHUNK = 1 << 20

log = logging.getLogger("benchlang.lsp")


class ClosedConnection(Exception):
    """The client's bytes cannot be framed any more: the connection ends."""


def error_message(code: int, message: str, id: Any = None) -> bytes:
    """A framed JSON-RPC error response (id null when the request's id is unknown)."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}
    ).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class Framer:
    """Reads messages from a binary stream (blocking calls, run in the server's thread pool);
    the errors to answer wait in ``replies`` for the server's own thread to write them."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.replies: list[bytes] = []

    def next_body(self) -> bytes | None:
        """The body of the next message; None when it was skipped (too large). Raises
        ClosedConnection at the end of the stream or when it cannot be framed."""
        headers = self.headers()
        if headers is None:
            raise ClosedConnection("")
        return self.body(headers)

    def headers(self) -> dict[str, str] | None:
        """The headers of the next message; None at the end of the stream."""
        found: dict[str, str] = {}
        while True:
            line = self.stream.readline(MAX_HEADER_LINE)
            if not line:
                if found:
                    self.refuse("the stream ended inside the headers of a message")
                return None
            if line in (b"\r\n", b"\n"):
                if not found:
                    continue  # blank lines between messages are tolerated
                return found
            match = _HEADER.fullmatch(line)
            if match is None:
                self.refuse(f"cannot read the header {_shown(line)}")
            found[match.group(1).decode("ascii").lower()] = match.group(2).decode("latin-1")

    def body(self, headers: dict[str, str]) -> bytes | None:
        """The body the headers announce; None when it was skipped (too large)."""
        length = headers.get("content-length")
        if length is None:
            self.refuse("a message without a Content-Length header")
        if not length.isascii() or not length.isdigit():
            self.refuse(f"cannot read the header 'Content-Length: {length[:40]}'")
        size = int(length)
        if size > MAX_MESSAGE:
            self._skip(size)
            self.replies.append(
                error_message(
                    INVALID_REQUEST,
                    f"message of {size} bytes declined: benchlang's language server reads "
                    f"messages of at most {MAX_MESSAGE} bytes",
                )
            )
            return None
        body = self.stream.read(size)
        if len(body) < size:
            raise ClosedConnection("the stream ended inside a message")
        return body

    def _skip(self, size: int) -> None:
        while size > 0:
            chunk = self.stream.read(min(size, _CHUNK))
            if not chunk:
                raise ClosedConnection("the stream ended inside a message")
            size -= len(chunk)

    def refuse(self, why: str) -> NoReturn:
        self.replies.append(
            error_message(PARSE_ERROR, f"{why}; benchlang's language server closes the connection")
        )
        raise ClosedConnection(why)


def _shown(line: bytes) -> str:
    text = line.rstrip(b"\r\n").decode("utf-8", "replace")
    return repr(text[:60] + ("..." if len(text) > 60 else ""))


def parse_body(body: bytes, structure: Callable[[dict[str, Any]], Any]) -> Any:
    """The message of a body, or the framed error that answers it."""
    try:
        message = json.loads(body, object_hook=structure)
    except (ValueError, RecursionError) as err:
        return error_message(PARSE_ERROR, f"the message is not JSON: {err}")
    except Exception as err:  # pygls could not type the parameters of a request
        try:
            plain = json.loads(body)
            id = plain.get("id") if isinstance(plain, dict) else None
        except (ValueError, RecursionError):
            id = None
        code = getattr(err, "code", None) or getattr(err, "CODE", None) or INVALID_REQUEST
        return error_message(code, "the message's parameters are not valid", id)
    if isinstance(message, (dict, list, str, int, float, bool)) or message is None:
        return error_message(INVALID_REQUEST, "the message is not a JSON-RPC 2.0 message")
    return message


async def run(
    stop: threading.Event,
    stream: BinaryIO,
    protocol: Any,
    executor: Any,
    write: Callable[[bytes], None],
) -> None:
    """Hand every well-framed message to ``protocol`` until the stream ends, ``stop`` is set
    or the framing breaks; errors are answered on ``write``, from this thread only."""
    loop = asyncio.get_running_loop()
    framer = Framer(stream)
    while not stop.is_set():
        try:
            body = await loop.run_in_executor(executor, framer.next_body)
        except ClosedConnection as err:
            for reply in framer.replies:
                write(reply)
            if str(err):
                log.error("benchlang lsp: %s; closing the connection", err)
            return
        for reply in framer.replies:
            write(reply)
        framer.replies.clear()
        if body is None:
            continue
        message = parse_body(body, protocol.structure_message)
        if isinstance(message, bytes):
            write(message)
            continue
        try:
            protocol.handle_message(message)
        except Exception:  # one bad message must never stop the server
            log.exception("benchlang lsp: cannot handle a message")
