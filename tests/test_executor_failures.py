"""The executor's failure paths, driven by the scripted backend (benchlang.testing.scripted):
retries of a dropped connection, a host that never comes back, reassignment of a stopped host's
rounds, pinned A/B layout batches left unrun and run by ``--resume``, stopping after consecutive
timeouts, HostDown during setup and reset, a failing reset, slow hosts.

The executor, the store and (for the layout) the CLI are the real ones; only the hosts are
scripted, so every failure happens exactly where the script puts it, without sshd and without
timing. The same paths on real OpenSSH servers are in tests/ssh/test_ssh_failures.py.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from benchlang.backends.registry import backend_kinds
from benchlang.lang.check import load
from benchlang.plan.compile import compile_plan
from benchlang.run.store import Store
from benchlang.testing.scripted import HostScript, ScriptedBackend, Trial
from tests.executors import quiet_executor

HOSTS = ("h0", "h1", "h2")


def spec_text(body: str, hosts: tuple[str, ...] = HOSTS, script: str | None = None) -> str:
    nodes = ", ".join(f'"{h}"' for h in hosts)
    extra = f' script "{script}"' if script else ""
    return (
        "benchlang 1\nexperiment scripted {\n"
        f"  hosts scripted {{ nodes [{nodes}]{extra} }}\n{body}\n}}\n"
    )


BASIC = """
  seed 3
  factor n in [1, 2, 3]
  benchmark b { run "work {n}" measure v from stdout regex "v=([0-9.]+)" }
  design { runs 12 series 1 }
"""  # 12 rounds of 3 trials, round r on HOSTS[r % 3]: h0 runs trials 0-2, 9-11, 18-20, 27-29


class Ran:
    """One executor run: the plan, the summary, the store's rows and events."""

    def __init__(self, plan, summary, store_path: Path, backend: ScriptedBackend) -> None:
        self.plan, self.summary, self.backend = plan, summary, backend
        with sqlite3.connect(store_path) as db:
            self.rows = {
                t: (host, status, timed_out, attempts)
                for t, host, status, timed_out, attempts in db.execute(
                    "SELECT trial, host, status, timed_out, attempts FROM trials"
                )
            }
            self.events = db.execute("SELECT kind, host, message FROM events").fetchall()
            self.rounds = {
                r: (host, reset)
                for r, host, reset in db.execute("SELECT round, host, reset_status FROM rounds")
            }

    def kinds(self) -> Counter:
        return Counter(kind for kind, _, _ in self.events)

    def host_of_round(self, r: int) -> str:
        return self.plan.hosts[int(self.plan.round_host[r])]

    def trials_of_round(self, r: int) -> list[int]:
        b = self.plan.round_bounds
        return list(range(int(b[r]), int(b[r + 1])))


def execute(tmp_path: Path, body: str, scripts: dict[str, HostScript], **options) -> Ran:
    spec = tmp_path / "t.bench"
    spec.write_text(spec_text(body, tuple(scripts)))
    experiment = load(spec, backends={"scripted": ScriptedBackend})
    backend = ScriptedBackend(scripts)
    plan = compile_plan(experiment, backend.hosts())
    path = tmp_path / "r.sqlite"
    with Store(path, create=True) as store:
        executor = quiet_executor(
            experiment, plan, backend, store, backoff=0.0, reconnect_timeout=1.0, **options
        )
        summary = asyncio.run(executor.run())
    return Ran(plan, summary, path, backend)


def assert_each_trial_once(ran: Ran) -> None:
    assert sorted(ran.rows) == list(range(ran.plan.n_trials)), "every planned trial, once"
    executed = Counter(ran.backend.trials_run())
    assert executed == Counter(range(ran.plan.n_trials)), "no trial executed twice"


def test_round_robin_layout_of_the_basic_spec(tmp_path):
    """The tests below name trials by the hosts they are planned on: check that premise."""
    ran = execute(tmp_path, BASIC, {h: HostScript() for h in HOSTS})
    assert ran.plan.n_trials == 36 and ran.plan.n_rounds == 12
    assert [ran.host_of_round(r) for r in range(12)] == [HOSTS[r % 3] for r in range(12)]
    assert ran.summary.failed == 0 and ran.summary.hosts_down == ()
    assert_each_trial_once(ran)
    assert all(
        row[0] == ran.host_of_round(r)
        for r in range(12)
        for row in [ran.rows[t] for t in ran.trials_of_round(r)]
    )


