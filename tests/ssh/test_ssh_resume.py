"""``benchlang run`` on three sshd hosts, killed with SIGKILL mid-run and resumed: no trial is
lost or repeated, finished trials are untouched, and the remote agents do not outlive the
controller. Also ``benchlang plugins`` lists the ssh backend."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchlang.backends.registry import describe_plugins

AGENT_MARKER = b"The benchlang worker agent"


def _agents(workdir: Path) -> list[int]:
    """Live agent processes serving ``workdir`` (its path is the agent's last argument).

    Only agents themselves: a command the agent is spawning shares the agent's memory, hence its
    command line, until it calls exec (posix_spawn's clone-vfork window, which a loaded machine
    can stretch); such a process is a child of an agent and is not counted. That window is why
    this count once read 4 for 3 hosts under load."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                if AGENT_MARKER in cmdline and cmdline.endswith(str(workdir).encode() + b"\0"):
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    if fields[0] != "Z":
                        found[int(entry.name)] = int(fields[1])
            except OSError:
                continue
    return sorted(pid for pid, parent in found.items() if parent not in found)


def _any_agent_process(workdir: Path) -> bool:
    """Whether any process (agent, or a child still carrying its command line) is left."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            mine = AGENT_MARKER in cmdline and cmdline.endswith(str(workdir).encode() + b"\0")
            if mine and state != "Z":
                return True
    return False


def _events(path: Path, kind: str) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM events WHERE kind = ?", (kind,)).fetchone()[0]


def _trials(path: Path) -> dict[int, tuple]:
    with sqlite3.connect(path) as db:
        try:
            return {
                row[0]: row[1:]
                for row in db.execute("SELECT trial, host, started, ended, status FROM trials")
            }
        except sqlite3.OperationalError:  # the controller has not created the schema yet
            return {}


def _benchlang(*args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from benchlang.cli import main; sys.exit(main())",
        *args,
    ]


GATE = 18  # trials from this one on wait for the file "go" (40 trials, 2 per round)


@pytest.mark.slow
def test_resume_after_the_controller_is_killed(harness, sshd3, ssh_env, tmp_path):
    """Rounds go round-robin to the three hosts, so each host stops at its first round with a
    trial >= GATE, where the trial waits for a file: when the controller is killed, the store
    holds exactly the trials below GATE whatever the machine's load (no race between the kill
    and the run finishing), and every host is in the middle of a trial."""
    workdir = tmp_path / "w"
    spec = harness.spec(f"""
  seed 4
  {harness.hosts(sshd3, workdir)}
  timeout 2m
  factor n in [1, 2]
  benchmark b {{ run "if [ $BENCHLANG_TRIAL -ge {GATE} ]; then echo $BENCHLANG_TRIAL >> gated.txt; while [ ! -e go ]; do sleep 0.02; done; fi; sleep 0.05; echo {{n}}" }}
  design {{ runs 20 series 1 order random }}
""")
    store = tmp_path / "killed.sqlite"
    gated = workdir / "gated.txt"
    proc = subprocess.Popen(
        _benchlang("run", str(spec), "--store", str(store), "-q"),
        env=ssh_env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            waiting = set(gated.read_text().split()) if gated.exists() else set()
            if len(waiting) == 3 and store.exists() and len(_trials(store)) >= GATE:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()
        agents = _agents(workdir)
        # One agent per host session; a reconnection (a retry after a lost connection) may
        # leave the old agent alive for a moment next to the new one.
        retries = _events(store, "retry")
        assert 3 <= len(agents) <= 3 + retries, (agents, retries)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    before = _trials(store)
    assert sorted(before) == list(range(GATE)), (
        "the store holds exactly the trials before the gates"
    )

    deadline = time.monotonic() + 30
    while _any_agent_process(workdir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _any_agent_process(workdir), "remote agents outlived the killed controller"
    assert len(set(gated.read_text().split())) == 3  # no gated trial ran on after the kill

    (workdir / "go").touch()
    again = subprocess.run(
        _benchlang("run", str(spec), "--store", str(store), "--resume"),
        env=ssh_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    after = _trials(store)
    assert sorted(after) == list(range(40)), "a trial was lost"
    assert {t: after[t] for t in before} == before, "a finished trial was run again"
    assert all(row[3] == "ok" for row in after.values())
    assert {row[0] for row in after.values()} == set(sshd3.nodes)


def test_cli_run_on_an_ssh_spec_and_plugins_listing(harness, sshd1, ssh_env, tmp_path):
    spec = harness.spec(f"""
  {harness.hosts(sshd1, tmp_path / "w")}
  factor n in [1, 2]
  benchmark b {{ run "echo {{n}}" measure v from stdout regex "([0-9]+)" }}
  design {{ runs 2 series 1 }}
""")
    done = subprocess.run(
        _benchlang("run", str(spec), "--store", str(tmp_path / "cli.sqlite"), "-q"),
        env=ssh_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert len(_trials(tmp_path / "cli.sqlite")) == 4
    rows = describe_plugins()
    ssh = [r for r in rows if r["group"] == "benchlang.backends" and r["name"] == "ssh"]
    assert ssh and all(
        r["status"] == "ok" and r["value"] == "benchlang.backends.ssh:SshBackend" for r in ssh
    )


def test_cli_names_a_stopped_host_and_finishes_on_the_others(harness, sshd3, ssh_env, tmp_path):
    known = tmp_path / "known_hosts_missing_first"
    known.write_text(
        "".join(line + "\n" for line in sshd3.known_hosts.read_text().splitlines()[1:])
    )
    nodes = ", ".join(f'"{n}"' for n in sshd3.nodes)
    spec = harness.spec(f"""
  hosts ssh {{ nodes [{nodes}] identity "{sshd3.identity}" known_hosts "{known}" workdir "{tmp_path / "w"}" }}
  factor n in [1, 2]
  benchmark b {{ run "echo {{n}}" }}
  design {{ runs 3 series 1 }}
""")
    done = subprocess.run(
        _benchlang("run", str(spec), "--store", str(tmp_path / "cli.sqlite")),
        env=ssh_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"host {sshd3.nodes[0]} stopped: cannot connect: unknown host key" in done.stderr
    assert f"reassigned to {sshd3.nodes[1]}, {sshd3.nodes[2]}" in done.stderr
    trials = _trials(tmp_path / "cli.sqlite")
    assert len(trials) == 6 and {row[0] for row in trials.values()} == set(sshd3.nodes[1:])
