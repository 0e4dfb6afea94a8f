"""A bundle is code from a stranger (docs/replicate.md): `replicate` checks the plan
hash, shows every command, asks, and only then runs; signatures, bounds and the sandbox. Each
test runs the real CLI on a real published run; a marker file outside the bundle tells
whether the bundle's setup ran. Subprocesses start a new session: no terminal to ask on."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import pty
import select
import socket
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.test_bundle_replicate import cli

SPEC = """benchlang 1
experiment probe {{
  seed 5
  setup "touch {mark}"
  factor n in [1, 2]
  benchmark work {{
    run "echo v=0.{{n}}"
    measure v from stdout regex "v=([0-9.]+)"
  }}
  design {{ runs 3 series 2 }}
}}
"""


def members_of(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def write_bundle(path: Path, members: dict[str, bytes], *, rehash: bool = True) -> Path:
    """``members`` as a bundle; with ``rehash`` the manifest's hashes and sizes made to fit
    (a manifest is self-attested: anyone can do this)."""
    top = next(iter(members)).split("/")[0]
    if rehash:
        manifest = json.loads(members[f"{top}/manifest.json"])
        for entry in manifest["files"]:
            data = members[f"{top}/{entry['name']}"]
            entry["size"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
        members[f"{top}/manifest.json"] = json.dumps(manifest).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(raw.getvalue()))
    return path


def consistent(members: dict[str, bytes], spec_text: str, where: Path) -> dict[str, bytes]:
    """A fully consistent tampered bundle: spec, plan, the store's plan, manifest and hashes
    all rewritten."""
    from benchlang.app.plan import plan_offline
    from benchlang.app.spec import compile_spec

    where.mkdir()
    spec = where / "probe.bench"
    spec.write_text(spec_text)
    plan = plan_offline(compile_spec(spec).experiment, spec, ("local",))
    out = dict(members)
    out["probe/spec/probe.bench"] = spec_text.encode()
    out["probe/plan.json"] = plan.json_text().encode()
    manifest = json.loads(out["probe/manifest.json"])
    store = where / "store.sqlite"
    store.write_bytes(out["probe/data/store.sqlite"])
    with sqlite3.connect(store) as db:
        for (table,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        ).fetchall():
            columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            if "plan_hash" in columns:
                db.execute(f"UPDATE {table} SET plan_hash = ?", (plan.hash,))
        db.execute("UPDATE plans SET plan_json = ?, spec_text = ?", (plan.json_text(), spec_text))
    db.close()
    out["probe/data/store.sqlite"] = store.read_bytes()
    manifest["plan_hash"] = plan.hash
    out["probe/manifest.json"] = json.dumps(manifest).encode()
    out.pop("probe/manifest.json.sig", None)
    return out


@pytest.fixture(scope="module")
def pub(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("probe")
    mark = root / "setup-ran"
    (root / "probe.bench").write_text(SPEC.format(mark=mark))
    status, out, err = cli(["run", "probe.bench", "--store", "p.sqlite", "--quiet"], root)
    assert status == 0 and mark.exists(), out + err
    for key in ("key", "other"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / key)],
                       check=True)  # fmt: skip
    status, out, err = cli(["bundle", "p.sqlite", "probe.bench", "-o", "s.tar.gz",
                            "--sign", "key"], root)  # fmt: skip
    assert status == 0, out + err
    fingerprint = out.split("signed by ")[1].split()[0]
    public = (root / "key.pub").read_text().split()
    (root / "allowed").write_text(f'me namespaces="benchlang-bundle" {public[0]} {public[1]}\n')
    members = members_of(root / "s.tar.gz")
    unsigned = dict(members)
    unsigned.pop("probe/manifest.json.sig")
    write_bundle(root / "u.tar.gz", unsigned, rehash=False)
    plan_hash = json.loads(members["probe/manifest.json"])["plan_hash"]
    return {"root": root, "mark": mark, "fingerprint": fingerprint, "members": members,
            "out": out, "plan_hash": plan_hash}  # fmt: skip


def replicate(pub, bundle, tmp_path, *flags, **env):
    pub["mark"].unlink(missing_ok=True)
    return cli(["replicate", str(bundle), "--workdir", str(tmp_path / "w"), *flags], tmp_path,
               **env)  # fmt: skip


def refused(status, out, err, *, ran_nothing: Path) -> str:
    """The one-line refusal, after checking that nothing ran."""
    assert status == 2, out + err
    assert "Traceback" not in err and not ran_nothing.exists()
    lines = err.strip().splitlines()
    assert len(lines) <= 2 and lines[0].startswith("benchlang: error: "), err
    return lines[0]


def test_bundle_sign_prints_the_fingerprint_and_writes_no_private_key(pub):
    listed = subprocess.run(["ssh-keygen", "-l", "-f", str(pub["root"] / "key.pub")],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert pub["fingerprint"] == listed.split()[1]
    private = (pub["root"] / "key").read_text().splitlines()[1:-1]
    raw = gzip.decompress((pub["root"] / "s.tar.gz").read_bytes())
    assert not any(line.encode() in raw for line in private)
    assert b"-----BEGIN SSH SIGNATURE-----" in pub["members"]["probe/manifest.json.sig"]


def test_analyze_only_runs_nothing(pub, tmp_path):
    status, out, err = replicate(pub, pub["root"] / "u.tar.gz", tmp_path, "--analyze-only")
    assert status in (0, 3) and "re-analysing the published trials" in out, out + err
    assert not pub["mark"].exists() and not (tmp_path / "w" / "replication.sqlite").exists()


def test_an_honest_bundle_shows_its_commands_and_without_a_terminal_runs_nothing(pub, tmp_path):
    status, out, err = replicate(pub, pub["root"] / "u.tar.gz", tmp_path)
    line = refused(status, out, err, ran_nothing=pub["mark"])
    assert "no terminal to ask" in line and "--yes" in err
    assert f"plan {pub['plan_hash']}: compare it with the paper's" in out
    assert f"setup     touch {pub['mark']}" in out
    assert "run work  echo v=0.1" in out and "run work  echo v=0.2" in out
    assert "it would run 12 trials on local hosts local, about " in out


def _pty_replicate(pub, tmp_path, answer: str) -> tuple[int, str]:
    pub["mark"].unlink(missing_ok=True)
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "replicate", str(pub["root"] / "u.tar.gz"),
         "--workdir", str(tmp_path / "w")],
        stdin=follower, stdout=follower, stderr=follower, cwd=tmp_path, start_new_session=True,
    )  # fmt: skip
    os.close(follower)
    seen, answered = b"", False
    while True:
        ready, _, _ = select.select([leader], [], [], 300)
        assert ready, seen.decode(errors="replace")
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"[y/N]" in seen:
            os.write(leader, answer.encode() + b"\n")
            answered = True
    os.close(leader)
    return child.wait(timeout=300), seen.decode(errors="replace")


def test_consent_is_asked_on_the_terminal(pub, tmp_path):
    status, seen = _pty_replicate(pub, tmp_path, "n")
    assert status == 2 and "not confirmed: nothing was run" in seen and not pub["mark"].exists()
    status, seen = _pty_replicate(pub, tmp_path, "y")
    ran = pub["mark"].exists() and (tmp_path / "w" / "replication.sqlite").exists()
    assert ran and status in (0, 3), (status, seen)  # the terminal's last output may be lost


def test_a_changed_setup_with_recomputed_hashes_is_refused_by_the_plan_hash(pub, tmp_path):
    evil = tmp_path / "evil"
    members = dict(pub["members"])
    members.pop("probe/manifest.json.sig")
    spec = members["probe/spec/probe.bench"].decode()
    members["probe/spec/probe.bench"] = spec.replace(str(pub["mark"]), str(evil)).encode()
    bundle = write_bundle(tmp_path / "t.tar.gz", members)
    status, out, err = replicate(pub, bundle, tmp_path, "--yes")
    line = refused(status, out, err, ran_nothing=evil)
    assert "compiles to plan" in line and "refused before running anything" in line
    assert "rerunning" not in out


def test_a_fully_consistent_tampered_bundle(pub, tmp_path):
    evil = tmp_path / "evil"
    spec = pub["members"]["probe/spec/probe.bench"].decode().replace(str(pub["mark"]), str(evil))
    members = consistent(pub["members"], spec, tmp_path / "attacker")
    bundle = write_bundle(tmp_path / "t.tar.gz", members)
    # without evidence from the paper, the reader is shown the changed command and asked
    status, out, err = replicate(pub, bundle, tmp_path)
    assert "no terminal to ask" in refused(status, out, err, ran_nothing=evil)
    assert f"setup     touch {evil}" in out
    # the plan hash from the paper
    status, out, err = replicate(pub, bundle, tmp_path, "--plan-hash", pub["plan_hash"], "--yes")
    assert "given with --plan-hash" in refused(status, out, err, ran_nothing=evil)
    # a signature: unsigned, the old signature kept, or the attacker's own
    signer = ("--signer", pub["fingerprint"])
    status, out, err = replicate(pub, bundle, tmp_path, *signer, "--yes")
    assert "is not signed" in refused(status, out, err, ran_nothing=evil)
    kept = dict(members, **{"probe/manifest.json.sig": pub["members"]["probe/manifest.json.sig"]})
    status, out, err = replicate(pub, write_bundle(tmp_path / "k.tar.gz", kept, rehash=False),
                                 tmp_path, *signer, "--yes")  # fmt: skip
    assert "does not match the manifest" in refused(status, out, err, ran_nothing=evil)
    from benchlang.app.publish.signing import sign

    resigned = dict(members)
    resigned["probe/manifest.json.sig"] = sign(members["probe/manifest.json"],
                                               pub["root"] / "other")[0]  # fmt: skip
    foreign = write_bundle(tmp_path / "f.tar.gz", resigned, rehash=False)
    status, out, err = replicate(pub, foreign, tmp_path, *signer, "--yes")
    assert f"not {pub['fingerprint']}: refused" in refused(status, out, err, ran_nothing=evil)
    allowed = ("--allowed-signers", str(pub["root"] / "allowed"))
    status, out, err = replicate(pub, foreign, tmp_path, *allowed, "--yes")
    assert "which is not in" in refused(status, out, err, ran_nothing=evil)


def test_a_signed_bundle_verifies(pub, tmp_path):
    for flags in (("--signer", pub["fingerprint"]),
                  ("--allowed-signers", str(pub["root"] / "allowed"))):  # fmt: skip
        status, out, err = replicate(pub, pub["root"] / "s.tar.gz", tmp_path, *flags,
                                     "--analyze-only")  # fmt: skip
        assert status in (0, 3), out + err
        assert f"signature: good, by {pub['fingerprint']}" in out
    status, out, err = replicate(pub, pub["root"] / "s.tar.gz", tmp_path, "--analyze-only")
    assert "not verified (pass --signer or --allowed-signers to verify)" in out


def test_limits_refuse_with_their_numbers(pub, tmp_path):
    many = {f"probe/f{i}": b"" for i in range(10_001)}
    bundle = write_bundle(tmp_path / "many.tar.gz", many, rehash=False)
    status, out, err = replicate(pub, bundle, tmp_path)
    assert "more than 10,000 members" in refused(status, out, err, ran_nothing=tmp_path / "w")
    bomb = write_bundle(tmp_path / "bomb.tar.gz", {"probe/zeros": bytes(64 << 20)}, rehash=False)
    status, out, err = replicate(pub, bomb, tmp_path)
    line = refused(status, out, err, ran_nothing=tmp_path / "w")
    assert "compression bomb" in line and "more than 200" in line


ESCAPE = """import socket, sys
failed = 0
for path in {outside!r}:
    try:
        open(path, "w").write("escaped")
    except OSError as err:
        print("write outside:", err, file=sys.stderr); failed = 1
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
except OSError as err:
    print("connect:", err, file=sys.stderr); failed = 1
