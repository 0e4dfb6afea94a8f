"""Reading a bundle that may be hostile: bounded, strict, one line per refusal.

A bundle is code and data from a stranger. Before anything is written to disk the archive's
headers are read with limits on the member count, the total declared size and the
compression ratio (a gzip bomb expands about 1000:1; the bundles benchlang writes expand
2-20:1), each refused with its numbers; only regular files and directories under one top
directory are accepted (no links, devices, FIFOs, absolute or ``..`` paths: the rules of
tarfile's ``data`` filter, PEP 706, made strict); the manifest is checked field by field
(types, hashes, every path inside the bundle) before its signature is verified and the
members are extracted, each compared with its SHA-256 as it is written.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import attrs

from benchlang import jsonin
from benchlang.errors import UserError

MAX_MEMBERS = 10_000
MAX_BYTES = 4 << 30
MAX_RATIO = 200
RATIO_FLOOR = 1 << 20
"""The compression ratio is judged once this many bytes are declared (tiny files compress
far better than data, and cannot hurt)."""
MAX_MANIFEST = 16 << 20
SIGNATURE = "manifest.json.sig"
REQUIRED = ("plan.json", "data/store.sqlite")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ARCHIVE_ERRORS = (OSError, EOFError, zlib.error, tarfile.TarError, ValueError, UnicodeError)


@attrs.frozen
class Limits:
    members: int = MAX_MEMBERS
    total_bytes: int = MAX_BYTES
    ratio: float = MAX_RATIO


@attrs.frozen
class Extracted:
    root: Path
    manifest: dict[str, Any]
    signature: bytes | None
    problems: tuple[str, ...]
    """Members whose hash or size differs, missing or unlisted."""


def shown(text: object, width: int = 120) -> str:
    """A stranger's string as it may be printed: control characters (terminal escapes that
    could hide text) escaped, long strings cut."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return out if len(out) <= width else out[: width - 3] + "..."


def safe_relative(name: object) -> PurePosixPath | None:
    """``name`` as a relative path that stays inside its directory, or None."""
    if not isinstance(name, str) or not name or "\\" in name or not name.isprintable():
        return None
    path = PurePosixPath(name)
    if path.is_absolute() or any(part in ("..", ".") for part in path.parts) or not path.parts:
        return None
    return path


class _Bounded:
    """The decompressed stream, refusing to be read past the limits: tarfile reads some
    headers whole (a PAX header of any declared size) before ``_headers`` sees them."""

    def __init__(self, raw: gzip.GzipFile, bundle: Path, limits: Limits) -> None:
        self.raw, self.bundle, self.limits = raw, bundle, limits
        self.packed = max(bundle.stat().st_size, 1)
        self.most = limits.total_bytes + 1536 * limits.members

    def _allow(self, end: int) -> None:
        if end > self.most:
            raise UserError(f"{self.bundle} expands past {self.most:,} bytes: refused")
        if end > RATIO_FLOOR and end / self.packed > self.limits.ratio:
            raise UserError(
                f"{self.bundle} expands {end / self.packed:,.0f} times ({self.packed:,} bytes "
                f"to {end:,} so far), more than {self.limits.ratio:g}: refused as a "
                "compression bomb"
            )

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self.most + 1 - self.raw.tell()
        self._allow(self.raw.tell() + size)
        return self.raw.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self.raw.tell() + offset if whence == 1 else None
        if target is None:
            raise UserError(f"{self.bundle}: cannot be read from its end")
        self._allow(target)
        return self.raw.seek(target)

    def tell(self) -> int:
        return self.raw.tell()

    def write(self, data: bytes) -> int:
        """Never called: the bundle is opened to be read (tarfile's file type asks for it)."""
        raise OSError(f"{self.bundle}: opened to be read")

    def close(self) -> None:
        """Nothing to close: the gzip stream under it is closed by its own ``with``."""


def _headers(tar: tarfile.TarFile, bundle: Path, limits: Limits) -> list[tarfile.TarInfo]:
    """Every member header, refusing as soon as a limit is passed (before its data is read)."""
    packed = max(bundle.stat().st_size, 1)
    members: list[tarfile.TarInfo] = []
    total = 0
    while (member := tar.next()) is not None:
        members.append(member)
        if len(members) > limits.members:
            raise UserError(
                f"{bundle} holds more than {limits.members:,} members: refused (a bundle "
                "holds a few dozen)"
            )
        total += max(member.size, 0)
        if total > limits.total_bytes:
            raise UserError(
                f"{bundle} declares more than {limits.total_bytes:,} bytes ({total:,} so far, "
                f"{len(members):,} member{'s' if len(members) > 1 else ''}): refused"
            )
        if total > RATIO_FLOOR and total / packed > limits.ratio:
            raise UserError(
                f"{bundle} expands {total / packed:,.0f} times ({packed:,} bytes to {total:,} "
                f"so far), more than {limits.ratio:g}: refused as a compression bomb"
            )
    return members


def _check_member(member: tarfile.TarInfo, bundle: Path) -> tuple[str, str]:
    """(top directory, path inside it) of an acceptable member, else a refusal."""
    path = safe_relative(member.name.rstrip("/") if member.isdir() else member.name)
    if path is None:
        raise UserError(f"{bundle}: member {shown(member.name)!r} leaves the bundle: refused")
    if not (member.isreg() or member.isdir()):
        kind = (
            "a link" if member.issym() or member.islnk() else
            "a device" if member.isdev() else "not a regular file"
        )  # fmt: skip
        raise UserError(f"{bundle}: member {shown(member.name)!r} is {kind}: refused")
    return path.parts[0], str(PurePosixPath(*path.parts[1:])) if len(path.parts) > 1 else ""


