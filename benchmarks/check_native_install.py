"""The native build at install, end to end: a fresh virtual environment, ``pip install .``,
``pip install -e .`` (the README's first command) and ``pip install .`` with no compiler; then,
with no C compiler on PATH and ``BENCHLANG_CC`` unset, which builds benchlang loads and whether
the quickstart runs. Prints the install's note lines and a table (docs/measures.md).

    python benchmarks/check_native_install.py [--keep DIR]

Needs network access to the package index (or a pip cache) for benchlang's dependencies; the
first install takes a minute or two, the others reuse the environment's dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPILERS = re.compile(r"^(.*-)?(cc|gcc|g\+\+|c\+\+|clang|clang\+\+|tcc|c89|c99|cpp)(-[\d.]+)?$")
PROBE = """
import json
from benchlang.backends.launcher import launcher
from benchlang.stats._kernels import native
lib = native()
print(json.dumps({"launcher": launcher().path or "none: " + launcher().reason,
                  "kernels": lib._name if lib else "none: the numpy forms"}))
"""
MODES = {
    "pip install . (the pure wheel)": ([], {}),
    "pip install . (a platform wheel)": ([], {"BENCHLANG_PLATFORM_WHEEL": "1"}),
    "pip install -e .": (["-e"], {}),
}


def bin_without_compilers(directory: Path) -> Path:
    """A directory of links to every program on PATH except C compilers."""
    directory.mkdir(parents=True, exist_ok=True)
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = directory / entry.name
            if COMPILERS.match(entry.name) or link.exists() or not os.access(entry.path, os.X_OK):
                continue
            link.symlink_to(entry.path)
    return directory


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="build the environment here and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="benchlang-install-"))
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    base = {k: v for k, v in os.environ.items() if k not in ("BENCHLANG_CC", "BENCHLANG_NATIVE")}
    nocc = {**base, "PATH": f"{venv / 'bin'}{os.pathsep}{bin_without_compilers(work / 'bin')}"}
    nocc["XDG_CACHE_HOME"] = str(work / "cache")
    assert shutil.which("cc", path=nocc["PATH"]) is None
    rows = []
    for mode, (flags, extra) in MODES.items():
        started = time.perf_counter()
        done = run(
            [str(venv / "bin/python"), "-m", "pip", "install", "-v", "--force-reinstall",
             *(["--no-deps"] if rows else []), *flags, str(ROOT)],
            {**base, **extra},
        )  # fmt: skip
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
            return 1
        log = (done.stdout + done.stderr).splitlines()
        print(f"== {mode}  ({seconds:.0f} s)")
        for line in log:
            if "benchlang: " in line or "Created wheel for benchlang" in line:
                print("  ", line.strip())
        shutil.rmtree(work / "cache", ignore_errors=True)
        found = json.loads(run([str(venv / "bin/python"), "-c", PROBE], nocc, work).stdout)
        quick = work / "quickstart"
        shutil.rmtree(quick, ignore_errors=True)
        quick.mkdir()
        shutil.copy(ROOT / "specs/quickstart.bench", quick)
        started = time.perf_counter()
        ran = run([str(venv / "bin/benchlang"), "run", "quickstart.bench", "-q"], nocc, quick)
        compiled = sorted(p.name for p in (work / "cache/benchlang").glob("*-*-*"))
        rows.append((mode, found, ran.returncode, time.perf_counter() - started, compiled))
    print("\nwith no C compiler on PATH, BENCHLANG_CC unset, an empty cache:")
    print("| install | launcher used | kernels used | quickstart | built at first use |")
    print("| --- | --- | --- | --- | --- |")
    for mode, found, status, seconds, compiled in rows:
        shown = {
            k: v.replace(str(venv), "VENV").replace(str(ROOT), "SRC") for k, v in found.items()
        }
        print(
            f"| {mode} | {shown['launcher']} | {shown['kernels']} | exit {status}, {seconds:.0f} s"
            f" | {', '.join(compiled) or 'nothing'} |"
        )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
