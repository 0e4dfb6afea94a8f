"""``hosts cloudlab { ... }``: a CloudLab experiment started from a profile for a run, its nodes
reached over benchlang's own SSH, terminated after it (benchlang backend protocol 2).

OrderSage's flow (§6.2: allocate -> run -> deallocate): ``acquire`` calls the portal's
``startExperiment`` (the profile, its refspec, bindings with the hardware type and node
count, the site, the duration), polls ``experimentStatus`` until the experiment is ready,
and reads the nodes from ``experimentManifests`` (each node's login host and port); the
logical hosts ``node0`` ... map to them in the manifest's ``client_id`` order. ``extend``
calls ``extendExperiment``; ``release`` calls ``terminateExperiment`` (an experiment the
portal no longer knows, code 12, is already released); ``power(host, action)`` calls
``reboot`` (with ``power 1`` for ``power_cycle``) or ``reload`` (``reimage``) for ``reset
reboot|power_cycle|reimage`` between rounds. Portal client: portal.py; each rule's source is
cited there, in local_portal.py and in docs/cloud.md.
"""

from __future__ import annotations

import asyncio
import calendar
import json
import math
import re
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from benchlang.backends.base import PROTOCOL_VERSION, HostDown, Lease, Secret, SettingError
from benchlang.backends.ssh import Node, SshBackend, SshSession
from benchlang_cloudlab.portal import (
    DEFAULT_URL,
    RESPONSE_REFUSED,
    SEARCH_FAILED,
    TRANSIENT,
    Portal,
    PortalError,
)

__all__ = ["CloudLabBackend"]

SSH_KEYS = (
    "user",
    "identity",
    "known_hosts",
    "insecure_accept_new_host_keys",
    "workdir",
    "python",
    "connect_timeout",
)
KEYS = (
    "portal",
    "certificate",
    "passphrase",
    "ca",
    "project",
    "profile",
    "refspec",
    "bindings",
    "hardware",
    "count",
    "site",
    "duration",
    "name",
    "wait",
    "poll",
    *SSH_KEYS,
)


POWER: dict[str, tuple[str, dict[str, int]]] = {
    "reboot": ("reboot", {}),
    "power_cycle": ("reboot", {"power": 1}),
    "reimage": ("reload", {}),
}
"""A reset's provider action -> the portal method and its extra arguments: ``reboot`` with
``experiment``, ``nodes`` (client ids joined by commas) and ``power 1`` to power-cycle, as
portal-tools' ``experimentReboot`` calls it (``emulab_sslxmlrpc/client/api.py``); ``reload``
is manage_instance's action of that name (apt/manage_instance.in), its XML-RPC method seen in
no client (docs/cloud.md)."""

READY = "ready"
FINAL = frozenset({"failed", "imaging-failed", "canceled", "terminating", "terminated"})
"""Statuses an experiment never leaves for ``ready`` (manage_instance ``DoStatus``; the portal
page's status.js); every other status (created, provisioning, stitching, provisioned, pending,
scheduled, unknown, ...) is waited out."""


def _path(value: Any) -> Any:
    return value["file"] if isinstance(value, Mapping) and "file" in value else value


def _bindings(value: Any) -> dict[str, str]:
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, tuple) or not all(isinstance(t, str) and "=" in t for t in items):
        raise SettingError("bindings", 'bindings takes a list of "parameter=value" strings')
    return dict(t.split("=", 1) for t in items)


def _epoch(text: Any) -> float | None:
    """``expires`` of experimentStatus (manage_instance's ``TBDateStringGMT``, ISO 8601 in
    UTC); None when absent or in another form (the lease then has no known expiry)."""
    if not isinstance(text, str) or not text:
        return None
    for form in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return float(calendar.timegm(time.strptime(text.strip(), form)))
        except ValueError:
            continue
    return None


