"""The Backend protocol: how benchlang runs commands on hosts.

A backend is a class registered under the ``benchlang.backends`` entry-point group. It
turns the settings of a ``hosts KIND { ... }`` statement into a list of logical host names,
acquires a ``Lease`` (the machines behind those names) before a run and releases it after,
and opens one session per host; a session executes commands and reads files. The executor
does everything else (plans, hooks, measures, the store, retries). See docs/plugins.md.

Protocol version 2 (``protocol = 2``) adds the lease lifecycle (acquire, attach, release,
extend), ``capabilities`` and ``secret_settings``. A class without ``protocol`` is version 1:
it is run with a lease that allocates nothing (``acquire_lease``), and ``benchlang plugins``
says so.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import attrs

from benchlang.errors import SettingError
from benchlang.lang.outside import check_readable
from benchlang.model import Machine

__all__ = [
    "CAPABILITIES",
    "PROTOCOL_VERSION",
    "Backend",
    "Command",
    "Execution",
    "FixedHosts",
    "HostDown",
    "HostSession",
    "Lease",
    "Secret",
    "SettingError",
    "acquire_lease",
    "attach_lease",
    "capabilities_of",
    "check_facts_setting",
    "protocol_of",
    "read_declared_facts",
    "release_lease",
]

PROTOCOL_VERSION = 2
CAPABILITIES = frozenset(
    {"reboot", "power_cycle", "reimage", "extend", "tags", "aslr", "pin", "memory", "cpu_time"}
)
"""What a backend may declare it can do; ``extend`` allows ``Backend.extend``; ``pin``,
``memory`` and ``cpu_time`` apply ``Command.limits`` (docs/machine.md); ``aslr``
honours ``Command.aslr``."""


class HostDown(Exception):
    """The host stopped answering (connection lost, reboot never came back)."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.message = message


@attrs.frozen
class Command:
    """A shell command to execute on a host, with extra environment and a time limit."""

    text: str
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str | None = None
    timeout: float | None = None
    aslr: bool | None = None
    """Address-space randomisation for this command: None leaves it as the host has it,
    False turns it off (personality ADDR_NO_RANDOMIZE, as ``setarch -R``). Only backends with
    the ``aslr`` capability get a value (the checker refuses a hidden aslr factor on others)."""
    limits: Machine | None = None
    """The ``machine`` block's per-trial limits (CPU pinning, memory, CPU time) for a trial's
    command; None for hooks and probes. Backends with the ``pin``/``memory``/``cpu_time``
    capabilities apply them (docs/machine.md); the executor refuses a limit a backend lacks."""


@attrs.frozen
class Execution:
    """What happened when a command ran.

    exit_status is the exit code, or minus the signal number when killed by a signal.
    rusage holds the built-in measures the backend could read (wall_time is always set).

    Optional, for backends that bound the output they keep (docs/measures.md): ``stdout`` and
    ``stderr`` may hold only the last bytes of a stream; ``*_truncated`` then says so,
    ``*_size`` is the stream's full length and ``*_path`` a local file holding all of it,
    valid until the session's next ``execute`` or ``close``. ``unavailable`` maps a built-in
    measure the backend could not take to the reason (a failed measure, never a wrong number).
    ``left_running`` counts the processes the command left behind, killed when it ended.
    ``failure`` says why the backend lost the command (its launcher died): never ``ok``.
    """

    exit_status: int
    timed_out: bool
    started: float
    ended: float
    wall_time: float
    stdout: bytes
    stderr: bytes
    rusage: Mapping[str, float] = attrs.field(factory=dict)
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_size: int | None = None
    stderr_size: int | None = None
    stdout_path: str | None = None
    stderr_path: str | None = None
    unavailable: Mapping[str, str] = attrs.field(factory=dict)
    left_running: int = 0
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out and self.failure is None


@runtime_checkable
class HostSession(Protocol):
    """An open connection to one host, reused for every command run there."""

    host: str

    async def execute(self, command: Command) -> Execution: ...

    async def read_file(self, path: str, cwd: str | None = None) -> bytes: ...

    async def facts(self) -> dict[str, str]: ...

    async def reconnect(self, timeout: float) -> None: ...

    async def close(self) -> None: ...


def _str_map(value: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in dict(value).items()}


def _resources(value: Any) -> tuple[dict[str, str], ...]:
    return tuple(_str_map(r) for r in value)


