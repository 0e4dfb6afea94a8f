"""Latency of ``benchlang lsp``'s diagnostics as the user types (issue 39: within 50 ms for a
500-line spec on this machine).

A seeded sequence of edits (``edit``: mostly typing inside a statement, some lines added or
removed, some typos the next edit fixes) is sent by a real client (pytest-lsp over stdio), each
as a ``didChange`` of the whole text; the time to its ``publishDiagnostics`` is the editor's
wait. Two servers: ``pieces`` (the default: benchlang/lang/fragments.py re-parses only the
changed statements) and the baseline ``whole`` (BENCHLANG_LSP_WHOLE=1: every text parsed
whole); on the machine as it is and with two ``yes`` loops busy on its cores. "check CPU" is
what benchlang computes per edit (check, index, ranges), in process; "server CPU" the server
process's CPU time per edit (pygls, JSON and benchlang), a mean. Each row is also split by
the kind of edit (``KINDS``). Prints a table; python benchmarks/bench_lsp.py [LINES].
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlang.lsp import features
from benchlang.lsp.index import Index

EDITS = 60


def spec_of(lines: int = 500) -> str:
    """A valid spec of about ``lines`` lines: factors, many benchmarks, metrics, a design."""
    head = [
        "benchlang 1",
        "experiment big {",
        '  title "a 500-line spec"',
        "  seed 3",
        '  factor tool in ["a", "b", "c"]',
        "  factor size in [1, 2]",
    ]
    tail = [
        '  metric time { measure mean unit "s" better lower }',
        "  kpi time { percentile 50 confidence 95% }",
        "  variability time { percentile 25 confidence 75% }",
        "  design {",
        "    runs auto",
        "    series auto",
        "    order random",
        "  }",
        "}",
    ]
    body: list[str] = []
    i = 0
    while len(head) + len(body) + len(tail) + 7 <= lines:
        body += [
            f"  # benchmark {i}: one command per tool and size",
            f"  benchmark b{i} {{",
            f'    run "echo {{tool}} {{size}} {i}"',
            "    measure time = wall_time",
            f'    measure out{i} from stdout regex "([0-9]+)"',
            "  }",
            "",
        ]
        i += 1
    return "\n".join(head + body + tail) + "\n"


MIXED = {
    "string": 30,
    "digit": 15,
    "blank": 10,
    "comment": 10,
    "delete": 10,
    "double": 10,
    "bracket": 5,
    "stray": 10,
}
TYPING = {"string": 2, "digit": 1}
"""Keystrokes inside a line, the most common edit: the lines keep their numbers."""


def edit(text: str, rnd: random.Random, weights: dict[str, int] = MIXED) -> str:
    """One seeded edit (``edit_kind``): the edited text."""
    return edit_kind(text, rnd, weights)[0]


def edit_kind(text: str, rnd: random.Random, weights: dict[str, int] = MIXED) -> tuple[str, str]:
    """One seeded edit and its kind, as typing makes them: mostly a character typed into a string or a
    number changed, a blank or comment line added; sometimes a line removed or doubled, a
    brace or quote removed, or a stray character (the text then has errors); and, not in
    MIXED, a statement's first word misspelt (``typo``), a line split at a space or joined to
    the next (tests/test_lsp_incremental.py)."""
    lines = text.split("\n")
    at = rnd.randrange(len(lines))
    kind = rnd.choices(list(weights), list(weights.values()))[0]
    if kind == "string":
        quoted = [i for i, line in enumerate(lines) if '"' in line]
        if quoted:
            at = rnd.choice(quoted)
            q = lines[at].index('"') + 1
            lines[at] = lines[at][:q] + rnd.choice("abcxyz_") + lines[at][q:]
    elif kind == "digit":
        digits = [i for i, c in enumerate(text) if c.isdigit()]
        if digits:
            i = rnd.choice(digits)
            return text[:i] + rnd.choice("123456789") + text[i + 1 :], kind
    elif kind == "blank":
        lines.insert(at, "")
    elif kind == "comment":
        lines.insert(at, "  # a note")
    elif kind == "delete" and len(lines) > 3:
        del lines[at]
    elif kind == "double":
        lines.insert(at, lines[at])
    elif kind == "bracket":
        marks = [i for i, c in enumerate(text) if c in '{}"']
        if marks:
            i = rnd.choice(marks)
            return text[:i] + text[i + 1 :], kind
    elif kind == "typo":
        words = [i for i, line in enumerate(lines) if len(line.split()) > 1]
        if words:
            at = rnd.choice(words)
            start = len(lines[at]) - len(lines[at].lstrip())
            i = start + rnd.randrange(len(lines[at].split()[0]))
            lines[at] = lines[at][:i] + lines[at][i + 1 :]
    elif kind == "split":
        spaces = [i for i, c in enumerate(text) if c == " " and i > 0 and text[i - 1] != " "]
        if spaces:
            i = rnd.choice(spaces)
            return text[:i] + "\n" + text[i:], kind
    elif kind == "join" and len(lines) > 3:
        at = rnd.randrange(len(lines) - 1)
        lines[at : at + 2] = [lines[at] + " " + lines[at + 1].lstrip()]
    else:
        i = rnd.randrange(len(text) + 1)
        return text[:i] + rnd.choice('x{}[]="#9 \n') + text[i:], kind
    return "\n".join(lines), kind


def edits(
    text: str, count: int, weights: dict[str, int] = MIXED, seed: int = 39
) -> list[tuple[str, str]]:
    """A seeded sequence of edited texts and the kind of each edit (``KINDS``); an edit that
    breaks the syntax is undone by the next (the user fixes the typo), so most texts are
    valid, as while typing."""
    from benchlang.lang import syntax
    from benchlang.lang.diagnostics import Source, SpecError

    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        edited, kind = edit_kind(text, rnd, weights)
        try:
            syntax.parse(Source("big.bench", edited))
        except SpecError:
            out.append((edited, "breaks"))
            continue
        out.append((edited, KINDS[kind]))
        text = edited
    return out


KINDS = {"string": "in a line", "digit": "in a line", "blank": "lines", "comment": "lines"}
KINDS |= {"delete": "lines", "double": "lines", "split": "lines", "join": "lines"}
KINDS |= {"bracket": "in a line", "stray": "in a line", "typo": "in a line"}
"""Edit kinds as the parse sees them: typing ``in a line`` (the lines keep their numbers),
``lines`` added or removed (the statements below move), and any edit that ``breaks`` the
syntax (a typo, a brace or quote removed, a stray character)."""


def in_process(first: str, texts: list[str], pieces: bool) -> list[float]:
    """CPU milliseconds per edit of what the server does for one (check, index, ranges),
    the pieces' cache holding only the opened text's, as in the server."""
    from benchlang.lang import fragments, syntax

    fragments._piece.cache_clear()
    syntax.PIECES["on"] = pieces
    features.check_text(first, "big.bench")
    out = []
    for text in texts:
        start = time.process_time()
        index = Index(text)
        for d in features.check_text(text, "big.bench").diagnostics:
            features.diagnostic_range(index, d)
        out.append((time.process_time() - start) * 1000)
    syntax.PIECES["on"] = False
    return out


def cpu_ms(pid: int) -> float:
    """User + system CPU milliseconds of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def over_stdio(first: str, texts: list[str], whole: bool) -> tuple[list[float], float]:
    """Wall milliseconds from each ``didChange`` to its ``publishDiagnostics``, and the
    server's CPU milliseconds per edit (JSON, pygls and benchlang together)."""
    from lsprotocol import types as t
    from pytest_lsp import ClientServerConfig, client_capabilities

    env = {**os.environ, "BENCHLANG_LSP_WHOLE": "1" if whole else "0"}
    command = [sys.executable, "-m", "benchlang", "lsp"]
    client = await ClientServerConfig(server_command=command, server_env=env).start()
    await client.initialize_session(t.InitializeParams(capabilities=client_capabilities("neovim")))
    uri = (Path(tempfile.gettempdir()) / "big.bench").as_uri()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(t.TextDocumentItem(uri, "benchlang", 0, first))
    )
    await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    pid = client._server.pid
    cpu_start = cpu_ms(pid)
    out = []
    for version, text in enumerate(texts, 1):
        start = time.perf_counter()
        client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                t.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [t.TextDocumentContentChangeWholeDocument(text)],
            )
        )
        await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        out.append((time.perf_counter() - start) * 1000)
    server_cpu = (cpu_ms(pid) - cpu_start) / len(texts)
    await client.shutdown_session()
    await client.stop()
    return out, server_cpu


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    first = spec_of(lines)
    assert not features.check_text(first, "big.bench").diagnostics
    sequences = {"typing": edits(first, EDITS, TYPING), "mixed": edits(first, EDITS, MIXED)}
    print(f"spec: {first.count(chr(10))} lines; {EDITS} seeded edits per sequence (typing: in a")
    print("line; mixed: MIXED); per edit: didChange of the whole text to publishDiagnostics;")
    print("budget 50 ms; kinds: in a line, lines (added, removed), breaks (syntax errors)")
    print(
        f"{'machine':<14}{'edits':<8}{'parse':<8}{'kind':<11}{'n':>3}{'p50 wall':>10}"
        f"{'p95 wall':>10}{'check CPU p50':>15}{'p95':>9}{'server CPU mean':>17}"
    )
    cpu = {
        (name, whole): in_process(first, [text for text, _ in edited], not whole)
        for name, edited in sequences.items()
        for whole in (True, False)
    }
    for load in (0, 2):
        burners = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(load)]
        try:
            for (name, whole), used in cpu.items():
                texts = [text for text, _ in sequences[name]]
                wall, server = asyncio.run(over_stdio(first, texts, whole))
                machine = f"{load} yes loops" if load else "as it is"
                kinds = [kind for _, kind in sequences[name]]
                for kind in ("all", *sorted(set(kinds))):
                    chosen = [i for i, k in enumerate(kinds) if kind in ("all", k)]
                    w, c = [wall[i] for i in chosen], [used[i] for i in chosen]
                    print(
                        f"{machine:<14}{name:<8}{'whole' if whole else 'pieces':<8}{kind:<11}"
                        f"{len(chosen):>3}{percentile(w, 50):>7.1f} ms{percentile(w, 95):>7.1f} ms"
                        f"{percentile(c, 50):>12.1f} ms{percentile(c, 95):>6.1f} ms"
                        + (f"{server:>14.1f} ms" if kind == "all" else "")
                    )
        finally:
            for burner in burners:
                burner.kill()
                burner.wait()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end")


if __name__ == "__main__":
    main()