def _member_bytes(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    return b"" if handle is None else handle.read()


def check_manifest(document: object, bundle: Path) -> dict[str, Any]:
    """The manifest if every field has its type and every path stays inside the bundle."""

    def bad(what: str) -> UserError:
        return UserError(f"{bundle}: manifest.json {what}: not a benchlang bundle")

    if not isinstance(document, dict):
        raise bad("is not a JSON object")
    if type(document.get("schema")) is not int or document["schema"] != 1:
        raise bad(f"has schema {shown(document.get('schema'), 20)}, not 1")
    for key in ("experiment", "plan_hash", "spec"):
        if not isinstance(document.get(key), str) or not document[key]:
            raise bad(f"has no text field {key!r}")
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", document["plan_hash"]):
        raise bad("has a plan_hash that is not sha256:<64 hex digits>")
    files = document.get("files")
    if not isinstance(files, list) or not files:
        raise bad("has no list of files")
    names: set[str] = set()
    for entry in files:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and type(entry.get("size")) is int
            and entry["size"] >= 0
            and isinstance(entry.get("sha256"), str)
            and _HEX64.fullmatch(entry["sha256"])
        ):
            raise bad(f"has a malformed file entry {shown(entry, 60)}")
        path = safe_relative(entry["name"])
        if path is None or str(path) != entry["name"]:
            raise bad(f"names a path outside the bundle: {shown(entry['name'])!r}")
        if entry["name"] in names or entry["name"] in ("manifest.json", SIGNATURE):
            raise bad(f"lists {shown(entry['name'])!r} twice")
        names.add(entry["name"])
    spec = document["spec"]
    if spec not in names or not spec.startswith("spec/"):
        raise bad(f"names a spec that is not a listed file under spec/: {shown(spec)!r}")
    for name in REQUIRED:
        if name not in names:
            raise bad(f"does not list {name}")
    return document


def extract(
    bundle: str | Path,
    workdir: str | Path,
    *,
    limits: Limits = Limits(),
    verify: Callable[[bytes, bytes | None], None] | None = None,
) -> Extracted:
    """Check ``bundle``'s headers and manifest, let ``verify(manifest, signature)`` refuse it,
    then write its listed members under ``workdir`` (nothing is written before that)."""
    bundle, workdir = Path(bundle), Path(workdir)
    try:
        with (
            gzip.open(bundle, "rb") as raw,
            tarfile.open(fileobj=_Bounded(raw, bundle, limits), mode="r:") as tar,
        ):
            members = _headers(tar, bundle, limits)
            placed = [(_check_member(m, bundle), m) for m in members]
            tops = {top for (top, _), _ in placed}
            if len(tops) != 1:
                raise UserError(f"{bundle} is not a benchlang bundle (not one top directory)")
            files: dict[str, tarfile.TarInfo] = {}
            for (_, inner), member in placed:
                if member.isreg():
                    if inner in files or not inner:
                        raise UserError(f"{bundle}: member {shown(member.name)!r} twice: refused")
                    files[inner] = member
            if "manifest.json" not in files:
                raise UserError(f"{bundle} has no manifest.json: not a benchlang bundle")
            if files["manifest.json"].size > MAX_MANIFEST:
                raise UserError(f"{bundle}: manifest.json is larger than {MAX_MANIFEST:,} bytes")
            manifest_bytes = _member_bytes(tar, files["manifest.json"])
            signature = _member_bytes(tar, files[SIGNATURE]) if SIGNATURE in files else None
            try:
                document = jsonin.loads(manifest_bytes)
            except jsonin.TooDeep as err:
                raise UserError(
                    f"{bundle}: manifest.json is {err} (a manifest nests 3): refused"
                ) from None
            except (ValueError, UnicodeError):
                raise UserError(
                    f"{bundle}: manifest.json is not JSON: not a benchlang bundle"
                ) from None
            manifest = check_manifest(document, bundle)
            if verify is not None:
                verify(manifest_bytes, signature)
            root = workdir / tops.pop()
            problems = _write_members(tar, files, manifest, root)
    except _ARCHIVE_ERRORS as err:
        raise UserError(f"cannot read the bundle {bundle}: {shown(err)}") from None
    return Extracted(root, manifest, signature, tuple(problems))


def _write_members(
    tar: tarfile.TarFile, files: dict[str, tarfile.TarInfo], manifest: dict, root: Path
) -> list[str]:
    problems = []
    listed = {entry["name"]: entry for entry in manifest["files"]}
    for name in sorted(files.keys() - listed.keys() - {"manifest.json", SIGNATURE}):
        problems.append(f"{shown(name)} is not in the manifest")
    root.mkdir(parents=True, exist_ok=True)
    for name, entry in sorted(listed.items()):
        member = files.get(name)
        if member is None:
            problems.append(f"{shown(name)} is missing")
            continue
        if member.size != entry["size"]:
            problems.append(
                f"{shown(name)} has {member.size:,} bytes, not the {entry['size']:,} published"
            )
            continue
        data = _member_bytes(tar, member)
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            problems.append(f"{shown(name)} differs from its published SHA-256")
            continue
        _write(root, name, data)
    return problems


def _write(root: Path, name: str, data: bytes) -> None:
    """Write one member, never through a link already in the work directory."""
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.parent.resolve() != (root.resolve() / name).parent:
        raise UserError(f"{root}: {shown(name)} would be written outside the bundle")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(target, flags, 0o644)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
