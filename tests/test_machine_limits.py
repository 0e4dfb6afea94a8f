"""The machine block's limits applied by the local backend: from a spec
through ``benchlang run`` on this machine's cgroups, pinning seen from inside the trial,
a trial over its memory limit failing as out of memory while one under it succeeds with its
peak stored, a CPU-time limit enforced by a kill, the first-round rule stopping a run whose
every trial is over its limit, and the refusals: a backend without the capability, a host
where the memory cannot be enforced."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import textwrap

import pytest

from benchlang.backends import cgroups
from benchlang.backends.base import Command
from benchlang.backends.cgroups import Hierarchies, LimitError, TrialLimits
from benchlang.backends.local import LocalSession
from benchlang.model import Machine

MIB = 2**20
ALLOCATE = "python3 -c \\\"b = bytearray({mib} << 20); b[::4096] = b'x' * len(b[::4096])\\\""
AFFINITY = (
    "sh -c 'grep Cpus_allowed_list /proc/$$/status; grep Cpus_allowed_list /proc/self/status'"
)


def memory_enforceable() -> str | None:
    try:
        TrialLimits(memory=64 * MIB).create().remove()
    except LimitError as err:
        return str(err)
    return None


needs_memory = pytest.mark.skipif(
    memory_enforceable() is not None, reason=f"{memory_enforceable()}"
)


def spec(where, machine: str, body: str, runs: int = 2) -> None:
    (where / "m.bench").write_text(
        "benchlang 1\nexperiment limited {\n"
        f"  machine {{ {machine} }}\n"
        + textwrap.indent(textwrap.dedent(body).strip(), "  ")
        + f"\n  design {{ runs {runs} order fixed }}\n}}\n"
    )


def trials(where) -> list[tuple]:
    with sqlite3.connect(where / "m.sqlite") as db:
        return db.execute(
            "SELECT trial, label, status, reason, stdout_tail FROM trials ORDER BY trial"
        ).fetchall()


def measure(where, name: str) -> dict[int, float]:
    with sqlite3.connect(where / "m.sqlite") as db:
        rows = db.execute("SELECT trial, value FROM measures WHERE name = ?", (name,))
        return dict(rows.fetchall())


def leftovers() -> list[str]:
    """Trial cgroups of this process still on the host (every one is removed after its trial)."""
    layout = cgroups.hierarchies()
    mine = f"benchlang-{os.getpid()}-t"
    return [
        f"{parent}/{name}"
        for parent in {*layout.v1.values(), *([layout.v2] if layout.v2 else [])}
        for name in os.listdir(parent)
        if name.startswith(mine)
    ]


def test_cpus_0_pins_every_process_of_every_trial(tmp_path, run_cli):
    spec(tmp_path, "cpus [0]", f'benchmark cpus_seen {{ run "{AFFINITY}" }}')
    code, out, err = run_cli(["run", "m.bench", "-q"], cwd=tmp_path)
    assert code == 0, out + err
    rows = trials(tmp_path)
    assert len(rows) == 2
    for _, _, status, _, stdout in rows:
        assert status == "ok"
        assert stdout.decode().split() == ["Cpus_allowed_list:", "0"] * 2


@needs_memory
def test_memory_64mib_fails_256_as_out_of_memory_and_stores_the_peak_of_16(tmp_path, run_cli):
    spec(
        tmp_path,
        "memory 64MiB",
        f"""
        factor mib in [16, 256]
        benchmark alloc {{
          run "{ALLOCATE.format(mib="{mib}")}"
          measure peak = memory_peak
        }}
        """,
    )
    code, out, err = run_cli(["run", "m.bench", "-q"], cwd=tmp_path)
    assert code == 1, out + err  # failed trials, the run went on to the end
    assert "Traceback" not in err
    assert "stopped after the first round" not in err
    rows = trials(tmp_path)
    over = [r for r in rows if "256" in r[1]]
    under = [r for r in rows if "mib=16" in r[1]]
    assert len(over) == len(under) == 2
    assert {r[3] for r in over} == {"the command failed: out of memory (limit 64 MiB)"}
    assert {r[2] for r in under} == {"ok"}
    peaks = measure(tmp_path, "peak")
    assert set(peaks) == {r[0] for r in under}
    assert all(16 * 1024 <= p <= 64 * 1024 for p in peaks.values()), peaks
    charged = measure(tmp_path, "memory_peak")
    assert all(charged[r[0]] <= 64 * 1024 for r in over), charged
    assert "out of memory (limit 64 MiB)" in out + err


@needs_memory
def test_a_first_round_all_over_its_memory_limit_stops_the_run_with_the_reason(tmp_path, run_cli):
    spec(tmp_path, "memory 64MiB", f'benchmark alloc {{ run "{ALLOCATE.format(mib=256)}" }}')
    code, out, err = run_cli(["run", "m.bench", "-q"], cwd=tmp_path)
    assert code == 1, out + err
    assert "stopped after the first round" in err
    assert "out of memory (limit 64 MiB)" in err
    assert len(trials(tmp_path)) == 1


def test_a_cpu_time_limit_kills_a_busy_trial_with_the_reason(tmp_path, run_cli):
    spec(
        tmp_path,
        "time 300ms",
        """
        factor spin in [0, 1]
        benchmark b { run "python3 -c 'import sys\\nwhile int(sys.argv[1]): pass' {spin}" }
        """,
        runs=1,
    )
    code, out, err = run_cli(["run", "m.bench", "-q"], cwd=tmp_path)
    assert code == 1, out + err
    rows = {r[1]: r for r in trials(tmp_path)}
    assert rows["b[spin=0]"][2] == "ok"
    assert rows["b[spin=1]"][3] == "the command failed: CPU time limit (0.3 s) exceeded"


@needs_memory
@pytest.mark.parametrize("native", ["1", "0"], ids=["launcher", "process-group fallback"])
def test_both_local_paths_apply_every_limit_and_leave_no_cgroup(monkeypatch, native):
    monkeypatch.setenv("BENCHLANG_NATIVE", native)

    async def body():
        session = LocalSession()
        try:
            limits = Machine(cpus=(0,), memory=64 * MIB, cpu_time=30.0)
            pinned = await session.execute(Command(AFFINITY, limits=limits))
            over = await session.execute(
                Command(ALLOCATE.replace("\\", "").format(mib=256), limits=limits)
            )
            free = await session.execute(Command("true"))
            return pinned, over, free
        finally:
            await session.close()

    pinned, over, free = asyncio.run(body())
    assert pinned.ok and pinned.stdout.decode().split()[1::2] == ["0", "0"], pinned
    assert over.failure == "out of memory (limit 64 MiB)", over
    assert "memory_peak" not in free.rusage, "a trial without limits gets no cgroup of its own"
    assert leftovers() == []


def test_the_executor_refuses_a_limit_the_backend_lacks(tmp_path):
    import attrs

    from benchlang.app.plan import build_plan
    from benchlang.backends.local import LocalBackend
    from benchlang.errors import UserError
    from benchlang.run.executor import Executor
    from benchlang.run.progress import Progress
    from benchlang.run.store import Store

    class Unpinned(LocalBackend):
        capabilities = frozenset({"aslr"})

    (tmp_path / "m.bench").write_text(
        'benchlang 1\nexperiment e {\n  benchmark b { run "true" }\n  design { runs 2 }\n}\n'
    )
    experiment, _backend, plan = build_plan(str(tmp_path / "m.bench"))
    experiment = attrs.evolve(experiment, machine=Machine(cpus=(0,), memory=64 * MIB))
    store = Store(tmp_path / "m.sqlite", create=True)
    store.add_plan(plan.hash, "e", experiment.spec_hash, plan.seed, plan.json_text(), "m", "")
    backend = Unpinned(tmp_path)
    executor = Executor(experiment, plan, backend, store, Progress(plan.n_trials, quiet=True))
    with pytest.raises(UserError, match="lacks the memory, pin capabilities"):
        asyncio.run(executor.run())
    assert store.finished_trials(plan.hash) == set(), "no trial ran without its limits"
    store.close()


def test_memory_that_cannot_be_enforced_fails_the_trial_saying_why(monkeypatch):
    """A host with neither a cgroup v1 memory hierarchy nor cgroup v2 (the layout is read
    from text as /proc/self/cgroup and /proc/self/mountinfo would give it)."""
    nowhere = Hierarchies(
        "1:cpu:/\n", "30 20 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
    )
    monkeypatch.setattr(cgroups, "_LAYOUT", [nowhere])

    async def body():
        session = LocalSession()
        try:
            return await session.execute(Command("true", limits=Machine(memory=64 * MIB)))
        finally:
            await session.close()

    done = asyncio.run(body())
    assert not done.ok
    assert done.failure == (
        "cannot enforce memory here: no cgroup v1 memory hierarchy and no cgroup v2"
    )


def test_the_layout_is_read_for_v1_hybrid_and_v2_hosts():
    hybrid = Hierarchies(
        "4:memory:/process_api/x\n3:cpuset:/\n2:cpuacct,cpu:/\n0::/\n",
        "\n".join(
            [
                "30 20 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
                "31 20 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct",
                "32 20 0:29 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset",
                "33 20 0:30 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw",
            ]
        ),
    )
    assert hybrid.where("memory") == ("v1", "/sys/fs/cgroup/memory/process_api/x")
    assert hybrid.where("cpuacct") == ("v1", "/sys/fs/cgroup/cpu,cpuacct")
    assert hybrid.v2 == "/sys/fs/cgroup/unified"
    pure = Hierarchies(
        "0::/user.slice/run\n", "40 20 0:31 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    )
    assert pure.v1 == {} and pure.v2 == "/sys/fs/cgroup/user.slice/run"
    assert pure.where("cpuacct") == ("v2", pure.v2)  # cpu.stat usage_usec needs no controller
    assert pure.where("memory")[0] == ""  # not offered by that directory's controllers


def test_a_cpu_quota_throttles_and_says_by_how_much_and_facts_say_how_limits_apply():
    """Only a quota asked for by name throttles a trial; its throttling is then stored."""
    spin = "python3 -c 'import time\nt = time.process_time()\nwhile time.process_time() - t < 0.05: pass'"

    async def body():
        session = LocalSession()
        try:
            quota = await session.execute(
                Command(spin, timeout=120, limits=Machine(cpu_quota=0.02))
            )
            watched = await session.execute(
                Command(spin, timeout=120, limits=Machine(cpu_time=30.0))
            )
            return quota, watched, await session.facts()
        finally:
            await session.close()

    quota, watched, facts = asyncio.run(body())
    assert quota.ok, quota
    assert quota.rusage["throttled_periods"] >= 1 and quota.rusage["throttled_time"] > 0
    assert watched.ok and "throttled_periods" not in watched.rusage
    assert "no CPU quota" in watched.unavailable["throttled_periods"]
    assert facts["limits_memory"].startswith(("cgroup v1", "cgroup v2", "cannot enforce"))
    assert {"limits_cpu_time", "limits_pin"} <= set(facts)
