"""The commands `replicate` shows before asking are exactly those a run executes: the real
executor runs each spec on the scripted backend (benchlang.testing.scripted, which logs
every command it is given instead of spawning it), and its log is compared with
``benchlang.run.commands.commands_of`` for the same experiment and plan."""

from __future__ import annotations

import asyncio

import pytest

from benchlang.lang.check import check_file
from benchlang.plan.compile import compile_plan
from benchlang.run.commands import commands_of
from benchlang.run.store import Store
from benchlang.testing.scripted import HostScript, ScriptedBackend
from tests.executors import quiet_executor

EVERY_HOOK = """benchlang 1
experiment shown {
  hosts scripted { nodes ["h0", "h1"] }
  seed 11
  setup "make -C bench RT={runtime}"
  teardown "rm -rf scratch"
  reset "sync; echo reset"
  before "test -w ."
  after "rm -f core"
  factor tool in ["xz", "bzip2"]
  factor pad in [0, 64, 4096] hidden
  factor link_order hidden { objects ["main.o", "util.o", "io.o"] }
  factor drop_caches hidden
  factor reboot hidden
  benchmark compress {
    setup "prepare {tool}"
    before "touch pad-{pad}"
    run "{tool} -c data --pad {pad} --objects {link_order} --for {runtime}"
    after "rm -f out-{tool}"
    measure v from stdout regex "v=([0-9.]+)"
  }
  design { runs 4 series 2 runtime 2s }
}
"""
LAYOUT = """benchlang 1
experiment layout {
  hosts scripted { nodes ["h0", "h1"] }
  seed 4
  reset "restart-server {version}"
  benchmark page {
    run "fetch /{request} --tag {version}"
    measure v from stdout regex "v=([0-9.]+)"
  }
  design {
    versions { old "1.00" new "1.05" }
    layout fully_balanced { hosts 2 requests 2 repetitions 2 warmup 1 cooldown 1 }
    requests ["a", "b", "c"]
  }
}
"""


@pytest.mark.parametrize("text", [EVERY_HOOK, LAYOUT], ids=["every-hook", "layout"])
def test_the_commands_shown_are_the_commands_run(tmp_path, text):
    spec = tmp_path / "s.bench"
    spec.write_text(text)
    experiment = check_file(spec, backends={"scripted": ScriptedBackend}).experiment
    backend = ScriptedBackend({h: HostScript() for h in ("h0", "h1")})
    plan = compile_plan(experiment, backend.hosts())
    with Store(tmp_path / "r.sqlite", create=True) as store:
        executor = quiet_executor(experiment, plan, backend, store, backoff=0.0)
        summary = asyncio.run(executor.run())
    assert summary.failed == 0 and summary.hosts_down == ()
    executed = {c.text for c in backend.calls if c.kind == "execute"}
    shown = {command for _, command in commands_of(experiment, plan, backend)}
    assert shown == executed
    assert len(shown) >= (12 if text == EVERY_HOOK else 4)
