"""``benchlang compare 'CMD' 'CMD' ...``: the hyperfine habit, with no spec to write.

The commands become the levels of one factor of a generated spec, run as code
(``{command!code}``, docs/language.md "Code levels"), every round running each command once in
random order (randomized multiple interleaved trials: Abedi & Brecht, "Conducting Repeatable
Experiments in Highly Variable Cloud Computing Environments", ICPE 2017, §4), with a median KPI
and the ranking every run ends with. The spec is ordinary text: ``--spec-out`` keeps it to
publish, rerun or extend, and it runs through exactly the path ``benchlang run`` takes.

hyperfine's options keep their meaning where benchlang has the same thing: ``--runs`` (rounds:
each command runs that many measured times), ``--warmup``, ``--prepare`` (a ``before`` hook,
run before every trial and not timed), ``-L/--parameter-list`` (the commands expanded over the
values, as hyperfine does), ``-N/--shell=none``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from itertools import product
from pathlib import Path

import attrs

from benchlang.errors import UserError

DEFAULT_ROUNDS = 20
"""Rounds when ``--runs`` is not given: hyperfine runs at least 10; 20 rounds give a median
KPI at 95% (TriScale needs 5) and a ranking interval from 20 paired rounds."""


MIN_KPI_ROUNDS = 5
"""The fewest rounds for a median's 95% bound (TriScale, Jacob et al. JSys 2021, §4.5 Eq. 4:
N >= log(0.05)/log(0.5)); with fewer the spec has no KPI and the run shows its trials only."""


@attrs.frozen
class CompareRequest:
    """What ``benchlang compare`` was asked, in hyperfine's terms."""

    commands: tuple[str, ...]
    rounds: int = DEFAULT_ROUNDS
    warmup: int = 0
    prepare: str | None = None
    parameters: tuple[tuple[str, tuple[str, ...]], ...] = ()
    shell: bool = True
    seed: int = 1
    names: tuple[str, ...] = ()


def expanded_commands(commands: Sequence[str], parameters) -> list[str]:
    """Each command with every combination of the ``-L`` values put in for ``{NAME}``, in
    hyperfine's order (commands first, then the values); a ``{NAME}`` no list gives is an
    error, as is a list that no command uses."""
    names = [name for name, _ in parameters]
    for name in names:
        if not any("{" + name + "}" in c for c in commands):
            raise UserError(
                f"-L {name}: no command has {{{name}}}", f"write {{{name}}} where the value goes"
            )
    out: list[str] = []
    for command in commands:
        for values in product(*(v for _, v in parameters)) if parameters else [()]:
            text = command
            for name, value in zip(names, values, strict=True):
                text = text.replace("{" + name + "}", value)
            out.append(text)
    unknown = sorted({m for c in out for m in re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", c)})
    if unknown and parameters:
        raise UserError(
            f"{{{unknown[0]}}} is in a command but no -L {unknown[0]} gives its values",
            f"-L {unknown[0]} VALUE,VALUE",
        )
    return out


def _escaped(text: str) -> str:
    """``text`` as a spec string whose braces stay literal (docs/language.md: ``{{``, ``}}``)."""
    return json.dumps(text.replace("{", "{{").replace("}", "}}"))


def compare_spec_text(request: CompareRequest, workdir: str) -> str:
    """The spec of a quick comparison: one factor ``command`` whose levels run as code, wall
    time as the metric with a median KPI at 95%, user and system time measured beside it."""
    commands = expanded_commands(request.commands, request.parameters)
    if len(commands) < 1:
        raise UserError("compare needs at least one command", "benchlang compare 'CMD' 'CMD'")
    if len(set(commands)) < len(commands):
        raise UserError("a command is given twice", "give each command once")
    if request.rounds < 1:
        raise UserError(f"--runs {request.rounds}: at least 1 is needed")
    if request.warmup < 0:
        raise UserError(f"--warmup {request.warmup}: a whole number >= 0 is needed")
    if not request.shell:
        from benchlang.backends.local import argv_for

        for command in commands:
            if argv_for(command)[0] == "/bin/sh":
                raise UserError(
                    f"-N runs commands without a shell, and {command!r} needs one",
                    "leave out -N/--shell=none for this command",
                )
    levels = ", ".join(json.dumps(c) for c in commands)
    title = " vs ".join(commands) if len(commands) <= 3 else f"{len(commands)} commands"
    before = [f"    before {_escaped(request.prepare)}"] if request.prepare else []
    warmup = f" warmup {request.warmup}" if request.warmup else ""
    lines = [
        "benchlang 1",
        "",
        "# written by benchlang compare: " + " ".join(json.dumps(c) for c in request.commands),
        "experiment compared {",
        f"  title {_escaped(title)}",
        f"  seed {request.seed}",
        f"  workdir {json.dumps(workdir)}",
        "",
        f"  factor command in [{levels}]",
        "",
        "  benchmark commands {",
        '    run "{command!code}"',
        *before,
        "    measure time = wall_time",
        "    measure user = user_time",
        "    measure system = sys_time",
        "  }",
        "",
        '  metric time { measure mean unit "s" better lower }',
        '  metric user { measure mean unit "s" better lower }',
        '  metric system { measure mean unit "s" better lower }',
        *(
            ["  kpi time { percentile 50 confidence 95% }"]
            if request.rounds >= MIN_KPI_ROUNDS
            else []
        ),
        "",
        f"  design {{ runs {request.rounds} order random{warmup} }}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def workdir_for(spec_path: Path, cwd: Path) -> str:
    """Where the commands run (the directory compare was started in), as the spec says it:
    relative to the spec's directory when the spec is kept, so the pair can move together."""
    spec_dir = spec_path.resolve().parent
    try:
        return os.path.relpath(cwd.resolve(), spec_dir)
    except ValueError:  # another drive (not on POSIX)
        return str(cwd.resolve())
