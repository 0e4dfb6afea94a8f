"""The A/B part of a design: ``versions``, ``layout`` and ``requests`` (Bakshy & Frachtenberg,
WWW 2015, §4), checked into a Layout and the two factors it crosses, ``version`` and ``request``.

``versions { control "..." treatment "..." }`` names two versions (the first is the control) and
what ``{version}`` expands to for each; the strings may be equal (an A/A test). ``requests`` is a
list, or a file with one request per line (blank lines and lines starting with ``#`` skipped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import attrs

from benchlang import model
from benchlang.design.layouts import check_layout, hosts_per_version
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.diagnostics import Diagnostic, Span
from benchlang.lang.outside import check_readable

AB_KEYS = ("versions", "layout", "requests")
LAYOUT_SCHEMA = {
    "hosts": s.count(1),
    "requests": s.count(1),
    "repetitions": s.count(1),
    "warmup": s.count(0),
    "cooldown": s.count(0),
}
NOT_WITH_LAYOUT = ("runs", "series", "order", "span")
TWO_POOLS = ("unbalanced", "host_balanced")


class Reporter(Protocol):
    diagnostics: list[Diagnostic]
    base_dir: Path

    def error(self, message: str, span: Span | None, hint: str | None = None) -> None: ...


@attrs.frozen
class ABDesign:
    """What the checker needs from an A/B design: the layout and its two factors."""

    layout: model.Layout
    version: model.Factor
    request: model.Factor
    span: Span


def _settings(block: ast.Block | None) -> dict[str, ast.Setting]:
    items = block.settings.items if block and block.settings else ()
    out: dict[str, ast.Setting] = {}
    for item in items:
        if item.key in AB_KEYS:
            out.setdefault(item.key, item)
    return out


def check_ab_design(checker: Reporter, block: ast.Block | None) -> ABDesign | None:
    """Validate versions/layout/requests; None when the design has none (or has errors)."""
    items = _settings(block)
    if not items:
        return None
    if "layout" not in items:
        for key, item in items.items():
            checker.error(
                f"design '{key}' needs a layout",
                item.span,
                "add e.g.: layout fully_balanced { hosts 4 requests 16 repetitions 3 }",
            )
        return None
    layout_item = items["layout"]
    for key in ("versions", "requests"):
        if key not in items:
            example = (
                'versions { control "v1" treatment "v2" }'
                if key == "versions"
                else 'requests ["a", "b"] or requests from file "requests.txt"'
            )
            checker.error(f"the layout needs design '{key}'", layout_item.span, f"add: {example}")
    versions = _versions(checker, items.get("versions"))
    pool = _requests(checker, items.get("requests"))
    layout = _layout(checker, layout_item, len(pool) if pool else None)
    if versions is None or pool is None or layout is None:
        return None
    version = model.Factor(
        model.VERSION_FACTOR,
        tuple(name for name, _ in versions),
        texts=tuple(text for _, text in versions),
    )
    request = model.Factor(model.REQUEST_FACTOR, pool)
    return ABDesign(layout, version, request, layout_item.span)


def _versions(checker: Reporter, item: ast.Setting | None) -> tuple[tuple[str, str], ...] | None:
    if item is None:
        return None
    if item.block is None:
        checker.error(
            'versions takes a block: versions { control "..." treatment "..." }', item.span
        )
        return None
    out: list[tuple[str, str]] = []
    for entry in item.block.items:
        if entry.value is None or entry.value.kind != "string" or entry.block is not None:
            checker.error(
                f"version '{entry.key}' needs a string: what {{version}} expands to",
                entry.span,
                f'{entry.key} "./build-{entry.key}/server"',
            )
            return None
        if any(name == entry.key for name, _ in out):
            checker.error(f"version '{entry.key}' is named twice", entry.span)
            return None
        out.append((entry.key, entry.value.value))
    if len(out) != 2:
        checker.error(
            f"versions needs exactly two versions (control first, treatment second); got {len(out)}",
            item.span,
        )
        return None
    return tuple(out)


def _requests(checker: Reporter, item: ast.Setting | None) -> tuple[Any, ...] | None:
    if item is None:
        return None
    if item.file is not None:
        return _requests_from_file(checker, item.file)
    value = item.value
    if item.block is not None or value is None or value.kind != "list":
        checker.error(
            "requests takes a list or a file",
            item.span,
            'requests ["a", "b"] or requests from file "requests.txt"',
        )
        return None
    levels: list[Any] = []
    seen: set[tuple[str, Any]] = set()
    for entry in value.value:
        if entry.kind not in ("string", "int", "float"):
            checker.error("a request must be a string or a number", entry.span)
            return None
        key = (type(entry.value).__name__, entry.value)
        if key in seen:
            checker.error(f"request {entry.value!r} is listed twice", entry.span)
            return None
        seen.add(key)
        levels.append(entry.value)
    if not levels:
        checker.error("requests is empty", value.span)
        return None
    return tuple(levels)


def _requests_from_file(checker: Reporter, path_value: ast.Value) -> tuple[str, ...] | None:
    path = checker.base_dir / path_value.value
    try:
        check_readable(path)
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        checker.error(
            f"cannot read the requests file {path_value.value}: {reason}",
            path_value.span,
            "the path is relative to the spec's directory",
        )
        return None
    levels: list[str] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        request = line.strip()
        if not request or request.startswith("#"):
            continue
        if request in first_line:
            checker.error(
                f"{path_value.value}:{number}: request {request!r} is listed twice (first on line {first_line[request]})",
                path_value.span,
            )
            return None
        first_line[request] = number
        levels.append(request)
    if not levels:
        checker.error(
            f"the requests file {path_value.value} holds no request",
            path_value.span,
            "one request per line; blank lines and lines starting with # are skipped",
        )
        return None
    return tuple(levels)


def _layout(checker: Reporter, item: ast.Setting, pool: int | None) -> model.Layout | None:
    if item.value is None or item.value.kind != "word" or item.value.value not in model.LAYOUTS:
        got = repr(item.value.value) if item.value is not None else "nothing"
        checker.error(
            f"layout: expected one of {', '.join(model.LAYOUTS)}; got {got}",
            item.value.span if item.value else item.span,
        )
        return None
    kind = item.value.value
    checked = s.check_settings(item.block, LAYOUT_SCHEMA, f"layout {kind}", checker.diagnostics)
    values = checked.values
    if "hosts" not in values:
        if "hosts" not in checked.spans:
            checker.error(f"layout {kind} needs 'hosts'", item.span, f"layout {kind} {{ hosts 4 }}")
        return None
    if pool is None:
        return None
    per_pool = 2 if kind in TWO_POOLS else 1
    requests = values.get("requests", pool // per_pool)
    if requests * per_pool > pool:
        where = checked.spans.get("requests", item.span)
        need = (
            "2 x requests distinct requests" if per_pool == 2 else "as many requests as 'requests'"
        )
        busy = hosts_per_version(kind, values["hosts"])
        hint = (
            f"list more requests, or use requests {pool // per_pool}"
            if pool // per_pool >= busy
            else f"list at least {busy * per_pool} requests (each of the {busy} hosts per version needs one)"
        )
        checker.error(
            f"layout {kind} needs {requests * per_pool} distinct requests ({need}), but the design lists {pool}",
            where,
            hint,
        )
        return None
    if requests < 1:
        checker.error(f"layout {kind} needs at least 2 requests in the pool", item.span)
        return None
    layout = model.Layout(
        kind,
        values["hosts"],
        requests,
        values.get("repetitions", 1),
        values.get("warmup", 0),
        values.get("cooldown", 0),
    )
    try:
        check_layout(kind, layout.hosts, layout.requests, layout.repetitions)
    except ValueError as err:
        checker.error(f"layout {kind}: {err}", item.span)
        return None
    return layout
