"""Hidden factors over SSH: the agent applies aslr (setarch) and the padding per trial."""

from __future__ import annotations

import json


def test_aslr_and_env_padding_reach_the_remote_command(harness, sshd1, tmp_path):
    spec = harness.spec(f"""
  seed 4
  timeout 10s
  {harness.hosts(sshd1, tmp_path / "remote")}
  factor aslr hidden
  factor env_padding hidden {{ sizes [0, 700] }}
  benchmark b {{ run "echo ${{{{#BENCHLANG_ENV_PADDING}}}} $(cat /proc/self/personality)" }}
  design {{ runs 8 }}
""")
    plan, store, summary = harness.run(spec)
    with store:
        rows = store.db.execute(
            "SELECT levels, stdout_tail FROM trials WHERE plan_hash = ?", (plan.hash,)
        ).fetchall()
    assert summary.failed == 0 and len(rows) == 8
    seen = set()
    for levels_json, out in rows:
        levels = json.loads(levels_json)
        size, persona = out.decode().split()
        assert int(size) == levels["env_padding"]
        assert bool(int(persona, 16) & 0x0040000) == (levels["aslr"] == "off")
        seen.add(levels["aslr"])
    assert seen == {"on", "off"}