def _natural(text: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def manifest_nodes(manifests: Mapping[str, str], user: str | None = None) -> list[dict[str, str]]:
    """Every node of an experiment's manifests (one RSpec v3 per aggregate, keyed by its URN,
    portal-tools API.md): client_id, login host, port, user, hardware type, image, site; in
    client_id order. A node has one ``services/login`` per user (geni-lib's
    ``ManifestNode.logins``): ``user``'s is taken when given, else the first."""
    nodes = []
    for xml in manifests.values():
        for node in ET.fromstring(xml).iter():
            if not node.tag.endswith("}node") and node.tag != "node":
                continue
            found: dict[str, str] = {
                "client_id": node.get("client_id", ""),
                "site": node.get("component_manager_id", ""),
            }
            for child in node.iter():
                tag = child.tag.rsplit("}", 1)[-1]
                mine = user is not None and child.get("username") == user
                if tag == "login" and ("hostname" not in found or mine):
                    found["hostname"] = child.get("hostname", "")
                    found["port"] = child.get("port", "22")
                    if child.get("username"):
                        found["username"] = child.get("username", "")
                elif tag == "host":
                    found["node"] = child.get("name", "")
                    found.setdefault("ipv4", child.get("ipv4", ""))
                elif tag == "hardware_type":
                    found["hardware"] = child.get("name", "")
                elif tag == "disk_image":
                    found["image"] = child.get("name", "")
            nodes.append(found)
    return sorted(nodes, key=lambda n: _natural(n["client_id"]))


class CloudLabBackend:
    """The nodes of one CloudLab experiment, one per logical host."""

    kind: ClassVar[str] = "cloudlab"
    protocol: ClassVar[int] = PROTOCOL_VERSION
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"reboot", "power_cycle", "reimage", "extend", "pin", "memory", "cpu_time"}
    )  # the machine block's limits: the agent over SSH applies them
    secret_settings: ClassVar[frozenset[str]] = frozenset({"passphrase"})

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key in settings:
            if key not in KEYS:
                raise SettingError(
                    key, f"unknown setting '{key}'", f"hosts cloudlab accepts: {', '.join(KEYS)}"
                )
        for key in ("project", "profile", "certificate"):
            if key not in settings:
                raise SettingError(None, f"hosts cloudlab needs '{key}'")
        for key in ("portal", "certificate", "ca", "project", "profile", "refspec", "hardware"):
            value = _path(settings.get(key, "x"))
            if not isinstance(value, str) or not value:
                raise SettingError(key, f"{key} takes a non-empty string in double quotes")
        for key in ("site", "name"):
            if key in settings and not isinstance(settings[key], str):
                raise SettingError(key, f"{key} takes a string in double quotes")
        count = settings.get("count", 1)
        if type(count) is not int or not 1 <= count <= 1000:
            raise SettingError("count", f"count takes a whole number of nodes, got {count!r}")
        for key in ("duration", "wait", "poll"):
            value = settings.get(key)
            if value is not None and (
                not isinstance(value, int | float) or isinstance(value, bool) or value <= 0
            ):
                raise SettingError(key, f"{key} takes a duration such as 4h, got {value!r}")
        if "bindings" in settings:
            _bindings(settings["bindings"])
        ssh = {k: v for k, v in settings.items() if k in SSH_KEYS}
        SshBackend.check_settings({**ssh, "nodes": ("placeholder",)})

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> CloudLabBackend:
        cls.check_settings(settings)
        passphrase = settings.get("passphrase")
        if passphrase is not None and not isinstance(passphrase, Secret):
            raise SettingError("passphrase", 'the passphrase must be read with from env "NAME"')

        def local(value: Any) -> str:
            return str((Path(spec_dir) / Path(_path(value)).expanduser()).resolve())

        certificate = local(settings["certificate"])
        if not Path(certificate).is_file():
            raise SettingError(
                "certificate",
                f"no certificate at {certificate}",
                "download cloudlab.pem from the portal (your name > Download Credentials)",
            )
        portal = Portal(
            settings.get("portal", DEFAULT_URL),
            certificate,
            passphrase,
            local(settings["ca"]) if "ca" in settings else None,
        )
        ssh = {k: v for k, v in settings.items() if k in SSH_KEYS}
        public = {k: v for k, v in settings.items() if k not in cls.secret_settings}
        return cls(
            portal,
            public,
            SshBackend.from_settings({**ssh, "nodes": ("placeholder",)}, Path(spec_dir)),
        )

    def __init__(self, portal: Portal, settings: Mapping[str, Any], ssh: SshBackend) -> None:
        self.portal = portal
        self.settings = dict(settings)
        self.count = int(settings.get("count", 1))
        self.ssh = ssh
        self.lease: Lease | None = None

    def __repr__(self) -> str:
        return f"CloudLabBackend({self.settings['project']},{self.settings['profile']})"

    def hosts(self) -> tuple[str, ...]:
        return tuple(f"node{i}" for i in range(self.count))

    # -- the lease ------------------------------------------------------------------------

    def _start_args(self, name: str) -> dict[str, Any]:
        s = self.settings
        profile = s["profile"] if "," in s["profile"] else f"{s['project']},{s['profile']}"
        bindings = _bindings(s["bindings"]) if "bindings" in s else {}
        if "hardware" in s:
            bindings.setdefault("phystype", s["hardware"])
        bindings.setdefault("nodeCount", str(self.count))
        args: dict[str, Any] = {
            "profile": profile,
            "proj": s["project"],
            "name": name,
            "bindings": json.dumps(bindings, sort_keys=True),
        }
        if "duration" in s:
            args["duration"] = max(1, math.ceil(float(s["duration"]) / 3600.0))
        if "refspec" in s:
            args["refspec"] = s["refspec"]
        if "site" in s:
            args["aggregate"] = s["site"]
        return args

    async def acquire(self, deadline: float | None) -> Lease:
        name = f"{self.settings.get('name', 'bl')}-{uuid.uuid4().hex[:8]}"
        experiment = f"{self.settings['project']},{name}"
        started: list[bool] = []
        work = asyncio.ensure_future(asyncio.to_thread(self._start, name, experiment, started))
        try:
            self.lease = await asyncio.shield(work)
        except BaseException:  # failed or cancelled (Ctrl-C): terminate what was started
            if not work.done():
                await asyncio.wait([work])
            if started:
                await asyncio.shield(asyncio.to_thread(self._terminate, experiment))
            raise
        return self.lease

    def _status(self, experiment: str) -> dict[str, Any]:
        """Blocking: experimentStatus with ``asjson`` (portal-tools API.md: the status,
        ``expires``, ``uuid``, and ``failure_message`` once failed)."""
        answer = self.portal.call("experimentStatus", experiment=experiment, asjson=1)
        status = answer.json("experimentStatus")
        if not isinstance(status, dict):
            raise PortalError("experimentStatus", f"the status is not a JSON object: {status!r}")
        return status

    def _start(self, name: str, experiment: str, started: list[bool]) -> Lease:
        """Blocking (a worker thread): start the experiment and wait until it is ready."""
        self.portal.call("startExperiment", **self._start_args(name))
        started.append(True)
        wait = float(self.settings.get("wait", 1800))
        poll = float(self.settings.get("poll", 10))
        end = time.monotonic() + wait
        status: dict[str, Any] = {}
        while True:
            try:
                status = self._status(experiment)
            except PortalError as err:
                if err.code not in TRANSIENT or time.monotonic() > end:
                    raise
                status = {"status": f"unanswered ({err.message})"}
            state = str(status.get("status", "unknown"))
            if state == READY:
                break
            if state in FINAL:
                why = status.get("failure_message") or status.get("failure_code")
                raise HostDown(
                    "cloudlab",
                    f"experiment {experiment} is {state}" + (f": {why}" if why else ""),
                )
            if time.monotonic() > end:
                raise HostDown(
                    "cloudlab",
                    f"experiment {experiment} not ready after {wait:g}s (last status {state}); "
                    "terminated",
                )
            time.sleep(poll)
        manifests = self.portal.call("experimentManifests", experiment=experiment)
        document = manifests.json("experimentManifests")
        if not isinstance(document, dict):
            raise PortalError("experimentManifests", "the manifests are not a JSON object")
        nodes = manifest_nodes(document, self.settings.get("user"))
        if len(nodes) != self.count:
            raise HostDown(
                "cloudlab",
                f"the profile made {len(nodes)} nodes, not count {self.count}; terminated",
            )
        return Lease(
            str(status.get("uuid") or experiment),
            self.kind,
            {
                f"node{i}": f"{n.get('hostname') or n.get('ipv4')}:{n.get('port', '22')}"
                for i, n in enumerate(nodes)
            },
            tuple(
                {k: n[k] for k in ("client_id", "node", "hardware", "image", "site") if n.get(k)}
                for n in nodes
            ),
            None,
            _epoch(status.get("expires")),
            {
                "experiment": experiment,
                "portal": self.portal.url,
                "users": ",".join(n.get("username", "") for n in nodes),
            },
        )

    def _terminate(self, experiment: str) -> None:
        try:
            self.portal.call("terminateExperiment", experiment=experiment)
        except PortalError as err:
            if err.code != SEARCH_FAILED:
                raise

    async def attach(self, lease: Lease) -> None:
        experiment = lease.handle["experiment"]
        status = (await asyncio.to_thread(self._status, experiment)).get("status")
        if status != READY:
            raise HostDown("cloudlab", f"experiment {experiment} is {status}, not ready")
        self.lease = lease

    async def release(self, lease: Lease) -> None:
        await asyncio.to_thread(self._terminate, lease.handle["experiment"])
        if self.lease is not None and self.lease.id == lease.id:
            self.lease = None

    async def extend(self, lease: Lease, until: float) -> Lease:
        experiment = lease.handle["experiment"]
        hours = max(1, math.ceil((until - (lease.expires or time.time())) / 3600.0))
        try:
            await asyncio.to_thread(
                self.portal.call,
                "extendExperiment",
                experiment=experiment,
                wanted=hours,
                reason="benchlang: the run's remaining rounds need more time",
            )
        except PortalError as err:
            if err.code != RESPONSE_REFUSED:
                raise
            raise HostDown(
                "cloudlab",
                f"the portal refused to extend {experiment} by {hours} h ({err.message}); "
                "an administrator must approve a longer extension (portal-tools API.md)",
            ) from None
        status = await asyncio.to_thread(self._status, experiment)
        fields = json.loads(lease.to_json())
        fields["expires"] = _epoch(status.get("expires")) or until
        self.lease = Lease.from_json(json.dumps(fields))
        return self.lease

    # -- sessions ---------------------------------------------------------------------------

    def _node(self, host: str) -> Node:
        if self.lease is None or host not in self.lease.hosts:
            raise HostDown(host, "cannot connect: no node of the experiment is this host")
        address, _, port = self.lease.hosts[host].rpartition(":")
        users = self.lease.handle.get("users", "").split(",")
        index = list(self.lease.hosts).index(host)
        user = self.settings.get("user") or (users[index] if index < len(users) else None)
        return Node(host, address, int(port), user or None)

    async def open(self, host: str) -> SshSession:
        session = SshSession(self.ssh, self._node(host))
        await session.connect()
        return session

    async def power(self, host: str, action: str) -> None:
        """The portal reboots (``reboot``), power-cycles (``reboot`` with ``power 1``) or
        reloads the node's disk image (``reload``); the session then reconnects (POWER
        says where each call comes from)."""
        if action not in POWER or self.lease is None:
            raise SettingError("reset", f"hosts cloudlab cannot {action}")
        method, extra = POWER[action]
        index = list(self.lease.hosts).index(host)
        client_id = self.lease.resources[index].get("client_id", host)
        try:
            await asyncio.to_thread(
                self.portal.call,
                method,
                experiment=self.lease.handle["experiment"],
                nodes=client_id,
                **extra,
            )
        except PortalError as err:
            if action != "reimage" or "has no method" not in err.message:
                raise
            raise HostDown(
                host,
                "this portal has no reload method, so reset reimage cannot run here "
                "(docs/cloud.md: reload is seen in no portal client); use reset reboot",
            ) from None
