"""The Plan: every trial of an experiment, in execution order, as JSON with a content hash.

Trials are held column-wise (numpy arrays) so that a million-trial plan compiles in well
under a second; configurations (benchmark x factor levels) carry the expanded command.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import json
import math
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii as _encode_string
from typing import Any

import attrs
import numpy as np

PLAN_FORMAT = 1

OWN_SHA256_BELOW = 1 << 19
"""Bytes below which ``sha256_hex`` uses CPython's own SHA-256 rather than OpenSSL's."""


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` in hex. Below half a megabyte (a plan of up to about 40,000 trials)
    by CPython's own module (``_sha256``, ``_sha2`` since 3.12): importing hashlib loads
    OpenSSL, 3-4 ms of a process; from there by OpenSSL's, ten times faster (a 13 MB plan:
    6 ms against 59). The same digest either way."""
    if len(data) < OWN_SHA256_BELOW:
        for name in ("_sha256", "_sha2"):
            with contextlib.suppress(ImportError):
                return str(importlib.import_module(name).sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building millions of acyclic objects
    (configurations, their JSON): its generation scans would otherwise double the time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


ORDER_KINDS = ("fixed", "random")
PHASES = ("measured", "warmup", "cooldown")


class PlanError(ValueError):
    """A spec that checks but cannot be planned on the backend's hosts."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _json_scalar(value: Any) -> str:
    """A level as ``json.dumps(..., ensure_ascii=True)`` writes it."""
    if isinstance(value, str):
        return _encode_string(value)
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is float and math.isfinite(value):
        return float.__repr__(value)
    return json.dumps(value, ensure_ascii=True)


def _configuration_json(c: Configuration) -> str:
    """``json.dumps(c.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)``."""
    levels = ",".join(
        f"{_encode_string(k)}:{_json_scalar(v)}" for k, v in sorted(c.levels, key=lambda kv: kv[0])
    )
    return f'{{"benchmark":{_encode_string(c.benchmark)},"command":{_encode_string(c.command)},"index":{c.index},"levels":{{{levels}}}}}'


@attrs.frozen
class Configuration:
    index: int
    benchmark: str
    levels: tuple[tuple[str, Any], ...]
    command: str

    @property
    def label(self) -> str:
        if not self.levels:
            return self.benchmark
        return f"{self.benchmark}[{','.join(f'{k}={v}' for k, v in self.levels)}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "benchmark": self.benchmark,
            "levels": dict(self.levels),
            "command": self.command,
        }


@attrs.frozen
class Derived:
    """A number the compiler chose, and why (shown by ``benchlang plan``)."""

    name: str
    value: Any
    reason: str


@attrs.frozen(eq=False)
class Plan:
    experiment: str
    seed: int
    spec_hash: str
    hosts: tuple[str, ...]
    configurations: tuple[Configuration, ...]
    series_start: np.ndarray
    round_series: np.ndarray
    round_order: np.ndarray
    round_host: np.ndarray
    trial_round: np.ndarray
    trial_position: np.ndarray
    trial_configuration: np.ndarray
    trial_seed: np.ndarray
    derived: tuple[Derived, ...] = ()
    layout: dict[str, Any] | None = None
    round_batch: np.ndarray | None = None
    trial_phase: np.ndarray | None = None
    round_start: np.ndarray | None = None
    """Seconds from the run's start before which each round may not start (a ``span``)."""
    round_replicate: np.ndarray | None = None
    """Each round's replicate block (``design { replicate N }``, N > 1)."""
    hidden: tuple[dict[str, Any], ...] = ()
    """Hidden factors (name, kind, per, levels), in spec order (plan.hidden)."""
    trial_hidden: dict[str, list[Any]] | None = None
    """Each hidden factor's drawn level for every trial."""
    inventory: dict[str, Any] | None = None
    """With hardware factors or ``hosts where``: the backend's hosts, the facts the host
    selection read, the conditions and each hardware factor's required levels (plan.inventory)."""
    redundancy: dict[str, Any] | None = None
    """With ``design { redundancy N }``: ``copies`` N and the ``groups`` of equal hosts, each
    running every round of its configurations (DataMill §4.2; plan.redundancy)."""
    machine: dict[str, Any] | None = None
    """The ``machine`` block's per-trial limits (cpus, memory bytes, cpu_time seconds,
    cpu_quota), with ``hosts`` for a block of its own per host: limits change what a trial
    measures, so they are part of the hash (docs/machine.md). Required host state is not:
    it is checked before the run and written into the record."""

    @property
    def n_trials(self) -> int:
        return int(self.trial_round.size)

    @property
    def pinned(self) -> bool:
        """Whether each round belongs to its host: an A/B layout's host batches, or rounds of
        configurations with one host's hardware levels (a stopped host's rounds then wait for
        ``--resume`` instead of moving to a host whose trials would carry wrong levels)."""
        return self.layout is not None or bool(self.inventory and self.inventory["hardware"])

    @property
    def host_groups(self) -> tuple[tuple[str, ...], ...]:
        """Hosts that may take each other's rounds when one of them stops: the groups of equal
        hosts of a redundant plan, each host alone in a pinned plan, else all hosts together."""
        if self.redundancy is not None:
            return tuple(tuple(g) for g in self.redundancy["groups"])
        if self.pinned:
            return tuple((h,) for h in self.hosts)
        return (tuple(self.hosts),)

    @property
    def n_rounds(self) -> int:
        return int(self.round_series.size)

    @property
    def trial_series(self) -> np.ndarray:
        return self.round_series[self.trial_round]

    @property
    def trial_host(self) -> np.ndarray:
        return self.round_host[self.trial_round]

    @functools.cached_property
    def round_bounds(self) -> np.ndarray:
        """Trial index where each round starts; round r is trials [b[r], b[r+1])."""
        return np.searchsorted(self.trial_round, np.arange(self.n_rounds + 1))

    def phase(self, t: int) -> str:
        """``measured``, or ``warmup``/``cooldown`` for trials a layout runs but does not analyse."""
        return "measured" if self.trial_phase is None else PHASES[int(self.trial_phase[t])]

    def to_json(self, configurations: bool = True) -> dict[str, Any]:
        out = self._json_body(configurations)
        if self.layout is not None:
            out["layout"] = dict(self.layout)
            assert self.round_batch is not None and self.trial_phase is not None  # with a layout
            out["rounds"]["batch"] = self.round_batch.tolist()
            out["trials"]["phase"] = [PHASES[k] for k in self.trial_phase.tolist()]
        elif self.trial_phase is not None:
            out["trials"]["phase"] = [PHASES[k] for k in self.trial_phase.tolist()]
        if self.round_start is not None:
            out["rounds"]["start"] = [round(float(x), 3) for x in self.round_start]
        if self.round_replicate is not None:
            out["rounds"]["replicate"] = self.round_replicate.tolist()
        if self.inventory is not None:
            out["inventory"] = self.inventory
        if self.redundancy is not None:
            out["redundancy"] = {
                "copies": self.redundancy["copies"],
                "groups": [list(g) for g in self.redundancy["groups"]],
            }
        if self.machine is not None:
            out["machine"] = self.machine
        if self.hidden:
            out["hidden"] = [dict(h) for h in self.hidden]
            out["trials"]["hidden"] = {
                k: [list(x) if isinstance(x, tuple) else x for x in v]
                for k, v in (self.trial_hidden or {}).items()
            }
        return out

    def plan_levels(self, t: int) -> dict[str, Any]:
        """Levels of trial ``t`` the plan draws beside its configuration's: the replicate
        block and each hidden factor's level. Stored with the trial, so analyses see them."""
        out: dict[str, Any] = {}
        if self.round_replicate is not None:
            out["replicate"] = int(self.round_replicate[self.trial_round[t]])
        for name, values in (self.trial_hidden or {}).items():
            out[name] = values[t]
        return out

    def _json_body(self, configurations: bool) -> dict[str, Any]:
        return {
            "benchlang_plan": PLAN_FORMAT,
            "experiment": self.experiment,
            "seed": self.seed,
            "spec_hash": self.spec_hash,
            "hosts": list(self.hosts),
            **(
                {"configurations": [c.to_json() for c in self.configurations]}
                if configurations
                else {}
            ),
            "series": {"start": self.series_start.tolist()},
            "rounds": {
                "series": self.round_series.tolist(),
                "order": [ORDER_KINDS[k] for k in self.round_order.tolist()],
                "host": self.round_host.tolist(),
            },
            "trials": {
                "round": self.trial_round.tolist(),
                "position": self.trial_position.tolist(),
                "configuration": self.trial_configuration.tolist(),
                "seed": self.trial_seed.tolist(),
            },
            "derived": [attrs.asdict(d) for d in self.derived],
        }

    @functools.cached_property
    def canonical_json(self) -> str:
        """``json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)``,
        byte for byte, without building a dict per configuration (a million-configuration
        plan would hold them all at once)."""
        with paused_gc():
            skeleton = {**self.to_json(configurations=False), "configurations": []}
            text = json.dumps(skeleton, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
            marker = '"configurations":[]'
            at = text.index(marker)  # the first key after "benchlang_plan", whose value is a number
            body = ",".join(map(_configuration_json, self.configurations))
            return f'{text[:at]}"configurations":[{body}]{text[at + len(marker) :]}'

    @functools.cached_property
    def shape_hash(self) -> str:
        """The hash of what shapes the trials alone (:func:`shape_of`)."""
        return shape_of(json.loads(self.canonical_json))

    def with_identity(self, spec_hash: str, derived: tuple[Derived, ...]) -> Plan:
        """This plan under another spec's identity: for a spec that differs from a stored
        run's only in what does not shape its trials, the stored plan itself."""
        return attrs.evolve(self, spec_hash=spec_hash, derived=derived)

    @functools.cached_property
    def hash(self) -> str:
        return "sha256:" + sha256_hex(self.canonical_json.encode())

    def json_text(self) -> str:
        """The plan as published: canonical JSON with its content hash."""
        return self.canonical_json[:-1] + f',"hash":"{self.hash}"}}'


NOT_SHAPING = ("spec_hash", "derived", "hash")
"""Plan fields that say where a plan came from, not what its trials are: a spec whose
analysis, KPI confidence (with the same sizes) or comments change keeps its trials."""


def shape_of(document: dict[str, Any]) -> str:
    """SHA-256 of a plan document (``Plan.to_json()`` or a stored plan's JSON) without the
    fields in NOT_SHAPING: equal for two plans that run the very same trials."""
    body = {k: v for k, v in document.items() if k not in NOT_SHAPING}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + sha256_hex(text.encode())
