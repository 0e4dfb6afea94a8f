"""Stores and files a page's sessions read, prepared before its first session (the directive
``<!-- prepare: NAME -->`` above a fence; docs/testing.md). They are the real plans of the
pages' own specs, written through the store's public API with seeded values
(``benchlang.testing.synthetic``), so a page that queries a store shows output that is the
same on every machine, while the commands, the schema and the queries are the real ones.
Specs a page shows with ``$ cat NAME`` or as a ``file:`` block are taken from that page.

``sqlite3`` sessions run through the ``sqlite3`` command-line shell. ``.ci/run`` does not
install it, so where it is absent ``sqlite3_standin()`` puts a stand-in on the PATH: Python's
``sqlite3`` module running the query and printing in the shell's formats (list, the default;
``-csv``; ``-column``, with ``-header``), the part of the shell the pages use.
tests/test_docs.py checks that the stand-in prints what the shell prints where both exist.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchlang.app.plan import build_plan
from benchlang.plan.plan import ORDER_KINDS, Plan
from benchlang.run.store import Store
from benchlang.testing.synthetic import synthetic_store
from tests.docs_runs import PREPARE_RUNS

ROOT = Path(__file__).resolve().parents[1]
FACTS = {"cpu_model": "AMD EPYC", "cores": "2", "kernel": "Linux 6.18.44"}


def _page_file(page: str, name: str) -> str:
    """The text of file ``name`` as ``page`` shows it (``$ cat NAME`` or ``file: NAME``)."""
    from tests.docs_sessions import blocks

    for block in blocks(page):
        if block.directives.get("file") == name:
            return "\n".join(block.lines) + "\n"
        for command in block.commands() if block.session else []:
            if command.text == f"cat {name}":
                return "\n".join(command.expected).rstrip("\n") + "\n"
    raise LookupError(f"{page} shows no file {name}")


def _rounds(store: Path, plan: Plan, reset: str = "none") -> None:
    """The ``rounds`` rows a run writes: one per round, its host, order and permutation."""
    with Store(store, create=True) as s:
        for r in range(int(plan.trial_round.max()) + 1):
            trials = np.flatnonzero(plan.trial_round == r)
            trials = trials[np.argsort(plan.trial_position[trials], kind="stable")]
            kind = ORDER_KINDS[int(plan.round_order[r])]
            host = plan.hosts[int(plan.trial_host[trials[0]])]
            permutation = [int(plan.trial_configuration[t]) for t in trials]
            start = 1_700_000_000.0 + float(trials[0])
            s.record_round(plan.hash, r, host, kind, permutation, start, start + 1, reset)


def _compressors(cwd: Path) -> None:
    """c.sqlite: specs/compressors.bench, times by tool and level with a seeded spread."""
    speed = {"gzip": 0.02, "bzip2": 0.07, "xz": 0.15}
    ratio = {"gzip": 0.41, "bzip2": 0.3, "xz": 0.34}

    def value(plan: Plan, t: int) -> dict[str, float]:
        levels = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
        tool, level = levels["tool"], int(levels["level"])
        rng = np.random.default_rng(int(plan.trial_seed[t]))
        time = speed[tool] * (1 + level / (3 if tool == "xz" else 9)) * rng.lognormal(0, 0.15)
        size = 1_200_000 * ratio[tool] * (1.1 - level / 60)
        return {"time": round(time, 6), "cpu": round(0.9 * time, 6), "size": int(size)}

    spec = cwd / "specs" / "compressors.bench"
    plan = synthetic_store(spec, cwd / "c.sqlite", value, facts={"local": FACTS})
    _rounds(cwd / "c.sqlite", plan)


def _sorting(cwd: Path) -> None:
    """s.sqlite: specs/sorting.bench, a raw series of 60 repetitions per trial."""

    def value(plan: Plan, t: int) -> dict[str, np.ndarray]:
        levels = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
        n = int(levels["n"])
        base = n / 1000 * (0.08 if levels["impl"] == "heapsort" else 0.02)
        rng = np.random.default_rng(int(plan.trial_seed[t]))
        return {"rep": np.round(base * rng.lognormal(0, 0.1, 60), 5)}

    spec = cwd / "specs" / "sorting.bench"
    plan = synthetic_store(spec, cwd / "s.sqlite", value, facts={"local": FACTS})
    _rounds(cwd / "s.sqlite", plan)


def _layout_store(
    spec: Path, store: Path, metric: str, scale: float, control: str, host_batch: float = 0.0
) -> None:
    """A two-slot layout run of ``spec``: seeded log-normal values with a request and a host
    effect, a host x batch effect of SD ``host_batch`` (log scale), the treatment 3% faster
    than ``control``."""
    plan = build_plan(spec).plan
    requests = sorted({dict(c.levels)["request"] for c in plan.configurations})

    def value(plan: Plan, t: int) -> dict[str, float]:
        levels = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
        rng = np.random.default_rng(int(plan.trial_seed[t]))
        host, batch = int(plan.trial_host[t]), int(plan.trial_round[t])
        request = requests.index(levels["request"]) / max(len(requests), 1)
        shift = np.random.default_rng(1000 + batch).normal(0, host_batch)
        effect = 0.04 * host + 0.3 * request + shift
        version = 0.0 if levels["version"] == control else -0.03
        return {metric: round(scale * np.exp(effect + version + rng.normal(0, 0.05)), 6)}

    facts = {f"local:{i}": FACTS for i in range(2)}
    synthetic_store(spec, store, value, facts=facts)
    _rounds(store, plan, reset="ok")


def _ab(cwd: Path) -> None:
    """ab.sqlite: the A/B layout of docs/ab-designs.md (ab.bench), Python start-ups."""
    (cwd / "ab.bench").write_text(_page_file("docs/ab-designs.md", "ab.bench"))
    _layout_store(cwd / "ab.bench", cwd / "ab.sqlite", "time", 0.8, "control")


def _ab_pilots(cwd: Path) -> None:
    """ab.sqlite, ab24.sqlite (ab.bench with 24 requests per version from a pool of 24 read
    from a file) and ab-layout.sqlite (specs/ab-layout.bench): docs/ab-designs.md's pilots."""
    _ab(cwd)
    ab24 = _page_file("docs/ab-designs.md", "ab.bench").replace("requests 4 ", "requests 24 ")
    pool = 'requests ["a", "b", "c", "d", "e"]'
    (cwd / "ab24.bench").write_text(ab24.replace(pool, 'requests from file "requests24.txt"'))
    (cwd / "requests24.txt").write_text("".join(f"r{i}\n" for i in range(24)))
    _layout_store(cwd / "ab24.bench", cwd / "ab24.sqlite", "time", 0.8, "control")
    spec = cwd / "specs" / "ab-layout.bench"
    _layout_store(spec, cwd / "ab-layout.sqlite", "cpu", 0.4, "old", host_batch=0.05)


