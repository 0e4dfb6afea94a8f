"""A local CloudLab portal, for tests: an XML-RPC server over TLS (client certificate
required, its own CA) answering the calls the real portal answers, and handing out real sshd
servers on loopback as the experiment's nodes. CloudLab itself cannot be reached here, so each
rule below cites the real code it imitates (docs/cloud.md lists them; what no source settles
is marked ASSUMED):

[server]  emulab-devel ``xmlrpc/emulabserver.py.in`` (chuckcranor/emulab-devel fb88051e),
          class ``portal`` and the helpers above it: the server side of these calls.
[status]  emulab-devel ``apt/manage_instance.in`` (0f5c265f): ``DoStatus`` (the JSON of
          experimentStatus), ``UserError``, the usage lines (reboot, powercycle, reload).
[tools]   portal-tools (emulab's own client): ``API.md``, ``src/emulab_sslxmlrpc/xmlrpc.py``
          (``EmulabXMLRPC.do_method``, the RESPONSE_* codes) and
          ``src/emulab_sslxmlrpc/client/api.py`` (``experimentReboot``, the ``Handlers``).
[fabfed]  fabric-testbed/fabfed fc6e644 ``fabfed/provider/cloudlab/cloudlab_network.py``
          (``create``, ``wait_for_create``, ``delete``) and ``cloudlab_node.py``.
[page]    the portal's status page, ``www/aptui/js/status.js`` (nmc-probe/emulab-portal
          0ef8a5fd, ``StatusWatchCallBack``): the status names and their order.
[genilib] geni-lib (kaimast/geni-lib3 8346432) ``geni/rspec/pgmanifest.py``: a node's
          ``services/login`` elements, one per user.

Where the sources disagree, both shapes are served: ``shape "output"`` puts a success's text in
``output`` as [server] does; ``shape "value"`` puts it in ``value`` as [tools] API.md and
[fabfed] read it. The client (portal.py) must accept both."""

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
  <node client_id="node{i}" component_manager_id="{urn}" exclusive="true">
    <sliver_type name="raw-pc"><disk_image name="urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"/></sliver_type>
    <hardware_type name="{hardware}"/>
    <services>
      <login authentication="ssh-keys" hostname="127.0.0.1" port="{port}" username="{user}"/>
      <login authentication="ssh-keys" hostname="127.0.0.1" port="{port}" username="projectmate"/>
    </services>
    <host name="node{i}.{name}.{project}.loopback.test" ipv4="127.0.0.1"/>
  </node>"""
AGGREGATE = "urn:publicid:IDN+loopback.test+authority+cm"

# [tools] xmlrpc.py RESPONSE_* and the GENI codes manage_instance exits with ([status])
SUCCESS, BADARGS, ERROR, BADVERSION, REFUSED = 0, 1, 2, 4, 7
SEARCHFAILED, BUSY, ALREADYEXISTS = 12, 14, 17

PROGRESS = ("created", "provisioning", "provisioned", "ready")
"""[page] status.js: created, provisioning (or stitching) come before provisioned, then ready
or failed; one step per experimentStatus call here."""

REQUIRED = {
    "startExperiment": ("proj", "profile"),  # [server] startExperiment CheckRequiredArgs
    "terminateExperiment": ("experiment",),  # [server]
    "experimentStatus": ("experiment",),  # [server]
    "experimentManifests": ("experiment",),  # [server]
    "extendExperiment": ("experiment", "wanted"),  # [tools] API.md extendExperiment
    "reboot": ("experiment", "nodes"),  # [tools] api.py experimentReboot
    "reload": ("experiment", "nodes"),  # ASSUMED: like reboot; no client calls it
}


class Failed(Exception):
    """A portal script's failure: exit status ``value`` and its ``*** script:`` message."""

    def __init__(self, value: int, message: str) -> None:
        super().__init__(message)
        self.value = value


class Handler(SimpleXMLRPCRequestHandler):
    rpc_paths = ("/usr/testbed",)

    def log_message(self, *args: Any) -> None:
        return None


