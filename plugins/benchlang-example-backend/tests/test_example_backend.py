"""The example backend end to end: settings, pinning seen by the command itself, a spec run
through benchlang's executor, and registration through the entry point once installed."""

from __future__ import annotations

import asyncio
import os
from importlib.metadata import entry_points

import pytest
from benchlang_example_backend import PinnedBackend

from benchlang.backends.base import Command, SettingError
from benchlang.backends.registry import backend_kinds
from benchlang.lang.check import load
from benchlang.plan.compile import compile_plan
from benchlang.run.executor import Executor
from benchlang.run.progress import Progress
from benchlang.run.store import Store
from benchlang.testing import conformance

CORES = sorted(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({}, None),
        ({"cpus": (0, 0)}, "cpus"),
        ({"cpus": ("a",)}, "cpus"),
        ({"cpus": (0,), "nice": 40}, "nice"),
        ({"cpus": (0,), "ram": 1}, "ram"),
    ],
)
def test_bad_settings_name_their_key(settings, key):
    with pytest.raises(SettingError) as err:
        PinnedBackend.check_settings(settings)
    assert err.value.key == key


def test_a_trial_runs_on_its_core_with_its_niceness(tmp_path):
    backend = PinnedBackend.from_settings({"cpus": (CORES[-1],), "nice": 7}, tmp_path)
    assert backend.hosts() == (f"cpu{CORES[-1]}",)

    async def run():
        session = await backend.open(backend.hosts()[0])
        try:
            shell = await session.execute(
                Command("grep Cpus_allowed_list /proc/self/status; nice", timeout=10.0)
            )
            direct = await session.execute(Command("nice", timeout=10.0))
            facts = await session.facts()
        finally:
            await session.close()
        return shell, direct, facts

    shell, direct, facts = asyncio.run(run())
    assert shell.ok and shell.stdout.decode().split() == ["Cpus_allowed_list:", str(CORES[-1]), "7"]
    assert direct.stdout.decode().strip() == "7" and direct.rusage["wall_time"] > 0
    assert facts["cpu"] == str(CORES[-1]) and "kernel" in facts


def test_a_spec_runs_through_the_executor_one_host_per_core(tmp_path):
    spec = tmp_path / "pinned.bench"
    spec.write_text(
        "benchlang 1\nexperiment pinned {\n  factor n in [1, 2]\n"
        '  benchmark b { run "echo {n}" measure v from stdout regex "([0-9]+)" }\n'
        "  design { runs 4 series 1 }\n}\n"
    )
    experiment = load(str(spec))
    backend = PinnedBackend.from_settings({"cpus": tuple(CORES)}, tmp_path)
    plan = compile_plan(experiment, backend.hosts())
    with Store(tmp_path / "r.sqlite", create=True) as store:
        store.add_plan(
            plan.hash, experiment.name, experiment.spec_hash, plan.seed, plan.json_text()
        )
        summary = asyncio.run(
            Executor(experiment, plan, backend, store, Progress(plan.n_trials, quiet=True)).run()
        )
        table = store.trial_table(plan.hash)
    assert summary.failed == 0 and len(table) == plan.n_trials == 8
    assert set(table.host.tolist()) == set(backend.hosts())
    assert table.measures["v"].tolist() == [float(lv["n"]) for lv in table.levels]


# pair.sh DIR N: the k-th trial of each host announces itself in DIR, then waits (30 s at most,
# then fails) until the k-th trial of the other host has announced itself too.
PAIR_SH = """\
k=$(( $(cat "$1/count.$BENCHLANG_HOST" 2>/dev/null || echo 0) + 1 ))
echo $k > "$1/count.$BENCHLANG_HOST"; : > "$1/started.$k.$BENCHLANG_HOST"
i=0
while [ $(ls "$1" | grep -c "^started\\.$k\\.") -lt 2 ]; do
  i=$((i + 1))
  if [ $i -gt 3000 ]; then echo "no partner for trial $k" >&2; exit 1; fi
  sleep 0.01
done
echo $2
"""


