"""A/B layout specs (Bakshy & Frachtenberg, WWW 2015): ``versions``, ``layout`` and ``requests``
in the design.

Diagnostics are compiled in-process and checked for their message, the text the caret points at
and the hint; one CLI call checks every erroneous spec at once (exit 2, no traceback). The plan
of each layout kind is checked against the layout's invariants (rounds = host batches, versions
swapped between batches, phases, repetitions, duplication coefficients) and against the CLI.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from benchlang import model
from benchlang.backends.registry import backend_kinds
from benchlang.cli import main
from benchlang.design.layouts import duplication_coefficients, layout_counts, layout_schedule
from benchlang.lang.check import check_source, compile_source, load
from benchlang.lang.diagnostics import SpecError, render
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan
from benchlang.plan.plan import PHASES, PlanError

HEAD = re.compile(
    r"^(?P<path>[^\n:]+):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|warning): (?P<message>.+)$"
)
TWO_BATCH = ("host_balanced", "fully_balanced")
TWO_POOLS = ("unbalanced", "host_balanced")
CONTROL, TREATMENT = "v1", "v2 x"


# --------------------------------------------------------------------------- helpers


def ab_spec(
    *,
    layout: str | None = "fully_balanced { hosts 2 requests 2 repetitions 1 }",
    versions: str | None = '{ control "v1" treatment "v2" }',
    requests: str | None = '["a", "b", "c", "d"]',
    run: str = "echo {version} {request}",
    reset: str | None = 'reset "echo reset {version}"',
    hosts: str | None = "hosts local { slots 2 }",
    seed: int = 7,
    top: tuple[str, ...] = (),
    design: tuple[str, ...] = (),
    benchmarks: tuple[str, ...] = (),
) -> str:
    """A spec with one benchmark and an A/B design; every piece can be left out or replaced."""
    lines = ["benchlang 1", "experiment t {", f"  seed {seed}"]
    if hosts:
        lines.append(f"  {hosts}")
    if reset:
        lines.append(f"  {reset}")
    lines.append(f'  benchmark b {{ run "{run}" }}')
    lines += [f"  {b}" for b in benchmarks]
    lines += [f"  {t}" for t in top]
    lines.append("  design {")
    if versions is not None:
        lines.append(f"    versions {versions}")
    if layout is not None:
        lines.append(f"    layout {layout}")
    if requests is not None:
        lines.append(f"    requests {requests}")
    lines += [f"    {d}" for d in design]
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def parse_rendered(rendered: str) -> list[dict]:
    """Split compiler output into diagnostics, each with its head fields and following lines."""
    out: list[dict] = []
    for line in rendered.split("\n"):
        head = HEAD.match(line)
        if head:
            out.append({**head.groupdict(), "rest": []})
        elif re.fullmatch(r"\d+ errors", line) or not line:
            continue
        else:
            assert out, f"text before the first diagnostic: {line!r}"
            out[-1]["rest"].append(line)
    return out


def caret_text(text: str, block: dict) -> str:
    """The source text under the caret (and its ~ run), checked against the real line."""
    source_line, caret = block["rest"][0], block["rest"][1]
    line, col = int(block["line"]), int(block["col"])
    assert source_line == "  " + text.split("\n")[line - 1]
    marks = re.fullmatch(r"  ( *)(\^~*)", caret)
    assert marks, caret
    assert len(marks.group(1)) == col - 1
    return source_line[2 + col - 1 : 2 + col - 1 + len(marks.group(2))]


def from_caret(text: str, block: dict) -> str:
    """The rest of the source line from the caret on."""
    return text.split("\n")[int(block["line"]) - 1][int(block["col"]) - 1 :]


def hint(block: dict) -> str | None:
    hints = [r for r in block["rest"] if r.startswith("  hint: ")]
    return hints[0][len("  hint: ") :] if hints else None


def errors_of(text: str, base_dir: Path, path: str = "t.bench") -> list[dict]:
    with pytest.raises(SpecError) as info:
        compile_source(decode(path, text.encode()), base_dir, backends=backend_kinds())
    found = parse_rendered(str(info.value))
    assert len(found) == len(info.value.diagnostics)
    errors = [b for b in found if b["severity"] == "error"]
    assert errors
    return errors


def the_error(blocks: list[dict], message: str) -> dict:
    hits = [b for b in blocks if b["message"] == message]
    assert len(hits) == 1, "\n".join(b["message"] for b in blocks)
    return hits[0]


def warnings_in(text: str, base_dir: Path) -> list[dict]:
    source = decode("t.bench", text.encode())
    compiled = check_source(source, base_dir)  # the spec compiles: warnings only
    rendered = "\n".join(render(source, d) for d in compiled.warnings)
    return parse_rendered(rendered)


# --------------------------------------------------------------------------- diagnostics

DUP_FILE = "a\n# a comment\n\nb\n  a  \n"

# (id, spec overrides, files, message, text under the caret, line from the caret on, hint part)
CASES = [
    (
        "one_version",
        {"versions": '{ control "v1" }'},
        {},
        "versions needs exactly two versions (control first, treatment second); got 1",
        "versions",
        "versions {",
        None,
    ),
    (
        "three_versions",
        {"versions": '{ control "v1" treatment "v2" other "v3" }'},
        {},
        "versions needs exactly two versions (control first, treatment second); got 3",
        "versions",
        "versions {",
        None,
    ),
    (
        "version_not_a_string",
        {"versions": '{ control 1 treatment "v2" }'},
        {},
        "version 'control' needs a string: what {version} expands to",
        "control",
        "control 1",
        'control "./build-control/server"',
    ),
    (
        "treatment_not_a_string",
        {"versions": '{ control "v1" treatment 2.5 }'},
        {},
        "version 'treatment' needs a string: what {version} expands to",
        "treatment",
        "treatment 2.5",
        'treatment "./build-treatment/server"',
    ),
    (
        "version_named_twice",
        {"versions": '{ control "a" control "b" }'},
        {},
        "version 'control' is named twice",
        "control",
        'control "b"',
        None,
    ),
    (
        "requests_missing",
        {"requests": None},
        {},
        "the layout needs design 'requests'",
        "layout",
        "layout fully_balanced",
        'requests ["a", "b"]',
    ),
    (
        "versions_missing",
        {"versions": None},
        {},
        "the layout needs design 'versions'",
        "layout",
        "layout fully_balanced",
        'versions { control "v1" treatment "v2" }',
    ),
    (
        "versions_without_layout",
        {"layout": None, "requests": None},
        {},
        "design 'versions' needs a layout",
        "versions",
        "versions {",
        "layout fully_balanced { hosts 4 requests 16 repetitions 3 }",
    ),
    (
        "requests_without_layout",
        {"layout": None, "versions": None},
        {},
        "design 'requests' needs a layout",
        "requests",
        "requests [",
        "layout fully_balanced",
    ),
    (
        "unknown_layout_kind",
        {"layout": "balanced { hosts 2 }"},
        {},
        "layout: expected one of unbalanced, request_balanced, host_balanced, fully_balanced; got 'balanced'",
        "balanced",
        "balanced {",
        None,
    ),
    (
        "layout_without_hosts",
        {"layout": "fully_balanced { requests 2 repetitions 3 }"},
        {},
        "layout fully_balanced needs 'hosts'",
        "layout",
        "layout fully_balanced",
        "layout fully_balanced { hosts 4 }",
    ),
    (
        "layout_without_block",
        {"layout": "host_balanced"},
        {},
        "layout host_balanced needs 'hosts'",
        "layout",
        "layout host_balanced",
        "layout host_balanced { hosts 4 }",
    ),
    (
        "unbalanced_odd_hosts",
        {"layout": "unbalanced { hosts 3 requests 2 }"},
        {},
        "layout unbalanced: the unbalanced layout splits hosts between versions: hosts must be even",
        "layout",
        "layout unbalanced",
        None,
    ),
    (
        "request_balanced_odd_hosts",
        {"layout": "request_balanced { hosts 3 requests 3 }"},
        {},
        "layout request_balanced: the request_balanced layout splits hosts between versions: hosts must be even",
        "layout",
        "layout request_balanced",
        None,
    ),
    (
        "host_balanced_pool_too_small",
        {"layout": "host_balanced { hosts 2 requests 3 }"},
        {},
        "layout host_balanced needs 6 distinct requests (2 x requests distinct requests), but the design lists 4",
        "requests",
        "requests 3 }",
        "list more requests, or use requests 2",
    ),
    (
        "unbalanced_pool_too_small",
        {"layout": "unbalanced { hosts 2 requests 3 }"},
        {},
        "layout unbalanced needs 6 distinct requests (2 x requests distinct requests), but the design lists 4",
        "requests",
        "requests 3 }",
        "list more requests, or use requests 2",
    ),
    (
        "fully_balanced_pool_too_small",
        {"layout": "fully_balanced { hosts 2 requests 5 }"},
        {},
        "layout fully_balanced needs 5 distinct requests (as many requests as 'requests'), but the design lists 4",
        "requests",
        "requests 5 }",
        "list more requests, or use requests 4",
    ),
    (
        "host_balanced_pool_of_one",
        {"layout": "host_balanced { hosts 1 }", "requests": '["a"]'},
        {},
        "layout host_balanced needs at least 2 requests in the pool",
        "layout",
        "layout host_balanced",
        None,
    ),
    (
        "too_few_requests_for_the_hosts",
        {"layout": "fully_balanced { hosts 4 requests 2 }"},
        {},
        "layout fully_balanced: 2 requests per version cannot keep 4 hosts per version busy",
        "layout",
        "layout fully_balanced",
        None,
    ),
    (
        "requests_file_missing",
        {"requests": 'from file "nope.txt"'},
        {},
        "cannot read the requests file nope.txt: No such file or directory",
        '"nope.txt"',
        '"nope.txt"',
        "the path is relative to the spec's directory",
    ),
    (
        "requests_file_without_requests",
        {"requests": 'from file "empty.txt"'},
        {"empty.txt": "# only a comment\n\n   \n"},
        "the requests file empty.txt holds no request",
        '"empty.txt"',
        '"empty.txt"',
        "blank lines and lines starting with # are skipped",
    ),
    (
        "duplicate_request_in_list",
        {"requests": '["a", "b", "a"]'},
        {},
        "request 'a' is listed twice",
        '"a"',
        '"a"]',
        None,
    ),
    (
        "duplicate_number_in_list",
        {"requests": "[1, 2, 1]"},
        {},
        "request 1 is listed twice",
        "1",
        "1]",
        None,
    ),
    (
        "duplicate_request_in_file",
        {"requests": 'from file "req.txt"'},
        {"req.txt": DUP_FILE},
        "req.txt:5: request 'a' is listed twice (first on line 1)",
        '"req.txt"',
        '"req.txt"',
        None,
    ),
    (
        "empty_request_list",
        {"requests": "[]"},
        {},
        "requests is empty",
        "[]",
        "[]",
        None,
    ),
    *[
        (
            f"{key}_with_a_layout",
            {"design": (setting,)},
            {},
            f"'{key}' does not apply to a layout design",
            key,
            setting,
            "each request runs 'repetitions' times in its host batch",
        )
        for key, setting in (
            ("runs", "runs 3"),
            ("series", "series 2"),
            ("order", "order fixed"),
            ("span", "span 2h"),
        )
    ],
    (
        "stop_after_with_a_layout",
        {"top": ("stop after 5",)},
        {},
        "a stop rule does not apply to a layout design",
        "stop after 5",
        "stop after 5",
        "remove the stop rule",
    ),
    (
        "stop_adaptive_with_a_layout",
        {"top": ("stop adaptive { min 5 max 10 }",)},
        {},
        "a stop rule does not apply to a layout design",
        "stop adaptive { min 5 max 10 }",
        "stop adaptive",
        "remove the stop rule",
    ),
    (
        "kpi_with_a_layout",
        {
            "top": (
                "metric wall_time { measure mean }",
                "kpi wall_time { percentile 50 confidence 95% }",
            )
        },
        {},
        "kpi does not apply to a layout design",
        "wall_time",
        "wall_time { percentile",
        "analysis { compare METRIC by version }",
    ),
    (
        "variability_with_a_layout",
        {
            "top": (
                "metric wall_time { measure mean }",
                "variability wall_time { percentile 50 confidence 95% }",
            )
        },
        {},
        "variability does not apply to a layout design",
        "wall_time",
        "wall_time { percentile",
        "analysis { compare METRIC by version }",
    ),
    (
        "order_dependence_with_a_layout",
        {"top": ("metric wall_time { measure mean }", "analysis { order_dependence }")},
        {},
        "order_dependence does not apply to a layout design (it needs fixed and random rounds)",
        "order_dependence",
        "order_dependence }",
        "analysis { compare METRIC by version }",
    ),
    (
        "another_factor_with_a_layout",
        {"top": ("factor n in [1, 2]",), "run": "echo {version} {request} {n}"},
        {},
        "benchmark 'b' uses factor 'n', but a layout design varies only the version and the request",
        "b",
        "b { run",
        "vary other factors in another",
    ),
    (
        "two_benchmarks_with_a_layout",
        {"benchmarks": ('benchmark c { run "echo {version} {request}" }',)},
        {},
        "a layout design runs one benchmark; this experiment has 2",
        "c",
        "c { run",
        "compare other benchmarks in separate experiments",
    ),
    (
        "design_warmup_outside_the_layout",
        {"design": ("warmup 2",)},
        {},
        "'warmup' belongs in the layout block",
        "warmup",
        "warmup 2",
        "layout fully_balanced { hosts 4 warmup 2 }",
    ),
    (
        "design_cooldown_outside_the_layout",
        {"design": ("cooldown 1",)},
        {},
        "'cooldown' belongs in the layout block",
        "cooldown",
        "cooldown 1",
        "layout fully_balanced { hosts 4 cooldown 2 }",
    ),
    (
        "version_in_reset_without_a_layout",
        {
            "layout": None,
            "versions": None,
            "requests": None,
            "run": "echo x",
            "reset": 'reset "echo reset {version}"',
        },
        {},
        "placeholder {version} is not a declared factor",
        "{version}",
        '{version}"',
        None,
    ),
    (
        "request_in_reset_with_a_layout",
        {"reset": 'reset "echo reset {request}"'},
        {},
        "placeholder {request} cannot be used here: the reset runs before each host batch, which runs one version",
        "{request}",
        '{request}"',
        None,
    ),
    (
        "local_slots_zero",
        {"hosts": "hosts local { slots 0 }"},
        {},
        "hosts local: slots must be a whole number from 1 to 256, got 0",
        "slots",
        "slots 0",
        None,
    ),
    (
        "local_cores",
        {"hosts": "hosts local { cores 2 }"},
        {},
        "hosts local: hosts local takes 'slots' and 'facts', got 'cores'",
        "cores",
        "cores 2",
        "hosts local { slots 4 }",
    ),
]
CASE_IDS = [c[0] for c in CASES]


def write_files(where: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        (where / name).write_text(content, encoding="utf-8")


@pytest.mark.parametrize(
    ("overrides", "files", "message", "under", "rest", "hint_part"),
    [c[1:] for c in CASES],
    ids=CASE_IDS,
)
def test_design_errors_are_positioned(tmp_path, overrides, files, message, under, rest, hint_part):
    write_files(tmp_path, files)
    text = ab_spec(**overrides)
    block = the_error(errors_of(text, tmp_path), message)
    assert block["path"] == "t.bench"
    assert caret_text(text, block) == under
    assert from_caret(text, block).startswith(rest)
    if hint_part is None:
        return
    assert hint_part in (hint(block) or ""), hint(block)


def test_unknown_layout_lists_every_kind(tmp_path):
    block = the_error(
        errors_of(ab_spec(layout="fully_balancd { hosts 2 }"), tmp_path),
        "layout: expected one of unbalanced, request_balanced, host_balanced, fully_balanced; got 'fully_balancd'",
    )
    assert all(kind in block["message"] for kind in model.LAYOUTS)


# Errors inside versions/layout/requests; the design's own error must be the only one about it.
CASCADE_IDS = [
    "one_version",
    "version_not_a_string",
    "requests_missing",
    "versions_without_layout",
    "unknown_layout_kind",
    "layout_without_hosts",
    "unbalanced_odd_hosts",
    "host_balanced_pool_too_small",
    "requests_file_missing",
    "duplicate_request_in_list",
    "duplicate_request_in_file",
]


@pytest.mark.parametrize("case_id", CASCADE_IDS)
def test_a_broken_ab_design_does_not_cascade(tmp_path, case_id):
    """An error in versions/layout/requests is reported once: commands using {version} and
    {request} and 'compare ... by version' are not also reported as undeclared factors (with a
    hint to declare 'factor version', which is a reserved name)."""
    _, overrides, files, message, *_ = CASES[CASE_IDS.index(case_id)]
    write_files(tmp_path, files)
    overrides = {
        **overrides,
        "top": ("metric wall_time { measure mean }", "analysis { compare wall_time by version }"),
    }
    blocks = errors_of(ab_spec(**overrides), tmp_path)
    assert message in [b["message"] for b in blocks]
    cascaded = [
        b["message"]
        for b in blocks
        if b["message"].startswith(("placeholder {version}", "placeholder {request}", "compare by"))
    ]
    assert cascaded == []


def test_version_placeholder_hint_does_not_suggest_a_reserved_factor(tmp_path):
    """Following a hint must not lead to another error: 'version' cannot be declared as a factor."""
    reserved = errors_of(
        ab_spec(
            layout=None,
            versions=None,
            requests=None,
            run="echo {version}",
            reset=None,
            top=('factor version in ["a", "b"]',),
        ),
        tmp_path,
    )
    assert "'version' is reserved for the design and cannot be a factor" in [
        b["message"] for b in reserved
    ]
    for run, reset in (("echo {version}", None), ("echo x", 'reset "echo {version}"')):
        blocks = errors_of(
            ab_spec(layout=None, versions=None, requests=None, run=run, reset=reset), tmp_path
        )
        block = the_error(blocks, "placeholder {version} is not a declared factor")
        assert "factor version" not in (hint(block) or "")


def test_version_in_reset_is_fine_with_a_layout(tmp_path):
    experiment = compile_source(decode("t.bench", ab_spec().encode()), tmp_path)
    assert experiment.reset.command == "echo reset {version}"
    assert experiment.design.layout == model.Layout("fully_balanced", 2, 2, 1, 0, 0)
    assert [f.name for f in experiment.factors] == ["version", "request"]
    assert warnings_in(ab_spec(), tmp_path) == []


def test_runtime_in_a_layout_design_is_kept(tmp_path):
    """``runtime`` is accepted by the design schema; with a layout it must still give {runtime}
    its value (not be dropped, then reported as missing)."""
    text = ab_spec(run="echo {version} {request} {runtime}", design=("runtime 10s",))
    experiment = compile_source(decode("t.bench", text.encode()), tmp_path)
    assert experiment.design.runtime == 10
    commands = {c.command for c in compile_plan(experiment, ("h0", "h1")).configurations}
    assert "echo v1 a 10" in commands and "echo v2 d 10" in commands


# --------------------------------------------------------------------------- warnings

NO_RESET_WARNING = "layout {kind} runs two batches per host, but there is no reset: the second batch starts in the state the first left"
LAYOUT_OF_KIND = {
    "unbalanced": "unbalanced { hosts 2 requests 2 }",
    "request_balanced": "request_balanced { hosts 2 requests 2 }",
    "host_balanced": "host_balanced { hosts 2 requests 2 }",
    "fully_balanced": "fully_balanced { hosts 2 requests 2 }",
}


@pytest.mark.parametrize("kind", model.LAYOUTS)
def test_two_batch_layout_without_reset_warns(tmp_path, kind):
    text = ab_spec(layout=LAYOUT_OF_KIND[kind], reset=None)
    found = warnings_in(text, tmp_path)
    if kind not in TWO_BATCH:
        assert found == []
        return
    assert [b["message"] for b in found] == [NO_RESET_WARNING.format(kind=kind)]
    assert caret_text(text, found[0]) == "layout"
    assert "{version}" in hint(found[0])
    with_reset = ab_spec(layout=LAYOUT_OF_KIND[kind], reset='reset "systemctl restart x"')
    assert warnings_in(with_reset, tmp_path) == []


@pytest.mark.parametrize(
    ("run", "missing", "what"),
    [
        ("echo {request}", "version", "both versions run the same command (an A/A test)"),
        ("echo {version}", "request", "every request runs the same command"),
    ],
)
def test_run_command_not_using_a_design_factor_warns(tmp_path, run, missing, what):
    text = ab_spec(run=run)
    found = warnings_in(text, tmp_path)
    assert [b["message"] for b in found] == [f"benchmark 'b' does not use {{{missing}}}: {what}"]
    assert caret_text(text, found[0]) == "b"
    assert hint(found[0]) == f"put {{{missing}}} in its run command"
    # The layout still crosses both factors: 2 versions x 4 requests.
    plan = compile_plan(compile_source(decode("t.bench", text.encode()), tmp_path), ("h0", "h1"))
    assert [c.levels for c in plan.configurations] == [
        (("version", v), ("request", r)) for v in ("control", "treatment") for r in "abcd"
    ]
    commands = {c.levels: c.command for c in plan.configurations}
    for r in "abcd":
        control = commands[("version", "control"), ("request", r)]
        treatment = commands[("version", "treatment"), ("request", r)]
        if missing == "version":
            assert control == treatment == f"echo {r}"
        else:
            assert (control, treatment) == ("echo v1", "echo v2")


# --------------------------------------------------------------------------- plans

# (kind, H, R, T, warmup, cooldown, pool size)
PLAN_CASES = [
    ("unbalanced", 4, 5, 2, 1, 2, 12),
    ("unbalanced", 2, 2, 1, 0, 0, 4),
    ("request_balanced", 4, 5, 2, 1, 1, 7),
    ("request_balanced", 2, 3, 3, 0, 2, 3),
    ("host_balanced", 3, 4, 3, 2, 0, 9),
    ("host_balanced", 2, 2, 2, 0, 1, 4),
    ("fully_balanced", 2, 4, 2, 1, 1, 5),
    ("fully_balanced", 3, 5, 1, 0, 0, 5),
]
PLAN_IDS = [f"{k}-H{h}-R{r}-T{t}-w{w}-c{c}-pool{p}" for k, h, r, t, w, c, p in PLAN_CASES]


def pool_of(size: int) -> list[str]:
    """Request names, some with a space so that quoting shows in the commands."""
    return [f"q {i}" if i % 3 == 1 else f"q{i}" for i in range(size)]


def write_layout_spec(
    where: Path,
    kind: str,
    H: int,
    R: int,
    T: int,
    w: int,
    c: int,
    pool: int,
    *,
    seed: int = 7,
    slots: int | None = None,
    name: str = "ab.bench",
) -> Path:
    n = slots if slots is not None else H
    hosts = f"hosts local {{ slots {n} }}" if n > 1 else "hosts local"
    text = ab_spec(
        layout=f"{kind} {{ hosts {H} requests {R} repetitions {T} warmup {w} cooldown {c} }}",
        versions=f'{{ control "{CONTROL}" treatment "{TREATMENT}" }}',
        requests=json.dumps(pool_of(pool)),
        hosts=hosts,
        seed=seed,
        top=("metric wall_time { measure mean }", "analysis { compare wall_time by version }"),
    )
    path = where / name
    path.write_text(text, encoding="utf-8")
    return path


def layout_plan(tmp_path: Path, case: tuple, seed: int = 7):
    H = case[1]
    experiment = load(write_layout_spec(tmp_path, *case, seed=seed))
    backend = tuple(f"node{i}" for i in range(H + 1))  # one more than needed
    return experiment, compile_plan(experiment, backend), backend


def trial_columns(plan) -> dict[str, np.ndarray]:
    """Version name, request, phase, host and round of every trial, from the plan alone."""
    levels = [dict(c.levels) for c in plan.configurations]
    conf = plan.trial_configuration
    return {
        "version": np.array([levels[i]["version"] for i in conf]),
        "request": np.array([levels[i]["request"] for i in conf], dtype=object),
        "phase": np.array([plan.phase(t) for t in range(plan.n_trials)]),
        "host": plan.trial_host,
        "round": plan.trial_round,
    }


@pytest.mark.parametrize("case", PLAN_CASES, ids=PLAN_IDS)
def test_rounds_are_host_batches_of_one_version(tmp_path, case):
    kind, H, R, T, w, c, _pool = case
    _, plan, backend = layout_plan(tmp_path, case)
    cols = trial_columns(plan)
    counts = layout_counts(kind, H, R, T, w, c)
    assert plan.hosts == backend[:H]
    assert plan.n_rounds == counts["batches"] == (2 * H if kind in TWO_BATCH else H)
    batches = (0, 1) if kind in TWO_BATCH else (0,)
    rounds = list(zip(plan.round_batch.tolist(), plan.round_host.tolist(), strict=True))
    assert rounds == [(b, h) for b in batches for h in range(H)]
    assert np.all(np.diff(plan.trial_round) >= 0)
    assert set(plan.trial_round.tolist()) == set(range(plan.n_rounds))
    version_of = {}
    for r, (b, h) in enumerate(rounds):
        mine = cols["round"] == r
        assert set(cols["host"][mine].tolist()) == {h}
        versions = set(cols["version"][mine].tolist())
        assert len(versions) == 1, (r, versions)
        version_of[h, b] = versions.pop()
    hosts_of = defaultdict(set)
    for (h, _b), v in version_of.items():
        hosts_of[v].add(h)
    if kind in TWO_BATCH:
        for h in range(H):
            # versions swapped between a host's batches, counterbalanced across hosts
            assert version_of[h, 0] == ("control", "treatment")[h % 2]
            assert version_of[h, 1] == ("treatment", "control")[h % 2]
        assert hosts_of["control"] == hosts_of["treatment"] == set(range(H))
    else:
        assert len(hosts_of["control"]) == len(hosts_of["treatment"]) == H // 2
        assert hosts_of["control"].isdisjoint(hosts_of["treatment"])


@pytest.mark.parametrize("case", PLAN_CASES, ids=PLAN_IDS)
def test_layout_hosts_are_pinned_to_backend_hosts(tmp_path, case):
    """The plan follows the layout's schedule trial by trial: layout host h runs on plan.hosts[h]."""
    kind, H, R, T, w, c, pool = case
    experiment, plan, _ = layout_plan(tmp_path, case)
    schedule = layout_schedule(kind, H, R, T, w, c, seed=experiment.seed, pool=pool)
    cols = trial_columns(plan)
    names = pool_of(pool)
    assert plan.n_trials == schedule.trials
    assert np.array_equal(plan.trial_host, schedule.host)
    assert cols["version"].tolist() == [("control", "treatment")[v] for v in schedule.version]
    assert cols["request"].tolist() == [names[i] for i in schedule.request]
    assert cols["phase"].tolist() == [PHASES[p] for p in schedule.phase]
    assert np.array_equal(plan.round_batch[plan.trial_round], schedule.batch)
    for h in range(H):
        assert {plan.hosts[i] for i in plan.trial_host[schedule.host == h]} == {plan.hosts[h]}


