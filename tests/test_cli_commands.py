"""The command line: entry points, --help of every command, size, plugins, and the examples."""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from benchlang import __version__
from benchlang.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "specs").glob("*.bench"))


def test_version_through_python_m_and_the_console_script(run_cli):
    script = shutil.which("benchlang")
    assert script, "the benchlang console script is not installed"
    console = subprocess.Popen([script, "--version"], stdout=subprocess.PIPE, text=True)
    status, out, _err = run_cli(["--version"])
    assert status == 0 and out.strip() == f"benchlang {__version__}"
    assert console.wait(timeout=60) == 0
    assert console.stdout.read().strip() == f"benchlang {__version__}"


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert "usage: benchlang" in out
    for name in ("check", "plan", "run", "results", "size", "plugins"):
        assert name in out


def command_names() -> list[str]:
    (subparsers,) = [
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ]
    return sorted(subparsers.choices)


def test_every_registered_command_is_reachable():
    assert len(command_names()) == len(COMMANDS)
    assert {"check", "plan", "run", "results", "size", "plugins"} <= set(command_names())


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_table_entries_name_modules_that_configure_their_command(name):
    """The lazy table and the modules agree: each module configures a parser for its name."""
    import importlib

    module = importlib.import_module(COMMANDS[name].module)
    parser = argparse.ArgumentParser(prog="benchlang")
    sub = parser.add_subparsers()
    module.add_parser(sub)
    assert set(sub.choices) == {name}
    assert sub.choices[name].description
    assert sub._choices_actions[0].help == COMMANDS[name].help


def test_top_level_help_lists_every_command_with_its_table_line(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for name, command in COMMANDS.items():
        assert f"{name} {' '.join(command.help.split())}" in out


def test_unknown_command_is_refused_by_argparse(capsys):
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2 and "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("name", command_names())
def test_help_of_every_command(name, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([name, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: benchlang {name}")


@pytest.mark.parametrize(
    ("percentile", "confidence", "exclude", "expected"),
    [(95, 95, 0, 59), (50, 95, 0, 5), (99, 95, 0, 299), (95, 99, 0, 90)],
)
def test_size_json(percentile, confidence, exclude, expected, capsys):
    args = build_parser().parse_args(
        [
            "size",
            "--percentile",
            str(percentile),
            "--confidence",
            str(confidence),
            "--exclude",
            str(exclude),
            "--json",
        ]
    )
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert (
        out["n"]
        == expected
        == math.ceil(
            math.log(1 - confidence / 100) / math.log(max(percentile, 100 - percentile) / 100)
            - 1e-12
        )
    )
    assert (
        out["percentile"] == percentile
        and out["confidence"] == confidence
        and out["exclude"] == exclude
    )


@pytest.fixture(scope="module")
def small_commands(run_cli_many, tmp_path_factory):
    """size, plugins and results on a missing store, run at once as real subprocesses."""
    missing = tmp_path_factory.mktemp("missing") / "absent.sqlite"
    calls = {
        "size": ["size", "--percentile", "95", "--confidence", "95%", "--json"],
        "plugins": ["plugins", "--json"],
        "results": ["results", missing],
    }
    return dict(zip(calls, run_cli_many(list(calls.values())), strict=True))


def test_size_through_the_cli(small_commands):
    status, out, err = small_commands["size"]
    assert status == 0, err
    assert json.loads(out)["n"] == 59


@pytest.mark.parametrize(
    "argv",
    [
        ["--percentile", "100", "--confidence", "95"],
        ["--percentile", "50", "--confidence", "0"],
        ["--percentile", "x", "--confidence", "95"],
    ],
)
def test_size_refuses_bad_input(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(["size", *argv])
    assert info.value.code == 2
    assert "error" in capsys.readouterr().err


def test_plugins_lists_local(small_commands):
    status, out, err = small_commands["plugins"]
    assert status == 0, err
    rows = json.loads(out)["plugins"]
    local = [r for r in rows if r["group"] == "benchlang.backends" and r["name"] == "local"]
    assert local and local[0]["status"] == "ok"
    assert local[0]["value"] == "benchlang.backends.local:LocalBackend"


def test_every_example_spec_checks(run_cli):
    """Generic over specs/: every example passes `benchlang check`."""
    assert EXAMPLES, "specs/ holds no example"
    status, out, err = run_cli(["check", *EXAMPLES], cwd=ROOT)
    assert status == 0, err
    for path in EXAMPLES:
        assert f"{path}: ok: experiment " in out


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_spec_plans(path):
    from benchlang.app.plan import build_plan
    from benchlang.app.spec import compile_spec, open_backend
    from benchlang.plan.compile import compile_plan

    experiment, _backend, plan = build_plan(path)
    assert plan.n_trials >= 1
    hosts = open_backend(experiment, str(path)).hosts()
    assert plan.hash == compile_plan(compile_spec(path).experiment, hosts).hash


def test_spec_errors_print_diagnostics_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.bench"
    bad.write_text("benchlang 1\nexperiment x {\n  frobnicate 3\n}\n")
    for command in (["check"], ["plan"], ["run"]):
        assert main([*command, str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"{bad}:3:" in err and "Traceback" not in err


def test_check_prints_warnings_once(tmp_path, capsys):
    spec = tmp_path / "warn.bench"
    spec.write_text(
        'benchlang 1\nexperiment w {\n  factor unused in [1, 2]\n  benchmark b { run "true" }\n}\n'
    )
    assert main(["check", str(spec)]) == 0
    captured = capsys.readouterr()
    assert "ok: experiment w" in captured.out
    assert captured.err.count(": warning: ") == 1, captured.err


def test_results_on_a_missing_store(small_commands):
    status, _out, err = small_commands["results"]
    assert status == 2 and "no store at" in err and "Traceback" not in err


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_cli_commands")
