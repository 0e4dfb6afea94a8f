"""`benchlang bundle` and `benchlang replicate` end to end: a real run into a store, its
bundle (byte-identical when made twice, no secrets), then replications through the real CLI
that agree (same program, new noise) or disagree (one configuration slowed down, named).
Values are synthetic and seeded (docs/testing.md): each trial prints a log-normal value from
its plan seed scrambled by $SALT, times $EFFECT_<tool>."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.test_diff import VALUE_AWK

SPEC = """benchlang 1
experiment pub {
  seed 9
  factor tool in ["fast", "slow"]
  benchmark work {
    run "awk -v tool={tool} -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }
  metric v { unit "s" better lower }
  kpi v { percentile 50 confidence 95% }
  variability v { percentile 25 confidence 75% }
  design { runs 5 series 8 }
}
"""
SECRET = "hunter2-never-in-a-bundle"


def cli(args, cwd, **env):
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", *args],
        cwd=cwd, capture_output=True, text=True, timeout=900, start_new_session=True,
        env={**os.environ, "SECRET_TOKEN": SECRET, **env},
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pub")
    (root / "value.awk").write_text(VALUE_AWK)
    (root / "pub.bench").write_text(SPEC)
    status, out, err = cli(["run", "pub.bench", "--store", "pub.sqlite", "--quiet"], root, SALT="1")
    assert status == 0, out + err
    for name in ("a", "b"):
        status, out, err = cli(
            ["bundle", "pub.sqlite", "pub.bench", "--include", "value.awk", "-o", f"{name}.tar.gz"],
            root,
        )
        assert status == 0, out + err
    return root


def test_the_bundle_is_deterministic_complete_and_free_of_secrets(published):
    a, b = (published / n for n in ("a.tar.gz", "b.tar.gz"))
    assert hashlib.sha256(a.read_bytes()).digest() == hashlib.sha256(b.read_bytes()).digest()
    raw = gzip.decompress(a.read_bytes())
    assert SECRET.encode() not in raw
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        names = tar.getnames()
        assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in tar.getmembers())
        manifest = json.loads(tar.extractfile("pub/manifest.json").read())
        for entry in manifest["files"]:
            data = tar.extractfile(f"pub/{entry['name']}").read()
            assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["name"]
    expected = {
        "README.md", "data/store.sqlite", "data/trials.csv", "hosts.json", "plan.json",
        "record.json", "record.md", "record.tex", "spec/pub.bench", "spec/value.awk",
        "versions.json", "manifest.json",
    }  # fmt: skip
    assert {n.removeprefix("pub/") for n in names} == expected
    with tarfile.open(a) as tar:
        versions = json.loads(tar.extractfile("pub/versions.json").read())
    assert {p["name"] for p in versions["plugins"]} >= {"local", "ssh", "hyperfine"}


def test_a_rerun_of_the_same_program_agrees(published, tmp_path):
    status, out, err = cli(["replicate", str(published / "a.tar.gz"), "--workdir", str(tmp_path),
                            "--yes"], tmp_path, SALT="2")  # fmt: skip
    assert status == 0, out + err
    assert "replication: AGREE" in out
    assert out.count("agree: ") == 2 and "new KPIs inside the published score" in out


def test_a_slowed_down_configuration_disagrees_and_is_named(published, tmp_path):
    status, out, err = cli(["replicate", str(published / "a.tar.gz"), "--workdir", str(tmp_path),
                            "--yes"], tmp_path, SALT="3", EFFECT_slow="1.3")  # fmt: skip
    assert status == 1, out + err
    assert "replication: DISAGREE (v work[tool=slow])" in out
    fast = next(line for line in out.splitlines() if line.startswith("v  work[tool=fast]"))
    assert "agree:" in fast


def test_analyze_only_runs_nothing_and_agrees_with_itself(published, tmp_path):
    status, out, err = cli(
        ["replicate", str(published / "a.tar.gz"), "--workdir", str(tmp_path), "--analyze-only"],
        tmp_path,
    )
    assert status == 0, out + err
    assert (
        "re-analysing the published trials" in out
        and not (tmp_path / "replication.sqlite").exists()
    )


def test_a_tampered_bundle_is_refused(published, tmp_path):
    with tarfile.open(published / "a.tar.gz") as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    tampered = tmp_path / "t.tar.gz"
    with tarfile.open(tampered, "w:gz") as tar:
        for member, data in members:
            if member.name == "pub/spec/value.awk":
                data = data.replace(b"0.020", b"0.019")
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    status, out, err = cli(["replicate", str(tampered), "--workdir", str(tmp_path / "w")], tmp_path)
    assert status == 2
    assert "problem: spec/value.awk differs from its published SHA-256" in out
    assert "does not match its manifest" in err and "Traceback" not in err


def test_hosts_replaces_the_published_hosts_and_matches_by_label(published, tmp_path):
    status, out, err = cli(
        ["replicate", str(published / "a.tar.gz"), "--workdir", str(tmp_path),
         "--hosts", "local { slots 2 }", "--yes"],
        tmp_path, SALT="2",
    )  # fmt: skip
    assert status == 0, out + err
    assert "runs on 'hosts local { slots 2 }'" in out
    assert "plan differs from the published one" in out and "replication: AGREE" in out
    rewritten = (tmp_path / "pub" / "spec" / "pub.hosts.bench").read_text()
    assert "hosts local { slots 2 }" in rewritten and rewritten.count("hosts") == 1
