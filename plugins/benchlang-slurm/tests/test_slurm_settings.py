"""hosts slurm settings and the reading of Slurm's output, without a cluster."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from benchlang_slurm import SlurmBackend
from benchlang_slurm.commands import (
    config_essentials,
    count_ids,
    duration,
    epoch,
    pairs,
    record,
    usable,
)
from benchlang_slurm.settings import parse

from benchlang.backends.base import SettingError

NODE = (
    "NodeName=n01 Arch=x86_64 CoresPerSocket=8  CPUAlloc=0 CPUEfctv=16 CPUTot=16 "
    "AvailableFeatures=skylake,ib ActiveFeatures=skylake,ib Gres=(null) NodeAddr=n01 "
    "OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)  "
    "RealMemory=190000 State=DOWN* Partitions=batch,debug Reason=Not responding [slurm@2024-03-01T10:00:00]\n"
)
JOB = (
    "JobId=7 JobName=benchlang JobState=RUNNING Reason=None NodeList=n[01-02] "
    "EndTime=2026-11-24T09:16:39 JOB_GRES=(null)   Nodes=n01 CPU_IDs=0-3,8 Mem=0 GRES= "
    "  Nodes=n02 CPU_IDs=0-15 Mem=0 GRES= MinCPUsNode=1 Command=(null) WorkDir=/tmp\n"
)


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"colour": "red"}, "colour"),
        ({"nodes": 0}, "nodes"),
        ({"nodes": "two"}, "nodes"),
        ({"nodes": 2, "nodelist": ("a", "b")}, "nodelist"),
        ({"nodelist": ("a", "a")}, "nodelist"),
        ({"nodelist": ("n[1-3]",)}, "nodelist"),
        ({"nodelist": ()}, "nodelist"),
        ({"partition": ""}, "partition"),
        ({"exclusive": "yes"}, "exclusive"),
        ({"time": 0}, "time"),
        ({"time": "2h"}, "time"),
        ({"cpus_per_task": 1.5}, "cpus_per_task"),
        ({"start_timeout": -1.0}, "start_timeout"),
    ],
)
def test_bad_settings_name_their_key(settings, key):
    with pytest.raises(SettingError) as err:
        SlurmBackend.check_settings(settings)
    assert err.value.key == key


def test_settings_become_the_holder_jobs_request(tmp_path):
    settings = parse(
        {
            "partition": "batch",
            "nodes": 3,
            "constraint": "skylake&ib",
            "exclusive": "true",
            "time": 7200.0,
            "account": "proj1",
            "qos": "short",
            "cpus_per_task": 4,
        }
    )
    assert settings.hosts() == ("node0", "node1", "node2")
    assert settings.sbatch_options() == [
        "--nodes=3",
        "--ntasks-per-node=1",
        "--no-kill",
        "--partition=batch",
        "--constraint=skylake&ib",
        "--account=proj1",
        "--qos=short",
        "--cpus-per-task=4",
        "--time=0-02:00:00",
        "--exclusive",
        "--mem=0",
    ]
    listed = parse({"nodelist": ("n07", "n03")})
    assert listed.hosts() == ("n07", "n03")
    assert (
        "--nodelist=n07,n03" in listed.sbatch_options() and "--nodes=2" in listed.sbatch_options()
    )
    assert "--no-kill" not in parse({"nodes": 1}).sbatch_options()
    backend = SlurmBackend.from_settings({"workdir": "runs"}, tmp_path)
    assert backend.workdir == str(tmp_path / "runs") and backend.hosts() == ("node0",)
    assert SlurmBackend.from_settings({}, tmp_path).workdir == str(tmp_path)


def test_slurm_output_is_read_as_printed():
    node = record(NODE)
    assert node["OS"] == "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
    assert node["RealMemory"] == "190000" and node["AvailableFeatures"] == "skylake,ib"
    assert node["Reason"] == "Not responding [slurm@2024-03-01T10:00:00]"
    groups = [(k, v) for k, v in pairs(JOB) if k in ("Nodes", "CPU_IDs")]
    assert groups == [("Nodes", "n01"), ("CPU_IDs", "0-3,8"), ("Nodes", "n02"), ("CPU_IDs", "0-15")]
    assert count_ids("0-3,8") == 5 and count_ids("0-15") == 16
    assert record(JOB)["NodeList"] == "n[01-02]"
    assert epoch("2026-11-24T09:16:39") == time.mktime((2026, 11, 24, 9, 16, 39, 0, 0, -1))
    assert epoch("Unknown") is None
    assert duration(90) == "0-00:02:00" and duration(86400 * 2 + 3600) == "2-01:00:00"
    config = config_essentials(
        "Configuration data as of 2026-11-23T07:09:26\nAccountingStorageType   = accounting_storage/none\n"
        "SLURM_VERSION           = 22.05.8\nSelectTypeParameters    = CR_CORE_MEMORY\n"
    )
    assert config == {
        "slurm_accounting": "accounting_storage/none",
        "slurm_version": "22.05.8",
        "slurm_select_parameters": "CR_CORE_MEMORY",
    }
    assert usable("MIXED") and usable("ALLOCATED+DRAIN") and usable("IDLE")
    assert not usable("DOWN*") and not usable("IDLE*") and not usable("DOWN+DRAIN")


def test_check_points_at_the_bad_setting(tmp_path: Path):
    from benchlang.lang.check import check_file
    from benchlang.lang.diagnostics import SpecError

    spec = tmp_path / "bad.bench"
    spec.write_text(
        'benchlang 1\nexperiment e {\n  hosts slurm { partition "batch" nodes 0 }\n'
        '  benchmark b { run "true" }\n}\n'
    )
    with pytest.raises(SpecError) as err:
        check_file(str(spec), backends={"slurm": SlurmBackend})
    text = str(err.value)
    assert "bad.bench:3:" in text and "nodes must be a whole number" in text
