"""Analytic standard errors of the four A/B layouts (Bakshy & Frachtenberg, WWW 2015, §3.1, §4.2.1).

The outcome model is Eq. 3–4 of the paper, with the version as a fixed effect:

    y = mu + delta * version + a_request + b_host + g_(request, batch) + h_(host, batch) + e

where every random term is independent with the variance of :class:`VarianceComponents`. The two
versions always run in separate service instances, so a request's (host's) batch effect is drawn
anew for each version it runs under, even in the one-batch layouts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs
import numpy as np

from benchlang.design.layouts import duplication_coefficients

COMPONENTS = ("request", "host", "request_batch", "host_batch", "residual")


@attrs.frozen
class VarianceComponents:
    """Variances (not standard deviations) of the random terms of Eq. 3–4."""

    request: float = 0.0
    host: float = 0.0
    request_batch: float = 0.0
    host_batch: float = 0.0
    residual: float = 0.0

    def __attrs_post_init__(self) -> None:
        for name in COMPONENTS:
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"variance component {name} must be finite and >= 0, got {value}")

    @classmethod
    def from_sd(cls, sd: Mapping[str, float] | None = None, **kwargs: float) -> VarianceComponents:
        """From standard deviations, as the paper's Table 1 reports them."""
        values = dict(sd or {}, **kwargs)
        unknown = set(values) - set(COMPONENTS)
        if unknown:
            raise ValueError(
                f"unknown components {sorted(unknown)}; expected {', '.join(COMPONENTS)}"
            )
        return cls(**{k: float(v) ** 2 for k, v in values.items()})

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in COMPONENTS}

    @property
    def total(self) -> float:
        return float(sum(self.as_dict().values()))


def layout_variance(kind: str, H: int, R: int, T: int, components: VarianceComponents) -> float:
    """Var(delta_hat) of a layout from its duplication coefficients (§4.1, §4.2.1).

    With N = R*T trials per version:
    ``Var = 2/N [ (nu_R - omega_R) s2_req + nu_R s2_reqbatch + (nu_H - omega_H) s2_host
    + nu_H s2_hostbatch + s2_res ]``; the covariance terms omega cancel only the effects that
    both versions share (the request in RB/FB, the host in HB/FB), never the batch effects.
    """
    nu_R, nu_H, om_R, om_H = duplication_coefficients(kind, H, R, T)
    c = components
    inner = (
        (nu_R - om_R) * c.request
        + nu_R * c.request_batch
        + (nu_H - om_H) * c.host
        + nu_H * c.host_batch
        + c.residual
    )
    return 2.0 * inner / (R * T)


def layout_se(kind: str, H: int, R: int, T: int, components: VarianceComponents) -> float:
    """Analytic standard error of the difference in means of a layout (§4.2.1)."""
    return math.sqrt(layout_variance(kind, H, R, T, components))


def contrast_variance(
    version: np.ndarray,
    factors: Mapping[str, np.ndarray],
    components: VarianceComponents,
) -> float:
    """Exact Var(mean_B - mean_A) for any two-version design: ``sum_k s2_k ||Z_k' c||^2 + s2_e ||c||^2``.

    ``factors`` maps component names (request, host, request_batch, host_batch) to per-trial
    level ids; ``c`` is the contrast ``+1/N_B`` on version-1 trials and ``-1/N_A`` on version 0.
    """
    version = np.asarray(version)
    n = np.array([(version == 0).sum(), (version == 1).sum()], dtype=float)
    c = np.where(version == 1, 1.0 / n[1], -1.0 / n[0])
    total = components.residual * float((c**2).sum())
    for name, ids in factors.items():
        codes = np.unique(np.asarray(ids), return_inverse=True)[1]
        total += getattr(components, name) * float((np.bincount(codes, weights=c) ** 2).sum())
    return total


def icc(components: VarianceComponents) -> float:
    """Intraclass correlation of two repetitions of a request on the same host batch (§3.1).

    ``rho = (s2_req + s2_reqbatch) / (s2_req + s2_reqbatch + s2_res)``: host terms are common to
    every request of a host batch, so they do not enter the trade-off between R and T.
    """
    shared = components.request + components.request_batch
    denom = shared + components.residual
    return shared / denom if denom > 0 else 0.0


def design_effect(components: VarianceComponents, T: int) -> float:
    """Design effect ``1 + (T - 1) rho`` of repeating each request T times (§3.1, Eq. 2).

    The request-level part of the variance of a mean over R requests x T repetitions is
    ``(s2_req + s2_reqbatch + s2_res) * deff / (R T)``: T repetitions are worth ``T / deff``
    independent requests.
    """
    if T < 1:
        raise ValueError("T must be >= 1")
    return 1.0 + (T - 1) * icc(components)
