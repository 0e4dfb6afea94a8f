"""Signed bundles: the manifest signed with an OpenSSH key (``ssh-keygen -Y``, OpenSSH 8.0+).

The signature is an SSHSIG blob (OpenSSH's PROTOCOL.sshsig: magic ``SSHSIG``, version, the
signer's public key, the namespace, the hash algorithm, the signature), the format git uses
for SSH-signed commits (``gpg.format ssh``). Signing the manifest signs every member, since
the manifest holds each member's SHA-256. The namespace ``benchlang-bundle`` keeps a
signature made for a bundle from being replayed as any other SSH signature (and back).
Only the public key and the signature are written; the private key stays in its file or
agent, read by ssh-keygen alone.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import attrs

from benchlang.errors import UserError

NAMESPACE = "benchlang-bundle"
_ARMOUR = "SSH SIGNATURE"


@attrs.frozen
class Signer:
    fingerprint: str
    """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
    public_key: str
    """``ssh-ed25519 AAAA...``: the line an allowed-signers file holds after the principal."""


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise UserError(
            "ssh-keygen is not installed: bundles are signed and verified with OpenSSH's",
            "install openssh-client",
        )
    return found


def _strings(blob: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(blob):
        (n,) = struct.unpack_from(">I", blob, at)
        out.append(blob[at + 4 : at + 4 + n])
        at += 4 + n
        if at > len(blob):
            raise ValueError("truncated")
    return out


def signer_of(signature: bytes) -> Signer:
    """The public key an SSHSIG signature names (not yet a proof: ``verify`` checks it)."""
    try:
        text = signature.decode("ascii")
        body = text.split(f"-----BEGIN {_ARMOUR}-----", 1)[1].split(f"-----END {_ARMOUR}-----")[0]
        blob = base64.b64decode("".join(body.split()), validate=True)
        if blob[:6] != b"SSHSIG":
            raise ValueError("magic")
        key = _strings(blob[10:])[0]
        kind = _strings(key)[0].decode("ascii")
    except (ValueError, IndexError, UnicodeError, struct.error):
        raise UserError("the bundle's manifest.json.sig is not an SSH signature") from None
    digest = base64.b64encode(hashlib.sha256(key).digest()).decode().rstrip("=")
    return Signer(f"SHA256:{digest}", f"{kind} {base64.b64encode(key).decode()}")


def sign(data: bytes, key: str | Path) -> tuple[bytes, Signer]:
    """The SSHSIG signature of ``data`` by ``key`` (a private key file, or a public key whose
    private half is in the ssh agent), and its signer."""
    done = subprocess.run(
        [_ssh_keygen(), "-Y", "sign", "-n", NAMESPACE, "-f", str(key), "-q"],
        input=data, capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not done.stdout:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise UserError(f"cannot sign with {key}: {why[-1] if why else 'ssh-keygen failed'}")
    return done.stdout, signer_of(done.stdout)


def verify(
    data: bytes,
    signature: bytes | None,
    *,
    allowed_signers: str | Path | None = None,
    fingerprint: str | None = None,
) -> Signer:
    """Refuse (one line) unless ``signature`` is a valid ``benchlang-bundle`` signature of
    ``data`` by a key of ``allowed_signers`` or with ``fingerprint``."""
    if allowed_signers is not None and not Path(allowed_signers).is_file():
        raise UserError(f"--allowed-signers {allowed_signers}: no such file")
    if fingerprint is not None and not fingerprint.startswith("SHA256:"):
        fingerprint = f"SHA256:{fingerprint}"
    if signature is None:
        raise UserError("the bundle is not signed (no manifest.json.sig): refused")
    signer = signer_of(signature)
    with tempfile.TemporaryDirectory() as tmp:
        sig = Path(tmp) / "manifest.json.sig"
        sig.write_bytes(signature)
        if allowed_signers is not None:
            principal = _run(["-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)])
            if principal is None:
                raise UserError(
                    f"the bundle is signed by {signer.fingerprint}, which is not in "
                    f"{allowed_signers}: refused"
                )
            name = principal.splitlines()[0]
            check = ["-Y", "verify", "-f", str(allowed_signers), "-I", name]
        else:
            if signer.fingerprint != fingerprint:
                raise UserError(
                    f"the bundle is signed by {signer.fingerprint}, not {fingerprint}: refused"
                )
            check = ["-Y", "check-novalidate"]
        if _run([*check, "-n", NAMESPACE, "-s", str(sig)], data) is None:
            raise UserError(
                f"the signature by {signer.fingerprint} does not match the manifest "
                "(changed after signing): refused"
            )
    return signer


def _run(arguments: list[str], data: bytes = b"") -> str | None:
    done = subprocess.run([_ssh_keygen(), *arguments], input=data, capture_output=True, check=False)
    return done.stdout.decode(errors="replace").strip() if done.returncode == 0 else None