@pytest.mark.parametrize("case", PLAN_CASES, ids=PLAN_IDS)
def test_phases_and_repetitions(tmp_path, case):
    kind, H, R, T, w, c, pool = case
    _, plan, _ = layout_plan(tmp_path, case)
    cols = trial_columns(plan)
    counts = layout_counts(kind, H, R, T, w, c)
    assert plan.n_trials == counts["trials"]
    assert int((cols["phase"] == "measured").sum()) == counts["measured_trials"] == 2 * R * T
    for r in range(plan.n_rounds):
        mine = np.flatnonzero(cols["round"] == r)
        n = mine.size
        assert plan.trial_position[mine].tolist() == list(range(n))
        phases = cols["phase"][mine].tolist()
        assert phases == ["warmup"] * w + ["measured"] * (n - w - c) + ["cooldown"] * c
        requests = cols["request"][mine]
        measured = requests[w : n - c].tolist()
        own = set(measured)
        assert len(measured) == len(own) * T
        # T passes, each a permutation of the batch's requests
        for p in range(T):
            chunk = measured[p * len(own) : (p + 1) * len(own)]
            assert sorted(chunk) == sorted(own)
        assert set(requests[:w].tolist()) <= own
        assert set(requests[n - c :].tolist()) <= own
    measured = cols["phase"] == "measured"
    pairs = Counter(zip(cols["version"][measured], cols["request"][measured], strict=True))
    assert set(pairs.values()) == {T}
    per_version = {v: {r for (vv, r) in pairs if vv == v} for v in ("control", "treatment")}
    assert len(per_version["control"]) == len(per_version["treatment"]) == R
    if kind in TWO_POOLS:
        assert per_version["control"].isdisjoint(per_version["treatment"])
    else:
        assert per_version["control"] == per_version["treatment"]
    used = per_version["control"] | per_version["treatment"]
    assert len(used) == counts["distinct_requests"]
    # requests come from the pool; a bigger pool leaves some unused
    assert used <= set(pool_of(pool))
    assert set(cols["request"].tolist()) == used
    assert (len(used) < pool) == (counts["distinct_requests"] < pool)