class PortalServer(socketserver.ThreadingMixIn, SimpleXMLRPCServer):
    """The portal: experiments by "project,name"; nodes from a pool of sshd servers.

    Knobs for tests: ``shape`` ("output" or "value", see the module docstring), ``methods``
    (those answered; another is an XML-RPC fault, as [server]'s ``EmulabServer.__getattr__``
    raises "unknown method"), ``busy`` (the next experimentStatus calls answered BUSY),
    ``max_extension`` (hours granted without an administrator)."""

    daemon_threads = True

    def __init__(self, pki: Pki, bed: sshd.Testbed, shape: str = "output") -> None:
        super().__init__(("127.0.0.1", 0), Handler, allow_none=True, logRequests=False)
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(pki.server_cert)
        self.tls.load_verify_locations(pki.ca)
        self.tls.verify_mode = ssl.CERT_REQUIRED
        self.bed = bed
        self.shape = shape
        self.methods = set(REQUIRED)
        self.busy = 0
        self.max_extension = 24 * 7
        self.free = list(range(len(bed.servers)))
        self.experiments: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.register_instance(self)
        self.url = f"https://127.0.0.1:{self.server_address[1]}/usr/testbed"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def get_request(self):
        sock, address = self.socket.accept()
        sock.settimeout(30)
        return self.tls.wrap_socket(sock, server_side=True), address

    def _dispatch(self, name: str, params: tuple[Any, ...]) -> dict[str, Any]:
        method = name.removeprefix("portal.")
        if not name.startswith("portal.") or method not in self.methods:
            raise AttributeError(f"unknown method '{name}' (readonly=0)")  # [server]
        version, args = params
        with self.lock:
            self.calls.append((method, dict(args)))
            if version != 0.1:  # [server]: every method checks the version first
                return {"code": BADVERSION, "value": 0, "output": "Client version mismatch!"}
            for key in REQUIRED[method]:  # [server] CheckRequiredArgs
                if key not in args:
                    return {"code": BADARGS, "value": 0, "output": f"Must supply '{key}'"}
            try:
                text = getattr(self, method)(args)
            except Failed as err:
                # [server]: EmulabResponse(RESPONSE_ERROR, exitval >> 8, output=output), the
                # output being the script's "*** name:\n    message" ([status] UserError)
                return {
                    "code": ERROR,
                    "value": err.value,
                    "output": f"*** manage_instance:\n    {err}\n",
                }
        if self.shape == "value":  # [tools] API.md, [fabfed]: json.loads(response.value)
            return {"code": SUCCESS, "value": text, "output": ""}
        return {"code": SUCCESS, "value": 0, "output": text}  # [server]: value left at 0

    def _find(self, args: dict[str, Any]) -> dict[str, Any]:
        found = self.experiments.get(args["experiment"])
        if found is None:  # [status]: UserError("No such instance", SEARCHFAILED)
            raise Failed(SEARCHFAILED, f"No such instance {args['experiment']}")
        return found

    def startExperiment(self, args: dict[str, Any]) -> str:
        name = args.get("name") or uuid.uuid4().hex[:8]
        key = f"{args['proj']},{name}"
        bindings = json.loads(args.get("bindings", "{}"))
        count = int(bindings.get("nodeCount", 1))
        if key in self.experiments:  # [tools] RESPONSE_ALREADYEXISTS
            raise Failed(ALREADYEXISTS, f"Experiment {key} already exists")
        found: dict[str, Any] = {
            "uuid": str(uuid.uuid4()),
            "nodes": [],
            "hardware": bindings.get("phystype", "d430"),
            "expires": time.time() + 3600 * int(args.get("duration", 16)),
            "step": 0,
            "args": dict(args),
        }
        if count > len(self.free):
            # the portal starts the experiment and reports the failure in its status
            # ([status] DoStatus: failure_code and failure_message once "failed")
            found["failure"] = f"Insufficient resources: {count} nodes wanted, {len(self.free)}"
        else:
            found["nodes"], self.free = self.free[:count], self.free[count:]
        self.experiments[key] = found
        return f"Experiment {key} is being created; uuid {found['uuid']}\n"

    def experimentStatus(self, args: dict[str, Any]) -> str:
        if self.busy > 0:  # [fabfed] wait_for_create: BUSY means ask again later
            self.busy -= 1
            raise Failed(BUSY, "Experiment is busy; try again later")
        found = self._find(args)
        found["step"] = min(found["step"] + 1, len(PROGRESS) - 1)
        status = PROGRESS[found["step"]]
        if "failure" in found and found["step"] >= 2:
            status = "failed"
        project, name = args["experiment"].split(",")
        blob: dict[str, Any] = {  # [status] DoStatus, the asjson blob
            "status": status,
            "uuid": found["uuid"],
            "wbstore": found["uuid"],
            "url": f"https://127.0.0.1/status.php?uuid={found['uuid']}",
            "expires": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(found["expires"])),
            "aggregate_status": {
                AGGREGATE: {
                    "status": status,
                    "nodes": {
                        f"node{i}": {
                            "hostname": f"node{i}.{name}.{project}.loopback.test",
                            "ipv4": "127.0.0.1",
                        }
                        for i in range(len(found["nodes"]))
                    },
                }
            },
        }
        if status == "failed":
            blob["failure_code"] = 1
            blob["failure_message"] = found["failure"]
        if "asjson" not in args:  # [status]: the text form without -j
            return f"Status: {status}\nUUID: {found['uuid']}\nwbstore: {found['uuid']}\n"
        return json.dumps(blob)

    def experimentManifests(self, args: dict[str, Any]) -> str:
        found = self._find(args)
        project, name = args["experiment"].split(",")
        nodes = "".join(
            NODE.format(
                i=i,
                urn=AGGREGATE,
                port=self.bed.servers[n].port,
                user=getpass.getuser(),
                hardware=found["hardware"],
                name=name,
                project=project,
            )
            for i, n in enumerate(found["nodes"])
        )
        # [tools] API.md: "a dictionary [of] manifests in XML format, one per aggregate";
        # [server]: "manage_instance dumpmanifests ... -X -j"
        return json.dumps({AGGREGATE: RSPEC.format(nodes=nodes)})

    def extendExperiment(self, args: dict[str, Any]) -> str:
        found = self._find(args)
        wanted = int(args["wanted"])
        if wanted > self.max_extension:  # [tools] API.md: most likely REFUSED
            raise Failed(REFUSED, f"Extension of {wanted} hours needs administrator approval")
        found["expires"] += 3600 * wanted
        return f"Experiment {args['experiment']} extended by {wanted} hours\n"

    def terminateExperiment(self, args: dict[str, Any]) -> str:
        found = self._find(args)
        del self.experiments[args["experiment"]]
        self.free.extend(found["nodes"])
        return f"Experiment {args['experiment']} is terminating\n"

    def reload(self, args: dict[str, Any]) -> str:
        """ASSUMED: manage_instance has a reload action ([status] usage) but no client calls
        an XML-RPC ``reload``; the plugin says so when a portal lacks it. Here, like a reboot,
        the node's sshd is restarted."""
        return self.reboot(args)

    def reboot(self, args: dict[str, Any]) -> str:
        """[tools] api.py experimentReboot: ``nodes`` holds client ids joined by commas,
        ``power 1`` power-cycles instead ([status]: reboot, powercycle)."""
        found = self._find(args)
        wanted = args["nodes"].split(",")
        known = {f"node{i}": n for i, n in enumerate(found["nodes"])}
        unknown = [c for c in wanted if c not in known]
        if unknown:
            raise Failed(BADARGS, f"No such node {unknown[0]} in the experiment")
        for client_id in wanted:
            server = self.bed.servers[known[client_id]]
            server.kill()
            server.start()
        return ""
