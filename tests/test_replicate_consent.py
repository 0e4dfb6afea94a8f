"""Nothing of the user's machine before consent (docs/replicate.md): a
stranger's spec that names a file outside its bundle (``nodes from file "/etc/shadow"``)
makes ``replicate`` neither read nor print it before asking; the plan-hash check still
passes on the bundled files and the outside path is listed among what the user approves.
"Not read" is checked with a FIFO: opening one for reading blocks until a writer comes, so
a read would hang the command (the timeout fails the test)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchlang.lang.outside import NOT_READ, NotRead, check_readable, confined_to
from tests.test_bundle_trust import consistent, members_of, pub, write_bundle  # noqa: F401

SECRET = "root:$6$benchlangSECRETHASH$abc:19000:0:99999:7:::"

SSH_SPEC = """benchlang 1
experiment probe {{
  seed 5
  hosts ssh {{ nodes from file "{path}" }}
  factor n in [1, 2]
  benchmark work {{
    run "echo v=0.{{n}}"
    measure v from stdout regex "v=([0-9.]+)"
  }}
  design {{ runs 3 series 2 }}
}}
"""

REQUESTS_SPEC = """benchlang 1
experiment probe {{
  seed 5
  reset "true"
  benchmark work {{
    run "echo v=1 {{version}} {{request}}"
    measure v from stdout regex "v=([0-9.]+)"
  }}
  design {{
    versions {{ control "1" treatment "2" }}
    layout fully_balanced {{ hosts 1 requests 1 repetitions 2 }}
    requests from file "{path}"
  }}
}}
"""


def replicate(bundle: Path, where: Path, *flags: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "replicate", str(bundle), "--workdir",
         str(where / "w"), *flags],
        cwd=where, capture_output=True, text=True, timeout=60, start_new_session=True,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def stranger(pub, tmp_path: Path, spec_text: str) -> Path:  # noqa: F811
    """A fully consistent bundle (spec, plan, store, manifest rewritten) of ``spec_text``."""
    members = consistent(pub["members"], spec_text, tmp_path / "forge")
    return write_bundle(tmp_path / "stranger.tar.gz", members)


@pytest.fixture()
def secret(tmp_path) -> Path:
    path = tmp_path / "shadow"
    path.write_text(SECRET + "\n")
    return path


def test_a_nodes_file_outside_is_not_printed_and_is_listed(pub, tmp_path, secret):  # noqa: F811
    bundle = stranger(pub, tmp_path, SSH_SPEC.format(path=secret))
    status, out, err = replicate(bundle, tmp_path)
    assert SECRET not in out + err and "SECRETHASH" not in out + err
    assert "plan hash: the bundled spec compiles to the plan its manifest states" in out, err
    assert f"outside the bundle, not read: {secret}" in out
    assert "not read before your answer (the run would read them): " + str(secret) in out
    assert status == 2 and "no terminal to ask" in err  # asked; nothing ran
    assert not (tmp_path / "w" / "replication.sqlite").exists()


def test_after_consent_the_run_does_not_print_it_either(pub, tmp_path, secret):  # noqa: F811
    bundle = stranger(pub, tmp_path, SSH_SPEC.format(path=secret))
    status, out, err = replicate(bundle, tmp_path, "--yes")
    assert SECRET not in out + err and "SECRETHASH" not in out + err
    assert "Traceback" not in err and status != 0
    assert "holds a line that is not a host name" in out + err


def test_a_fifo_outside_is_never_opened_before_consent(pub, tmp_path):  # noqa: F811
    fifo = tmp_path / "hosts.fifo"
    os.mkfifo(fifo)
    bundle = stranger(pub, tmp_path, SSH_SPEC.format(path=fifo))
    status, out, err = replicate(bundle, tmp_path)  # a read would block: the timeout fails
    assert f"outside the bundle, not read: {fifo}" in out, out + err
    assert status == 2 and "no terminal to ask" in err


def test_a_relative_path_out_of_the_bundle_is_outside_too(pub, tmp_path, secret):  # noqa: F811
    bundle = stranger(pub, tmp_path, SSH_SPEC.format(path="../../../shadow"))
    status, out, err = replicate(bundle, tmp_path)
    assert SECRET not in out + err
    assert "spec/../../../shadow" in out and "not read" in out, out + err
    assert status == 2


def test_a_plan_shaping_file_outside_is_refused_in_one_line(pub, tmp_path):  # noqa: F811
    fifo = tmp_path / "requests.fifo"
    os.mkfifo(fifo)
    status, out, err = replicate(stranger_requests(pub, tmp_path, fifo), tmp_path)
    assert status == 2 and "Traceback" not in err, out + err
    assert NOT_READ in err and str(fifo) in err


def stranger_requests(pub, tmp_path: Path, fifo: Path) -> Path:  # noqa: F811
    """Forged with a readable requests file, then pointed at the FIFO (the plan names the
    file's requests; the spec's path is all that changes)."""
    real = tmp_path / "requests.txt"
    real.write_text("a\nb\n")
    members = consistent(pub["members"], REQUESTS_SPEC.format(path=real), tmp_path / "forge")
    spec = members["probe/spec/probe.bench"].replace(str(real).encode(), str(fifo).encode())
    members["probe/spec/probe.bench"] = spec
    return write_bundle(tmp_path / "stranger.tar.gz", members)


def test_confinement_follows_links_and_ends_with_the_block(tmp_path):
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "inside.txt").write_text("ok")
    (root / "link").symlink_to(tmp_path / "elsewhere")
    with confined_to(root) as refused:
        check_readable(root / "inside.txt")
        with pytest.raises(NotRead):
            check_readable(root / "link")
        with pytest.raises(NotRead):
            check_readable("/etc/passwd")
    assert refused == [str(root / "link"), "/etc/passwd"]
    check_readable("/etc/passwd")  # outside a block nothing is refused


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_a_sandbox_that_keeps_the_network_says_so(pub, tmp_path, secret):  # noqa: F811
    bundle = stranger(pub, tmp_path, SSH_SPEC.format(path=secret))
    status, out, err = replicate(bundle, tmp_path, "--sandbox")
    kept = "network kept, the hosts are reached over it (so are this machine's abstract unix"
    assert kept in out, out + err
    assert status == 2 and SECRET not in out + err


def test_files_of_the_users_own_hosts_are_read_and_not_listed(pub, tmp_path, secret):  # noqa: F811
    """``--hosts`` is the user's statement: its nodes file (outside the bundle) is read for
    the preview, and the stranger's, replaced away, is not read at all."""
    bundle = stranger(pub, tmp_path, SSH_SPEC.format(path=secret))
    mine = tmp_path / "my-hosts.txt"
    mine.write_text("n1.example.org\n")
    status, out, err = replicate(bundle, tmp_path, "--hosts", f'ssh {{ nodes from file "{mine}" }}')
    assert "on ssh hosts n1.example.org" in out, out + err
    assert f"(outside the bundle, not read: {secret})" in out  # the published spec's check
    assert "not read before your answer" not in out and SECRET not in out + err
    assert status == 2 and "no terminal to ask" in err
