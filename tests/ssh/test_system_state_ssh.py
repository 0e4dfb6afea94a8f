"""``benchlang system show|check SPEC`` over SSH: the same probe as on this
machine, run through the spec's backend sessions, reads the remote host's state; the testbed's
sshd runs here, so its answers are this machine's, read from the filesystem."""

from __future__ import annotations

import glob
import json
import os

import pytest

from benchlang.report.machine import stored_machine
from benchlang.run.store import Store
from tests.conftest import cli


@pytest.mark.usefixtures("aslr_read")
def test_show_and_check_read_the_spec_s_hosts_over_ssh(
    harness, sshd1, ssh_env, tmp_path, monkeypatch
):
    spec = harness.spec(
        f"{harness.hosts(sshd1, tmp_path / 'remote')}\n"
        "  machine { governor performance }\n"
        '  benchmark b { run "true" }'
    )
    for key, value in ssh_env.items():
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    status, out, err = cli(["system", "show", spec, "--json"], cwd=tmp_path)
    cstatus, cout, _ = cli(["system", "check", spec], cwd=tmp_path)
    assert status == 0, err
    (host,) = json.loads(out)["hosts"]
    assert host["host"] == sshd1.nodes[0]
    with open("/proc/sys/kernel/randomize_va_space") as handle:
        aslr = int(handle.read())
    assert host["aslr_level"] == aslr
    if not glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"):
        assert host["items"]["governor"] == "not available on this host"
        assert (cstatus, cout) == (
            1,
            "governor: performance required, not available on this host\n",
        )
    status, _, err = cli(
        ["run", spec, "--store", tmp_path / "s.sqlite", "-q", "--force"], cwd=tmp_path
    )
    assert status == 0, err
    with Store(tmp_path / "s.sqlite") as store:
        states, forced = stored_machine(store, store.plans()[0].plan_hash)
    assert list(states) == [sshd1.nodes[0]] and states[sshd1.nodes[0]].aslr_level == aslr
    assert forced == (("forced past: " + cout.strip(),) if cstatus else ())
