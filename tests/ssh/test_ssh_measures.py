"""Measures over SSH that must not lie: max_rss is the command's own or reported unavailable
(the agent is a Python process whose peak Linux copies into every child at exec), and a
value printed before the kept tail of a cut output fails its trial saying the output was cut."""

from __future__ import annotations

MIB = 1024

ALLOCATE = "import sys\nblock = b'x' * (int(sys.argv[1]) << 20)\nprint(len(block))\n"


def test_max_rss_is_the_commands_own_or_unavailable(harness, sshd1, tmp_path):
    files = tmp_path / "benchfiles"
    files.mkdir()
    (files / "allocate.py").write_text(ALLOCATE)
    spec = harness.spec(f"""
  timeout 30s
  {harness.hosts(sshd1, tmp_path / "remote", extra='sync "benchfiles"')}
  factor mib in [0, 160]
  benchmark b {{
    run "python3 benchfiles/allocate.py {{mib}}"
    measure m = max_rss
  }}
  design {{ runs 1 series 1 order fixed }}
""")
    plan, store, _summary = harness.run(spec)
    with store:
        rows = dict(
            (label, (status, reason))
            for label, status, reason in store.db.execute(
                "SELECT label, status, reason FROM trials WHERE plan_hash = ?", (plan.hash,)
            )
        )
        table = store.trial_table(plan.hash)
    big = table.measures["m"][[lv["mib"] == 160 for lv in table.levels]]
    assert rows["b[mib=160]"] == ("ok", None)
    assert 160 * MIB < big[0] < 200 * MIB
    status, reason = rows["b[mib=0]"]
    assert status == "failed"
    assert "max_rss is not available" in reason and "cannot be told apart" in reason


def test_a_value_before_the_kept_tail_fails_saying_the_output_was_cut(harness, sshd1, tmp_path):
    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "remote")}
  benchmark last {{
    run "echo v=7; yes | head -c 3000000; echo v=9"
    measure v from stdout regex "v=([0-9]+)"
  }}
  benchmark first {{
    run "echo v=7; yes | head -c 3000000"
    measure v from stdout regex "v=([0-9]+)"
  }}
  design {{ runs 1 series 1 order fixed }}
""")
    plan, store, _summary = harness.run(spec)
    with store:
        rows = {
            label: (status, reason)
            for label, status, reason in store.db.execute(
                "SELECT label, status, reason FROM trials WHERE plan_hash = ?", (plan.hash,)
            )
        }
        table = store.trial_table(plan.hash)
    assert rows["last"] == ("ok", None), "the last match of a stream is in its tail"
    assert table.measures["v"][table.label == "last"].tolist() == [9.0]
    status, reason = rows["first"]
    assert status == "failed"
    assert "stdout was cut to its last 1,048,576 of 3,000,004 bytes" in reason
