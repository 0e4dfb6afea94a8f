"""The sandbox end to end: a published bundle whose command looks for the
escapes of tests/test_sandbox.py, rerun through the real ``benchlang replicate --yes
--sandbox`` with agent variables and a listening socket in its home. Published (unsandboxed)
the command sees and kills a host process; replicated in the sandbox it sees nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bundle_trust import pub  # noqa: F401
from tests.test_sandbox import (
    AGENT_VARIABLES,
    NO_SANDBOX,
    NOBODY,
    OBSERVE,
    as_user,
    can_run_as_nobody,
    host_side,
    start_victim,
)

pytestmark = pytest.mark.skipif(NO_SANDBOX is not None, reason=str(NO_SANDBOX))

SPEC = """benchlang 1
experiment sbx {{
  benchmark look {{
    run "python3 observe.py {args} > observed.json && echo v=1"
    measure v from stdout regex "v=([0-9.]+)"
  }}
  design {{ runs 2 series 1 }}
}}
"""


def benchlang(args, cwd: Path, user: int | None, **env) -> tuple[int, str, str]:
    done = subprocess.run(
        [*as_user(user), sys.executable, "-m", "benchlang", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, start_new_session=True,
        env={**os.environ, **env},
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def nobody_runs_benchlang() -> str | None:
    """Why ``benchlang`` cannot run as nobody here, or None."""
    why = can_run_as_nobody()
    if why:
        return why
    done = subprocess.run([*as_user(NOBODY), sys.executable, "-c", "import benchlang.cli"],
                          capture_output=True, text=True, cwd="/")  # fmt: skip
    if done.returncode != 0:
        return f"nobody cannot run this Python ({sys.executable}: {done.stderr.strip()[-80:]})"
    return None


@pytest.mark.parametrize("user", [None, NOBODY], ids=["as_root", "as_nobody"])
def test_replicate_sandbox_holds_end_to_end(user, tmp_path):
    if user is None and os.geteuid() != 0:
        pytest.skip("the root case needs root (CI runs as root)")
    if user is not None and (why := nobody_runs_benchlang()):
        pytest.skip(why)
    with host_side(owner=user) as side:
        pub = side["home"] / "pub"
        pub.mkdir()
        marker = side["home"] / "escaped-through-proc-root"
        args = " ".join([side["token"][::-1], str(marker), str(side["home"]), side["abstract"]])
        (pub / "observe.py").write_text(OBSERVE)
        (pub / "sbx.bench").write_text(SPEC.format(args=args))
        if user is not None:
            os.chown(pub, user, user)
        status, out, err = benchlang(["run", "sbx.bench", "--store", "s.sqlite", "--quiet"],
                                     pub, user)  # fmt: skip
        assert status == 0, out + err
        published = json.loads((pub / "observed.json").read_text())
        assert published["home_socket"] == "ok", published
        side["victim"].wait(timeout=10)  # unsandboxed, the first trial killed it
        assert marker.exists()
        marker.unlink()  # it wrote through /proc/PID/root
        status, out, err = benchlang(["bundle", "s.sqlite", "sbx.bench", "--include",
                                      "observe.py", "-o", "s.tar.gz"], pub, user)  # fmt: skip
        assert status == 0, out + err
        victim = start_victim(side["token"], user)
        work = side["home"] / "replication"
        work.mkdir()
        if user is not None:
            os.chown(work, user, user)
        try:
            status, out, err = benchlang(
                ["replicate", str(pub / "s.tar.gz"), "--workdir", str(work / "w"), "--yes",
                 "--sandbox"], work, user, HOME=str(side["home"]), **AGENT_VARIABLES,
            )  # fmt: skip
            assert "Traceback" not in err and status in (0, 1, 3), out + err
            assert "sandbox: bubblewrap, read-only but the bundle's directory, network cut" in out
            (observed,) = (work / "w").rglob("observed.json")
            seen = json.loads(observed.read_text())
            assert victim.poll() is None and not marker.exists()
        finally:
            victim.kill()
            victim.wait()
    assert not seen["host_process_visible"] and "kill" not in seen and seen["processes"] <= 12
    assert seen["home_socket"] == "FileNotFoundError"
    assert seen["abstract_socket"] in ("ConnectionRefusedError", "FileNotFoundError")
    assert int(seen["cap_eff"], 16) == 0 and seen["interfaces"] in ([], ["lo"])
    assert not set(seen["environment"]) & set(AGENT_VARIABLES)
    assert seen["write_cwd"] == "ok" and seen["write_home"] != "ok"
    assert Path(observed).is_relative_to(work / "w")


def test_replicate_refuses_where_the_namespaces_are_forbidden(pub, tmp_path):  # noqa: F811
    """Inside a sandbox that forbids further user namespaces (as a container may), ``replicate
    --yes --sandbox`` refuses in one line before running anything: the bundle's setup, which
    creates a file outside, does not run."""
    if os.geteuid() != 0:
        pytest.skip("making the outer namespace needs root here")
    pub["mark"].unlink(missing_ok=True)
    outer = ["bwrap", "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--"]
    done = subprocess.run(
        [*outer, sys.executable, "-m", "benchlang", "replicate", str(pub["root"] / "u.tar.gz"),
         "--workdir", str(tmp_path / "w"), "--yes", "--sandbox"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, start_new_session=True,
    )  # fmt: skip
    if "disable-userns" in done.stderr and "benchlang" not in done.stderr:
        pytest.skip(f"this bwrap cannot disable user namespaces: {done.stderr.strip()}")
    assert done.returncode == 2, done.stdout + done.stderr
    first = done.stderr.strip().splitlines()[0]
    assert first.startswith("benchlang: error: --sandbox: bwrap cannot make a sandbox here")
    assert first.endswith("nothing was run") and "Traceback" not in done.stderr
    assert "rerunning" not in done.stdout and not pub["mark"].exists()