@pytest.mark.skipif(len(CORES) < 2, reason="needs two cores")
def test_hosts_on_two_cores_run_at_the_same_time(tmp_path):
    """The k-th trials of the two hosts wait for each other (a barrier): run one host after the
    other and every trial fails after 30 s. The stored start/end times of each pair overlap;
    elapsed time is not measured, so a busy machine cannot fail this."""
    (tmp_path / "pair.sh").write_text(PAIR_SH)
    (tmp_path / "marks").mkdir()
    spec = tmp_path / "side.bench"
    spec.write_text(
        "benchlang 1\nexperiment side {\n  factor n in [1, 2]\n"
        f'  benchmark b {{ run "sh {tmp_path}/pair.sh {tmp_path}/marks {{n}}" }}\n'
        "  design { runs 4 series 1 }\n}\n"
    )
    experiment = load(str(spec))
    backend = PinnedBackend.from_settings({"cpus": tuple(CORES[:2])}, tmp_path)
    plan = compile_plan(experiment, backend.hosts())
    with Store(tmp_path / "r.sqlite", create=True) as store:
        store.add_plan(
            plan.hash, experiment.name, experiment.spec_hash, plan.seed, plan.json_text()
        )
        summary = asyncio.run(
            Executor(experiment, plan, backend, store, Progress(plan.n_trials, quiet=True)).run()
        )
        rows = store.db.execute("SELECT host, started, ended FROM trials").fetchall()
    assert summary.failed == 0 and len(rows) == 8
    by_host = {h: sorted((s, e) for host, s, e in rows if host == h) for h in backend.hosts()}
    assert [len(v) for v in by_host.values()] == [4, 4]
    first, second = by_host.values()
    for k, ((s0, e0), (s1, e1)) in enumerate(zip(first, second, strict=True)):
        assert max(s0, s1) < min(e0, e1), f"pair {k + 1} did not overlap"


def test_registered_through_the_entry_point():
    found = [ep for ep in entry_points(group="benchlang.backends") if ep.name == "pinned"]
    if not found:
        pytest.skip(
            "benchlang-example-backend is not installed (pip install -e plugins/benchlang-example-backend)"
        )
    assert found[0].load() is PinnedBackend
    from benchlang.backends.registry import describe_plugins

    row = next(r for r in describe_plugins() if r["name"] == "pinned")
    assert row["status"] == "ok" and row["distribution"].startswith("benchlang-example-backend")


def test_spec_settings_reach_the_backend_through_the_checker(tmp_path):
    if not [ep for ep in entry_points(group="benchlang.backends") if ep.name == "pinned"]:
        pytest.skip(
            "benchlang-example-backend is not installed (pip install -e plugins/benchlang-example-backend)"
        )
    from benchlang.lang.diagnostics import SpecError

    body = 'benchlang 1\nexperiment p {{\n  hosts pinned {{ {hosts} }}\n  benchmark b {{ run "true" }}\n}}\n'
    spec = tmp_path / "ok.bench"
    spec.write_text(body.format(hosts=f"cpus [{CORES[0]}] nice 3"))
    experiment = load(str(spec), backends=backend_kinds())
    assert experiment.hosts.kind == "pinned" and dict(experiment.hosts.settings) == {
        "cpus": (CORES[0],),
        "nice": 3,
    }
    spec.write_text(body.format(hosts="cpus [0, 0]"))
    with pytest.raises(SpecError, match="listed twice"):
        load(str(spec), backends=backend_kinds())


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.names())
def test_the_example_backend_passes_the_conformance_kit(tmp_path, check):
    settings = {"cpus": tuple(CORES[:2])}
    case = conformance.Case(make=lambda: PinnedBackend.from_settings(settings, tmp_path))
    conformance.run(check, case)
