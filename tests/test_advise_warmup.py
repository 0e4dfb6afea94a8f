"""Warm-up advice of ``advise`` on an A/B pilot (Bakshy & Frachtenberg, WWW 2015, §2.2): the
fitted position effects and the autocorrelation at lags 1..k, on seeded synthetic pilots with
a known warm-up of k positions, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchlang.testing.synthetic import synthetic_store

SPEC = """benchlang 1
experiment pilot {
  seed 5
  hosts local { slots 4 }
  reset "true"
  benchmark serve {
    run "echo {version} {request}"
    measure t from stdout regex "([0-9.]+)"
  }
  metric t { better lower }
  design {
    versions { control "a" treatment "b" }
    layout fully_balanced { hosts 4 requests 16 repetitions 4 }
    requests [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
  }
  analysis { compare t by version }
}
"""


def pilot(tmp_path: Path, warm: tuple[float, ...]) -> tuple[Path, Path]:
    """Each batch's first len(warm) trials are slower by ``warm``; requests differ, noise SD 0.02."""
    spec, store = tmp_path / "pilot.bench", tmp_path / "pilot.sqlite"
    spec.write_text(SPEC)

    def value(plan, t):
        c = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
        position = int(plan.trial_position[t])
        noise = np.random.default_rng(int(plan.trial_seed[t])).normal(0.0, 0.02)
        slow = warm[position] if position < len(warm) else 0.0
        return {"t": 1.0 + 0.01 * int(c["request"]) + slow + noise}

    synthetic_store(spec, store, value)
    return spec, store


@pytest.mark.parametrize("warm", [(0.5, 0.2), (0.4, 0.3, 0.2), ()])
def test_advise_finds_a_known_warmup(tmp_path, cli_in_process, warm):
    spec, store = pilot(tmp_path, warm)
    status, out, err = cli_in_process(
        ["advise", spec, "--pilot", store, "--budget", "2000", "--json"]
    )
    assert status == 0, err
    (advice,) = json.loads(out)["warmup"]
    assert advice["metric"] == "t" and advice["batches"] == 8
    assert advice["suggested_warmup"] == len(warm) and advice["suggested_cooldown"] == 0
    start = [p for p in advice["positions"] if p["from"] == "start"]
    assert [p["within_noise"] for p in start] == [i >= len(warm) for i in range(len(start))]
    for p, slow in zip(start, warm, strict=False):
        assert p["effect"] == pytest.approx(slow, abs=0.03)
    lags = advice["lags"]
    assert [x["lag"] for x in lags] == list(range(1, len(lags) + 1)) and len(lags) >= 5
    if warm:  # the warm-up shows at lag 1; the position effects explain it
        assert lags[0]["autocorrelation"] - lags[0]["expected"] > lags[0]["bound"]
        after = lags[0]["after_positions"] - lags[0]["expected_after_positions"]
        assert abs(after) < lags[0]["bound"] and not lags[0]["beyond"]
    status, text, err = cli_in_process(["advise", spec, "--pilot", store, "--budget", "2000"])
    assert status == 0, err
    assert "position effect against the middle of the host batch" in text
    assert "autocorrelation of the per-request residuals in execution order" in text
    assert f"recommendation for t: warmup {len(warm)} cooldown 0" in text


def test_the_autocorrelation_is_the_pooled_lag_product():
    """The lags against a direct computation: one batch of white noise, then two batches whose
    pairs across the boundary are left out while the sum of squares pools both."""
    from benchlang.stats.ab.warmup import pooled_acf

    x = np.random.default_rng(2).normal(size=200)
    x -= x.mean()
    acf = pooled_acf(x, np.zeros(200, dtype=np.int64), 5)
    direct = [np.sum(x[k:] * x[:-k]) / np.sum(x**2) for k in range(1, 6)]
    assert acf == pytest.approx(direct, abs=1e-12)
    two = pooled_acf(x, np.repeat([0, 1], 100), 3)
    within = [
        (np.sum(x[k:100] * x[: 100 - k]) + np.sum(x[100 + k :] * x[100:-k])) / np.sum(x**2)
        for k in range(1, 4)
    ]
    assert two == pytest.approx(within, abs=1e-12)
