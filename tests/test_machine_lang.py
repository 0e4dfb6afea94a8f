"""The ``machine { ... }`` block: every diagnostic positioned with a hint
through the real ``benchlang check``, the block compiled into ``model.Machine``, its limits in
the plan hash (its required state not), and ``benchlang fmt``'s canonical layout."""

from __future__ import annotations

import json
import os
import re

import pytest

from benchlang.backends.registry import backend_kinds
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import Source
from benchlang.lang.format import format_text
from benchlang.plan.compile import compile_plan
from tests.conftest import cli_many, spec_text

BENCH = 'benchmark b { run "true" }'


def diagnostics(stderr: str) -> list[tuple[int, int, str, str]]:
    """(line, column, message, hint) of each error ``benchlang check`` printed."""
    out = []
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^[^:]+:(\d+):(\d+): error: (.+)$", line)
        if m:
            hint = next((x.strip()[6:] for x in lines[i + 1 : i + 4] if "hint:" in x), "")
            out.append((int(m[1]), int(m[2]), m[3], hint))
    return out


def test_each_diagnostic_has_its_position_and_hint(tmp_path):
    usable = sorted(os.sched_getaffinity(0))
    absent = (os.cpu_count() or 1) + 7
    lacking = next(
        (k for k, b in backend_kinds().items() if "memory" not in getattr(b, "capabilities", ())),
        None,
    )
    cases = {
        "cpu": (f"machine {{\n  cpus [{usable[0]}, {absent}]\n}}\n{BENCH}", 5, 12),
        "unit": (f"machine {{\n  memory 64\n}}\n{BENCH}", 5, 10),
        "floor": (f"machine {{\n  memory 1MiB\n}}\n{BENCH}", 5, 10),
        "twice": (f"machine {{\n  time 30s\n  time 20s\n}}\n{BENCH}", 6, 3),
        "unknown": (f"machine {{\n  memori 1GiB\n}}\n{BENCH}", 5, 3),
        "aslr": (f"factor aslr hidden\nmachine {{\n  aslr off\n}}\n{BENCH}", 6, 3),
        "bare": (f"machine {{\n  cpus 2\n}}\n{BENCH}", 5, 8),
    }
    if lacking is not None:
        cases["capability"] = (f"hosts {lacking}\nmachine {{ memory 1GiB }}\n{BENCH}", 5, 11)
    paths = []
    for name, (body, _, _) in cases.items():
        path = tmp_path / f"{name}.bench"
        path.write_text(spec_text(body), encoding="utf-8")
        paths.append(path)
    results = cli_many([["check", p] for p in paths], cwd=tmp_path)
    found = {}
    for (name, (_, line, column)), (status, _out, err) in zip(cases.items(), results, strict=True):
        assert status == 2, (name, err)
        at = [d for d in diagnostics(err) if (d[0], d[1]) == (line, column)]
        assert at, (name, err)
        found[name] = at[0]
    assert found["cpu"][2] == f"CPU {absent} does not exist on this host"
    assert "this host's usable CPUs" in found["cpu"][3]
    assert found["unit"][2] == "memory: 64 has no unit" and "memory 1GiB" in found["unit"][3]
    assert "below 4 MiB" in found["floor"][2] and "at least memory 4MiB" in found["floor"][3]
    assert found["twice"][2] == "'time' is set twice in machine"
    assert found["twice"][3] == "first set on line 5"
    assert found["unknown"][2] == "unknown setting 'memori' in machine"
    assert found["unknown"][3] == "did you mean 'memory'?"
    assert "varies on purpose" in found["aslr"][2] and "drop" in found["aslr"][3]
    assert "ambiguous" in found["bare"][2] and "cpus [2]" in found["bare"][3]
    if lacking is not None:
        assert found["capability"][2] == (
            f"hosts {lacking} cannot apply 'memory': the backend lacks the 'memory' capability"
        )
        assert found["capability"][3].startswith("backends that can:")


