"""The four A/B layouts of Bakshy & Frachtenberg (WWW 2015, §4, Table 2) as trial schedules.

Vocabulary. ``R`` is the number of requests *per version* and ``H`` the total number of hosts.
Every measured (request, version) pair is executed ``T`` times (repetitions) in the same host
batch. A *batch* is one service instance of one version on one host, started after a reset;
``batch`` is numbered per host (0 or 1).

========================  =========  ================  ==================  ==================
layout                    batches    hosts / version   distinct requests   request on both?
========================  =========  ================  ==================  ==================
unbalanced (UB)           1 / host   H/2               2R                  no
request_balanced (RB)     1 / host   H/2               R                   yes, other host
host_balanced (HB)        2 / host   H                 2R                  no
fully_balanced (FB)       2 / host   H                 R                   yes, same host
========================  =========  ================  ==================  ==================

Request indices point into the request pool (a list or file of the spec, ``pool`` entries):
layouts that need ``2R`` distinct requests draw them from the pool, the others ``R``. A seeded
permutation of the pool decides which requests are used and which go to which version and host
(round robin over the permuted order, so hosts get ``R // k`` or ``R // k + 1`` requests, ``k``
hosts per version). All randomness comes from :mod:`benchlang.design.streams` (SplitMix64), so a
schedule is the same on every machine and numpy version.
In the two-batch layouts the versions are swapped between batches and counterbalanced across
hosts: host ``h`` runs version ``h % 2`` in batch 0 and the other one in batch 1.
"""

from __future__ import annotations

import attrs
import numpy as np

from benchlang.design.streams import draws
from benchlang.model import LAYOUTS

__all__ = [
    "LAYOUTS",
    "check_layout",
    "duplication_coefficients",
    "layout_counts",
    "layout_schedule",
]

SHORT_NAMES = {
    "unbalanced": "UB",
    "request_balanced": "RB",
    "host_balanced": "HB",
    "fully_balanced": "FB",
}
PHASE_MEASURED, PHASE_WARMUP, PHASE_COOLDOWN = 0, 1, 2


@attrs.frozen
class Duplication:
    """Duplication coefficients of one version's sample (Bakshy & Frachtenberg §4.1).

    With ``n_r^v`` (``n_h^v``) the trials of request r (host h) under version v and ``N`` the
    trials per version: ``nu_R = sum_r (n_r^v)^2 / N``, ``nu_H = sum_h (n_h^v)^2 / N`` (averaged
    over the two versions), ``omega_R = sum_r n_r^A n_r^B / N``, ``omega_H = sum_h n_h^A n_h^B / N``.
    """

    nu_R: float
    nu_H: float
    omega_R: float
    omega_H: float


@attrs.frozen(eq=False)
class LayoutSchedule:
    """Every trial of an A/B layout as columnar arrays, in execution order.

    Rows are sorted by (batch, host, position): hosts run in parallel, each host works through
    its rows in ``position`` order, and every host finishes batch 0 (then resets) before batch 1.
    ``phase`` is 0 for measured trials, 1 for warm-up and 2 for cool-down trials (run but
    excluded from analysis); their ``repetition`` is -1. ``host_block`` groups hosts that executed
    the same requests (§5.2); it equals ``host`` except in the request-balanced layout.
    """

    kind: str
    hosts: int
    requests: int
    repetitions: int
    warmup: int
    cooldown: int
    seed: int
    host: np.ndarray
    request: np.ndarray
    version: np.ndarray
    batch: np.ndarray
    repetition: np.ndarray
    phase: np.ndarray
    position: np.ndarray
    host_block: np.ndarray

    @property
    def measured(self) -> np.ndarray:
        return self.phase == PHASE_MEASURED

    @property
    def trials(self) -> int:
        return int(self.host.size)

    @property
    def measured_trials(self) -> int:
        return int(self.measured.sum())

    @property
    def batches(self) -> int:
        """Host batches (service instances started after a reset) the layout needs."""
        return int(np.unique(self.host * 2 + self.batch).size)

    @property
    def distinct_requests(self) -> int:
        return int(np.unique(self.request).size)

    @property
    def duplication(self) -> Duplication:
        m = self.measured
        return duplication_from_trials(self.request[m], self.host[m], self.version[m])


