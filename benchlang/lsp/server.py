"""``benchlang lsp``: the Language Server Protocol over stdio (pygls), a thin adapter from
the protocol to benchlang.lsp.features. docs/lsp.md lists what it answers.

Every handler is guarded: whatever text an editor sends, a failure of one answer becomes an
empty answer and a line in the client's log, never a crashed server.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as t
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from benchlang import __version__
from benchlang.lang import syntax
from benchlang.lang.diagnostics import SpecError
from benchlang.lsp import features, framing
from benchlang.lsp.index import Index

log = logging.getLogger("benchlang.lsp")

_SYMBOL_KINDS = {
    "experiment": t.SymbolKind.Namespace,
    "factor": t.SymbolKind.Enum,
    "benchmark": t.SymbolKind.Function,
    "measure": t.SymbolKind.Field,
    "metric": t.SymbolKind.Variable,
}
_COMPLETION_KINDS = {
    "keyword": t.CompletionItemKind.Keyword,
    "setting": t.CompletionItemKind.Property,
    "factor": t.CompletionItemKind.Enum,
    "benchmark": t.CompletionItemKind.Function,
    "measure": t.CompletionItemKind.Field,
    "metric": t.CompletionItemKind.Variable,
    "method": t.CompletionItemKind.Module,
}


class BenchServer(LanguageServer):
    """The server and, per open document, the last checked experiment (for ``auto`` hints
    while the text has errors) and the index of its latest text."""

    def __init__(self) -> None:
        super().__init__("benchlang", __version__)
        self.experiments: dict[str, Any] = {}
        self.indexes: dict[str, tuple[str, Index]] = {}
        self.checked: dict[str, tuple[str, features.Checked]] = {}
        self.dirty: set[str] = set()
        self.checking: dict[str, asyncio.Future[None]] = {}

    def changed(self, uri: str) -> None:
        """Check the latest text soon: edits that arrive while a check runs (typing faster
        than the checker) are checked once, as the text they leave, not one by one."""
        self.dirty.add(uri)
        if uri not in self.checking:
            self.checking[uri] = asyncio.ensure_future(self._check_latest(uri))

    async def _check_latest(self, uri: str) -> None:
        try:
            while uri in self.dirty:
                await asyncio.sleep(0)  # edits already received are applied first
                self.dirty.discard(uri)
                try:
                    publish(self, uri)
                except Exception as err:  # a failed check must never stop the server
                    log.exception("benchlang lsp: checking %s failed", uri)
                    self.window_log_message(
                        t.LogMessageParams(t.MessageType.Error, f"check: {err!r}")
                    )
        finally:
            self.checking.pop(uri, None)

    def index(self, uri: str) -> tuple[Any, Index]:
        """The document and the index of its text; raises TooLarge past the checker's bound
        (no answer then: indexing and checking several MB would stall every answer)."""
        document = self.workspace.get_text_document(uri)
        text = document.source
        if len(text) > syntax.MAX_BYTES // 4 and len(text.encode("utf-8", "replace")) > (
            syntax.MAX_BYTES
        ):
            raise TooLarge(len(text.encode("utf-8", "replace")))
        cached = self.indexes.get(uri)
        if cached is None or cached[0] != text:
            cached = (text, Index(text))
            self.indexes[uri] = cached
        return document, cached[1]


class TooLarge(Exception):
    """A document larger than benchlang reads (benchlang.lang.syntax.MAX_BYTES)."""

    def __init__(self, size: int) -> None:
        super().__init__(
            f"document too large for the language server ({size / (1 << 20):.1f} MiB > "
            f"{syntax.MAX_BYTES / (1 << 20):.1f} MiB): it is not checked, and hover, completion "
            "and the outline stay empty"
        )


def _guard(default: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(handler: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(handler)
        def guarded(ls: BenchServer, params: Any) -> Any:
            try:
                return handler(ls, params)
            except TooLarge:
                return default
            except Exception as err:  # one failed answer must never stop the server
                log.exception("benchlang lsp: %s failed", handler.__name__)
                ls.window_log_message(
                    t.LogMessageParams(t.MessageType.Error, f"{handler.__name__}: {err!r}")
                )
                return default

        return guarded

    return wrap


def _to_client(index: Index, codec: Any, position: tuple[int, int]) -> t.Position:
    line, column = position
    return t.Position(line, codec.client_num_units(index.line_text(line)[:column]))


def _from_client(index: Index, codec: Any, position: t.Position) -> tuple[int, int]:
    text = index.line_text(position.line)
    units = 0
    for column, char in enumerate(text):
        if units >= position.character:
            return position.line, column
        units += codec.client_num_units(char)
    return position.line, len(text)


def _range(index: Index, codec: Any, r: features.Range) -> t.Range:
    return t.Range(_to_client(index, codec, r[0]), _to_client(index, codec, r[1]))


def _path(uri: str) -> tuple[str, Path | None]:
    path = to_fs_path(uri)
    return (path, Path(path).parent) if path else (uri, None)


def publish(ls: BenchServer, uri: str) -> None:
    """Check the document's text and send its diagnostics (errors and warnings); a document
    too large gets one diagnostic that says so."""
    try:
        document, index = ls.index(uri)
    except TooLarge as err:
        ls.indexes.pop(uri, None)
        ls.checked.pop(uri, None)
        document = ls.workspace.get_text_document(uri)
        too_large = t.Diagnostic(
            range=t.Range(t.Position(0, 0), t.Position(0, 0)),
            message=str(err),
            severity=t.DiagnosticSeverity.Error,
            source="benchlang",
        )
        ls.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(uri=uri, diagnostics=[too_large], version=document.version)
        )
        return
    shown, base = _path(uri)
    cached = ls.checked.get(uri)
    if cached is not None and cached[0] == index.text:
        checked = cached[1]
    else:
        checked = features.check_text(index.text, Path(shown).name, base)
        ls.checked[uri] = (index.text, checked)
    if checked.experiment is not None:
        ls.experiments[uri] = checked.experiment
    codec = document.position_codec
    out = [
        t.Diagnostic(
            range=_range(index, codec, features.diagnostic_range(index, d)),
            message=d.message + (f"\nhint: {d.hint}" if d.hint else ""),
            severity=t.DiagnosticSeverity.Error
            if d.severity == "error"
            else t.DiagnosticSeverity.Warning,
            source="benchlang",
        )
        for d in checked.diagnostics
    ]
    ls.text_document_publish_diagnostics(
        t.PublishDiagnosticsParams(uri=uri, diagnostics=out, version=document.version)
    )


server = BenchServer()


@server.feature(t.TEXT_DOCUMENT_DID_OPEN)
@_guard(None)
def did_open(ls: BenchServer, params: t.DidOpenTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


@server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
@_guard(None)
def did_change(ls: BenchServer, params: t.DidChangeTextDocumentParams) -> None:
    ls.changed(params.text_document.uri)


@server.feature(t.TEXT_DOCUMENT_DID_SAVE)
@_guard(None)
def did_save(ls: BenchServer, params: t.DidSaveTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


@server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
@_guard(None)
def did_close(ls: BenchServer, params: t.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.indexes.pop(uri, None)
    ls.experiments.pop(uri, None)
    ls.checked.pop(uri, None)
    ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(t.TEXT_DOCUMENT_HOVER)
@_guard(None)
def hover(ls: BenchServer, params: t.HoverParams) -> t.Hover | None:
    document, index = ls.index(params.text_document.uri)
    line, column = _from_client(index, document.position_codec, params.position)
    text = features.hover(index, line, column, ls.experiments.get(params.text_document.uri))
    if text is None:
        return None
    return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=text))


@server.feature(t.TEXT_DOCUMENT_COMPLETION, t.CompletionOptions(trigger_characters=["{", " "]))
@_guard(None)
def completion(ls: BenchServer, params: t.CompletionParams) -> t.CompletionList:
    document, index = ls.index(params.text_document.uri)
    line, column = _from_client(index, document.position_codec, params.position)
    items = [
        t.CompletionItem(label=label, kind=_COMPLETION_KINDS.get(kind), detail=detail)
        for label, kind, detail in features.completion(index, line, column)
    ]
    return t.CompletionList(is_incomplete=False, items=items)


@server.feature(t.TEXT_DOCUMENT_DEFINITION)
@_guard([])
def definition(ls: BenchServer, params: t.DefinitionParams) -> list[t.Location]:
    document, index = ls.index(params.text_document.uri)
    codec = document.position_codec
    line, column = _from_client(index, codec, params.position)
    return [
        t.Location(params.text_document.uri, _range(index, codec, r))
        for r in features.definition(index, line, column)
    ]


@server.feature(t.TEXT_DOCUMENT_REFERENCES)
@_guard([])
def references(ls: BenchServer, params: t.ReferenceParams) -> list[t.Location]:
    document, index = ls.index(params.text_document.uri)
    codec = document.position_codec
    line, column = _from_client(index, codec, params.position)
    found = features.references(index, line, column, params.context.include_declaration)
    return [t.Location(params.text_document.uri, _range(index, codec, r)) for r in found]


@server.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@_guard([])
def document_symbols(ls: BenchServer, params: t.DocumentSymbolParams) -> list[t.DocumentSymbol]:
    document, index = ls.index(params.text_document.uri)
    codec = document.position_codec

    def convert(s: features.Symbol) -> t.DocumentSymbol:
        return t.DocumentSymbol(
            name=s.name,
            kind=_SYMBOL_KINDS.get(s.kind, t.SymbolKind.Object),
            range=_range(index, codec, s.range),
            selection_range=_range(index, codec, s.selection),
            detail=s.detail or None,
            children=[convert(c) for c in s.children],
        )

    return [convert(s) for s in features.symbols(index)]


@server.feature(t.TEXT_DOCUMENT_INLAY_HINT)
@_guard([])
def inlay_hints(ls: BenchServer, params: t.InlayHintParams) -> list[t.InlayHint]:
    uri = params.text_document.uri
    document, index = ls.index(uri)
    codec = document.position_codec
    return [
        t.InlayHint(position=_to_client(index, codec, at), label=label)
        for at, label in features.auto_hints(index, ls.experiments.get(uri))
    ]


@server.feature(t.TEXT_DOCUMENT_FORMATTING)
@_guard(None)
def formatting(ls: BenchServer, params: t.DocumentFormattingParams) -> list[t.TextEdit] | None:
    """The whole text as ``benchlang fmt`` writes it; nothing when it has syntax errors
    (they are already shown as diagnostics)."""
    document, index = ls.index(params.text_document.uri)
    try:
        formatted = features.format_text(index.text, _path(params.text_document.uri)[0])
    except SpecError:
        return None
    except LookupError as err:
        ls.window_show_message(t.ShowMessageParams(t.MessageType.Warning, str(err)))
        return None
    if formatted == index.text:
        return []
    end = index.position(len(index.text))
    whole = _range(index, document.position_codec, ((0, 0), end))
    return [t.TextEdit(range=whole, new_text=formatted)]


class _OneLine(logging.Formatter):
    """A log record as one line on stderr, without its traceback: pygls logs the traceback of
    every message it cannot type, and the client is answered with the error already."""

    def format(self, record: logging.LogRecord) -> str:
        lines = record.getMessage().splitlines()
        prefix = "" if record.name.startswith("benchlang") else f"{record.name}: "
        return prefix + (lines[0] if lines else "")


def serve() -> None:
    """Answer one client over stdin/stdout until it exits, framing messages strictly
    (benchlang.lsp.framing: pygls' loop stalls on a bad header). Texts are parsed from cached pieces
    (benchlang.lang.fragments: a keystroke or a typo re-parses one statement, a line added
    re-parses none); BENCHLANG_LSP_WHOLE=1 parses every text whole, the baseline of
    benchmarks/bench_lsp.py."""
    syntax.PIECES["on"] = os.environ.get("BENCHLANG_LSP_WHOLE") != "1"
    one_line = logging.StreamHandler(sys.stderr)
    one_line.setFormatter(_OneLine())
    logging.basicConfig(level=logging.WARNING, handlers=[one_line])
    server._stop_event = threading.Event()
    writer = StdoutWriter(sys.stdout.buffer)
    server.protocol.set_writer(writer)
    try:
        asyncio.run(
            framing.run(
                server._stop_event,
                sys.stdin.buffer,
                server.protocol,
                server.thread_pool,
                writer.write,
            )
        )
    except BrokenPipeError:
        log.error("benchlang lsp: the client is gone")
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