@attrs.frozen
class Lease:
    """What a backend allocated for a run: stored before any trial runs, released after.

    ``hosts`` maps each logical host name of the plan to its physical address or node name;
    ``resources`` lists what was allocated (instance or node ids, hardware type, image, site);
    ``handle`` holds what ``attach`` and ``release`` need. No secret belongs in a lease: it is
    stored in plain text.
    """

    id: str
    kind: str
    hosts: Mapping[str, str] = attrs.field(converter=_str_map)
    resources: tuple[Mapping[str, str], ...] = attrs.field(default=(), converter=_resources)
    price_per_hour: float | None = None
    expires: float | None = None
    """Epoch seconds after which the machines may be taken back."""
    handle: Mapping[str, str] = attrs.field(factory=dict, converter=_str_map)

    def to_json(self) -> str:
        return json.dumps(
            {
                "id": self.id,
                "kind": self.kind,
                "hosts": dict(self.hosts),
                "resources": [dict(r) for r in self.resources],
                "price_per_hour": self.price_per_hour,
                "expires": self.expires,
                "handle": dict(self.handle),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Lease:
        return cls(**json.loads(text))

    @classmethod
    def nothing(cls, kind: str, hosts: tuple[str, ...]) -> Lease:
        """The lease of a backend whose hosts exist without allocation (local, ssh)."""
        return cls(uuid.uuid4().hex, kind, {h: h for h in hosts})


class Secret:
    """A setting's value read from the environment (``key from env "NAME"``): masked in
    ``repr``/``str`` so it reaches no log, store or plan; ``reveal()`` gives the value."""

    __slots__ = ("_value", "env")

    def __init__(self, env: str, value: str) -> None:
        self.env = env
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret(from env {self.env!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and (self.env, self._value) == (other.env, other._value)

    def __hash__(self) -> int:
        return hash(self.env)


@runtime_checkable
class Backend(Protocol):
    """A kind of hosts (``hosts local``, ``hosts ssh { ... }``), protocol version 2.

    ``acquire``/``attach``/``release`` (and ``extend`` with the ``extend`` capability) are
    the lease lifecycle; version-1 classes lack them and are run through ``acquire_lease``.
    """

    kind: ClassVar[str]
    protocol: ClassVar[int]
    capabilities: ClassVar[frozenset[str]]
    secret_settings: ClassVar[frozenset[str]]

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        """Validate settings without I/O; raise SettingError naming the bad key."""
        ...

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> Backend: ...

    def hosts(self) -> tuple[str, ...]: ...

    async def open(self, host: str) -> HostSession: ...

    async def acquire(self, deadline: float | None) -> Lease:
        """Allocate the hosts (give up by ``deadline``, epoch seconds)."""
        ...

    async def attach(self, lease: Lease) -> None:
        """Use a lease acquired by an earlier process (``run --resume``)."""
        ...

    async def release(self, lease: Lease) -> None:
        """Give the hosts back; idempotent (a released or unknown lease is not an error)."""
        ...


@runtime_checkable
class Powered(Protocol):
    """A backend that does ``reboot``, ``power_cycle`` or ``reimage`` (those in its
    ``capabilities``) through its provider: the optional ``power`` of docs/plugins.md."""

    async def power(self, host: str, action: str) -> None: ...


class FixedHosts:
    """Protocol 2 for backends whose hosts exist without allocation (local, ssh): a lease
    that allocates nothing, maps each host to itself, and releases nothing."""

    kind: ClassVar[str]
    protocol: ClassVar[int] = PROTOCOL_VERSION
    capabilities: ClassVar[frozenset[str]] = frozenset()
    secret_settings: ClassVar[frozenset[str]] = frozenset()

    def hosts(self) -> tuple[str, ...]:
        raise NotImplementedError

    async def acquire(self, deadline: float | None) -> Lease:
        return Lease.nothing(self.kind, self.hosts())

    async def attach(self, lease: Lease) -> None:
        return None

    async def release(self, lease: Lease) -> None:
        return None


def protocol_of(backend: Any) -> int:
    """The protocol version a backend class (or instance) declares; none declared is 1."""
    return int(getattr(backend, "protocol", 1))


def capabilities_of(backend: Any) -> frozenset[str]:
    """Declared capabilities; a version-1 ``supports_reboot`` counts as ``reboot``."""
    declared = frozenset(getattr(backend, "capabilities", ()))
    if getattr(backend, "supports_reboot", False):
        declared |= {"reboot"}
    return declared


async def acquire_lease(backend: Any, deadline: float | None = None) -> Lease:
    """The backend's lease; a version-1 backend gets one that allocates nothing."""
    if protocol_of(backend) >= 2:
        return await backend.acquire(deadline)
    return Lease.nothing(backend.kind, tuple(backend.hosts()))


async def attach_lease(backend: Any, lease: Lease) -> None:
    if protocol_of(backend) >= 2:
        await backend.attach(lease)


async def release_lease(backend: Any, lease: Lease) -> None:
    if protocol_of(backend) >= 2:
        await backend.release(lease)


def check_facts_setting(value: Any) -> None:
    """``facts from file "F"`` of a ``hosts`` block (local, ssh), checked without I/O."""
    if not (isinstance(value, Mapping) and isinstance(value.get("file"), str)):
        raise SettingError(
            "facts",
            "facts are read from a JSON file",
            'facts from file "facts.json" (host -> {fact: value})',
        )


def read_declared_facts(path: Path, hosts: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``facts from file``: a JSON object host -> {fact: value}, for facts a host cannot
    report itself (rack, hardware type) or to stand in for hosts in tests."""
    try:
        check_readable(path)
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SettingError("facts", f"cannot read the facts file {path}: {err}") from None
    if not isinstance(document, dict) or not all(isinstance(v, dict) for v in document.values()):
        raise SettingError("facts", f"{path}: expected a JSON object host -> {{fact: value}}")
    unknown = sorted(set(document) - set(hosts))
    if unknown:
        raise SettingError(
            "facts", f"{path} gives facts of {', '.join(unknown)}, not hosts of this backend"
        )
    return {h: {str(k): str(v) for k, v in facts.items()} for h, facts in document.items()}
