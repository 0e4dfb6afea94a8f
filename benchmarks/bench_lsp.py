"""Latency of ``benchlang lsp``'s diagnostics on a 500-line spec (issue 39: within 50 ms).

Two numbers, medians of repeated edits: in process (the checker plus the index and the
conversion to protocol ranges, what one keystroke costs the server) and over stdio (a real
client sends ``didChange`` and waits for ``publishDiagnostics``: the editor's view, with JSON
and pipes). Each is measured on the valid spec and on the same spec with an error on its last
line. Prints a table; python benchmarks/bench_lsp.py.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchlang.lsp import features
from benchlang.lsp.index import Index

REPEATS = 20


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


def edit(text: str, rnd: random.Random) -> str:
    """One seeded edit, as typing makes them: mostly a character typed into a string or a
    number changed, a blank or comment line added; sometimes a line removed or doubled, a
    brace or quote removed, or a stray character (the text then has errors)."""
    lines = text.split("\n")
    at = rnd.randrange(len(lines))
    kind = rnd.choices(
        ["string", "digit", "blank", "comment", "delete", "double", "bracket", "stray"],
        [30, 15, 10, 10, 10, 10, 5, 10],
    )[0]
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
            return text[:i] + rnd.choice("123456789") + text[i + 1 :]
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
            return text[:i] + text[i + 1 :]
    else:
        i = rnd.randrange(len(text) + 1)
        return text[:i] + rnd.choice('x{}[]="#9 \n') + text[i:]
    return "\n".join(lines)


def in_process(text: str) -> tuple[float, float]:
    """Median milliseconds (wall, CPU) of one check + index + ranges of the whole text. On a
    shared machine the wall time includes waiting for a core; the CPU time is the cost."""
    wall, cpu = [], []
    for _ in range(REPEATS):
        start, start_cpu = time.perf_counter(), time.process_time()
        index = Index(text)
        checked = features.check_text(text, "big.bench")
        for d in checked.diagnostics:
            features.diagnostic_range(index, d)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu)


async def over_stdio(texts: list[str]) -> list[float]:
    """Median milliseconds from ``didChange`` to ``publishDiagnostics``, per text."""
    from lsprotocol import types as t
    from pytest_lsp import ClientServerConfig, client_capabilities

    config = ClientServerConfig(server_command=[sys.executable, "-m", "benchlang", "lsp"])
    client = await config.start()
    await client.initialize_session(t.InitializeParams(capabilities=client_capabilities("neovim")))
    uri = (Path(tempfile.gettempdir()) / "big.bench").as_uri()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(t.TextDocumentItem(uri, "benchlang", 0, texts[0]))
    )
    await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    out = []
    version = 0
    for text in texts:
        times = []
        for _ in range(REPEATS):
            version += 1
            start = time.perf_counter()
            client.text_document_did_change(
                t.DidChangeTextDocumentParams(
                    t.VersionedTextDocumentIdentifier(version=version, uri=uri),
                    [t.TextDocumentContentChangeWholeDocument(text)],
                )
            )
            await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            times.append((time.perf_counter() - start) * 1000)
        out.append(statistics.median(times))
    await client.shutdown_session()
    await client.stop()
    return out


def main() -> None:
    valid = spec_of(500)
    broken = valid.replace("    order random", "    order randm")
    assert not features.check_text(valid, "big.bench").diagnostics
    assert features.check_text(broken, "big.bench").diagnostics
    stdio = asyncio.run(over_stdio([valid, broken]))
    load = os.getloadavg()[0]
    print(f"spec: {valid.count(chr(10))} lines; medians of {REPEATS} edits; budget 50 ms")
    print(f"load average {load:.1f} on {os.cpu_count()} cores")
    print(f"{'text':<12}{'in process wall':>17}{'in process CPU':>16}{'over stdio wall':>17}")
    for name, text, wire in (("valid", valid, stdio[0]), ("one error", broken, stdio[1])):
        wall, cpu = in_process(text)
        print(f"{name:<12}{wall:>14.1f} ms{cpu:>13.1f} ms{wire:>14.1f} ms")


if __name__ == "__main__":
    main()