def check_layout(kind: str, hosts: int, requests: int, repetitions: int) -> int:
    """Hosts per version of a valid layout; ValueError says what makes it impossible."""
    if kind not in LAYOUTS:
        raise ValueError(f"unknown layout {kind!r}; expected one of {', '.join(LAYOUTS)}")
    if repetitions < 1 or requests < 1 or hosts < 1:
        raise ValueError("hosts, requests and repetitions must be positive")
    per_version = hosts // 2 if kind in ("unbalanced", "request_balanced") else hosts
    if kind in ("unbalanced", "request_balanced") and hosts % 2:
        raise ValueError(f"the {kind} layout splits hosts between versions: hosts must be even")
    if requests < per_version:
        raise ValueError(
            f"{requests} requests per version cannot keep {per_version} hosts per version busy"
        )
    return per_version


def hosts_per_version(kind: str, hosts: int) -> int:
    return hosts // 2 if kind in ("unbalanced", "request_balanced") else hosts


def layout_schedule(
    kind: str,
    hosts: int,
    requests: int,
    repetitions: int,
    warmup: int = 0,
    cooldown: int = 0,
    seed: int = 0,
    pool: int | None = None,
) -> LayoutSchedule:
    """The trial schedule of one layout (Bakshy & Frachtenberg §4, Table 2, generalised).

    ``requests`` is R, the number of requests per version; ``pool`` the number of requests to
    choose from (default: exactly as many as the layout needs). ``warmup``/``cooldown`` trials
    are added at the start/end of every host batch, cycling through that batch's requests.
    """
    k = check_layout(kind, hosts, requests, repetitions)
    if warmup < 0 or cooldown < 0:
        raise ValueError("warmup and cooldown must be non-negative")
    two_pools = kind in ("unbalanced", "host_balanced")
    needed = 2 * requests if two_pools else requests
    pool = needed if pool is None else pool
    if pool < needed:
        raise ValueError(
            f"the {kind} layout needs {needed} distinct requests, but only {pool} are given"
        )
    chosen = np.argsort(draws(seed, "layout:pool", np.arange(pool)), kind="stable")[:needed]
    slot = np.arange(requests) % k
    runs: list[tuple[int, int, int, np.ndarray]] = []  # (host, batch, version, requests)
    for v in (0, 1):
        reqs = chosen[v * requests : (v + 1) * requests] if two_pools else chosen
        for j in range(k):
            mine = reqs[slot == j]
            if kind in ("unbalanced", "request_balanced"):
                runs.append((v * k + j, 0, v, mine))
            else:
                runs.append((j, (v + j) % 2, v, mine))
    cols = [_run_rows(h, b, v, reqs, repetitions, warmup, cooldown, seed) for h, b, v, reqs in runs]
    data = {name: np.concatenate([c[name] for c in cols]) for name in cols[0]}
    order = np.lexsort((data["position"], data["host"], data["batch"]))
    data = {name: col[order] for name, col in data.items()}
    block = data["host"] % k if kind == "request_balanced" else data["host"].copy()
    return LayoutSchedule(
        kind=kind,
        hosts=hosts,
        requests=requests,
        repetitions=repetitions,
        warmup=warmup,
        cooldown=cooldown,
        seed=seed,
        host_block=block,
        **data,
    )


