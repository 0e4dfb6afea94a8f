"""A bundle's manifest read as a stranger's JSON: nested 200,000 deep
(a RecursionError before), nested just under the parser's limit (``str`` of it recursed past
Python's), a ``schema`` that equals 1 without being the integer 1 (``True == 1``), and
hypothesis' manifests: each refused in one line with exit 2, never a traceback (``replicate``
in this process: a traceback is an exception out of ``main``, which fails the test)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlang.app.publish.bundle_archive import check_manifest, extract
from benchlang.errors import UserError
from tests.conftest import cli_here
from tests.test_bundle_fuzz import honest  # noqa: F401 (the published bundle, a fixture)
from tests.test_bundle_trust import members_of, write_bundle

MANIFEST = "probe/manifest.json"


def replicate(bundle: Path, workdir: Path) -> tuple[int, str]:
    args = ["replicate", bundle, "--workdir", workdir, "--analyze-only"]
    status, _out, err = cli_here(args, cwd=workdir.parent)
    return status, err


@functools.cache
def honest_manifest(bundle: Path) -> str:
    """The published bundle's manifest, read once (the fuzz test changes a copy)."""
    return members_of(bundle)[MANIFEST].decode()


def with_manifest(honest: Path, tmp_path: Path, text: bytes, name: str) -> Path:  # noqa: F811
    members = members_of(honest / "p.tar.gz")
    members[MANIFEST] = text
    return write_bundle(tmp_path / f"{name}.tar.gz", members, rehash=False)


def test_a_deep_manifest_is_refused_in_one_line(honest, tmp_path):  # noqa: F811
    for depth in (200_000, 990):
        text = b'{"schema": 1, "files": ' + b"[" * depth + b"]" * depth + b"}"
        status, err = replicate(with_manifest(honest, tmp_path, text, f"d{depth}"), tmp_path / "w")
        assert status == 2 and "Traceback" not in err, err
        assert err.count("\n") == 1 and "manifest.json is nested more than 64 levels" in err, err


def test_a_schema_that_only_equals_1_is_refused(honest, tmp_path):  # noqa: F811
    manifest = json.loads(members_of(honest / "p.tar.gz")[MANIFEST])
    for wrong, shown in ((True, "True"), (1.0, "1.0"), ("1", "1")):
        text = json.dumps({**manifest, "schema": wrong}).encode()
        status, err = replicate(with_manifest(honest, tmp_path, text, shown), tmp_path / "w")
        assert status == 2 and err.count("\n") == 1, err
        assert f"manifest.json has schema {shown}, not 1: not a benchlang bundle" in err, err
    bundle = tmp_path / "p.tar.gz"
    bundle.write_bytes((honest / "p.tar.gz").read_bytes())
    assert replicate(bundle, tmp_path / "w")[0] in (0, 3), "the honest manifest passes"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_manifest_field_of_any_type_is_refused_in_one_line_or_accepted(honest, data):  # noqa: F811
    manifest = json.loads(honest_manifest(honest / "p.tar.gz"))
    key = data.draw(st.sampled_from([*manifest, "files[0]", "files[0].size", "extra"]))
    value = data.draw(json_values)
    if key.startswith("files[0]"):
        entry = dict(manifest["files"][0])
        if key.endswith(".size"):
            entry["size"] = value
        manifest["files"] = [value if key == "files[0]" else entry, *manifest["files"][1:]]
    else:
        manifest[key] = value
    try:
        check_manifest(manifest, Path("x.tar.gz"))
    except UserError as err:
        assert "\n" not in err.message and err.message.startswith("x.tar.gz: manifest.json ")


def test_a_bundle_read_in_process_refuses_deep_json_without_recursing(honest, tmp_path):  # noqa: F811
    text = b"[" * 200_000 + b"]" * 200_000
    bundle = with_manifest(honest, tmp_path, text, "deep")
    try:
        extract(bundle, tmp_path / "w")
    except UserError as err:
        assert "nested more than 64 levels" in err.message
    else:
        raise AssertionError("a 200,000-deep manifest was accepted")


def test_a_deep_plan_or_versions_json_is_no_traceback(honest, tmp_path):  # noqa: F811
    """The members read after the manifest (hashes recomputed, as anyone can): plan.json is
    refused in one line, a versions.json that cannot be read is a note."""
    for name in ("plan.json", "versions.json"):
        members = members_of(honest / "p.tar.gz")
        members[f"probe/{name}"] = b"[" * 200_000 + b"]" * 200_000
        bundle = write_bundle(tmp_path / f"{name}.tar.gz", members, rehash=True)
        status, err = replicate(bundle, tmp_path / f"w-{name}")
        assert "Traceback" not in err, err
        if name == "plan.json":
            assert status == 2 and err.count("\n") == 1 and "plan.json is not JSON" in err, err
        else:
            assert status in (0, 3), err