def test_a_cpu_beyond_a_declared_host_s_cores(tmp_path, cli_in_process):
    (tmp_path / "facts.json").write_text(json.dumps({"a": {"cores": "4"}, "b": {"cores": "8"}}))
    body = f'hosts ssh {{ nodes ["a", "b"] facts from file "facts.json" }}\nmachine {{ cpus [2, 6] }}\n{BENCH}'
    (tmp_path / "s.bench").write_text(spec_text(body))
    status, _, err = cli_in_process(["check", "s.bench"], cwd=tmp_path)
    assert status == 2
    (line, column, message, hint) = next(d for d in diagnostics(err) if "CPU" in d[2])
    assert (line, column, message) == (5, 20, "CPU 6 does not exist on host a")
    assert hint == "its declared facts give 4 CPUs: 0-3"


def compiled(body: str):
    return compile_source(Source("m.bench", spec_text(body)))


def test_the_block_compiles_into_the_model_and_the_hosts_block_refines_it():
    exp = compiled(
        "hosts local { machine { memory 2GiB smt off } }\n"
        "machine { cpus 0..1 memory 1GiB time 1m cpu_quota 1.5 governor performance turbo off }\n"
        + BENCH
    )
    m = exp.machine
    assert (m.cpus, m.memory, m.cpu_time, m.cpu_quota) == ((0, 1), 2 * 2**30, 60.0, 1.5)
    assert m.require == (("governor", "performance"), ("turbo", "off"), ("smt", "off"))
    assert compiled("machine { memory 15000kB }\n" + BENCH).machine.memory == 15_000_000
    assert compiled(BENCH).machine is None


def test_limits_are_in_the_plan_hash_and_required_state_is_not():
    base = "machine { cpus [0] memory 64MiB time 30s governor performance }\n" + BENCH
    assert compile_plan(compiled(base)).hash == compile_plan(compiled(base)).hash
    shape_of = lambda body: compile_plan(compiled(body)).shape_hash  # noqa: E731
    first = shape_of(base)
    assert shape_of(base.replace("64MiB", "128MiB")) != first
    assert shape_of(base.replace("time 30s", "time 31s")) != first
    assert shape_of(base.replace("cpus [0]", "cpus [1]")) != first
    assert shape_of(base.replace("performance", "powersave")) == first
    plan = compile_plan(compiled(base))
    assert plan.to_json()["machine"] == {"cpus": [0], "memory": 64 * 2**20, "cpu_time": 30.0}
    assert "machine" not in compile_plan(compiled(BENCH)).to_json()


def test_fmt_prints_the_block_canonically_and_keeps_the_plan():
    messy = spec_text(
        'hosts ssh { nodes ["a"] }\n'
        "machine   {cpus [2,3]   memory 1GiB  # per trial\n"
        "time 30s\n\n\n   governor performance turbo off}\n" + BENCH
    )
    formatted = format_text(messy)
    assert formatted == (
        "benchlang 1\n\nexperiment t {\n"
        '  hosts ssh { nodes ["a"] }\n'
        "  machine {\n"
        "    cpus [2, 3]\n"
        "    memory 1GiB  # per trial\n"
        "    time 30s\n"
        "\n"
        "    governor performance\n"
        "    turbo off\n"
        "  }\n"
        f"  {BENCH}\n"
        "}\n"
    )
    assert format_text(formatted) == formatted
    plan = lambda text: compile_plan(compile_source(Source("m.bench", text))).shape_hash  # noqa: E731
    assert plan(formatted) == plan(messy)


@pytest.mark.parametrize("value", ["1GiB", "512MiB", "2GB", "100000kB"])
def test_every_memory_unit_is_read(value):
    expected = {"1GiB": 2**30, "512MiB": 2**29, "2GB": 2 * 10**9, "100000kB": 10**8}[value]
    assert compiled(f"machine {{ memory {value} }}\n{BENCH}").machine.memory == expected


def test_the_language_server_outline_lists_the_block():
    from benchlang.lsp.features import symbols
    from benchlang.lsp.index import Index

    (experiment,) = symbols(Index(spec_text(f"machine {{ memory 1GiB }}\n{BENCH}")))
    assert [(s.name, s.kind) for s in experiment.children] == [
        ("b", "benchmark"),
        ("machine", "machine"),
    ]
