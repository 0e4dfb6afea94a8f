"""Executed documentation: the shell sessions of README.md and docs/*.md, parsed,
run and compared with what the page shows. The conventions are in docs/testing.md.

A session is a fenced block whose first line starts with ``$ ``: each ``$ `` line is a command
(a line ending in ``\\`` continues it), the lines up to the next one its expected output,
stdout and stderr together as a terminal shows them. HTML comments on the lines just above a
fence direct the runner:

- ``<!-- skip: why -->``: not run (needs a cluster, a cloud account, minutes of work); the
  reason is required.
- ``<!-- varies: what -->``: digits, hexadecimal hashes, runs of spaces and of table rules are
  compared as placeholders (timings, hashes, column widths follow the numbers).
- ``<!-- file: PATH -->``: the block is a file the page uses: written to PATH, not run.
- ``<!-- same-as: PATH -->``: the block must equal the repository's file PATH.
- ``<!-- setup: COMMAND -->``: run before the block, silently (a file the page does not show).
- ``<!-- prepare: NAME -->``: before the page's first session, the stores and files NAME
  (tests/docs_stores.py: real plans of the page's specs with seeded values; tests/docs_runs.py:
  killed runs, old stores, a git repository, tampered bundles) are written; the variables it
  writes to ``.docs-env/NAME`` apply to the block under it.
- ``<!-- restores: PATH -->``: the block writes a host-wide setting; it runs under the tests'
  exclusive lock on it (the page under the shared one), PATH is written back after it, and it
  is skipped, saying why, where PATH is not writable.

``sqlite3`` runs the SQLite shell, or where it is not installed a stand-in printing its
formats (tests/docs_stores.py).

In an expected output, a line ``...`` matches any number of lines and ``...`` inside a line
any text. Each page runs in a directory of its own holding a copy of the repository's
``specs/``; its sessions share it (and the stores they make), in page order.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
_DIRECTIVE = re.compile(
    r"^<!--\s*(skip|varies|file|same-as|setup|prepare|restores)\s*:\s*(.*?)\s*-->\s*$"
)
TIMEOUT = 300
_LOCK: list[Any] = [None]
"""The open lock file of the page that holds the host-wide setting's lock (``_host_wide``)."""


@dataclass
class Command:
    line: int
    text: str
    expected: list[str]


@dataclass
class Block:
    page: str
    line: int
    lines: list[str]
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def session(self) -> bool:
        first = next((x for x in self.lines if x.strip()), "")
        return first.startswith("$ ")

    def commands(self) -> list[Command]:
        out: list[Command] = []
        i = 0
        while i < len(self.lines):
            line = self.lines[i]
            if not line.startswith("$ "):
                out[-1].expected.append(line) if out else None
                i += 1
                continue
            start, text = i, line[2:]
            while text.endswith("\\") and i + 1 < len(self.lines):
                i += 1
                text = text[:-1] + "\n" + self.lines[i]
            out.append(Command(self.line + 1 + start, text, []))
            i += 1
        return out


