"""The TextMate grammar (editors/vscode) colours the checker's settings and the words they take
(item 6): ``confidence``, ``runs``, ``order``, ``layout``, ``random``, ``auto`` were
coloured as user names. The words are read from the checker itself (the settings schemas of
benchlang/lang/check, validated by benchlang/lang/settings.py, and the statistics methods'
parameters), so a setting added to the checker and not to the grammar turns this red."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchlang import model
from benchlang.lang import ab_design
from benchlang.lang import settings as s
from benchlang.lang.check import analysis, design, hidden, machine, metrics
from benchlang.stats.registry import statistics_methods

ROOT = Path(__file__).resolve().parents[1]
TM = json.loads(
    (ROOT / "editors" / "vscode" / "syntaxes" / "benchlang.tmLanguage.json").read_text()
)
SETTING, VALUE, NAME = (
    "support.type.property-name.benchlang",
    "support.constant.benchlang",
    "variable.other.benchlang",
)


def schemas() -> list[dict]:
    """Every schema the checker validates ``{ key value }`` settings with."""
    found = [
        design._DESIGN_SCHEMA,
        ab_design.LAYOUT_SCHEMA,
        metrics._CONVERGENCE_SCHEMA,
        machine.SCHEMA,
        analysis._FAMILY,
        *hidden._SCHEMAS.values(),
    ]
    return found + [s.method_schema(m) for m in statistics_methods().values()]


def choices(validator: object) -> set[str]:
    """The words an ``s.choice(...)`` validator accepts (none for other validators)."""
    code = getattr(validator, "__code__", None)
    if code is None or getattr(validator, "__qualname__", "") != "choice.<locals>.validate":
        return set()
    cells = dict(zip(code.co_freevars, validator.__closure__, strict=True))
    return set(cells["options"].cell_contents)


def checker_settings() -> set[str]:
    return set().union(*(set(schema) for schema in schemas()))


def checker_values() -> set[str]:
    words = {"auto", *model.LAYOUTS}  # count_or_auto, duration_or_auto; layout KIND { ... }
    for schema in schemas():
        for validator in schema.values():
            words |= choices(validator)
    return words


def words_of(pattern: str) -> set[str]:
    body = re.fullmatch(r"\\b\(\?:(.*)\)\\b(?:\(\?!.*\))?", pattern)
    assert body, pattern
    return set(body.group(1).split("|"))


def scopes(line: str) -> dict[str, str]:
    """The scope of each word of one line, as a TextMate tokenizer gives it: at each position
    the earliest match of the top-level patterns wins, the first listed on a tie (strings and
    comments of one line only)."""
    repo = TM["repository"]
    rules: list[tuple[str, re.Pattern]] = [
        (repo["comment"]["name"], re.compile(repo["comment"]["match"])),
        ("string", re.compile(r'"[^"]*"')),
    ]
    for include in TM["patterns"][2:]:
        entry = repo[include["include"][1:]]
        for rule in entry.get("patterns", [entry]):
            rules.append((rule.get("name", include["include"]), re.compile(rule["match"])))
    found, at = {}, 0
    while at < len(line):
        best = None
        for scope, pattern in rules:
            match = pattern.search(line, at)
            if match and (best is None or match.start() < best[1].start()):
                best = (scope, match)
        if best is None:
            break
        scope, match = best
        if match.re.pattern == repo["declaration"]["match"]:
            found[match.group(1)], found[match.group(2)] = "keyword", "entity.name.benchlang"
        else:
            found.setdefault(match.group(), scope)
        at = max(match.end(), at + 1)
    return found


def test_every_setting_of_the_checker_is_coloured_as_a_setting_or_keyword():
    settings = checker_settings()
    assert {"confidence", "runs", "order", "layout", "governor", "correction"} <= settings
    listed = words_of(TM["repository"]["settings"]["match"])
    keywords = TM["repository"]["keywords"]["patterns"]
    missing = sorted(
        k
        for k in settings
        if k not in listed and not any(re.fullmatch(p["match"], k) for p in keywords)
    )
    assert not missing, f"settings of the checker not coloured: {missing}"
    assert not listed - settings, (
        f"coloured as settings, unknown to the checker: {listed - settings}"
    )


def test_every_value_a_setting_takes_is_coloured_as_a_value():
    values = checker_values()
    assert {"random", "auto", "fixed", "fully_balanced", "holm", "performance"} <= values
    listed = words_of(TM["repository"]["values"]["match"])
    assert not values - listed, f"values of the checker not coloured: {values - listed}"
    assert not listed - values, f"coloured as values, unknown to the checker: {listed - values}"


def test_a_spec_is_coloured_as_the_checker_reads_it():
    assert scopes("    runs auto     # 5 trials") == {
        "runs": SETTING,
        "auto": VALUE,
        "# 5 trials": "comment.line.number-sign.benchlang",
    }
    line = scopes("  design { order random  layout fully_balanced { hosts 4 } }")
    assert [line[w] for w in ("order", "random", "layout", "fully_balanced")] == [
        SETTING,
        VALUE,
        SETTING,
        VALUE,
    ]
    assert line["hosts"].startswith("keyword.")  # also the hosts block's keyword
    kpi = scopes("  kpi time { percentile 50 confidence 95% }")
    assert kpi["time"] == "entity.name.benchlang" and kpi["confidence"] == SETTING
    measure = scopes("    measure time = wall_time")
    assert measure["time"] == NAME  # a measure's name, though `time` is a machine setting
    assert scopes("  factor tool in [a, b]")["tool"] == "entity.name.benchlang"
