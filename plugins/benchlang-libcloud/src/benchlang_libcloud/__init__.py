"""``hosts libcloud { ... }``: machines created on any Apache Libcloud compute provider for a
run, reached over benchlang's own SSH, destroyed after it (benchlang backend protocol 2).

The lease lifecycle (docs/plugins.md): ``acquire`` creates ``count`` nodes
(``create_node``, the given size, image and location, the key pair, tags and ``ex_`` options
passed through), waits until they run with an address (``wait_until_running``) and returns a
lease mapping the logical hosts ``node0`` ... to those addresses; ``release`` destroys them
(``destroy_node``; nodes already gone are fine). Trials then run through benchlang's SSH
backend. Libcloud's ``deploy_node`` is not used: it accepts any host key. Host keys follow
the SSH backend's rules: a ``known_hosts`` file (e.g. written from keys the provider reports),
or ``insecure_accept_new_host_keys true`` (trust on first use, into a known_hosts file of its
own; a changed key is still refused), docs/cloud.md.

A ``budget`` refuses, before anything is created, a run whose estimated cost (the size's
hourly price x count x ``duration``) exceeds it, when the provider publishes prices.

``driver { ... }`` holds the driver constructor's options besides the credentials: ``host``,
``port``, ``secure`` (an EC2-compatible endpoint, a private cloud), ``region``, and the
provider's own, e.g. OpenStack's ``ex_force_auth_url``, ``ex_force_auth_version``,
``ex_tenant_name``, ``ex_domain_name``, ``ex_force_service_region`` (Chameleon) or GCE's
``project`` and ``datacenter``; a name the driver's constructor does not take is refused.
``key`` and ``secret`` stay the only credentials, from the environment (docs/cloud.md).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from benchlang.backends.base import (
    PROTOCOL_VERSION,
    HostDown,
    Lease,
    Secret,
    SettingError,
)
from benchlang.backends.ssh import Node, SshBackend, SshSession
from benchlang_libcloud.settings import (
    KEYS,
    SSH_KEYS,
    TAG,
    constructor_names,
    driver_options,
    tag_pairs,
    text_setting,
)

__all__ = ["LibcloudBackend"]


def _gone(node: Any) -> bool:
    """A terminated node: providers list them for a while after (EC2 for about an hour)."""
    from libcloud.compute.types import NodeState

    return node.state == NodeState.TERMINATED


def _lease_tag(node: Any) -> str | None:
    """The benchlang lease tag of a node: EC2 lists tags as ``extra["tags"]``, OpenStack its
    metadata as ``extra["metadata"]``, GCE as ``extra["metadata"]["items"]`` (key/value
    pairs)."""
    extra = node.extra or {}
    tags = extra.get("tags") or extra.get("metadata") or {}
    if isinstance(tags, Mapping) and isinstance(tags.get("items"), list):
        tags = {i.get("key"): i.get("value") for i in tags["items"] if isinstance(i, Mapping)}
    return tags.get(TAG) if isinstance(tags, Mapping) else None


class LibcloudBackend:
    """Nodes of a Libcloud compute provider, one per logical host."""

    kind: ClassVar[str] = "libcloud"
    protocol: ClassVar[int] = PROTOCOL_VERSION
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"reboot", "tags", "pin", "memory", "cpu_time"}  # limits: the agent over SSH applies them
    )
    secret_settings: ClassVar[frozenset[str]] = frozenset({"key", "secret"})

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key in settings:
            if key not in KEYS and not key.startswith("ex_"):
                raise SettingError(
                    key,
                    f"unknown setting '{key}'",
                    f"hosts libcloud accepts: {', '.join(KEYS)}, and ex_* provider options",
                )
        for key in ("provider", "size", "image"):
            text_setting(settings, key, required=True)
        for key in ("region", "location", "key_pair", "name"):
            text_setting(settings, key)
        count = settings.get("count", 1)
        if type(count) is not int or not 1 <= count <= 1000:
            raise SettingError("count", f"count takes a whole number of nodes, got {count!r}")
        for key in ("duration", "budget", "wait"):
            value = settings.get(key)
            if value is not None and (
                not isinstance(value, int | float) or isinstance(value, bool) or value <= 0
            ):
                raise SettingError(key, f"{key} takes a positive number, got {value!r}")
        if "budget" in settings and "duration" not in settings:
            raise SettingError(
                "budget",
                "a budget needs the run's duration to estimate its cost",
                "add duration 2h (the lease's length: the run stops before it)",
            )
        if "tags" in settings:
            tag_pairs(settings["tags"])
        if "driver" in settings:
            driver_options(settings["driver"])
        ssh = {k: v for k, v in settings.items() if k in SSH_KEYS}
        SshBackend.check_settings({**ssh, "nodes": ("placeholder",)})

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> LibcloudBackend:
        cls.check_settings(settings)
        for key in ("key", "secret"):
            if key in settings and not isinstance(settings[key], Secret):
                raise SettingError(key, f'{key} must be read with {key} from env "NAME"')
        provider = settings["provider"]
        credentials = [settings[k] for k in ("key", "secret") if k in settings]
        options = {"region": settings["region"]} if "region" in settings else {}
        options.update(driver_options(settings["driver"]) if "driver" in settings else {})

        from libcloud.compute.providers import get_driver

        try:
            driver_class = get_driver(provider)
        except AttributeError:
            raise SettingError(
                "provider",
                f"Libcloud has no compute provider '{provider}'",
                "see libcloud.compute.types.Provider for the names (ec2, gce, openstack, ...)",
            ) from None
        accepted = constructor_names(driver_class)
        unknown = sorted(set(options) - accepted) if accepted is not None else []
        if unknown:
            raise SettingError(
                "region" if unknown == ["region"] else "driver",
                f"the {provider} driver's constructor takes no {', '.join(unknown)}",
                f"it takes: {', '.join(sorted(accepted - {'key', 'secret'}))}",
            )

        def connect() -> Any:
            return driver_class(*(c.reveal() for c in credentials), **options)

        ssh = {k: v for k, v in settings.items() if k in SSH_KEYS}
        return cls(
            connect,
            settings,
            SshBackend.from_settings({**ssh, "nodes": ("placeholder",)}, Path(spec_dir)),
        )

    def __init__(self, connect: Any, settings: Mapping[str, Any], ssh: SshBackend) -> None:
        self._connect = connect
        self._driver: Any = None
        self.settings = {k: v for k, v in settings.items() if k not in self.secret_settings}
        self.count = int(settings.get("count", 1))
        self.ssh = ssh
        self.lease: Lease | None = None
        self._price: float | None = None

    def __repr__(self) -> str:
        return f"LibcloudBackend(provider={self.settings['provider']!r}, count={self.count})"

    @property
    def driver(self) -> Any:
        if self._driver is None:
            self._driver = self._connect()
        return self._driver

    def hosts(self) -> tuple[str, ...]:
        return tuple(f"node{i}" for i in range(self.count))

    # -- the lease ------------------------------------------------------------------------

    async def acquire(self, deadline: float | None) -> Lease:
        lease_id = uuid.uuid4().hex
        created: list[Any] = []
        work = asyncio.ensure_future(asyncio.to_thread(self._create, lease_id, created))
        try:
            nodes = await asyncio.shield(work)
        except BaseException:  # failed or cancelled (Ctrl-C): destroy what was created
            if not work.done():
                await asyncio.wait([work])
            await asyncio.shield(asyncio.to_thread(self._destroy, [n.id for n in created]))
            if not work.cancelled() and isinstance(work.exception(), HostDown | SettingError):
                raise work.exception() from None
            raise
        self.lease = self._lease(lease_id, nodes)
        return self.lease

    def _find(self, what: str, items: list[Any], wanted: str) -> Any:
        for item in items:
            if str(item.id) == wanted or str(getattr(item, "name", "")) == wanted:
                return item
        names = ", ".join(sorted({str(getattr(i, "name", i.id)) for i in items})[:12])
        raise SettingError(what, f"the provider has no {what} '{wanted}'", f"it offers: {names}")

    def _image(self, wanted: str) -> Any:
        """The image by id through ``get_image`` (one request: EC2's full listing is every
        public AMI), else by id or name in ``list_images``."""
        try:
            return self.driver.get_image(wanted)
        except Exception:  # not an id, or the driver has no get_image: the listing decides
            return self._find("image", self.driver.list_images(), wanted)

    def _create(self, lease_id: str, created: list[Any]) -> list[tuple[Any, str]]:
        """Blocking (a worker thread): create the nodes and wait until each has an address."""
        from libcloud.common.types import LibcloudError

        s, driver = self.settings, self.driver
        try:
            size = self._find("size", driver.list_sizes(), s["size"])
            image = self._image(s["image"])
            location = (
                self._find("location", driver.list_locations(), s["location"])
                if "location" in s
                else None
            )
            self._check_budget(size)
            self._price = getattr(size, "price", None)
            accepted = inspect.signature(driver.create_node).parameters
            options = self._options(lease_id, accepted)
            if location is not None:
                if "location" not in accepted:
                    raise SettingError("location", f"the {s['provider']} driver takes no location")
                options["location"] = location
            prefix = s.get("name", "benchlang")
            for i in range(self.count):
                node = driver.create_node(
                    name=f"{prefix}-{lease_id[:8]}-{i}", size=size, image=image, **options
                )
                created.append(node)
            ready = driver.wait_until_running(
                created, wait_period=1, timeout=float(s.get("wait", 600))
            )
        except (LibcloudError, OSError) as err:
            raise HostDown("libcloud", f"{s['provider']}: {err}") from None
        by_id = {n.id: addresses[0] for n, addresses in ready}
        return [(n, by_id[n.id]) for n in created]

    def _options(self, lease_id: str, accepted: Mapping[str, Any]) -> dict[str, Any]:
        """``ex_*`` options, the key pair and the tags, as this driver's create_node takes
        them (a provider that takes none of them refuses the setting, never ignores it)."""
        s = self.settings
        options = {k: v for k, v in s.items() if k.startswith("ex_")}
        if "key_pair" in s:
            options["ex_keyname"] = s["key_pair"]
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        if "tags" in s or "ex_metadata" in accepted:  # the lease tag: what sweep finds
            options["ex_metadata"] = {**tag_pairs(s.get("tags", ())), TAG: lease_id}
        for key in options:
            if not takes_any and key not in accepted:
                raise SettingError(
                    "tags" if key == "ex_metadata" else "key_pair" if key == "ex_keyname" else key,
                    f"the {s['provider']} driver's create_node takes no {key}",
                )
        return options

    def _check_budget(self, size: Any) -> None:
        s = self.settings
        price = getattr(size, "price", None)
        if "budget" not in s or price is None:
            return
        hours = float(s["duration"]) / 3600.0
        cost = float(price) * self.count * hours
        if cost > float(s["budget"]):
            raise SettingError(
                "budget",
                f"the run would cost about {cost:.2f} ({self.count} x {size.name or size.id} at "
                f"{float(price):g}/h for {hours:g} h), over the budget of {float(s['budget']):g}",
                "raise the budget, or use fewer or smaller nodes, or a shorter duration",
            )

    def _lease(self, lease_id: str, nodes: list[tuple[Any, str]]) -> Lease:
        s = self.settings
        price = None if self._price is None else float(self._price) * len(nodes)
        duration = s.get("duration")
        return Lease(
            lease_id,
            self.kind,
            {f"node{i}": address for i, (_n, address) in enumerate(nodes)},
            tuple(
                {
                    "node_id": str(n.id),
                    "name": str(n.name),
                    "provider": s["provider"],
                    "size": s["size"],
                    "image": s["image"],
                    **({"location": s["location"]} if "location" in s else {}),
                }
                for n, _ in nodes
            ),
            price,
            time.time() + float(duration) if duration else None,
            {"node_ids": ",".join(str(n.id) for n, _ in nodes)},
        )

    def _destroy(self, node_ids: list[Any]) -> None:
        wanted = {str(i) for i in node_ids}
        for node in list(self.driver.list_nodes()):  # a copy: destroying edits the listing
            if str(node.id) in wanted and not _gone(node):
                self.driver.destroy_node(node)

    async def sweep(self, keep: frozenset[str], destroy: bool = True) -> list[str]:
        """Every node tagged by a benchlang lease not in ``keep`` (those still held in a
        store): destroyed unless ``destroy`` is False; one line per node found."""

        def work() -> list[str]:
            found = []
            for node in list(self.driver.list_nodes()):
                lease = _lease_tag(node)
                if lease is None or lease in keep or _gone(node):
                    continue
                if destroy:
                    self.driver.destroy_node(node)
                found.append(f"node {node.id} ({node.name}) of lease {lease}")
            return found

        return await asyncio.to_thread(work)

    async def attach(self, lease: Lease) -> None:
        wanted = set(lease.handle.get("node_ids", "").split(","))
        nodes = await asyncio.to_thread(self.driver.list_nodes)
        present = {str(n.id) for n in nodes if not _gone(n)}
        missing = sorted(wanted - present)
        if missing:
            raise HostDown("libcloud", f"nodes {', '.join(missing)} of lease {lease.id} are gone")
        self.lease = lease

    async def release(self, lease: Lease) -> None:
        ids = [i for i in lease.handle.get("node_ids", "").split(",") if i]
        await asyncio.to_thread(self._destroy, ids)
        if self.lease is not None and self.lease.id == lease.id:
            self.lease = None

    # -- sessions ---------------------------------------------------------------------------

    async def open(self, host: str) -> SshSession:
        if self.lease is None or host not in self.lease.hosts:
            raise HostDown(host, "cannot connect: no node of the lease is this host")
        address = self.lease.hosts[host]
        session = SshSession(self.ssh, Node(host, address, None, None))
        try:
            await session.connect()
        except HostDown as err:
            raise HostDown(
                host, f"cannot reach {host} over SSH at {address}: {err.message}"
            ) from None
        return session

    async def power(self, host: str, action: str) -> None:
        """``reboot``: the provider's reboot_node (the session then reconnects)."""
        if action != "reboot" or self.lease is None:
            raise SettingError("reset", f"hosts libcloud cannot {action}")
        index = list(self.lease.hosts).index(host)
        node_id = self.lease.handle["node_ids"].split(",")[index]
        nodes = await asyncio.to_thread(self.driver.list_nodes)
        node = next((n for n in nodes if str(n.id) == node_id), None)
        if node is None:
            raise HostDown(host, f"node {node_id} is gone")
        await asyncio.to_thread(self.driver.reboot_node, node)
