"""The machine block's limits over SSH: the remote agent pins every process of a
trial (``Cpus_allowed_list`` read from inside it) and caps its memory in the host's cgroups,
a trial touching 256 MiB under ``memory 64MiB`` failing as out of memory while one touching
16 MiB succeeds with its peak stored; the run goes on past the failed trials."""

from __future__ import annotations

ALLOCATE = "import sys\nb = bytearray(int(sys.argv[1]) << 20)\nb[::4096] = b'x' * len(b[::4096])\n"
AFFINITY = (
    "sh -c 'grep Cpus_allowed_list /proc/$$/status; grep Cpus_allowed_list /proc/self/status'"
)


def test_cpus_and_memory_apply_on_the_remote_host(harness, sshd1, tmp_path):
    files = tmp_path / "benchfiles"
    files.mkdir()
    (files / "allocate.py").write_text(ALLOCATE)
    spec = harness.spec(f"""
  timeout 60s
  {harness.hosts(sshd1, tmp_path / "remote", extra='sync "benchfiles"')}
  machine {{ cpus [0] memory 64MiB }}
  factor mib in [16, 256]
  benchmark alloc {{
    run "python3 benchfiles/allocate.py {{mib}}"
    measure peak = memory_peak
  }}
  benchmark cpus_seen {{ run "{AFFINITY}" }}
  design {{ runs 2 series 1 order fixed }}
""")
    plan, store, summary = harness.run(spec)
    with store:
        rows = list(
            store.db.execute(
                "SELECT trial, label, status, reason, stdout_tail FROM trials WHERE plan_hash = ?",
                (plan.hash,),
            )
        )
        peaks = dict(
            store.db.execute(
                "SELECT trial, value FROM measures WHERE plan_hash = ? AND name = 'peak'",
                (plan.hash,),
            )
        )
    assert summary.failed == 2 and len(rows) == plan.n_trials == 6
    by_label: dict[str, list[tuple]] = {}
    for row in rows:
        by_label.setdefault(row[1], []).append(row)
    assert {r[3] for r in by_label["alloc[mib=256]"]} == {
        "the command failed: out of memory (limit 64 MiB)"
    }
    under = by_label["alloc[mib=16]"]
    assert {r[2] for r in under} == {"ok"}
    assert all(16 * 1024 <= peaks[r[0]] <= 64 * 1024 for r in under), peaks
    for row in by_label["cpus_seen"]:
        assert row[2] == "ok" and row[4].decode().split() == ["Cpus_allowed_list:", "0"] * 2
