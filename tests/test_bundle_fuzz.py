"""Hostile and broken bundles: a seeded corpus of a few hundred, made from a
real published bundle by truncation, flipped bytes, links, devices, FIFOs, traversal, two
top directories, compression bombs (in a member, in a PAX header), huge declared sizes, duplicate and missing members,
wrong JSON types in the manifest, plan.json and versions.json, escaping manifest paths, a
broken spec and a corrupt store (these last with the manifest's hashes recomputed, so the
checks after the manifest's are reached). Each goes through ``benchlang replicate`` in one
child process without a terminal; none may end in a traceback, and every one is refused
(exit 2) with a few lines at most. ``--analyze-only`` bundles that pass every check are
re-analysed (exit 0 or 3)."""

from __future__ import annotations

import gzip
import io
import json
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.test_bundle_replicate import cli
from tests.test_bundle_trust import SPEC, members_of, write_bundle

DRIVER = r"""
import contextlib, io, json, sys, traceback
from benchlang.cli import main
out = []
for line in sys.stdin:
    bundle, workdir, *flags = json.loads(line)
    stdout, stderr = io.StringIO(), io.StringIO()
    kind = None
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = main(["replicate", bundle, "--workdir", workdir, *flags])
        except SystemExit as exit:
            status = exit.code
        except BaseException as err:
            status, kind = None, type(err).__name__ + ": " + "".join(
                traceback.format_exception(err))[-600:]
    out.append([bundle, status, kind, stdout.getvalue().count("\n"),
                stderr.getvalue()[:300]])
print(json.dumps(out))
"""
WRONG = [None, True, -1, 0, 1.5, "", "x", "../../etc/passwd", [], [1], {}, {"a": 1}, 10**30]


