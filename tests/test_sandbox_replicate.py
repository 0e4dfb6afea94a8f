"""The sandbox end to end (issue 49 item 1): a published bundle whose command looks for the
escapes of tests/test_sandbox.py, rerun through the real ``benchlang replicate --yes
--sandbox`` with agent variables and a listening socket in its home. Published (unsandboxed)
the command sees and kills a host process; replicated in the sandbox it sees nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bundle_replicate import cli
from tests.test_sandbox import AGENT_VARIABLES, OBSERVE, host_side

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

SPEC = """benchlang 1
experiment sbx {{
  benchmark look {{
    run "python3 observe.py {args} > observed.json && echo v=1"
    measure v from stdout regex "v=([0-9.]+)"
  }}
  design {{ runs 2 series 1 }}
}}
"""


def test_replicate_sandbox_holds_end_to_end(tmp_path):
    with host_side() as side:
        pub = side["home"] / "pub"
        pub.mkdir()
        marker = side["home"] / "escaped-through-proc-root"
        args = " ".join([side["token"][::-1], str(marker), str(side["home"]), side["abstract"]])
        (pub / "observe.py").write_text(OBSERVE)
        (pub / "sbx.bench").write_text(SPEC.format(args=args))
        status, out, err = cli(["run", "sbx.bench", "--store", "s.sqlite", "--quiet"], pub)
        assert status == 0, out + err
        published = json.loads((pub / "observed.json").read_text())
        assert published["home_socket"] == "ok", published
        side["victim"].wait(timeout=10)  # unsandboxed, the first trial killed it
        assert marker.exists()
        marker.unlink()  # it wrote through /proc/PID/root
        status, out, err = cli(["bundle", "s.sqlite", "sbx.bench", "--include", "observe.py",
                                "-o", "s.tar.gz"], pub)  # fmt: skip
        assert status == 0, out + err
        victim = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)", side["token"]],
            start_new_session=True,
        )
        try:
            status, out, err = cli(
                ["replicate", str(pub / "s.tar.gz"), "--workdir", str(tmp_path / "w"), "--yes",
                 "--sandbox"], tmp_path, HOME=str(side["home"]), **AGENT_VARIABLES,
            )  # fmt: skip
            assert "Traceback" not in err and status in (0, 1, 3), out + err
            assert "sandbox: bubblewrap, read-only but the bundle's directory, network cut" in out
            (observed,) = (tmp_path / "w").rglob("observed.json")
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
    assert os.environ.get("HOME") != str(side["home"])  # the test's own home untouched
    assert Path(observed).is_relative_to(tmp_path / "w")