def _run_rows(
    host: int,
    batch: int,
    version: int,
    reqs: np.ndarray,
    repetitions: int,
    warmup: int,
    cooldown: int,
    seed: int,
) -> dict[str, np.ndarray]:
    """One host batch: warm-up, T shuffled passes over its requests, cool-down."""
    n = reqs.size
    keys = draws(
        seed, "layout:order", host, batch, np.arange(repetitions)[:, None], np.arange(n)[None, :]
    )
    measured = reqs[np.argsort(keys, axis=1, kind="stable")].ravel()
    request = np.concatenate([reqs[np.arange(warmup) % n], measured, reqs[np.arange(cooldown) % n]])
    repetition = np.concatenate(
        [np.full(warmup, -1), np.repeat(np.arange(repetitions), n), np.full(cooldown, -1)]
    )
    phase = np.concatenate(
        [
            np.full(warmup, PHASE_WARMUP),
            np.full(n * repetitions, PHASE_MEASURED),
            np.full(cooldown, PHASE_COOLDOWN),
        ]
    )
    size = request.size
    return {
        "host": np.full(size, host, dtype=np.int64),
        "request": request.astype(np.int64),
        "version": np.full(size, version, dtype=np.int8),
        "batch": np.full(size, batch, dtype=np.int8),
        "repetition": repetition.astype(np.int64),
        "phase": phase.astype(np.int8),
        "position": np.arange(size, dtype=np.int64),
    }


def duplication_from_trials(
    request: np.ndarray, host: np.ndarray, version: np.ndarray
) -> Duplication:
    """Duplication coefficients (§4.1) counted from measured trials of any two-version design."""
    version = np.asarray(version)
    n = np.array([(version == v).sum() for v in (0, 1)], dtype=float)
    if n.min() == 0:
        raise ValueError("both versions need trials")
    N = n.mean()

    def counts(ids: np.ndarray) -> np.ndarray:
        codes = np.unique(ids, return_inverse=True)[1]
        return np.stack(
            [np.bincount(codes[version == v], minlength=codes.max() + 1) for v in (0, 1)]
        )

    cr, ch = counts(np.asarray(request)), counts(np.asarray(host))
    return Duplication(
        nu_R=float((cr.astype(float) ** 2).sum(axis=1).mean() / N),
        nu_H=float((ch.astype(float) ** 2).sum(axis=1).mean() / N),
        omega_R=float((cr[0] * cr[1]).sum() / N),
        omega_H=float((ch[0] * ch[1]).sum() / N),
    )


def duplication_coefficients(
    kind: str, H: int, R: int, T: int
) -> tuple[float, float, float, float]:
    """``(nu_R, nu_H, omega_R, omega_H)`` of a layout in closed form (§4.1).

        Each version has ``N = R*T`` measured trials; every request is repeated T times
    (``nu_R = T``); its k hosts per version get ``R // k`` or ``R // k + 1`` requests.
        Shared requests (RB, FB) give ``omega_R = T``; shared hosts (HB, FB) give ``omega_H = nu_H``.
    """
    k = check_layout(kind, H, R, T)
    q, extra = divmod(R, k)
    per_host = np.array([q + 1] * extra + [q] * (k - extra), dtype=float) * T
    N = float(R * T)
    nu_R = float(T)
    nu_H = float((per_host**2).sum() / N)
    omega_R = nu_R if kind in ("request_balanced", "fully_balanced") else 0.0
    omega_H = nu_H if kind in ("host_balanced", "fully_balanced") else 0.0
    return nu_R, nu_H, omega_R, omega_H


def layout_counts(
    kind: str, H: int, R: int, T: int, warmup: int = 0, cooldown: int = 0
) -> dict[str, int]:
    """Hosts, host batches, distinct requests and trials a layout needs (for ``benchlang plan``)."""
    k = check_layout(kind, H, R, T)
    batches = H if kind in ("unbalanced", "request_balanced") else 2 * H
    measured = 2 * R * T
    return {
        "hosts": H,
        "hosts_per_version": k,
        "batches": batches,
        "distinct_requests": 2 * R if kind in ("unbalanced", "host_balanced") else R,
        "measured_trials": measured,
        "trials": measured + batches * (warmup + cooldown),
    }