def test_a_dropped_connection_is_retried_and_the_attempts_stored(tmp_path):
    ran = execute(
        tmp_path, BASIC, {"h0": HostScript(flaky={10: 2}), "h1": HostScript(), "h2": HostScript()}
    )
    assert_each_trial_once(ran)
    assert ran.rows[10] == ("h0", "ok", 0, 3)
    assert all(row[3] == 1 for t, row in ran.rows.items() if t != 10)
    retries = [m for kind, host, m in ran.events if kind == "retry"]
    assert len(retries) == 2 and all(m.startswith("trial 10 attempt") for m in retries)
    assert [c.kind for c in ran.backend.calls if c.host == "h0"].count("reconnect") == 2
    assert ran.summary.hosts_down == ()


def test_a_connection_that_never_stays_up_stops_the_host_and_its_rounds_move(tmp_path):
    """Trial 10 drops the connection on every attempt: after 1 + 3 retries h0 stops, and its
    unfinished rounds (the rest of round 3, rounds 6 and 9) run on h1 and h2."""
    ran = execute(
        tmp_path, BASIC, {"h0": HostScript(flaky={10: 99}), "h1": HostScript(), "h2": HostScript()}
    )
    assert ran.backend.attempts["h0", 10] == 4
    assert [h for h, _ in ran.summary.hosts_down] == ["h0"]
    assert ran.kinds()["retry"] == 3 and ran.kinds()["reassigned"] == 1
    assert_each_trial_once(ran)
    assert all(status == "ok" for _, status, _, _ in ran.rows.values())
    assert {ran.rows[t][0] for t in (0, 1, 2, 9)} == {"h0"}  # before the failure: stays
    moved = [10, 11, *range(18, 21), *range(27, 30)]
    assert all(ran.rows[t][0] in ("h1", "h2") for t in moved)
    assert "3 rounds (8 trials) of h0 reassigned to h1, h2" in next(
        m for k, _, m in ran.events if k == "reassigned"
    )


def test_a_host_down_at_trial_k_gives_its_rounds_to_the_healthy_hosts(tmp_path):
    ran = execute(
        tmp_path,
        BASIC,
        {"h0": HostScript(), "h1": HostScript(down_at_trial=13), "h2": HostScript()},
    )
    assert [h for h, _ in ran.summary.hosts_down] == ["h1"]
    assert_each_trial_once(ran)
    assert ran.backend.trials_run("h1") == [3, 4, 5, 12]
    assert all(ran.rows[t][0] in ("h0", "h2") for t in [13, 14, *range(21, 24), *range(30, 33)])
    # The interrupted round 4 was reset again on the host that took it over.
    assert ran.rounds[4][0] in ("h0", "h2")


def test_an_unreachable_host_runs_nothing_and_the_others_run_everything(tmp_path):
    ran = execute(
        tmp_path,
        BASIC,
        {"h0": HostScript(), "h1": HostScript(), "h2": HostScript(unreachable=True)},
    )
    assert ran.summary.hosts_down[0][0] == "h2"
    assert "cannot connect" in ran.summary.hosts_down[0][1]
    assert_each_trial_once(ran)
    assert {host for host, *_ in ran.rows.values()} == {"h0", "h1"}


def test_three_timeouts_in_a_row_stop_the_host(tmp_path):
    """h0 times out on trials 0, 1, 2 (its first round): they are stored as failed and timed
    out, h0 stops, and its other rounds run elsewhere. h1 times out twice with an ok trial in
    between and keeps going."""
    ran = execute(
        tmp_path,
        BASIC,
        {
            "h0": HostScript(timeout_trials={0, 1, 2}),
            "h1": HostScript(timeout_trials={3, 5}),
            "h2": HostScript(),
        },
    )
    assert [h for h, _ in ran.summary.hosts_down] == ["h0"]
    assert "3 trials in a row timed out" in ran.summary.hosts_down[0][1]
    assert_each_trial_once(ran)
    assert {t: ran.rows[t][:3] for t in (0, 1, 2)} == {t: ("h0", "failed", 1) for t in (0, 1, 2)}
    assert ran.rows[3][1:3] == ("failed", 1) and ran.rows[4][1] == "ok"
    assert ran.summary.failed == 5
    assert all(ran.rows[t][0] != "h0" for t in range(9, 36))


def test_a_slow_host_times_out_at_the_trial_limit(tmp_path):
    body = BASIC.replace("seed 3", "seed 3\n  timeout 1s")
    ran = execute(
        tmp_path,
        body,
        {"h0": HostScript(), "h1": HostScript(), "h2": HostScript(delay=1.5)},
        max_consecutive_timeouts=1,
    )
    assert [h for h, _ in ran.summary.hosts_down] == ["h2"]
    assert ran.rows[6][:3] == ("h2", "failed", 1)
    assert_each_trial_once(ran)
    assert ran.summary.failed == 1


