"""A scripted backend for tests: a real Backend (docs/plugins.md) whose hosts do what a script
says instead of running commands.

This is test support shipped with benchlang (``benchlang.testing``): no benchlang run uses it.
It lets tests drive the real executor (benchlang/run/executor/), the real store and the real
CLI through failure paths that are slow, racy or impossible to provoke with real hosts: a host
that goes down at trial k, a connection that drops and comes back, a reset or setup that loses
the host, trials that time out, slow hosts, chosen exit statuses and outputs. Everything is
deterministic: nothing sleeps unless the script says so (``delay``), and no process is spawned.

Two ways in:

- Python: ``ScriptedBackend({"h0": HostScript(), "h1": HostScript(down_at_trial=4)})``, handed
  to ``Executor(...)`` directly.
- A spec, for the CLI: ``hosts scripted { nodes ["h0", "h1"] script "script.json" }``, with the
  backend registered under the kind ``scripted`` (tests add it to the backend catalogue, e.g.
  by monkeypatching ``benchlang.app.spec.backend_kinds``). ``script.json`` maps host names to
  the fields of ``HostScript`` (``{"h1": {"down_at_trial": 4}}``); hosts it does not name do
  what ``HostScript()`` does. The file is read when the backend is built, so a test can edit it
  between a run and its ``--resume`` (the host "came back").

What a trial command prints by default is ``v=<value>`` with a value derived from the trial's
seed (``BENCHLANG_SEED``) and host, so ``measure v from stdout regex "v=([0-9.]+)"`` works.
Commands that are not trials (setup, reset, hooks, teardown; no ``BENCHLANG_TRIAL`` in their
environment) succeed with no output unless ``down_on`` or ``fail_on`` names them.

Every call is logged in ``backend.calls`` (host, kind, text, trial) for assertions.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

from benchlang.backends.base import Command, Execution, HostDown, SettingError

__all__ = ["Call", "HostScript", "ScriptedBackend", "ScriptedSession", "Trial"]


@attrs.frozen
class Trial:
    """What one trial command does (an entry of ``HostScript.trials``)."""

    stdout: str | None = None
    """Printed instead of the default ``v=<value>``."""
    stderr: str = ""
    exit_status: int = 0
    timed_out: bool = False


@attrs.frozen
class HostScript:
    """How one host behaves. Trials are named by their number in the plan (BENCHLANG_TRIAL)."""

    unreachable: bool = False
    """``open`` raises HostDown (cannot connect)."""
    down_at_trial: int | None = None
    """The host goes down for good when it is asked to run this trial (HostDown; reconnecting
    fails too)."""
    down_on: str | None = None
    """The host goes down for good when a command containing this text runs (a reset, a setup)."""
    fail_on: str | None = None
    """A command containing this text exits with status 1 (a failing reset or setup)."""
    flaky: Mapping[int, int] = attrs.field(factory=dict)
    """trial -> how many times its execution raises HostDown (the connection drops) before it
    runs; reconnecting works."""
    trials: Mapping[int, Trial] = attrs.field(factory=dict)
    """Per-trial outcomes (exit status, output, timeout)."""
    timeout_trials: frozenset[int] = attrs.field(factory=frozenset, converter=frozenset)
    """Trials that time out (as if they ran past their limit)."""
    delay: float = 0.0
    """Seconds every command takes (a slow host); past the command's timeout it times out."""
    value: float = 1.0
    """The base of the default trial value."""
    facts: Mapping[str, str] = attrs.field(factory=dict)
    """Facts reported beside the defaults (``cpu_model``, ``memory``, ...: hardware factors)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HostScript:
        known = {f.name for f in attrs.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise SettingError("script", f"unknown host script fields: {sorted(unknown)}")
        fields = dict(data)
        if "flaky" in fields:
            fields["flaky"] = {int(k): int(v) for k, v in fields["flaky"].items()}
        if "trials" in fields:
            fields["trials"] = {int(k): Trial(**v) for k, v in fields["trials"].items()}
        return cls(**fields)


@attrs.frozen
class Call:
    """One request a session received."""

    host: str
    kind: str  # "open", "execute", "read_file", "facts", "reconnect", "close"
    text: str = ""
    trial: int | None = None


def default_value(seed: int, host: str, base: float) -> float:
    """A deterministic value in [0.9, 1.1) x base from the trial's seed and host."""
    mixed = (seed * 2654435761 + sum(host.encode())) % 2**31
    return base * (0.9 + 0.2 * mixed / 2**31)


def host_facts(script: HostScript) -> dict[str, str]:
    """The facts a scripted host reports: fixed defaults, then the script's own."""
    return {"kernel": "scripted", "cpu_model": "scripted", "cores": "1", "memory": "0"} | dict(
        script.facts
    )