def _tar(entries: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return raw.getvalue()


def _info(
    name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size, link
    return info


def _mutate_json(value, rng: random.Random):
    """``value`` with one field, element or the whole replaced by a wrong type, or deleted."""
    if not isinstance(value, (dict, list)) or not value or rng.random() < 0.1:
        return rng.choice(WRONG)
    key = rng.choice(list(value)) if isinstance(value, dict) else rng.randrange(len(value))
    copy = dict(value) if isinstance(value, dict) else list(value)
    if isinstance(copy, dict) and rng.random() < 0.25:
        del copy[key]
    else:
        copy[key] = _mutate_json(copy[key], rng)
    return copy


def hostile(members: dict[str, bytes], honest: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(
        ["truncate", "flip", "garbage", "link", "device", "traversal", "tops", "missing",
         "manifest", "spec_path", "plan", "versions", "spec", "store", "duplicate", "huge",
         "not_json", "size", "bomb", "pax_bomb"]
    )  # fmt: skip
    m = dict(members)
    if kind == "truncate":
        return kind, honest[: rng.randrange(len(honest))]
    if kind == "flip":
        data = bytearray(honest)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return kind, bytes(data)
    if kind == "garbage":
        noise = rng.randbytes(rng.randrange(2000))
        return kind, rng.choice([noise, gzip.compress(noise), b"", gzip.compress(b"")])
    if kind in ("link", "device", "traversal", "duplicate"):
        name = rng.choice(sorted(m))
        entries = [(_info(n, size=len(d)), d) for n, d in m.items()]
        extra = {
            "link": lambda: _info(
                name,
                rng.choice([tarfile.SYMTYPE, tarfile.LNKTYPE]),
                link=rng.choice(["/etc/passwd", "../../x", "probe/plan.json"]),
            ),
            "device": lambda: _info(
                f"probe/dev{rng.randrange(9)}",
                rng.choice([tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE]),
            ),
            "traversal": lambda: _info(
                rng.choice(
                    [
                        "../evil",
                        "/tmp/evil",
                        "probe/../../evil",
                        "probe/spec/../../../evil",
                        "probe/./x",
                        "probe\\..\\evil",
                        "probe/\x1b[2Jx",
                    ]
                ),
                size=1,
            ),
            "duplicate": lambda: _info(name, size=1),
        }[kind]()
        at = rng.randrange(len(entries) + 1)
        entries.insert(at, (extra, b"x" if extra.isreg() else b""))
        return kind, gzip.compress(_tar(entries))
    if kind == "bomb":
        zeros = bytes(rng.choice([8, 16]) << 20)
        return kind, gzip.compress(_tar([(_info("probe/zeros", size=len(zeros)), zeros)]))
    if kind == "pax_bomb":  # tarfile reads a PAX header whole before anyone sees its size
        pax = _info("probe/@PaxHeader", tarfile.XHDTYPE, size=rng.choice([8, 16]) << 20)
        body = pax.tobuf(tarfile.USTAR_FORMAT) + bytes(pax.size) + _info("probe/x").tobuf()
        return kind, gzip.compress(body)
    if kind == "huge":
        header = _info("probe/big", size=rng.choice([5 << 30, 10**11]))
        return kind, gzip.compress(header.tobuf(tarfile.GNU_FORMAT) + b"\0" * 1024)
    if kind == "tops":
        m[f"other{rng.randrange(3)}/x"] = b"x"
    elif kind == "missing":
        m.pop(rng.choice(sorted(m)))
    elif kind == "manifest":
        m["probe/manifest.json"] = json.dumps(
            _mutate_json(json.loads(m["probe/manifest.json"]), rng)
        ).encode()
        return kind, _pack(m, rehash=False)
    elif kind == "spec_path":
        manifest = json.loads(m["probe/manifest.json"])
        manifest["spec"] = rng.choice(
            ["../../etc/passwd", "/etc/passwd", "spec/../../x", "data/store.sqlite", "spec/"]
        )
        m["probe/manifest.json"] = json.dumps(manifest).encode()
        return kind, _pack(m, rehash=False)
    elif kind in ("plan", "versions"):
        name = f"probe/{kind}.json"
        m[name] = json.dumps(_mutate_json(json.loads(m[name]), rng)).encode()
    elif kind == "spec":
        text = bytearray(m["probe/spec/probe.bench"])
        at = rng.randrange(len(text))
        text[at : at + rng.randrange(1, 20)] = rng.randbytes(rng.randrange(6))
        m["probe/spec/probe.bench"] = bytes(text)
    elif kind == "store":
        data = bytearray(m["probe/data/store.sqlite"])
        for _ in range(rng.randint(1, 50)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
        m["probe/data/store.sqlite"] = bytes(data)
    elif kind == "not_json":
        m["probe/manifest.json"] = rng.choice([b"", b"{", b"\xff\xfe", b"[1, 2", b"nan"])
        return kind, _pack(m, rehash=False)
    elif kind == "size":
        manifest = json.loads(m["probe/manifest.json"])
        manifest["files"][0]["size"] += rng.choice([-1, 1, 10**6])
        m["probe/manifest.json"] = json.dumps(manifest).encode()
        return kind, _pack(m, rehash=False)
    return kind, _pack(m, rehash=kind != "missing" or rng.random() < 0.5)


def _pack(members: dict[str, bytes], *, rehash: bool) -> bytes:
    buffer = Path(f"/dev/shm/benchlang-fuzz-{id(members)}")
    try:
        write_bundle(buffer, dict(members), rehash=rehash)
        return buffer.read_bytes()
    except KeyError:  # a rehash of a missing member: leave the manifest as it is
        write_bundle(buffer, dict(members), rehash=False)
        return buffer.read_bytes()
    finally:
        buffer.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def honest(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "probe.bench").write_text(SPEC.format(mark=root / "setup-ran"))
    status, out, err = cli(["run", "probe.bench", "--store", "p.sqlite", "--quiet"], root)
    assert status == 0, out + err
    status, out, err = cli(["bundle", "p.sqlite", "probe.bench", "-o", "p.tar.gz"], root)
    assert status == 0, out + err
    return root


N = 300


def test_hostile_bundles_end_in_one_line_never_a_traceback(honest, tmp_path):
    rng = random.Random(40)
    members = members_of(honest / "p.tar.gz")
    kinds: dict[str, int] = {}
    lines = []
    for i in range(N):
        kind, data = hostile(members, (honest / "p.tar.gz").read_bytes(), rng)
        kinds[kind] = kinds.get(kind, 0) + 1
        bundle = tmp_path / f"{i:03d}-{kind}.tar.gz"
        bundle.write_bytes(data)
        flags = ["--analyze-only"] if i % 3 == 0 else []
        lines.append(json.dumps([str(bundle), str(tmp_path / f"w{i}"), *flags]))
    done = subprocess.run(
        [sys.executable, "-c", DRIVER], input="\n".join(lines), capture_output=True, text=True,
        cwd=tmp_path, timeout=900, start_new_session=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    tracebacks = [(b, k) for b, _, k, _, _ in results if k is not None]
    assert tracebacks == [], tracebacks[:3]
    outcomes: dict[tuple[str, object], int] = {}
    said: dict[str, str] = {}
    for bundle, status, _, stdout_lines, stderr in results:
        kind = Path(bundle).name.split("-", 1)[1].removesuffix(".tar.gz")
        analyze = "--analyze-only" in lines[int(Path(bundle).name[:3])]
        outcomes[(kind, status)] = outcomes.get((kind, status), 0) + 1
        said.setdefault(kind, stderr.splitlines()[0] if stderr else "")
        assert "Traceback" not in stderr and stdout_lines <= 40, (bundle, stderr)
        if analyze and status in (0, 3):
            continue  # passed every check: a bundle whose changes change nothing that is run
        assert status == 2, (bundle, status, stderr)
        assert stderr.startswith("benchlang: error: ") or "error" in stderr, (bundle, stderr)
    print(f"\n{N} hostile bundles, 0 tracebacks; kinds {dict(sorted(kinds.items()))}")
    print(f"outcomes (kind, exit status): {dict(sorted(outcomes.items(), key=str))}")
    print("\n".join(f"{kind}: {line}" for kind, line in sorted(said.items())))
