"""``benchlang lsp`` on hostile input: a header it cannot read is answered
with a JSON-RPC error and the connection closed (it once never answered again); a body that
is not JSON is answered and the next message served; a document of several MB is declined
with one diagnostic within seconds (it once got no answer in 60 s). Random headers and bodies
never give a traceback or a stall."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types as t  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from benchlang.lang.syntax import MAX_BYTES  # noqa: E402
from benchlang.lsp import framing  # noqa: E402
from tests.fuzz_budget import cases  # noqa: E402

SERVER = [sys.executable, "-m", "benchlang", "lsp"]


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


INITIALIZE = frame(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
)
SHUTDOWN = frame({"jsonrpc": "2.0", "id": 9, "method": "shutdown"})
EXIT = frame({"jsonrpc": "2.0", "method": "exit"})


def replies(out: bytes) -> list[dict]:
    """The JSON bodies of the server's framed output, in order."""
    found, stream = [], io.BytesIO(out)
    framer = framing.Framer(stream)
    while True:
        try:
            body = framer.next_body()
        except framing.ClosedConnection:
            return found
        found.append(json.loads(body))


def talk(data: bytes) -> tuple[list[dict], str, int, float]:
    started = time.monotonic()
    done = subprocess.run(SERVER, input=data, capture_output=True, timeout=60)
    return replies(done.stdout), done.stderr.decode(), done.returncode, time.monotonic() - started


def test_a_bad_content_length_is_answered_and_the_connection_closed_cleanly():
    answers, err, code, _ = talk(INITIALIZE + b"Content-Length: abc\r\n\r\n{}" + SHUTDOWN + EXIT)
    assert answers[0]["id"] == 1 and "capabilities" in answers[0]["result"]
    assert answers[1]["id"] is None
    assert answers[1]["error"]["code"] == framing.PARSE_ERROR
    assert "Content-Length: abc" in answers[1]["error"]["message"]
    assert len(answers) == 2  # nothing after the header it cannot frame
    assert "Traceback" not in err and "closing the connection" in err
    assert code == 0


def test_a_body_that_is_not_json_is_answered_and_the_next_request_served():
    """Each answered with a JSON-RPC error (with the request's id when it has one), one line
    on stderr, no traceback; the requests after them answered."""
    garbage = b"Content-Length: 9\r\n\r\n{not json"
    header_only = b"Content-Length: 2\r\nContent-Type: x\r\n\r\n[]"
    bad_params = frame({"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover", "params": {}})
    answers, err, code, _ = talk(garbage + header_only + INITIALIZE + bad_params + SHUTDOWN + EXIT)
    assert [a["error"]["code"] for a in answers[:2]] == [
        framing.PARSE_ERROR,
        framing.INVALID_REQUEST,
    ]
    assert answers[2]["id"] == 1 and "capabilities" in answers[2]["result"]
    assert answers[3]["id"] == 7 and answers[3]["error"]["code"] == -32602  # invalid params
    assert answers[4] == {"jsonrpc": "2.0", "id": 9, "result": None}
    assert "Traceback" not in err and code == 0


def test_a_message_longer_than_the_bound_is_skipped_unread_and_answered():
    size = framing.MAX_MESSAGE + 10
    huge = b"Content-Length: %d\r\n\r\n" % size + b" " * size
    answers, err, code, elapsed = talk(huge + INITIALIZE + SHUTDOWN + EXIT)
    assert answers[0]["error"]["code"] == framing.INVALID_REQUEST
    assert str(size) in answers[0]["error"]["message"]
    assert answers[1]["id"] == 1
    assert "Traceback" not in err and code == 0 and elapsed < 30


HEADER_LINES = st.one_of(
    st.binary(max_size=40),
    st.builds(lambda v: b"Content-Length: " + v + b"\r\n", st.binary(max_size=12)),
    st.builds(lambda n: b"Content-Length: %d\r\n" % n, st.integers(-5, 2 * 10**8)),
    st.sampled_from([b"\r\n", b"\n", b"Content-Type: x\r\n", b"Content-Length:\r\n"]),
)