def test_host_down_during_setup_stops_the_host_before_any_trial(tmp_path):
    body = BASIC.replace("seed 3", 'seed 3\n  setup "install-tools"')
    ran = execute(
        tmp_path,
        body,
        {"h0": HostScript(), "h1": HostScript(down_on="install-tools"), "h2": HostScript()},
    )
    assert [h for h, _ in ran.summary.hosts_down] == ["h1"]
    assert ran.backend.trials_run("h1") == []
    assert_each_trial_once(ran)


def test_host_down_during_a_reset_stops_the_host_and_the_round_moves(tmp_path):
    body = BASIC.replace("seed 3", 'seed 3\n  reset "drop-caches"')
    ran = execute(
        tmp_path,
        body,
        {"h0": HostScript(), "h1": HostScript(), "h2": HostScript(down_on="drop-caches")},
    )
    assert [h for h, _ in ran.summary.hosts_down] == ["h2"]
    assert ran.backend.trials_run("h2") == []
    assert_each_trial_once(ran)
    assert all(ran.rounds[r][1] == "ok" for r in range(12))
    assert {ran.rounds[r][0] for r in (2, 5, 8, 11)} <= {"h0", "h1"}


def test_a_failing_reset_stops_the_host_and_records_the_round(tmp_path):
    body = BASIC.replace("seed 3", 'seed 3\n  reset "drop-caches"')
    ran = execute(
        tmp_path,
        body,
        {"h0": HostScript(fail_on="drop-caches"), "h1": HostScript(), "h2": HostScript()},
    )
    ((host, message),) = ran.summary.hosts_down
    assert host == "h0" and "reset before round 0 failed" in message
    assert "scripted failure" in message  # the reset's stderr
    assert_each_trial_once(ran)
    assert ran.backend.trials_run("h0") == []


def test_failed_trials_keep_their_exit_status_and_output(tmp_path):
    ran = execute(
        tmp_path,
        BASIC,
        {
            "h0": HostScript(trials={1: Trial(stdout="oops\n", stderr="bad\n", exit_status=3)}),
            "h1": HostScript(),
            "h2": HostScript(),
        },
    )
    assert ran.rows[1][:2] == ("h0", "failed") and ran.summary.failed == 1
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        reason, status, out, err = db.execute(
            "SELECT reason, exit_status, stdout_tail, stderr_tail FROM trials WHERE trial = 1"
        ).fetchone()
    assert (status, out, err) == (3, b"oops\n", b"bad\n") and "status 3" in reason
    assert ran.summary.hosts_down == ()  # a failing command is not a dead host


LAYOUT = """
  seed 5
  reset "restart {version}"
  benchmark b { run "serve {version} {request}" measure v from stdout regex "v=([0-9.]+)" }
  metric v { better lower }
  design {
    versions { control "A" treatment "B" }
    layout fully_balanced { hosts 2 requests 4 repetitions 1 }
    requests ["r1", "r2", "r3", "r4"]
  }
"""


@pytest.fixture
def scripted_kind(monkeypatch):
    """The scripted backend in the installed backends' catalogue, as an entry point would put
    it (backend_kinds() is cached: every caller sees this dict)."""
    monkeypatch.setitem(backend_kinds(), "scripted", ScriptedBackend)