class ScriptedBackend:
    """``hosts scripted { nodes [...] script "file.json" }``: hosts that follow a script."""

    kind: ClassVar[str] = "scripted"
    supports_reboot: ClassVar[bool] = True

    def __init__(self, scripts: Mapping[str, HostScript]) -> None:
        if not scripts:
            raise SettingError("nodes", "a scripted backend needs at least one host")
        self.scripts = dict(scripts)
        self.calls: list[Call] = []
        self.down: set[str] = set()
        self.attempts: dict[tuple[str, int], int] = {}

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key in settings:
            if key not in ("nodes", "script"):
                raise SettingError(key, f"unknown setting '{key}'", "hosts scripted: nodes, script")
        nodes = settings.get("nodes")
        if not isinstance(nodes, tuple) or not nodes or not all(isinstance(n, str) for n in nodes):
            raise SettingError("nodes" if "nodes" in settings else None, "nodes: a list of names")
        if len(set(nodes)) != len(nodes):
            raise SettingError("nodes", "a node is listed twice")
        if "script" in settings and not isinstance(settings["script"], str):
            raise SettingError("script", "script: the path of a JSON file")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> ScriptedBackend:
        cls.check_settings(settings)
        data: dict[str, Any] = {}
        if "script" in settings:
            path = Path(spec_dir) / settings["script"]
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise SettingError("script", f"cannot read {path}: {err}") from None
        unknown = set(data) - set(settings["nodes"])
        if unknown:
            raise SettingError("script", f"the script names hosts not in nodes: {sorted(unknown)}")
        return cls({n: HostScript.from_json(data.get(n, {})) for n in settings["nodes"]})

    def hosts(self) -> tuple[str, ...]:
        return tuple(self.scripts)

    async def inventory(self) -> dict[str, dict[str, str]]:
        """Each host's facts without opening a session (hardware factors, ``hosts where``)."""
        return {h: host_facts(s) for h, s in self.scripts.items()}

    async def open(self, host: str) -> ScriptedSession:
        self.calls.append(Call(host, "open"))
        script = self.scripts[host]
        if script.unreachable or host in self.down:
            raise HostDown(host, "cannot connect: the script says this host is unreachable")
        return ScriptedSession(self, host, script)

    def trials_run(self, host: str | None = None) -> list[int]:
        """Trial numbers executed (and not lost to HostDown), in order, on one host or all."""
        return [
            c.trial
            for c in self.calls
            if c.kind == "execute" and c.trial is not None and host in (None, c.host)
        ]


class ScriptedSession:
    def __init__(self, backend: ScriptedBackend, host: str, script: HostScript) -> None:
        self.backend = backend
        self.host = host
        self.script = script
        self.connected = True

    def _check_up(self) -> None:
        if self.host in self.backend.down or not self.connected:
            raise HostDown(self.host, "connection lost (scripted)")

    def _go_down(self, why: str) -> HostDown:
        self.backend.down.add(self.host)
        self.connected = False
        return HostDown(self.host, f"connection lost: {why} (scripted)")

    async def execute(self, command: Command) -> Execution:
        self._check_up()
        env = dict(command.env)
        trial = int(env["BENCHLANG_TRIAL"]) if "BENCHLANG_TRIAL" in env else None
        script = self.script
        if script.down_on is not None and script.down_on in command.text:
            raise self._go_down(f"went down running {command.text!r}")
        if trial is not None:
            if trial == script.down_at_trial:
                raise self._go_down(f"went down at trial {trial}")
            key = (self.host, trial)
            self.backend.attempts[key] = seen = self.backend.attempts.get(key, 0) + 1
            if seen <= script.flaky.get(trial, 0):
                self.connected = False
                raise HostDown(self.host, f"connection dropped at trial {trial} (scripted)")
        started = time.time()
        timed_out = False
        if script.delay:
            limit = command.timeout
            await asyncio.sleep(script.delay if limit is None else min(script.delay, limit))
            timed_out = limit is not None and script.delay > limit
        self.backend.calls.append(Call(self.host, "execute", command.text, trial))
        stdout, stderr, status = b"", b"", 0
        if trial is not None:
            outcome = script.trials.get(trial, Trial())
            value = default_value(int(env.get("BENCHLANG_SEED", 0)), self.host, script.value)
            text = outcome.stdout if outcome.stdout is not None else f"v={value:.9g}\n"
            stdout, stderr, status = text.encode(), outcome.stderr.encode(), outcome.exit_status
            timed_out = timed_out or outcome.timed_out or trial in script.timeout_trials
        elif script.fail_on is not None and script.fail_on in command.text:
            stderr, status = b"scripted failure\n", 1
        if timed_out:
            status = -9
        ended = max(time.time(), started)
        wall = ended - started
        return Execution(
            exit_status=status,
            timed_out=timed_out,
            started=started,
            ended=ended,
            wall_time=wall,
            stdout=stdout,
            stderr=stderr,
            rusage={"wall_time": wall},
        )

    async def read_file(self, path: str, cwd: str | None = None) -> bytes:
        self._check_up()
        self.backend.calls.append(Call(self.host, "read_file", path))
        raise OSError(2, f"a scripted host has no files ({path})")

    async def facts(self) -> dict[str, str]:
        self._check_up()
        self.backend.calls.append(Call(self.host, "facts"))
        return host_facts(self.script)

    async def reconnect(self, timeout: float) -> None:
        self.backend.calls.append(Call(self.host, "reconnect"))
        if self.host in self.backend.down:
            raise HostDown(self.host, f"did not come back within {timeout:g}s (scripted)")
        self.connected = True

    async def close(self) -> None:
        self.backend.calls.append(Call(self.host, "close"))
