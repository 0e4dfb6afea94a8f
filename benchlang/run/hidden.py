"""Applying a trial's hidden-factor levels (plan.hidden draws them; docs/hidden-factors.md).

* ``env_padding``: the environment gets ``BENCHLANG_ENV_PADDING`` of the drawn size in bytes
  (hyperfine's randomized environment offset; Mytkowicz et al. ASPLOS 2009 §4: the size of the
  environment shifts the stack and changes run time).
* ``aslr``: ``off`` runs the command with personality(2) ADDR_NO_RANDOMIZE, as ``setarch -R``
  does; the backend applies it to that command alone (Command.aslr).
* ``drop_caches``: ``dropped`` writes 3 to /proc/sys/vm/drop_caches (page cache, dentries and
  inodes; proc(5)) after ``sync``, as a before hook, so its time is not measured. A host where
  that file is not writable is refused before its first trial, with the reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from benchlang import model
from benchlang.backends.base import Command, Execution, HostSession

DROP_CACHES = "sync && echo 3 > /proc/sys/vm/drop_caches"
CAN_DROP = "test -w /proc/sys/vm/drop_caches"


def hidden_environment(
    hidden: Mapping[str, model.Hidden], drawn: Mapping[str, Any]
) -> dict[str, str]:
    """The padding variable of a trial, when the experiment pads the environment."""
    for name, h in hidden.items():
        if h.kind == "env_padding":
            return {model.ENV_PADDING_VARIABLE: "x" * int(drawn[name])}
    return {}


def aslr_of(hidden: Mapping[str, model.Hidden], drawn: Mapping[str, Any]) -> bool | None:
    """Command.aslr for a trial: None when the experiment leaves randomisation alone."""
    for name, h in hidden.items():
        if h.kind == "aslr":
            return drawn[name] == "on"
    return None


def drop_caches_command(hidden: Mapping[str, model.Hidden], drawn: Mapping[str, Any]) -> str | None:
    for name, h in hidden.items():
        if h.kind == "drop_caches" and drawn[name] == "dropped":
            return DROP_CACHES
    return None


async def drop_caches_refusal(
    hidden: Mapping[str, model.Hidden],
    session: HostSession,
    execute: Callable[[HostSession, Command], Awaitable[Execution]],
) -> str | None:
    """Why a host cannot run this experiment's ``dropped`` trials, or None; asked before its
    first trial, so that no trial runs with caches the plan says were dropped."""
    if not any(h.kind == "drop_caches" for h in hidden.values()):
        return None
    execution = await execute(session, Command(CAN_DROP, timeout=30.0))
    if execution.ok:
        return None
    return (
        "hidden factor drop_caches: /proc/sys/vm/drop_caches is not writable here (it needs "
        "root; containers mount /proc/sys read-only); run as root, or remove the factor"
    )


def reboots(hidden: Mapping[str, model.Hidden], drawn: Mapping[str, Any]) -> bool:
    """Whether a hidden ``reboot`` factor drew ``rebooted`` for this round (DataMill,
    de Oliveira et al. ICPE 2013, §3: the machine's uptime and state as a hidden factor)."""
    return any(h.kind == "reboot" and drawn.get(name) == "rebooted" for name, h in hidden.items())