def test_pinned_layout_batches_are_left_unrun_then_resumed(tmp_path, scripted_kind, capfd):
    """An A/B layout's host batches belong to their host: when h1 goes down its batches are
    not given to h0. `benchlang run` says PARTIAL and exits 1; once h1 is back (the script
    no longer takes it down) `--resume` runs exactly the missing trials, on h1."""
    from benchlang.cli import main

    spec = tmp_path / "ab.bench"
    spec.write_text(spec_text(LAYOUT, ("h0", "h1"), script="script.json"))
    (tmp_path / "script.json").write_text("{}")
    status = main(["plan", str(spec), "--json"])
    captured = capfd.readouterr()
    assert status == 0, captured.err
    plan = json.loads(captured.out)
    rounds_h1 = [r for r, h in enumerate(plan["rounds"]["host"]) if plan["hosts"][h] == "h1"]
    trials = plan["trials"]
    first_h1 = min(t for t, r in enumerate(trials["round"]) if r in rounds_h1)
    down_at = first_h1 + 1  # h1 goes down in the middle of its first batch
    (tmp_path / "script.json").write_text(json.dumps({"h1": {"down_at_trial": down_at}}))
    store = tmp_path / "ab.sqlite"

    status = main(["run", str(spec), "--store", str(store), "-q"])
    captured = capfd.readouterr()
    assert status == 1, captured.out + captured.err
    n = len(trials["round"])
    h1_trials = [t for t in range(n) if trials["round"][t] in rounds_h1]
    missing = [t for t in h1_trials if t >= down_at]
    assert f"PARTIAL: {len(missing)} of {n} planned trials did not run" in captured.out
    assert "--resume" in captured.err
    with sqlite3.connect(store) as db:
        first = dict(db.execute("SELECT trial, host FROM trials"))
        events = Counter(k for (k,) in db.execute("SELECT kind FROM events"))
    assert sorted(first) == sorted(set(range(n)) - set(missing))
    assert events["unrun"] == 1 and events["reassigned"] == 0

    (tmp_path / "script.json").write_text("{}")  # h1 is back
    status = main(["run", str(spec), "--store", str(store), "-q", "--resume"])
    captured = capfd.readouterr()
    assert status == 0, captured.out + captured.err
    with sqlite3.connect(store) as db:
        after = dict(db.execute("SELECT trial, host FROM trials"))
    assert sorted(after) == list(range(n))
    assert {t: after[t] for t in first} == first, "finished trials untouched"
    assert all(after[t] == "h1" for t in h1_trials), "a layout's batches stay on their host"


FAILING = """
  seed 3
  teardown "cleanup"
  factor n in [1, 2, 3]
  benchmark b { run "work {n}" measure v from stdout regex "v=([0-9.]+)" }
  design { runs 12 series 1 }
"""  # as BASIC, with a teardown: 12 rounds of 3 trials on h0, h1, h2 in turn


def failing(*trials: int) -> HostScript:
    return HostScript(trials={t: Trial(stderr="boom\n", exit_status=3) for t in trials})


def test_a_first_round_that_fails_throughout_stops_every_host(tmp_path):
    everything = range(36)
    ran = execute(tmp_path, FAILING, {h: failing(*everything) for h in HOSTS}, fail_fast=True)
    failed = ran.summary.first_round_failed
    assert failed is not None and failed.trials == 3
    assert ran.rows[failed.first.trial][1] == "failed"
    assert (failed.first.exit_status, failed.first.stderr_tail) == (3, b"boom\n")
    assert "status 3" in failed.first.reason
    # Only first rounds ran (one per host, the others cut after their current trial), and
    # every trial that ran is stored with its failure.
    assert set(ran.rows) <= {t for r in range(3) for t in ran.trials_of_round(r)}
    assert len(ran.rows) < ran.plan.n_trials
    assert all(status == "failed" for _, status, _, _ in ran.rows.values())
    assert ran.kinds()["failed_fast"] == 1 and ran.summary.hosts_down == ()
    cleanups = {c.host for c in ran.backend.calls if c.kind == "execute" and c.text == "cleanup"}
    assert cleanups == set(HOSTS), "each host's teardown ran: a failing command is not a halt"


def test_only_one_configuration_failing_runs_to_the_end(tmp_path):
    spec = tmp_path / "plan.bench"
    spec.write_text(spec_text(FAILING))
    plan = compile_plan(load(spec, backends={"scripted": ScriptedBackend}), HOSTS)
    labels = [plan.configurations[int(c)].label for c in plan.trial_configuration]
    n2 = [t for t, label in enumerate(labels) if label.endswith("n=2]")]
    ran = execute(tmp_path, FAILING, {h: failing(*n2) for h in HOSTS}, fail_fast=True)
    assert ran.summary.first_round_failed is None
    assert_each_trial_once(ran)
    assert ran.summary.failed == len(n2) == 12


def test_timeouts_throughout_the_first_round_stop_the_run(tmp_path):
    body = FAILING.replace("factor n in [1, 2, 3]", "factor n in [1, 2, 3, 4]")
    scripts = {h: HostScript(timeout_trials=range(48)) for h in HOSTS}
    ran = execute(tmp_path, body, scripts, fail_fast=True, max_consecutive_timeouts=3)
    failed = ran.summary.first_round_failed
    assert failed is not None and failed.first.timed_out and failed.trials == 3
    assert ran.summary.hosts_down == ()  # stopped as a failing first round, not as dead hosts
    assert all(timed_out for _, _, timed_out, _ in ran.rows.values())


def test_without_fail_fast_every_failing_trial_runs(tmp_path):
    ran = execute(tmp_path, FAILING, {h: failing(*range(36)) for h in HOSTS})
    assert ran.summary.first_round_failed is None
    assert_each_trial_once(ran)
    assert ran.summary.failed == 36
