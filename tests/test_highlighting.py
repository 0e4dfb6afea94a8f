"""The VS Code extension's TextMate grammar (editors/vscode) highlights every keyword of the
Lark grammar, read from grammars/benchlang.lark itself: a keyword added to the language and
not to the highlighting turns this red, and so does a highlighted word the language dropped."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchlang.lang.grammar import grammar_text, keyword_of_terminal

EDITOR = Path(__file__).resolve().parents[1] / "editors" / "vscode"
TM = json.loads((EDITOR / "syntaxes" / "benchlang.tmLanguage.json").read_text())


def lark_keywords() -> set[str]:
    """Every word the Lark grammar spells out: anonymous literals (``"seed"``) and terminals
    defined as one (``BEFORE: "before"``)."""
    words = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', grammar_text()))
    return words | {v for v in keyword_of_terminal().values() if v.isidentifier()}


def keyword_patterns() -> list[re.Pattern]:
    return [re.compile(p["match"]) for p in TM["repository"]["keywords"]["patterns"]]


def test_every_keyword_of_the_grammar_is_highlighted():
    keywords = lark_keywords()
    assert {"experiment", "benchmark", "seed", "percentile", "power_cycle"} <= keywords
    patterns = keyword_patterns()
    missing = sorted(k for k in keywords if not any(p.fullmatch(k) for p in patterns))
    assert not missing, (
        f"keywords of grammars/benchlang.lark not highlighted: {missing}; add them to "
        "repository.keywords of editors/vscode/syntaxes/benchlang.tmLanguage.json"
    )


def test_every_highlighted_keyword_is_one_of_the_grammar():
    keywords = lark_keywords()
    for pattern in keyword_patterns():
        body = re.fullmatch(r"\\b\(\?:(.*)\)\\b", pattern.pattern)
        assert body, f"a keyword pattern is a list of words: {pattern.pattern}"
        stale = sorted(set(body.group(1).split("|")) - keywords)
        assert not stale, f"highlighted as keywords but not in the grammar: {stale}"


def test_comments_strings_numbers_and_declarations():
    repo = TM["repository"]
    comment = re.compile(repo["comment"]["match"])
    assert comment.search('seed 7  # why "seven"').group() == '# why "seven"'
    numbers = [re.compile(p["match"]) for p in repo["number"]["patterns"]]
    for text in ("30s", "95%", "4GiB", "-1.5e3", "12"):
        assert any(p.fullmatch(text) for p in numbers), text
    declaration = re.compile(repo["declaration"]["match"])
    assert declaration.match("  metric time {").group(1, 2) == ("metric", "time")
    assert declaration.match("  stop after 10") is None
    placeholder = repo["string"]["patterns"][1]["patterns"][1]["match"]
    assert re.findall(placeholder, '"{tool} -{level} {{literal}}"') == ["{tool}", "{level}"]


def test_the_extension_declares_the_language():
    package = json.loads((EDITOR / "package.json").read_text())
    language = package["contributes"]["languages"][0]
    assert language["extensions"] == [".bench"]
    grammar = package["contributes"]["grammars"][0]
    assert grammar["scopeName"] == TM["scopeName"] and (EDITOR / grammar["path"]).is_file()
    config = json.loads((EDITOR / language["configuration"]).read_text())
    assert config["comments"]["lineComment"] == "#"
    assert ["{", "}"] in config["brackets"] and ["[", "]"] in config["brackets"]
    settings = package["contributes"]["configuration"]["properties"]
    assert settings["benchlang.lsp.args"]["default"] == ["lsp"]
    readme = (EDITOR / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in settings)