print("v=1")
sys.exit(failed)
"""
ESCAPE_SPEC = """benchlang 1
experiment escape {
  benchmark work {
    run "python3 escape.py"
    measure v from stdout regex "v=([0-9.]+)"
  }
  design { runs 2 series 1 }
}
"""


@pytest.fixture(scope="module")
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(16)
    yield server
    server.close()


def _pending(server: socket.socket) -> int:
    server.setblocking(False)
    n = 0
    while True:
        try:
            server.accept()[0].close()
        except BlockingIOError:
            return n
        n += 1


def test_the_sandbox_blocks_a_write_outside_and_a_connection_out(tmp_path, listener):
    """Outside the bundle's directory: a path under /tmp (the sandbox's /tmp is its own) and
    one in the home directory (read-only); the connection goes to a listener of this test."""
    outside = [tmp_path / "outside.txt", Path.home() / f".benchlang-escape-{os.getpid()}"]
    pub = tmp_path / "pub"
    pub.mkdir()
    (pub / "escape.py").write_text(ESCAPE.format(outside=[str(p) for p in outside],
                                                 port=listener.getsockname()[1]))  # fmt: skip
    (pub / "escape.bench").write_text(ESCAPE_SPEC)
    try:
        status, out, err = cli(["run", "escape.bench", "--store", "e.sqlite", "--quiet"], pub)
        assert status == 0 and all(p.exists() for p in outside), out + err  # unsandboxed
        assert _pending(listener) == 2
        status, out, err = cli(["bundle", "e.sqlite", "escape.bench", "--include", "escape.py",
                                "-o", "e.tar.gz"], pub)  # fmt: skip
        assert status == 0, out + err
        for path in outside:
            path.unlink()
        status, out, err = cli(["replicate", "pub/e.tar.gz", "--workdir", "w", "--yes",
                                "--sandbox"], tmp_path)  # fmt: skip
        assert "sandbox: bubblewrap, read-only but the bundle's directory, network cut" in out
        assert "Traceback" not in err and not any(p.exists() for p in outside), out + err
        assert _pending(listener) == 0
    finally:
        outside[1].unlink(missing_ok=True)
    with sqlite3.connect(tmp_path / "w" / "replication.sqlite") as db:
        rows = db.execute("SELECT status, stderr_tail FROM trials").fetchall()
    # its first round (one trial) failed throughout: the rerun stopped
    assert len(rows) == 1, out + err
    for status, tail in rows:
        text = bytes(tail).decode()
        assert status == "failed" and "write outside: [Errno 30] Read-only file system" in text
        assert "connect: [Errno 111] Connection refused" in text  # no listener in its network


def test_the_sandbox_refuses_when_bwrap_is_missing(pub, tmp_path):
    status, out, err = replicate(pub, pub["root"] / "u.tar.gz", tmp_path, "--yes", "--sandbox",
                                 PATH=str(tmp_path))  # fmt: skip
    line = refused(status, out, err, ran_nothing=pub["mark"])
    assert "bwrap (bubblewrap) is not installed" in line and "nothing was run" in line
    assert "rerunning" not in out


def test_a_bundle_of_an_earlier_store_schema_replicates(pub, tmp_path):
    """A bundle published before a store schema change: its extracted store is migrated in
    the working copy (said in a note), the published trials analysed as before."""
    from benchlang.run.store import SCHEMA_VERSION
    from tests.store_versions import downgrade

    members = {k: v for k, v in pub["members"].items() if not k.endswith(".sig")}
    store = tmp_path / "old.sqlite"
    store.write_bytes(members["probe/data/store.sqlite"])
    downgrade(store, 6)
    members["probe/data/store.sqlite"] = store.read_bytes()
    bundle = write_bundle(tmp_path / "old.tar.gz", members)
    status, out, err = replicate(pub, bundle, tmp_path, "--analyze-only")
    assert status in (0, 3) and "re-analysing the published trials" in out, out + err
    assert (
        f"note: the bundle's store has store schema 6: migrated to schema {SCHEMA_VERSION} in "
        "the working copy (12 trials compared value by value; the bundle is unchanged)"
    ) in out
    assert "replication: " in out and not pub["mark"].exists()
    assert members_of(bundle)["probe/data/store.sqlite"] == members["probe/data/store.sqlite"]
