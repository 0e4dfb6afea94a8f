"""``benchlang system show|check|tune`` on this machine, the check ``run`` performs first, and
the host state in the record, the methods paragraph and ``replicate``. The CLI in this process,
but for ``tune``'s real write, a process of its own run alone (``machine_wide``).

What this host has is read from the filesystem here, never assumed: an item whose sysfs or
procfs file is absent must say "not available on this host"."""

from __future__ import annotations

import asyncio
import glob
import json
import os
import re
from pathlib import Path

import attrs
import pytest

from benchlang.app.system import plan_tune
from benchlang.backends.host_state import NOT_AVAILABLE, probe
from benchlang.backends.local import LocalBackend
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import Source
from benchlang.report.machine import HOST_STATE, methods_sentence
from benchlang.run.store import Store
from tests.conftest import cli, cli_here, spec_text

CPU = "/sys/devices/system/cpu"
ASLR = Path("/proc/sys/kernel/randomize_va_space")
ITEMS = {
    "governor": glob.glob(f"{CPU}/cpu[0-9]*/cpufreq/scaling_governor"),
    "frequency range": glob.glob(f"{CPU}/cpu0/cpufreq/cpuinfo_max_freq"),
    "turbo": glob.glob(f"{CPU}/intel_pstate/no_turbo") + glob.glob(f"{CPU}/cpufreq/boost"),
    "nohz_full CPUs": glob.glob(f"{CPU}/nohz_full"),
    "aslr": glob.glob(str(ASLR)),
    "thermal throttling": glob.glob(f"{CPU}/cpu[0-9]*/thermal_throttle/*_throttle_count"),
    "perf_event_paranoid": glob.glob("/proc/sys/kernel/perf_event_paranoid"),
}
SHOWN = (
    "governor",
    "frequency range",
    "turbo",
    "smt",
    "online CPUs",
    "isolated CPUs",
    "nohz_full CPUs",
    "aslr",
    "swap",
    "load average",
    "top processes (%CPU)",
    "thermal throttling",
    "virtualization",
    "perf_event_paranoid",
    "cgroups",
)
KPI = """
benchmark b {
  run "true"
  measure time = wall_time
}
metric time { measure mean }
kpi time { percentile 50 confidence 75% }
design { runs 3 series 1 }
"""


def _strict(text: str):
    def refuse(constant):
        raise ValueError(constant)

    return json.loads(text, parse_constant=refuse)


@pytest.mark.usefixtures("aslr_read")
def test_show_prints_every_item_and_says_what_this_host_lacks():
    (status, out, _), (jstatus, jout, _) = (
        cli_here(["system", "show"]),
        cli_here(["system", "show", "--json"]),
    )
    assert status == 0 and jstatus == 0
    shown = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out.splitlines())
    assert list(shown) == [*SHOWN, "launcher build", "kernels build"]
    for item, files in ITEMS.items():
        assert (shown[item] == NOT_AVAILABLE) == (not files), (item, shown[item], files)
    assert shown["aslr"].startswith(("on", "off")) and ASLR.read_text().strip() in shown["aslr"]
    document = _strict(jout)
    assert document["kind"] == "benchlang.system" and document["schema"] == 1
    (host,) = document["hosts"]
    assert host["host"] == "local" and list(host["items"]) == list(SHOWN)
    assert set(document["builds"]) == {"launcher", "kernels"}
    assert host["aslr_level"] == int(ASLR.read_text())
    assert host["online"] and set(host["online"]) <= set(range(os.cpu_count()))
    if not ITEMS["governor"]:
        assert host["governor"] is None and host["governors"] == []


@pytest.mark.usefixtures("aslr_read")
def test_check_exits_1_with_one_line_per_unmet_requirement(tmp_path):
    spec = tmp_path / "g.bench"
    spec.write_text(spec_text('machine { governor performance }\nbenchmark b { run "true" }'))
    status, out, _ = cli_here(["system", "check", spec], cwd=tmp_path)
    governors = {Path(f).read_text().strip() for f in ITEMS["governor"]}
    if not governors:
        assert (status, out) == (1, "governor: performance required, not available on this host\n")
    elif governors == {"performance"}:
        assert status == 0
    else:
        assert status == 1 and out.startswith("governor: performance required, the host has ")


def _run(tmp_path: Path, body: str, store: str, *extra: str) -> tuple[int, str, str]:
    spec = tmp_path / f"{store}.bench"
    spec.write_text(spec_text(body, name="m"))
    return cli_here(
        ["run", spec, "--store", tmp_path / f"{store}.sqlite", "-q", *extra], cwd=tmp_path
    )


@pytest.mark.usefixtures("aslr_read")
def test_run_refuses_an_unmet_requirement_unless_forced_and_the_record_says_so(tmp_path):
    if ITEMS["governor"]:
        pytest.skip("this host has cpufreq: the refusal is shown on a host without it")
    body = "machine { governor performance aslr on }\n" + KPI
    status, _, err = _run(tmp_path, body, "refused")
    assert status == 2 and not (tmp_path / "refused.sqlite").exists()
    assert "governor: performance required, not available on this host" in err
    assert "--force" in err and "Traceback" not in err
    status, _, err = _run(tmp_path, body, "forced", "--force")
    assert status == 0, err
    assert "warning: forced past: governor: performance required" in err
    store = tmp_path / "forced.sqlite"
    (_, md, _), (_, js, _), (_, methods, _), (_, tex, _) = (
        cli_here(["record", "--store", store, "--format", f])
        for f in ("markdown", "json", "methods", "latex")
    )
    record = _strict(js)
    machine = (record.get("record") or record)["machine"]
    assert machine["block"]["require"] == {"governor": "performance", "aslr": "on"}
    assert machine["host_state"]["local"]["aslr_level"] == int(ASLR.read_text())
    assert machine["forced"] == [
        "forced past: governor: performance required, not available on this host"
    ]
    assert "machine: required governor performance, aslr on" in md
    assert "host state of local: governor not available on this host" in md
    assert "forced past: governor" in tex
    aslr = "on" if int(ASLR.read_text()) else "off"
    assert (
        f"The governor was not available on the host, aslr was {aslr} (forced past: governor: "
        "performance required, not available on this host)." in methods
    )


