"""The stored wall_time times the command alone (docs/measures.md, "The local backend"): the
launcher's clock around its fork and wait4, inside the trial. Through `benchlang run` on real
processes: at least the time the command is known to take, at most the trial's own span as
benchlang saw it (request to report), and without the hooks run before and after it. These
bounds hold under any load; the ratios against hyperfine and GNU time on the same commands are
measured by benchmarks/bench_wall_time.py (docs/benchmarks.md)."""

from __future__ import annotations

import sqlite3

HOOK = 0.5
NAP = 0.05
SPEC = f"""benchlang 1
experiment wall {{
  benchmark nap {{
    before "sleep {HOOK}"
    run "sleep {NAP}"
    after "sleep {HOOK}"
  }}
  benchmark nothing {{ run "true" }}
  design {{ runs 2 order fixed }}
}}
"""


def test_wall_time_is_the_commands_own_time(tmp_path, run_cli):
    (tmp_path / "wall.bench").write_text(SPEC)
    status, _out, err = run_cli(
        ["run", "wall.bench", "--store", "s.sqlite", "--quiet"], cwd=tmp_path
    )
    assert status == 0, err
    db = sqlite3.connect(tmp_path / "s.sqlite")
    rows = db.execute(
        "SELECT t.benchmark, t.started, t.ended, m.value FROM trials t JOIN measures m"
        " ON m.plan_hash = t.plan_hash AND m.trial = t.trial AND m.name = 'wall_time'"
        " WHERE t.status = 'ok' ORDER BY t.trial"
    ).fetchall()
    db.close()
    assert sorted(b for b, *_ in rows) == ["nap", "nap", "nothing", "nothing"]
    for benchmark, started, ended, wall in rows:
        assert 0 < wall <= ended - started, (benchmark, wall, ended - started)
        if benchmark == "nap":
            assert NAP <= wall < HOOK, f"{wall} s: the hooks' {HOOK} s are not the command's"