def blocks(page: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of a page, each with the directives on the lines just above it."""
    lines = (text if text is not None else (ROOT / page).read_text()).splitlines()
    out, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        directives, j = {}, i - 1
        while j >= 0 and (m := _DIRECTIVE.match(lines[j])):
            directives[m.group(1)] = m.group(2)
            j -= 1
        end = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
        out.append(Block(page, i + 1, lines[i + 1 : end], directives))
        i = end + 1
    return out


def _normalise(text: str) -> str:
    text = re.sub(r"\b(?=[0-9a-f]*[0-9])[0-9a-f]{7,}\b", "#", text)
    text = re.sub(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?", "#", text)
    text = re.sub(r"#(\.#)+", "#", text)
    text = re.sub(r"[-─━]{2,}", "--", text)
    return re.sub(r"[ \t]+", " ", text)


OTHERS_LEFTOVERS = re.compile(r"^benchlang: removed \d+ stale cgroups? of killed runs")
"""A run's note that it removed the cgroups a killed run left (docs/machine.md): in a suite that
kills processes in parallel tests it may come from any of them, so pages are read without it."""


def matches(expected: list[str], actual: str, varies: bool = False) -> bool:
    """Whether ``actual`` is what ``expected`` shows, ``...`` wildcards included."""
    got = [x.rstrip() for x in actual.rstrip("\n").splitlines() if not OTHERS_LEFTOVERS.match(x)]
    want = [x.rstrip() for x in expected]
    while want and not want[-1]:
        want.pop()
    while got and not got[-1]:
        got.pop()
    if varies:
        got, want = [_normalise(x) for x in got], [_normalise(x) for x in want]
    pattern = []
    for line in want:
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.fullmatch("".join(pattern), "".join(x + "\n" for x in got)) is not None


def page_directory(tmp: Path) -> Path:
    shutil.copytree(ROOT / "specs", tmp / "specs", ignore=shutil.ignore_patterns("*.sqlite*"))
    return tmp


def environment(
    bin_dir: Path | None = None, cwd: Path | None = None, prepare: str | None = None
) -> dict[str, str]:
    """The sessions' environment, a user's shell's: without pytest's own variables (an xdist
    worker's PYTEST_XDIST_WORKER makes pytest-benchmark in a session write an empty file); in a
    page directory ``cwd``, its own cache directory and, for
    the block under ``prepare: NAME``, the variables that preparation wrote to
    ``.docs-env/NAME`` (``NAME=VALUE`` lines; ``$NAME`` in a value is the variable's value)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PYTHONUNBUFFERED="1", COLUMNS="80", NO_COLOR="1", TERM="dumb", LC_ALL="C.UTF-8")
    first = [str(bin_dir)] if bin_dir is not None else []
    env["PATH"] = os.pathsep.join([*first, str(Path(sys.executable).parent), env.get("PATH", "")])
    if cwd is not None:
        env["XDG_CACHE_HOME"] = str(cwd / ".cache")
        extra = cwd / ".docs-env" / (prepare or "-")
        for line in extra.read_text().splitlines() if extra.exists() else []:
            name, _, value = line.partition("=")
            env[name] = value.replace("$" + name, env.get(name, "")).strip(os.pathsep)
    return env


@dataclass
class Outcome:
    ran: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)
    """Each skipped session: where, and why."""


def run_block(block: Block, cwd: Path, outcome: Outcome, status: list[int]) -> None:
    """Run one block in ``cwd``; ``status`` carries the last exit status (``$?``)."""
    d = block.directives
    where = f"{block.page}:{block.line}"
    if "same-as" in d:
        shown = "\n".join(block.lines).rstrip() + "\n"
        if shown != (ROOT / d["same-as"]).read_text().rstrip() + "\n":
            outcome.problems.append(f"{where}: the block differs from {d['same-as']}")
    if "file" in d:
        target = cwd / d["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(block.lines) + "\n")
        return
    if not block.session:
        return
    if "skip" in d:
        if not d["skip"].strip():
            outcome.problems.append(f"{where}: a skipped session must say why")
        outcome.skipped += 1
        outcome.skips.append(f"{where}: skipped: {d['skip']}")
        return
    bin_dir = cwd / ".bin"
    env = environment(bin_dir if bin_dir.is_dir() else None, cwd, d.get("prepare"))
    if "restores" in d and not os.access(d["restores"], os.W_OK):
        outcome.skipped += 1
        outcome.skips.append(f"{where}: skipped: {d['restores']} is not writable here (root)")
        return
    if "setup" in d:
        subprocess.run(["bash", "-c", d["setup"]], cwd=cwd, env=env, capture_output=True)
    with _restored(d.get("restores")):
        _run_commands(block, cwd, env, outcome, status)


@contextmanager
def _restored(path: str | None) -> Iterator[None]:
    """A block that writes a host-wide setting (``restores: PATH``) holds the tests' lock on it
    exclusively (tests/conftest.py; the page holds it shared, ``run_page``) and leaves PATH as
    it found it."""
    if path is None:
        yield
        return
    original = Path(path).read_text()
    fcntl.flock(_LOCK[0], fcntl.LOCK_EX)
    try:
        yield
    finally:
        if Path(path).read_text() != original:
            Path(path).write_text(original)
        fcntl.flock(_LOCK[0], fcntl.LOCK_SH)


def _run_commands(
    block: Block, cwd: Path, env: dict[str, str], outcome: Outcome, status: list[int]
) -> None:
    d = block.directives
    for command in block.commands():
        status[0], actual = _run_command(command.text, cwd, env, status[0])
        outcome.ran += 1
        if not matches(command.expected, actual, varies="varies" in d):
            outcome.problems.append(
                f"{block.page}:{command.line}: $ {command.text}\n--- the page shows:\n"
                + "\n".join(command.expected)
                + "\n--- the command printed:\n"
                + actual
            )


PLAIN = re.compile(r"(benchlang(?: [^|;&<>$`()*?~{}\[\]#\\\n]*)?)(?:\s#[^\n]*)?")
"""A command bash would only split into words: ``benchlang`` and arguments, no pipe, redirection,
expansion or second command; a comment after it."""


def _words(text: str) -> list[str] | None:
    """A plain command's arguments after ``benchlang`` (``PLAIN``), or None: not plain, or a
    ``#`` inside quotes taken for a comment (its quotes left open)."""
    plain = PLAIN.fullmatch(text)
    try:
        return shlex.split(plain.group(1))[1:] if plain else None
    except ValueError:
        return None


_OUTPUT = {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"}
"""Variables of the interpreter that change nothing a command prints (captured in process)."""


def _run_command(text: str, cwd: Path, env: dict[str, str], last: int) -> tuple[int, str]:
    """A command's status and output (stdout and stderr as one stream, as a terminal shows
    them). A plain ``benchlang ...`` runs in this process (``cli_here``, what the console
    script calls, in the page's directory and environment: 0.007 CPU-s a ``check`` against
    0.45 as a process), unless the page's environment sets up the interpreter (``PYTHONPATH``:
    a plugin a preparation wrote); the rest in bash, given the last status as ``$?``."""
    interpreter = {k for k in {*env, *os.environ} if k.startswith("PYTHON") and k not in _OUTPUT}
    argv = _words(text)
    if argv is not None and all(env.get(k) == os.environ.get(k) for k in interpreter):
        from tests.conftest import cli_here

        code, out, _ = cli_here(argv, cwd=cwd, environ=env, merged=True)
        return code, out
    proc = subprocess.run(
        ["bash", "-c", f"(exit {last}); {text}"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )
    return proc.returncode, proc.stdout.decode(errors="replace")


def _shown_files(found: list[Block], cwd: Path) -> None:
    """The files a page shows with ``$ cat NAME`` exist before its first session runs."""
    for block in found:
        if not block.session or "skip" in block.directives:
            continue
        for command in block.commands():
            cat = re.fullmatch(r"cat (\S+)", command.text)
            if cat and not (cwd / cat.group(1)).exists():
                text = "\n".join(command.expected).rstrip("\n") + "\n"
                (cwd / cat.group(1)).write_text(text)


def run_page(page: str, tmp: Path, text: str | None = None, standin: bool = False) -> Outcome:
    """Run a page's sessions in ``tmp``; ``standin``: ``sqlite3`` is the stand-in even where
    the shell is installed."""
    cwd = page_directory(tmp)
    outcome, status = Outcome(), [0]
    found = blocks(page, text)
    if any("restores" in b.directives for b in found):
        with _host_wide():
            return _run_found(page, found, cwd, outcome, status, standin)
    return _run_found(page, found, cwd, outcome, status, standin)


@contextmanager
def _host_wide() -> Iterator[None]:
    """A page with a block that writes a host-wide setting reads it in its other sessions: it
    holds the tests' lock shared while it runs, as the tests that read the setting do."""
    from tests.conftest import ASLR_LOCK

    with ASLR_LOCK.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        _LOCK[0] = handle
        try:
            yield
        finally:
            _LOCK[0] = None
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_found(
    page: str, found: list[Block], cwd: Path, outcome: Outcome, status: list[int], standin: bool
) -> Outcome:
    from tests.docs_stores import PREPARE, sqlite3_standin

    _shown_files(found, cwd)
    sqlite3_standin(cwd / ".bin", force=standin)
    for name in dict.fromkeys(b.directives["prepare"] for b in found if "prepare" in b.directives):
        if name not in PREPARE:
            outcome.problems.append(f"{page}: no preparation named {name!r} (tests/docs_stores.py)")
            continue
        PREPARE[name](cwd)
    for block in found:
        run_block(block, cwd, outcome, status)
    return outcome