def _state():
    async def read():
        session = await LocalBackend().open("local")
        try:
            return await probe(session)
        finally:
            await session.close()

    return asyncio.run(read())


def test_the_methods_sentence_states_the_limits_and_the_measured_state():
    state = _state()
    experiment = compile_source(
        Source(
            "m.bench",
            spec_text(
                'hosts ssh { nodes ["n"] }\n'
                'machine { cpus [2, 3] memory 1GiB time 30s aslr on }\nbenchmark b { run "true" }'
            ),
        )
    )
    sentence = methods_sentence(experiment, {"n": attrs.evolve(state, aslr="on")}, ())
    no_swap = " (the host had no swap)" if state.swap_devices == 0 else ""
    assert sentence == (
        f"Trials were pinned to CPUs 2-3 with a 1 GiB memory limit{no_swap} and a 30 s CPU-time "
        "limit; aslr was on."
    )
    swapping = {"n": attrs.evolve(state, aslr="on", swap_devices=1)}
    capped = {"n": {"limits_memory": "cgroup v1 memory.limit_in_bytes + memsw (swap capped)"}}
    assert "1 GiB memory limit (swap capped at 0) and" in methods_sentence(
        experiment, swapping, (), capped
    )
    loose = {"n": {"limits_memory": "cgroup v1 memory.limit_in_bytes (swap not capped: ...)"}}
    assert "(swap not capped on every host: a trial may have swapped)" in methods_sentence(
        experiment, swapping, (), loose
    )


def test_tune_without_root_says_which_action_needs_it():
    state = attrs.evolve(_state(), root=False)
    wanted = {"aslr": "off" if state.aslr == "on" else "on"}
    writes, lines, done = plan_tune("local", state, wanted, [])
    assert writes == [] and not done
    assert lines == [
        f"local: aslr {'0' if wanted['aslr'] == 'off' else '2'}: needs root (it writes "
        f"{ASLR}); run as root"
    ]
    writes, lines, done = plan_tune("local", state, None, [[str(ASLR), "2"]])
    assert lines == [f"local: restoring {ASLR}: needs root (it writes {ASLR}); run as root"]


@pytest.mark.machine_wide
@pytest.mark.usefixtures("aslr_write")
def test_tune_sets_aslr_as_root_and_reset_restores_it(tmp_path):
    """A real write of /proc/sys/kernel/randomize_va_space (root in this container), undone at
    once by ``tune --reset`` (and by the test itself should an assertion fail). The setting is
    the whole machine's: the test runs alone (``machine_wide``), never beside other tests."""
    original = ASLR.read_text().strip()
    wanted = "on" if original == "0" else "off"
    spec = tmp_path / "a.bench"
    spec.write_text(spec_text(f'machine {{ aslr {wanted} }}\nbenchmark b {{ run "true" }}'))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        status, out, err = cli(["system", "tune", spec], cwd=tmp_path)
        now = ASLR.read_text().strip()
        if os.access(ASLR, os.W_OK) and status == 0:
            assert out == f"local: set {ASLR} (was {original})\n"
            assert now == ("2" if wanted == "on" else "0")
            saved = json.loads((tmp_path / "cache/benchlang/system-tune.json").read_text())
            assert saved == {"local": [[str(ASLR), original]]}
        else:
            assert status == 1 and f"cannot write {ASLR}" in err
        status, out, _ = cli(["system", "tune", "--reset"], cwd=tmp_path)
        assert status == 0 and ASLR.read_text().strip() == original
        assert not (tmp_path / "cache/benchlang/system-tune.json").exists()
    finally:
        if ASLR.read_text().strip() != original:
            ASLR.write_text(original + "\n")
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


@pytest.mark.usefixtures("aslr_read")
def test_replicate_names_each_host_state_difference(tmp_path):
    from benchlang.app.publish.replicate import judge

    body = "machine { aslr on }\n" + KPI
    results = [_run(tmp_path, body, name, "--force") for name in ("published", "replication")]
    assert all(status == 0 for status, _, _ in results), results
    with Store(tmp_path / "published.sqlite", write=True) as store:
        plan = store.plans()[0].plan_hash
        stored = [m for _, h, k, m in store.events(plan) if k == HOST_STATE]
        state = json.loads(stored[-1])
        aslr = "off" if state["aslr"] == "on" else "on"
        virt = "xen" if state["virtualization"] != "xen" else "kvm"
        state.update(aslr=aslr, aslr_level=0 if aslr == "off" else 2, virtualization=virt)
        store.record_event(plan, HOST_STATE, json.dumps(state), "local")
    verdict = judge(tmp_path / "published.sqlite", tmp_path / "replication.sqlite")
    line = next(x for x in verdict.facts_differ if x.startswith("aslr:"))
    assert line.startswith(f"aslr: {aslr} (randomize_va_space {state['aslr_level']}) published, ")
    assert any(x.startswith(f"virtualization: {virt} published") for x in verdict.facts_differ)
    assert not any(x.startswith(("governor:", "swap:")) for x in verdict.facts_differ)