def _failures(cwd: Path) -> None:
    """f.sqlite and sf.sqlite: real runs of docs/diagnostics.md's fail.bench (a trial that
    exits 3, one that times out, one whose output does not match) and setupfail.bench (a
    setup that fails); their failures are the same on every machine."""
    for name, store in (("fail.bench", "f.sqlite"), ("setupfail.bench", "sf.sqlite")):
        (cwd / name).write_text(_page_file("docs/diagnostics.md", name))
        subprocess.run(
            [sys.executable, "-m", "benchlang", "run", name, "--store", store, "-q", "-i"],
            cwd=cwd,
            capture_output=True,
            check=False,
        )


def _before_after(cwd: Path) -> None:
    """before.sqlite and after.sqlite for docs/replicate.md's ``benchlang diff``: the spec of
    tests/test_diff.py twice, log-normal values (2% spread) with fresh noise in the second,
    where ``work[tool=slow]`` is 10% slower."""
    from tests.test_diff import SPEC

    (cwd / "pr.bench").write_text(SPEC)
    for store, salt, slow in (("before", 1, 1.0), ("after", 2, 1.10)):

        def value(plan: Plan, t: int, salt: int = salt, slow: float = slow) -> dict[str, float]:
            tool = dict(plan.configurations[int(plan.trial_configuration[t])].levels)["tool"]
            z = np.random.default_rng([int(plan.trial_seed[t]), salt]).normal()
            base = 0.010 if tool == "fast" else 0.020 * slow
            return {"v": base * float(np.exp(0.02 * z))}

        synthetic_store(cwd / "pr.bench", cwd / f"{store}.sqlite", value, facts={"local": FACTS})


