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


@pytest.mark.skipif(len(CORES) < 2, reason="needs two cores")
def test_hosts_on_two_cores_run_at_the_same_time(tmp_path):
    spec = tmp_path / "side.bench"
    spec.write_text(
        "benchlang 1\nexperiment side {\n  factor n in [1, 2]\n"
        '  benchmark b { run "sleep 0.2; echo {n}" }\n  design { runs 4 series 1 }\n}\n'
    )
    experiment = load(str(spec))
    backend = PinnedBackend.from_settings({"cpus": tuple(CORES[:2])}, tmp_path)
    plan = compile_plan(experiment, backend.hosts())
    with Store(tmp_path / "r.sqlite", create=True) as store:
        store.add_plan(
            plan.hash, experiment.name, experiment.spec_hash, plan.seed, plan.json_text()
        )
        asyncio.run(
            Executor(experiment, plan, backend, store, Progress(plan.n_trials, quiet=True)).run()
        )
        spans = store.db.execute(
            "SELECT host, MIN(started), MAX(ended) FROM trials GROUP BY host"
        ).fetchall()
    whole = max(s[2] for s in spans) - min(s[1] for s in spans)
    assert len(spans) == 2 and whole < 0.75 * sum(s[2] - s[1] for s in spans)


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