@pytest.mark.parametrize("case", PLAN_CASES, ids=PLAN_IDS)
def test_requests_are_spread_over_hosts_as_the_layout_says(tmp_path, case):
    kind, H, R, *_ = case
    _, plan, _ = layout_plan(tmp_path, case)
    cols = trial_columns(plan)
    m = cols["phase"] == "measured"
    hosts_of = defaultdict(set)  # (version, request) -> hosts
    for v, r, h in zip(cols["version"][m], cols["request"][m], cols["host"][m], strict=True):
        hosts_of[v, r].add(int(h))
    assert all(len(hs) == 1 for hs in hosts_of.values())  # a request runs on one host per version
    k = H // 2 if kind in ("unbalanced", "request_balanced") else H
    per_host = Counter((v, next(iter(hs))) for (v, _), hs in hosts_of.items())
    assert set(per_host.values()) <= {R // k, R // k + 1}
    assert sum(per_host.values()) == 2 * R
    if kind == "fully_balanced":
        for r in {r for _, r in hosts_of}:
            assert hosts_of["control", r] == hosts_of["treatment", r]
    if kind == "request_balanced":
        for r in {r for _, r in hosts_of}:
            assert hosts_of["control", r] != hosts_of["treatment", r]


@pytest.mark.parametrize("case", PLAN_CASES, ids=PLAN_IDS)
def test_configurations_carry_version_and_request(tmp_path, case):
    pool = case[-1]
    _, plan, _ = layout_plan(tmp_path, case)
    names = pool_of(pool)
    assert len(plan.configurations) == 2 * pool
    text = {"control": CONTROL, "treatment": TREATMENT}
    for conf in plan.configurations:
        levels = dict(conf.levels)
        assert [k for k, _ in conf.levels] == ["version", "request"]
        assert levels["request"] in names
        assert (
            conf.command
            == f"echo {shlex.quote(text[levels['version']])} {shlex.quote(levels['request'])}"
        )
    commands = [plan.configurations[i].command for i in plan.trial_configuration]
    cols = trial_columns(plan)
    for command, version, request in zip(commands, cols["version"], cols["request"], strict=True):
        assert command == f"echo {shlex.quote(text[version])} {shlex.quote(request)}"
    assert any(cmd.startswith("echo 'v2 x' ") for cmd in commands)
    assert any(cmd.startswith("echo v1 ") for cmd in commands)


def duplication_of_plan(plan) -> tuple[float, float, float, float]:
    """(nu_R, nu_H, omega_R, omega_H) counted from the plan's measured trials (§4.1)."""
    cols = trial_columns(plan)
    m = cols["phase"] == "measured"
    by_request = {
        v: Counter(cols["request"][m & (cols["version"] == v)].tolist())
        for v in ("control", "treatment")
    }
    by_host = {
        v: Counter(cols["host"][m & (cols["version"] == v)].tolist())
        for v in ("control", "treatment")
    }
    N = m.sum() / 2
    nu = lambda by: np.mean([sum(x * x for x in by[v].values()) for v in by]) / N  # noqa: E731
    omega = lambda by: sum(by["control"][k] * by["treatment"][k] for k in by["control"]) / N  # noqa: E731
    return nu(by_request), nu(by_host), omega(by_request), omega(by_host)


@pytest.mark.parametrize("case", PLAN_CASES, ids=PLAN_IDS)
def test_derived_duplication_coefficients(tmp_path, case):
    kind, H, R, T, w, c, pool = case
    _, plan, _ = layout_plan(tmp_path, case)
    derived = {d.name: d.value for d in plan.derived}
    expected = duplication_coefficients(kind, H, R, T)
    got = tuple(derived[k] for k in ("nu_R", "nu_H", "omega_R", "omega_H"))
    assert got == pytest.approx(expected)
    assert duplication_of_plan(plan) == pytest.approx(expected)
    counts = layout_counts(kind, H, R, T, w, c)
    assert derived["layout"] == kind
    assert derived["hosts"] == H
    assert derived["batches"] == counts["batches"]
    assert derived["requests"] == counts["distinct_requests"]
    assert derived["repetitions"] == T
    assert derived["trials"] == counts["trials"]
    assert derived["configurations"] == 2 * pool


@pytest.mark.parametrize("case", PLAN_CASES, ids=PLAN_IDS)
def test_plan_json_has_layout_batches_and_phases(tmp_path, case):
    kind, H, R, T, w, c, _pool = case
    _, plan, _ = layout_plan(tmp_path, case)
    data = json.loads(plan.json_text())
    assert data["layout"] == {
        "kind": kind,
        "hosts": H,
        "requests": R,
        "repetitions": T,
        "warmup": w,
        "cooldown": c,
    }
    assert data["rounds"]["batch"] == plan.round_batch.tolist()
    assert len(data["rounds"]["batch"]) == len(data["rounds"]["host"]) == plan.n_rounds
    phases = data["trials"]["phase"]
    assert len(phases) == len(data["trials"]["round"]) == plan.n_trials
    assert Counter(phases) == {
        "measured": 2 * R * T,
        **({"warmup": plan.n_rounds * w} if w else {}),
        **({"cooldown": plan.n_rounds * c} if c else {}),
    }
    body = plan.json_text()
    canonical = body[: body.rindex(',"hash":')] + "}"
    assert data["hash"] == plan.hash == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def test_seed_changes_the_schedule_but_not_its_shape(tmp_path):
    case = ("fully_balanced", 2, 4, 2, 1, 1, 6)
    _, first, _ = layout_plan(tmp_path, case, seed=7)
    _, again, _ = layout_plan(tmp_path, case, seed=7)
    _, other, _ = layout_plan(tmp_path, case, seed=8)
    assert first.json_text() == again.json_text()
    assert other.hash != first.hash
    assert other.trial_configuration.tolist() != first.trial_configuration.tolist()
    assert other.n_trials == first.n_trials and other.n_rounds == first.n_rounds
    assert [d.value for d in other.derived if d.name.startswith(("nu", "omega"))] == [
        d.value for d in first.derived if d.name.startswith(("nu", "omega"))
    ]


def test_layout_defaults_come_from_the_pool(tmp_path):
    """Without requests/repetitions/warmup/cooldown in the layout block: R is the pool (or half
    of it for the two-pool layouts), one repetition, no warm-up or cool-down."""
    for kind, R in (
        ("fully_balanced", 5),
        ("host_balanced", 2),
        ("unbalanced", 2),
        ("request_balanced", 5),
    ):
        text = ab_spec(layout=f"{kind} {{ hosts 2 }}", requests='["a", "b", "c", "d", "e"]')
        experiment = compile_source(decode("t.bench", text.encode()), tmp_path)
        assert experiment.design.layout == model.Layout(kind, 2, R, 1, 0, 0)
        plan = compile_plan(experiment, ("h0", "h1"))
        assert set(plan.trial_phase.tolist()) == {0}


def test_requests_from_file_relative_to_the_spec(tmp_path, monkeypatch):
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    (spec_dir / "requests.txt").write_text(
        "# requests of the test\n\n/index\n  /search?q=1  \n# /skipped\n/about\n\n/contact\n"
    )
    path = spec_dir / "ab.bench"
    path.write_text(
        ab_spec(
            layout="fully_balanced { hosts 2 requests 3 repetitions 2 }",
            requests='from file "requests.txt"',
        )
    )
    monkeypatch.chdir(tmp_path)  # not the spec's directory
    experiment = load(path)
    pool = ("/index", "/search?q=1", "/about", "/contact")
    assert experiment.factor(model.REQUEST_FACTOR).levels == pool
    plan = compile_plan(experiment, ("h0", "h1"))
    used = {dict(plan.configurations[i].levels)["request"] for i in plan.trial_configuration}
    assert len(used) == 3 and used <= set(pool)
    assert any(c.command == "echo v2 '/search?q=1'" for c in plan.configurations)


def test_too_few_backend_hosts_is_a_plan_error(tmp_path):
    experiment = load(write_layout_spec(tmp_path, "fully_balanced", 3, 3, 1, 0, 0, 3))
    with pytest.raises(PlanError) as info:
        compile_plan(experiment, ("local:0", "local:1"))
    assert info.value.message == "layout fully_balanced needs 3 hosts, but hosts local provides 2"
    assert "slots" in info.value.hint


# --------------------------------------------------------------------------- CLI
# The subprocess calls of this file run once, all at the same time; the others call
# benchlang.cli.main in-process (same code path, without the interpreter start-up).

COUNT_CASES = [
    ("unbalanced", 4, 5, 2, 1, 2, 12),
    ("request_balanced", 4, 5, 2, 0, 1, 7),
    ("host_balanced", 3, 4, 3, 2, 0, 9),
    ("fully_balanced", 2, 4, 2, 1, 1, 5),
]
WARN_SPEC = ab_spec(layout=LAYOUT_OF_KIND["host_balanced"], reset=None, run="echo {request}")


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory, run_cli_many):
    where = tmp_path_factory.mktemp("ab_cli")
    elsewhere = where / "elsewhere"
    elsewhere.mkdir()
    errors = {}
    for i, (_, overrides, files, *_rest) in enumerate(CASES):
        write_files(where, files)
        errors[f"e{i}.bench"] = ab_spec(**overrides)
        (where / f"e{i}.bench").write_text(errors[f"e{i}.bench"], encoding="utf-8")
    counted = [
        write_layout_spec(where, *case, name=f"c{i}.bench").name
        for i, case in enumerate(COUNT_CASES)
    ]
    (where / "w.bench").write_text(WARN_SPEC, encoding="utf-8")
    planned = write_layout_spec(where, "fully_balanced", 2, 4, 2, 1, 1, 5)
    write_layout_spec(where, "fully_balanced", 2, 2, 1, 0, 0, 4, slots=1, name="one.bench")
    write_layout_spec(where, "host_balanced", 3, 3, 1, 0, 0, 6, slots=2, name="two.bench")
    calls = {
        "errors": (["check", *errors], where),
        "plan": (["plan", planned, "--json"], where),
        "plan_elsewhere": (["plan", planned, "--json"], elsewhere),
        "one_host": (["plan", "one.bench"], where),
    }
    results = run_cli_many(
        [args for args, _ in calls.values()], cwd=[cwd for _, cwd in calls.values()]
    )
    for _status, out, err in results:
        assert "Traceback" not in out + err, err
    return {
        "dir": where,
        "error_texts": errors,
        "counted": counted,
        "planned": planned,
        **dict(zip(calls, results, strict=True)),
    }