@settings(max_examples=300, deadline=2000)
@given(st.lists(HEADER_LINES, max_size=6), st.binary(max_size=200))
def test_random_headers_and_bodies_are_framed_or_refused_never_a_traceback(lines, body):
    """In process: the framer on random bytes either gives bodies, skips one, or closes
    with a JSON-RPC error; parse_body answers every body it cannot use."""
    framer = framing.Framer(io.BytesIO(b"".join(lines) + body))
    for _ in range(20):
        try:
            got = framer.next_body()
        except framing.ClosedConnection:
            break
        if got is not None:
            answer = framing.parse_body(got, lambda d: d)
            assert isinstance(answer, bytes)  # a plain dict is not a message here
    for reply in framer.replies:
        assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["code"] in (
            framing.PARSE_ERROR,
            framing.INVALID_REQUEST,
        )


@settings(max_examples=cases(2, 40), deadline=None)
@given(st.lists(HEADER_LINES, min_size=1, max_size=4), st.binary(max_size=64))
def test_the_server_never_stalls_or_raises_on_random_bytes(lines, body):
    """Over stdio (a server process each: its stdin is what is tested): random headers and a
    body, then a well-formed initialize; the server either answers it, or has closed the
    connection after an error (or a length that swallowed the rest of the stream), within
    seconds. Two in the suite (the framer meets 300 in process above), 40 under
    ``BENCHLANG_FUZZ=full``."""
    answers, err, code, elapsed = talk(b"".join(lines) + body + b"\r\n" + INITIALIZE + EXIT)
    assert "Traceback" not in err, err
    assert elapsed < 20 and code in (0, 1)
    answered = any(a.get("id") == 1 for a in answers)
    refused = bool(answers) and answers[-1].get("error", {}).get("code") == framing.PARSE_ERROR
    assert answered or refused or "ended inside a message" in err, (answers, err)


def test_a_real_client_is_served_after_a_bad_body_and_disconnected_after_a_bad_header():
    """pytest-lsp's client (pygls): a body that is not JSON, then a request answered as
    usual; then ``Content-Length: abc``, and the server ends cleanly within seconds."""

    async def session() -> tuple[list[str], int, float]:
        client = await ClientServerConfig(server_command=SERVER).start()
        await client.initialize_session(
            t.InitializeParams(capabilities=client_capabilities("neovim"))
        )
        client.text_document_did_open(
            t.DidOpenTextDocumentParams(t.TextDocumentItem("file:///x.bench", "benchlang", 1, ""))
        )
        client._server.stdin.write(b"Content-Length: 9\r\n\r\n{not json")
        found = await client.text_document_completion_async(
            t.CompletionParams(t.TextDocumentIdentifier("file:///x.bench"), t.Position(0, 0))
        )
        client._server.stdin.write(b"Content-Length: abc\r\n\r\n{}")
        await client._server.stdin.drain()
        started = time.monotonic()
        code = await asyncio.wait_for(client._server.wait(), timeout=20)
        return [i.label for i in found.items], code, time.monotonic() - started

    labels, code, elapsed = asyncio.run(session())
    assert labels == ["benchlang", "experiment"]
    assert code == 0 and elapsed < 10


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        t.InitializeParams(capabilities=client_capabilities("neovim"))
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_five_mb_document_is_declined_within_seconds(client: LanguageClient, tmp_path):
    block = 'benchmark b { run "true" }  # ' + "x" * 60 + "\n"
    text = "benchlang 1\nexperiment e {\n" + block * (5 * (1 << 20) // len(block)) + "}\n"
    uri = (tmp_path / "huge.bench").as_uri()
    started = time.monotonic()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(t.TextDocumentItem(uri, "benchlang", 1, text))
    )
    await asyncio.wait_for(
        client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), timeout=30
    )
    hover = await client.text_document_hover_async(
        t.HoverParams(t.TextDocumentIdentifier(uri), t.Position(2, 2))
    )
    elapsed = time.monotonic() - started
    (diagnostic,) = client.diagnostics[uri]
    assert diagnostic.message.startswith("document too large for the language server (5.0 MiB >")
    assert f"{MAX_BYTES / (1 << 20):.1f} MiB" in diagnostic.message
    assert hover is None and elapsed < 10, elapsed

    small = (tmp_path / "small.bench").as_uri()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(t.TextDocumentItem(small, "benchlang", 1, ""))
    )
    found = await client.text_document_completion_async(
        t.CompletionParams(t.TextDocumentIdentifier(small), t.Position(0, 0))
    )
    assert [i.label for i in found.items] == ["benchlang", "experiment"]
