"""``benchlang lsp`` end to end: a real client (pytest-lsp) talks to ``benchlang lsp`` over
stdio: diagnostics as the checker gives them, hover, completion, definitions, references,
the outline, ``auto`` hints, a spec with errors and one with unicode (UTF-16 columns)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types as t  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from benchlang.lang.check import check_source  # noqa: E402
from benchlang.lang.diagnostics import Source, SpecError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "specs" / "quickstart.bench"


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "benchlang", "lsp"]),
)
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        t.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=ROOT.as_uri(),
        )
    )
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, uri: str, text: str) -> list[t.Diagnostic]:
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(t.TextDocumentItem(uri, "benchlang", 1, text))
    )
    await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[uri])


def _doc(uri: str) -> t.TextDocumentIdentifier:
    return t.TextDocumentIdentifier(uri)


async def _hover(client: LanguageClient, uri: str, line: int, character: int) -> str:
    found = await client.text_document_hover_async(
        t.HoverParams(_doc(uri), t.Position(line, character))
    )
    assert found is not None, (line, character)
    return found.contents.value


@pytest.mark.asyncio
async def test_a_session_on_the_quickstart(client: LanguageClient):
    uri = QUICKSTART.as_uri()
    text = QUICKSTART.read_text()
    assert await _open(client, uri, text) == []
    lines = text.split("\n")
    runs = next(i for i, line in enumerate(lines) if line.strip().startswith("runs auto"))

    assert "runs auto = 5" in await _hover(client, uri, runs, lines[runs].index("auto") + 1)
    assert "Thompson" in await _hover(client, uri, runs, lines[runs].index("auto") + 1)
    order = await _hover(client, uri, runs + 2, lines[runs + 2].index("order") + 1)
    assert "default: random" in order and "OrderSage" in order
    kpi = next(i for i, line in enumerate(lines) if line.strip().startswith("kpi"))
    confidence = await _hover(client, uri, kpi, lines[kpi].index("confidence") + 2)
    assert "TriScale" in confidence

    hints = await client.text_document_inlay_hint_async(
        t.InlayHintParams(_doc(uri), t.Range(t.Position(0, 0), t.Position(len(lines), 0)))
    )
    assert [h.label for h in hints] == [" = 5", " = 5"]

    command = next(i for i, line in enumerate(lines) if "{tool}" in line)
    column = lines[command].index("{tool}") + 1
    found = await client.text_document_completion_async(
        t.CompletionParams(_doc(uri), t.Position(command, column))
    )
    assert [i.label for i in found.items] == ["tool", "runtime"]
    design = next(i for i, line in enumerate(lines) if line.strip() == "design {")
    found = await client.text_document_completion_async(
        t.CompletionParams(_doc(uri), t.Position(design + 1, 4))
    )
    assert {"runs", "series", "order", "span"} <= {i.label for i in found.items}

    definition = await client.text_document_definition_async(
        t.DefinitionParams(_doc(uri), t.Position(command, column + 1))
    )
    factor = next(i for i, line in enumerate(lines) if line.strip().startswith("factor tool"))
    assert [(d.range.start.line, d.range.start.character) for d in definition] == [
        (factor, lines[factor].index("tool"))
    ]
    refs = await client.text_document_references_async(
        t.ReferenceParams(
            context=t.ReferenceContext(include_declaration=True),
            text_document=_doc(uri),
            position=t.Position(factor, lines[factor].index("tool")),
        )
    )
    assert sorted(r.range.start.line for r in refs) == [factor, command]

    outline = await client.text_document_document_symbol_async(t.DocumentSymbolParams(_doc(uri)))
    assert [s.name for s in outline] == ["quickstart"]
    assert [(c.name, c.kind) for c in outline[0].children][:3] == [
        ("tool", t.SymbolKind.Enum),
        ("digest", t.SymbolKind.Function),
        ("time", t.SymbolKind.Variable),
    ]
    assert [m.name for m in outline[0].children[1].children] == ["time"]


@pytest.mark.asyncio
async def test_errors_are_the_checkers_with_their_spans(client: LanguageClient, tmp_path):
    text = (
        QUICKSTART.read_text()
        .replace("percentile 50", "percentile 500")
        .replace("measure time = wall_time", "measure time = wal_time")
    )
    uri = (tmp_path / "broken.bench").as_uri()
    diagnostics = await _open(client, uri, text)
    with pytest.raises(SpecError) as err:
        check_source(Source("broken.bench", text), tmp_path)
    expected = [(d.message, d.span.line - 1, d.span.column - 1) for d in err.value.diagnostics]
    got = [
        (d.message.split("\nhint: ")[0], d.range.start.line, d.range.start.character)
        for d in diagnostics
    ]
    assert got == expected and len(got) >= 2
    assert any("did you mean 'wall_time'?" in d.message for d in diagnostics)

    fixed = text.replace("wal_time", "wall_time").replace("percentile 500", "percentile 50")
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            t.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [t.TextDocumentContentChangeWholeDocument(fixed)],
        )
    )
    await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_edits_faster_than_the_checker_end_with_the_last_texts_diagnostics(
    client: LanguageClient, tmp_path
):
    """Ten edits sent without waiting: whichever are checked, the last diagnostics published
    are those of the last text (the server checks the latest text, never a stale one)."""
    uri = (tmp_path / "typing.bench").as_uri()
    text = QUICKSTART.read_text()
    await _open(client, uri, text)
    for version in range(1, 11):
        typed = text.replace("percentile 50", f"percentile {50 + 10 * version}")
        client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                t.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [t.TextDocumentContentChangeWholeDocument(typed)],
            )
        )

    def last_text_shown() -> bool:
        return any("percentile 150 " in d.message for d in client.diagnostics.get(uri, []))

    # Notifications arriving in one burst resolve one wait only: poll what the client holds.
    for _ in range(120):
        if last_text_shown():
            break
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(
                client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), timeout=0.5
            )
    with contextlib.suppress(asyncio.TimeoutError):  # nothing stale may follow
        await asyncio.wait_for(
            client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), timeout=0.5
        )
    messages = [d.message for d in client.diagnostics[uri]]
    assert messages and all("150" in m for m in messages if "percentile" in m)
    assert any("percentile 150 is outside (0, 100)" in m for m in messages)


@pytest.mark.asyncio
async def test_unicode_columns_are_utf16(client: LanguageClient, tmp_path):
    """Columns after an astral character (2 UTF-16 units) and a Greek letter (1 unit)."""
    text = (
        'benchlang 1\nexperiment u {\n  title "😀 µ-benchmarks"\n'
        '  factor tool in ["a"]\n  benchmark b {\n    run "echo 😀 {tool} {tol}"\n'
        "    measure time = wall_time\n  }\n}\n"
    )
    uri = (tmp_path / "unicode.bench").as_uri()
    diagnostics = await _open(client, uri, text)
    assert len(diagnostics) == 1 and "{tol}" in diagnostics[0].message
    line = text.split("\n")[5]
    expected = len(line[: line.index("{tol}")].encode("utf-16-le")) // 2
    assert diagnostics[0].range.start.line == 5
    assert diagnostics[0].range.start.character == expected
    column = len(line[: line.index("{tool}") + 2].encode("utf-16-le")) // 2
    assert "factor tool" in await _hover(client, uri, 5, column)


@pytest.mark.asyncio
async def test_formatting_is_fmts_whole_text_and_nothing_on_syntax_errors(
    client: LanguageClient, tmp_path
):
    from benchlang.lang.format import format_text

    uri = (tmp_path / "f.bench").as_uri()
    messy = QUICKSTART.read_text().replace("  seed 1", "seed     1")
    await _open(client, uri, messy)
    options = t.FormattingOptions(tab_size=2, insert_spaces=True)
    edits = await client.text_document_formatting_async(
        t.DocumentFormattingParams(text_document=_doc(uri), options=options)
    )
    assert len(edits) == 1 and edits[0].new_text == format_text(messy, "f.bench")
    assert edits[0].range.start == t.Position(0, 0)

    broken = (tmp_path / "g.bench").as_uri()
    await _open(client, broken, "experiment x {\n  seed\n")
    edits = await client.text_document_formatting_async(
        t.DocumentFormattingParams(text_document=_doc(broken), options=options)
    )
    assert edits is None