def _published(cwd: Path) -> None:
    """The published run of ``_replication`` and an ed25519 key pair ``key`` (``ssh-keygen``),
    for docs/replicate.md's signed bundle."""
    if not (cwd / "pub.sqlite").exists():
        _replication(cwd)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(cwd / "key")],
        check=True,
        capture_output=True,
    )


def _replication(cwd: Path) -> None:
    """pub.benchlang.tar.gz: a real run of the spec of tests/test_bundle_replicate.py (its
    value.awk prints seeded log-normal values, SALT=1), bundled, for docs/replicate.md."""
    import os

    from tests.test_bundle_replicate import SPEC, VALUE_AWK

    (cwd / "pub.bench").write_text(SPEC)
    (cwd / "value.awk").write_text(VALUE_AWK)
    env = {**os.environ, "SALT": "1"}
    for args in (
        ["run", "pub.bench", "--store", "pub.sqlite", "--quiet"],
        [
            "bundle",
            "pub.sqlite",
            "pub.bench",
            "--include",
            "value.awk",
            "-o",
            "pub.benchlang.tar.gz",
        ],
    ):
        subprocess.run(
            [sys.executable, "-m", "benchlang", *args], cwd=cwd, env=env, capture_output=True
        )


def store_examples(cwd: Path) -> None:
    """The stores docs/store.md queries."""
    _compressors(cwd)
    _sorting(cwd)
    _ab(cwd)
    _failures(cwd)


PREPARE: dict[str, Callable[[Path], None]] = {
    "store-examples": store_examples,
    "ab": _ab,
    "ab-pilots": _ab_pilots,
    "before-after": _before_after,
    "published": _published,
    "replication": _replication,
    **PREPARE_RUNS,
}


_STANDIN = '''\
"""sqlite3 stand-in for the docs test (tests/docs_stores.py): the query with Python's sqlite3
module, printed in the shell's list (default), -csv or -column format, -header as asked."""
import csv, sqlite3, sys

args = sys.argv[1:]
flags = {a for a in args if a.startswith("-")}
path, sql = [a for a in args if not a.startswith("-")]
db = sqlite3.connect(path)


def text(v):
    if v is None:
        return ""
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, float):  # the shell's "%!.15g": a decimal point always
        s = "%.15g" % v
        mantissa, e, exponent = s.partition("e")
        return mantissa + ("" if "." in mantissa else ".0") + e + exponent
    return str(v)


for statement in [s for s in sql.split(";") if s.strip()]:
    cur = db.execute(statement)
    rows = [[text(v) for v in row] for row in cur.fetchall()]
    names = [d[0] for d in cur.description or []]
    header = "-header" in flags
    if "-csv" in flags:
        out = csv.writer(sys.stdout, lineterminator="\\n")
        for row in ([names] if header and rows else []) + rows:
            out.writerow(row)
    elif "-column" in flags:
        if not rows:
            continue
        widths = [max(len(x) for x in col) for col in zip(names, *rows)]
        lines = ([names, ["-" * w for w in widths]] if header else []) + rows
        for row in lines:
            print("  ".join(x.ljust(w) for x, w in zip(row, widths)))
    else:
        for row in ([names] if header and rows else []) + rows:
            print("|".join(row))
'''


def sqlite3_standin(bin_dir: Path, force: bool = False) -> Path | None:
    """A ``sqlite3`` in ``bin_dir`` when the shell is not installed (or ``force``): the
    directory to put first on the PATH, else None."""
    if shutil.which("sqlite3") and not force:
        return None
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "sqlite3"
    script.write_text(f"#!{sys.executable}\n{_STANDIN}")
    script.chmod(0o755)
    return bin_dir
