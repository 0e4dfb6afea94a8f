"""A local CloudLab portal, for tests: an XML-RPC server over TLS (client certificate
required, its own CA) answering the calls the real portal answers (startExperiment,
experimentStatus, experimentManifests, extendExperiment, terminateExperiment, reboot, reload) in the
same shape (``{"code", "value", "output"}``, JSON output with ``asjson``), and handing out
real sshd servers on loopback as the experiment's nodes. CloudLab itself cannot be reached
here; docs/cloud.md lists what is verified only against this server."""

from __future__ import annotations

import datetime
import getpass
import json
import socketserver
import ssl
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

from benchlang.testing import sshd

__all__ = ["PASSPHRASE", "Pki", "PortalServer"]

PASSPHRASE = "pem-pass-4e1f"


def _name(text: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _issue(subject: str, key, issuer_name, issuer_key, *, ca: bool = False, ip: bool = False):
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name or _name(subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ip:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _pem(cert) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key, passphrase: str | None = None) -> bytes:
    from cryptography.hazmat.primitives import serialization

    encryption = (
        serialization.BestAvailableEncryption(passphrase.encode())
        if passphrase
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, encryption
    )


class Pki:
    """A CA, the portal's certificate for 127.0.0.1, and the user's cloudlab.pem (certificate
    and passphrase-encrypted key in one file, as the portal hands it out)."""

    def __init__(self, root: Path, name: str = "portal") -> None:
        ca_key = _key()
        ca = _issue(f"{name} CA", ca_key, None, ca_key, ca=True)
        server_key, client_key = _key(), _key()
        server = _issue("127.0.0.1", server_key, ca.subject, ca_key, ip=True)
        client = _issue(getpass.getuser(), client_key, ca.subject, ca_key)
        self.ca = root / f"{name}-ca.pem"
        self.ca.write_bytes(_pem(ca))
        self.server_cert = root / f"{name}-server.pem"
        self.server_cert.write_bytes(_pem(server) + _key_pem(server_key))
        self.client = root / "cloudlab.pem"
        self.client.write_bytes(_pem(client) + _key_pem(client_key, PASSPHRASE))


RSPEC = """<rspec xmlns="http://www.geni.net/resources/rspec/3" type="manifest">{nodes}</rspec>"""
NODE = """
  <node client_id="node{i}" component_manager_id="urn:publicid:IDN+loopback.test+authority+cm" exclusive="true">
    <sliver_type name="raw-pc"><disk_image name="urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"/></sliver_type>
    <hardware_type name="{hardware}"/>
    <services><login authentication="ssh-keys" hostname="127.0.0.1" port="{port}" username="{user}"/></services>
    <host name="node{i}.{name}.{project}.loopback.test" ipv4="127.0.0.1"/>
  </node>"""


class Handler(SimpleXMLRPCRequestHandler):
    rpc_paths = ("/usr/testbed",)

    def log_message(self, *args: Any) -> None:
        return None


class PortalServer(socketserver.ThreadingMixIn, SimpleXMLRPCServer):
    """The portal: experiments by "project,name"; nodes from a pool of sshd servers."""

    daemon_threads = True

    def __init__(self, pki: Pki, bed: sshd.Testbed) -> None:
        super().__init__(("127.0.0.1", 0), Handler, allow_none=True, logRequests=False)
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(pki.server_cert)
        self.tls.load_verify_locations(pki.ca)
        self.tls.verify_mode = ssl.CERT_REQUIRED
        self.bed = bed
        self.free = list(range(len(bed.servers)))
        self.experiments: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        for method in (
            "startExperiment",
            "experimentStatus",
            "experimentManifests",
            "extendExperiment",
            "terminateExperiment",
            "reboot",
            "reload",
        ):
            self.register_function(self._answer(getattr(self, method)), f"portal.{method}")
        self.url = f"https://127.0.0.1:{self.server_address[1]}/usr/testbed"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def get_request(self):
        sock, address = self.socket.accept()
        sock.settimeout(30)
        return self.tls.wrap_socket(sock, server_side=True), address

    def _answer(self, method):
        def call(version: float, args: dict[str, Any]) -> dict[str, Any]:
            with self.lock:
                self.calls.append((method.__name__, dict(args)))
                if version != 0.1:
                    return {"code": 4, "value": None, "output": "bad version"}
                try:
                    code, output = method(args)
                except KeyError as err:
                    return {"code": 1, "value": None, "output": f"missing argument {err}"}
            return {"code": code, "value": 0 if code == 0 else None, "output": output}

        return call

    def startExperiment(self, args: dict[str, Any]) -> tuple[int, str]:
        key = f"{args['proj']},{args['name']}"
        bindings = json.loads(args.get("bindings", "{}"))
        count = int(bindings.get("nodeCount", 1))
        if key in self.experiments:
            return 2, f"experiment {key} already exists"
        if count > len(self.free):
            return 7, f"insufficient resources: {count} nodes wanted, {len(self.free)} free"
        nodes, self.free = self.free[:count], self.free[count:]
        self.experiments[key] = {
            "uuid": str(uuid.uuid4()),
            "nodes": nodes,
            "hardware": bindings.get("phystype", "d430"),
            "expires": time.time() + 3600 * int(args.get("duration", 16)),
            "polls": 0,
            "args": dict(args),
        }
        return 0, ""

    def _find(self, args: dict[str, Any]) -> dict[str, Any] | None:
        return self.experiments.get(args["experiment"])

    def experimentStatus(self, args: dict[str, Any]) -> tuple[int, str]:
        found = self._find(args)
        if found is None:
            return 12, f"no such experiment {args['experiment']}"
        found["polls"] += 1
        ready = found["polls"] > 1  # provisioning at the first look
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(found["expires"]))
        return 0, json.dumps(
            {
                "status": "ready" if ready else "provisioning",
                "uuid": found["uuid"],
                "expires": expires,
            }
        )

    def experimentManifests(self, args: dict[str, Any]) -> tuple[int, str]:
        found = self._find(args)
        if found is None:
            return 12, f"no such experiment {args['experiment']}"
        project, name = args["experiment"].split(",")
        nodes = "".join(
            NODE.format(
                i=i,
                port=self.bed.servers[n].port,
                user=getpass.getuser(),
                hardware=found["hardware"],
                name=name,
                project=project,
            )
            for i, n in enumerate(found["nodes"])
        )
        urn = "urn:publicid:IDN+loopback.test+authority+cm"
        return 0, json.dumps({urn: RSPEC.format(nodes=nodes)})

    def extendExperiment(self, args: dict[str, Any]) -> tuple[int, str]:
        found = self._find(args)
        if found is None:
            return 12, f"no such experiment {args['experiment']}"
        found["expires"] += 3600 * int(args["wanted"])
        return 0, ""

    def terminateExperiment(self, args: dict[str, Any]) -> tuple[int, str]:
        found = self.experiments.pop(args["experiment"], None)
        if found is None:
            return 12, f"no such experiment {args['experiment']}"
        self.free.extend(found["nodes"])
        return 0, ""

    def reload(self, args: dict[str, Any]) -> tuple[int, str]:
        """The node's disk image reloaded: here, like a reboot, its sshd restarted."""
        return self.reboot(args)

    def reboot(self, args: dict[str, Any]) -> tuple[int, str]:
        found = self._find(args)
        if found is None:
            return 12, f"no such experiment {args['experiment']}"
        for client_id in args["nodes"].split(","):
            server = self.bed.servers[found["nodes"][int(client_id.removeprefix("node"))]]
            server.kill()
            server.start()
        return 0, ""
