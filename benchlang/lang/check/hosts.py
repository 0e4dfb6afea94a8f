"""Hosts, the reset and environment variables: the settings of where and around what commands run.

Host settings are checked against the backend catalogue the caller passes (lang does not import
backends); without one, any kind is accepted."""

from __future__ import annotations

from typing import Any

from benchlang import model
from benchlang.errors import SettingError
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context
from benchlang.lang.credentials import credential_refusal
from benchlang.lang.diagnostics import Span, did_you_mean

POWER_ACTIONS = ("reboot", "power_cycle", "reimage")
"""What ``reset`` may ask of a backend's provider, each a capability (docs/plugins.md)."""


def check_reset(ctx: Context, stmt: ast.Statement | None) -> model.Reset | None:
    if stmt is None:
        return None
    command = None if stmt.value is None else stmt.value.value
    if stmt.flag == "reconnect":
        return model.Reset(command, reconnect=True)
    if stmt.flag in POWER_ACTIONS:
        return model.Reset(None, reboot=True, power=stmt.flag)
    return model.Reset(command)


def check_reset_capability(ctx: Context, reset: model.Reset, span: Span, kind: str) -> None:
    """A rebooting reset needs the backend's ``reboot`` capability (version 1:
    ``supports_reboot``); ``power_cycle`` and ``reimage`` are done only by a provider that
    declares them."""
    backend = ctx.backends.get(kind) if ctx.backends is not None else None
    if backend is None:
        return
    declared = set(getattr(backend, "capabilities", ()))
    if getattr(backend, "supports_reboot", False):
        declared.add("reboot")
    action = reset.power or "reboot"
    if action != "reboot" and action not in declared:
        able = sorted(declared & set(POWER_ACTIONS))
        ctx.error(
            f"hosts {kind} cannot {action} between rounds",
            span,
            f"hosts {kind} can reset {' or '.join(able)}"
            if able
            else 'use a reset command, e.g. reset "sync"',
        )
    elif action == "reboot" and "reboot" not in declared:
        ctx.error(
            f"hosts {kind} cannot reboot or reconnect between rounds",
            span,
            "a rebooting reset needs remote hosts (hosts ssh { ... }); use a plain reset command here",
        )


def check_hosts(ctx: Context, hosts: ast.Hosts | None) -> model.Hosts:
    if hosts is None:
        return model.Hosts()
    kinds = ctx.backends
    if kinds is not None and hosts.kind not in kinds:
        hint = (
            did_you_mean(hosts.kind, kinds)
            or f"installed backends: {', '.join(sorted(kinds))} (see 'benchlang plugins')"
        )
        ctx.error(f"no backend named '{hosts.kind}' is installed", hosts.span, hint)
        return model.Hosts(hosts.kind)
    values: dict[str, Any] = {}
    secret = frozenset(getattr(kinds[hosts.kind], "secret_settings", ())) if kinds else frozenset()
    for item in hosts.settings.items if hosts.settings else ():
        if item.key == "machine":  # the hosts' machine block (lang.check.machine)
            continue
        if item.key in values:
            ctx.error(f"'{item.key}' is set twice in hosts {hosts.kind}", item.span)
            continue
        refusal = item.value is not None and credential_refusal(
            item.key,
            item.value.span,
            f"hosts {hosts.kind}",
            _env_name(hosts.kind, item.key),
            secret,
        )
        if refusal:
            ctx.diagnostics.append(refusal)
            continue
        if item.file is not None:
            values[item.key] = {"file": str(ctx.base_dir / item.file.value)}
        elif item.env is not None:
            values[item.key] = {"env": str(item.env.value)}
        elif item.block is not None and item.value is None:
            values[item.key] = _nested(ctx, hosts.kind, item)
        elif item.block is not None:
            ctx.error(f"'{item.key}' in hosts {hosts.kind} takes a value, not a block", item.span)
        else:
            assert item.value is not None  # KEY VALUE: the setting's last shape
            values[item.key] = s.literal(item.value)
    if kinds is None:
        return model.Hosts(hosts.kind, values)
    try:
        kinds[hosts.kind].check_settings(values)
    except SettingError as err:
        span = (
            next((i.span for i in hosts.settings.items if i.key == err.key), hosts.span)
            if hosts.settings
            else hosts.span
        )
        ctx.error(f"hosts {hosts.kind}: {err.message}", span, err.hint)
    return model.Hosts(hosts.kind, values)


def _nested(ctx: Context, kind: str, item: ast.Setting) -> dict[str, Any]:
    """``key { name value ... }`` (e.g. libcloud's ``driver { host ... }``) as a dict of
    literals; the backend's check_settings judges the names."""
    out: dict[str, Any] = {}
    for sub in item.block.items if item.block else ():
        if sub.value is None or sub.block is not None:
            ctx.error(f"'{item.key} {{ {sub.key} }}' in hosts {kind} takes a value", sub.span)
        elif sub.key in out:
            ctx.error(f"'{sub.key}' is set twice in {item.key} {{ }}", sub.span)
        elif refusal := credential_refusal(
            sub.key, sub.value.span, f"hosts {kind}: {item.key} {{ }}", None
        ):
            ctx.diagnostics.append(refusal)
        else:
            out[sub.key] = s.literal(sub.value)
    return out


def _env_name(kind: str, key: str) -> str:
    return f"{kind}_{key}".upper().replace("-", "_")


def check_env(ctx: Context, pairs: list[ast.EnvPair]) -> tuple[tuple[str, str], ...]:
    seen: dict[str, Span] = {}
    out = []
    for pair in pairs:
        if pair.name in seen:
            ctx.error(
                f"environment variable '{pair.name}' is set twice",
                pair.span,
                f"first set on line {seen[pair.name].line}",
            )
            continue
        seen[pair.name] = pair.span
        if pair.value.kind in ("list", "range"):
            ctx.error(
                f"env {pair.name}: expected a string or a number, got {pair.value.describe()}",
                pair.value.span,
            )
            continue
        out.append((pair.name, str(pair.value.value)))
    return tuple(out)
