"""Configuration labels survive rich on a real terminal: ``benchlang run``, ``results`` and
``plan`` run in a pseudo-terminal (100 x 40) and every label, brackets included, is on screen."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

SPEC = textwrap.dedent(
    """\
    benchlang 1
    experiment labels {
      seed 3
      factor tool in ["alpha", "[bold]beta"]
      factor size in [1, 2]
      benchmark gen {
        run "echo {tool} > /dev/null; awk -v s=$BENCHLANG_SEED -v k={size} 'BEGIN{{srand(s); print \\"v=\\" k*(1+rand()/20)}}'"
        measure v from stdout regex "v=([0-9.]+)"
      }
      metric v { measure mean unit "s" better lower }
      kpi v { percentile 50 confidence 95% }
      variability v { percentile 25 confidence 75% }
      design { runs 5 series 5 order random }
    }
    """
)
LABELS = [
    "gen[tool=alpha,size=1]",
    "gen[tool=alpha,size=2]",
    "gen[tool=[bold]beta,size=1]",
    "gen[tool=[bold]beta,size=2]",
]
ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|[=>])")


def in_terminal(args: list[str], cwd: Path, columns: int = 100, lines: int = 40) -> str:
    """``python -m benchlang ARGS`` with a pseudo-terminal as stdin, stdout and stderr;
    the screen text with escape sequences removed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(TERM="xterm-256color", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlang", *args],
        cwd=cwd,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=30) == 0, b"".join(chunks).decode(errors="replace")
    text = b"".join(chunks).decode(errors="replace").replace("\r", "")
    return ANSI.sub("", text)


def test_every_label_is_on_a_terminal_screen(tmp_path):
    (tmp_path / "labels.bench").write_text(SPEC)
    ran = in_terminal(["run", "labels.bench", "--store", "labels.sqlite", "-v"], tmp_path)
    results = in_terminal(["results", "labels.sqlite"], tmp_path)
    plan = in_terminal(["plan", "labels.bench"], tmp_path)
    for screen in (ran, results, plan):
        for label in LABELS:
            assert label in screen, screen
    # the headline fits a 100-column screen
    end = ran[ran.index("Headline:") :]
    assert max(len(line.rstrip()) for line in end.splitlines()) <= 100, end
    assert "Headline: v (s)" in end and "Ranking of size" in end and "Ranking of tool" in end