def test_every_design_error_exits_2_from_the_cli(cli_runs):
    """One ``benchlang check`` over every erroneous spec: status 2, each spec's error with its
    position and a caret under the reported column, no spec reported ok."""
    status, out, err = cli_runs["errors"]
    assert status == 2
    assert out == ""
    blocks = parse_rendered(err)
    for i, (case_id, _, _, message, *_rest) in enumerate(CASES):
        name = f"e{i}.bench"
        text = cli_runs["error_texts"][name]
        mine = [b for b in blocks if b["path"] == name and b["severity"] == "error"]
        hits = [b for b in mine if b["message"] == message]
        assert len(hits) == 1, (case_id, [b["message"] for b in mine])
        assert caret_text(text, hits[0])
        # the same diagnostic as the in-process checker's, line, column, caret and hint
        in_process = the_error(errors_of(text, cli_runs["dir"], path=name), message)
        assert hits[0] == in_process, case_id


def main_in(where: Path, argv: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    """``benchlang ARGV`` in-process, from the directory ``where``: (status, stdout, stderr)."""
    monkeypatch.chdir(where)
    capsys.readouterr()
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_check_prints_layout_trial_counts(cli_runs, capsys, monkeypatch):
    status, out, err = main_in(
        cli_runs["dir"], ["check", *cli_runs["counted"]], capsys, monkeypatch
    )
    assert status == 0, err
    assert err == ""
    lines = out.strip().split("\n")
    assert len(lines) == len(COUNT_CASES)
    for line, name, (kind, H, R, T, w, c, pool) in zip(
        lines, cli_runs["counted"], COUNT_CASES, strict=True
    ):
        counts = layout_counts(kind, H, R, T, w, c)
        assert counts["trials"] == 2 * R * T + counts["batches"] * (w + c)
        assert line == (
            f"{name}: ok: experiment t, {2 * pool} configurations, {counts['trials']} trials"
        )
        plan = compile_plan(load(cli_runs["dir"] / name), tuple(f"local:{i}" for i in range(H)))
        assert plan.n_trials == counts["trials"]
        assert int((plan.trial_phase == 0).sum()) == counts["measured_trials"]


def test_check_prints_warnings_and_succeeds(cli_runs, capsys, monkeypatch):
    status, out, err = main_in(cli_runs["dir"], ["check", "w.bench"], capsys, monkeypatch)
    assert status == 0, err
    trials = layout_counts("host_balanced", 2, 2, 1)["trials"]
    assert out == f"w.bench: ok: experiment t, 8 configurations, {trials} trials\n"
    found = parse_rendered(err)
    assert [(b["path"], b["severity"], b["message"]) for b in found] == [
        (
            "w.bench",
            "warning",
            "benchmark 'b' does not use {version}: both versions run the same command (an A/A test)",
        ),
        ("w.bench", "warning", NO_RESET_WARNING.format(kind="host_balanced")),
    ]
    assert [caret_text(WARN_SPEC, b) for b in found] == ["b", "layout"]


def test_plan_json_is_byte_identical_across_processes(cli_runs, capsys, monkeypatch):
    (s1, first, e1), (s2, second, e2) = cli_runs["plan"], cli_runs["plan_elsewhere"]
    assert s1 == s2 == 0, (e1, e2)
    assert first == second
    data = json.loads(first)
    assert data["layout"] == {
        "kind": "fully_balanced",
        "hosts": 2,
        "requests": 4,
        "repetitions": 2,
        "warmup": 1,
        "cooldown": 1,
    }
    assert data["hosts"] == ["local:0", "local:1"]
    assert data["rounds"]["batch"] == [0, 0, 1, 1]
    assert Counter(data["trials"]["phase"]) == {"measured": 16, "warmup": 4, "cooldown": 4}
    experiment = load(cli_runs["planned"])
    assert compile_plan(experiment, ("local:0", "local:1")).json_text() + "\n" == first
    planned = cli_runs["planned"]
    status, reseeded, err = main_in(
        cli_runs["dir"], ["plan", planned, "--json", "--seed", "8"], capsys, monkeypatch
    )
    assert status == 0, err
    other = json.loads(reseeded)
    assert other["seed"] == 8 and data["seed"] == 7
    assert other["hash"] != data["hash"]
    assert other["trials"]["configuration"] != data["trials"]["configuration"]
    assert other["layout"] == data["layout"]


def test_plan_with_too_few_hosts_exits_2(cli_runs, capsys, monkeypatch):
    in_process = main_in(cli_runs["dir"], ["plan", "two.bench", "--json"], capsys, monkeypatch)
    for (status, out, err), message in (
        (
            cli_runs["one_host"],
            "one.bench: layout fully_balanced needs 2 hosts, but hosts local provides 1",
        ),
        (in_process, "two.bench: layout host_balanced needs 3 hosts, but hosts local provides 2"),
    ):
        assert status == 2, err
        assert out == ""
        lines = err.strip().split("\n")
        assert lines[0] == f"benchlang: error: {message}"
        assert len(lines) == 2 and lines[1].startswith("  hint: ") and "slots" in lines[1]
