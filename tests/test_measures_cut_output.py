"""Measures over outputs the backend cuts, and built-ins it cannot take, through real runs:
a value printed before the kept tail is still read (the local backend keeps the whole stream
on disk), and a measure a backend cannot take fails its trial with the backend's reason."""

from __future__ import annotations

import sqlite3

from benchlang.backends.local import OUTPUT_KEEP

SPEC = f"""benchlang 1
experiment cut {{
  benchmark first {{
    run "echo v=42; yes | head -c {3 * OUTPUT_KEEP}"
    measure v from stdout regex "v=([0-9]+)"
  }}
  benchmark js {{
    run "sh js.sh"
    measure w from stdout json "v"
  }}
  benchmark rss {{
    run "true"
    measure m = max_rss
  }}
  design {{ runs 1 order fixed }}
}}
"""


JSON_OUTPUT = f"""printf '{{"v": 5, "pad": "'
yes x | tr -d '\\n' | head -c {2 * OUTPUT_KEEP}
echo '"}}'
"""


def _write(tmp_path):
    (tmp_path / "cut.bench").write_text(SPEC)
    (tmp_path / "js.sh").write_text(JSON_OUTPUT)


def _rows(path):
    db = sqlite3.connect(path)
    try:
        trials = db.execute("SELECT benchmark, status, reason FROM trials ORDER BY trial")
        values = dict(db.execute("SELECT name, value FROM measures WHERE name IN ('v', 'w')"))
        return {b: (s, r) for b, s, r in trials}, values
    finally:
        db.close()


def test_values_before_the_kept_tail_are_read_from_the_whole_output(tmp_path, cli_in_process):
    _write(tmp_path)
    status, _out, err = cli_in_process(
        ["run", "cut.bench", "--store", "s.sqlite", "-q"], cwd=tmp_path
    )
    trials, values = _rows(tmp_path / "s.sqlite")
    assert status == 0, err
    assert trials["first"] == ("ok", None) and values["v"] == 42.0
    assert trials["js"] == ("ok", None) and values["w"] == 5.0


def test_a_built_in_the_backend_cannot_take_fails_with_its_reason(tmp_path, run_cli, monkeypatch):
    """A process of its own: the compiler is looked for once per process (BENCHLANG_CC)."""
    monkeypatch.setenv("BENCHLANG_CC", "/no/such/cc")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _write(tmp_path)
    status, _out, err = run_cli(["run", "cut.bench", "--store", "s.sqlite", "-q"], cwd=tmp_path)
    trials, _values = _rows(tmp_path / "s.sqlite")
    assert status == 1, err
    state, reason = trials["rss"]
    assert state == "failed"
    assert "max_rss is not available" in reason and "/no/such/cc" in reason
