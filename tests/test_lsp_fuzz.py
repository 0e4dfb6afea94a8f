"""The language server never fails on any text: every answer (diagnostics,
hover, completion, definition, references, outline, hints) on the fuzzed specs the checker
survives (tests/test_lang_fuzz.py: arbitrary text, token soups, mutated valid specs), at
positions on, between and beyond the tokens; then a real server over stdio keeps answering
after such texts."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("pygls")

from benchlang.lsp import features
from benchlang.lsp.index import Index

_spec = importlib.util.spec_from_file_location(
    "lang_fuzz", Path(__file__).with_name("test_lang_fuzz.py")
)
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)


def answer_everything(text: str, seed: int = 0) -> None:
    """Every feature at every token edge and a few random positions, beyond lines too."""
    index = Index(text)
    checked = features.check_text(text, "fuzz.bench")
    for d in checked.diagnostics:
        (start, end) = features.diagnostic_range(index, d)
        assert start <= end
    experiment = checked.experiment
    rng = random.Random(seed)
    lines = len(index.starts)
    positions = [index.position(t.start) for t in index.tokens[:40]]
    positions += [(rng.randrange(lines + 2), rng.randrange(200)) for _ in range(10)]
    for line, column in positions:
        features.hover(index, line, column, experiment)
        features.completion(index, line, column)
        features.definition(index, line, column)
        features.references(index, line, column)
    features.symbols(index)
    features.auto_hints(index, experiment)


def test_every_seed_spec_is_answered_without_diagnostics():
    for text in fuzz.SEED_TEXTS:
        answer_everything(text)


@fuzz.SETTINGS
@given(st.text(max_size=400))
def test_arbitrary_text(text):
    answer_everything(text)


@fuzz.SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes_as_the_editor_decodes_them(data):
    answer_everything(data.decode("utf-8", errors="replace"))


@fuzz.SETTINGS
@given(st.lists(st.sampled_from(fuzz.VOCAB), max_size=60))
def test_token_soup_inside_an_experiment(tokens):
    answer_everything(f"benchlang 1\nexperiment x {{\n{' '.join(tokens)}\n}}\n")


@fuzz.SETTINGS
@given(
    st.sampled_from(range(len(fuzz.SEED_TEXTS))),
    st.lists(fuzz.MUTATION, min_size=1, max_size=5),
    st.integers(0, 1000),
)
def test_mutated_valid_specs(which, mutations, seed):
    answer_everything(fuzz.mutate(which, mutations), seed)


def test_a_server_keeps_answering_after_fuzzed_texts(tmp_path):
    """Over stdio: 30 mutated specs, each opened, changed, hovered and outlined; the server
    still answers a well-formed request at the end."""
    import asyncio

    from lsprotocol import types as t
    from pytest_lsp import ClientServerConfig, client_capabilities

    rng = random.Random(39)
    pieces = fuzz.PIECES + fuzz.ODD
    texts = [
        fuzz.mutate(
            rng.randrange(len(fuzz.SEED_TEXTS)),
            [
                (
                    rng.choice(["delete", "insert", "duplicate", "replace"]),
                    rng.random(),
                    rng.choice(pieces),
                )
                for _ in range(rng.randint(1, 5))
            ],
        )
        for _ in range(30)
    ]

    async def session() -> str:
        config = ClientServerConfig(server_command=[sys.executable, "-m", "benchlang", "lsp"])
        client = await config.start()
        await client.initialize_session(
            t.InitializeParams(capabilities=client_capabilities("neovim"))
        )
        uri = (tmp_path / "fuzz.bench").as_uri()
        for version, text in enumerate(texts):
            if version == 0:
                client.text_document_did_open(
                    t.DidOpenTextDocumentParams(t.TextDocumentItem(uri, "benchlang", 0, text))
                )
            else:
                client.text_document_did_change(
                    t.DidChangeTextDocumentParams(
                        t.VersionedTextDocumentIdentifier(version=version, uri=uri),
                        [t.TextDocumentContentChangeWholeDocument(text)],
                    )
                )
            doc = t.TextDocumentIdentifier(uri)
            await client.text_document_hover_async(t.HoverParams(doc, t.Position(3, 4)))
            await client.text_document_document_symbol_async(t.DocumentSymbolParams(doc))
        found = await client.text_document_completion_async(
            t.CompletionParams(t.TextDocumentIdentifier(uri), t.Position(0, 0))
        )
        await client.shutdown_session()
        await client.stop()
        return ",".join(i.label for i in found.items)

    assert asyncio.run(session()) == "benchlang,experiment"
