"""Structural properties of the four A/B layouts (Bakshy & Frachtenberg, WWW 2015, §4, Table 2)."""

from __future__ import annotations

import numpy as np
import pytest

from benchlang.design.layouts import (
    LAYOUTS,
    PHASE_COOLDOWN,
    PHASE_MEASURED,
    PHASE_WARMUP,
    duplication_coefficients,
    layout_counts,
    layout_schedule,
)


def pairs(s, mask=None):
    m = s.measured if mask is None else mask
    return set(zip(s.request[m].tolist(), s.version[m].tolist(), strict=True))


@pytest.mark.parametrize("kind", LAYOUTS)
def test_every_request_version_pair_runs_T_times_in_one_host_batch(kind):
    s = layout_schedule(kind, 6, 20, 3, seed=4)
    m = s.measured
    key = np.stack([s.request[m], s.version[m]], axis=1)
    uniq, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    assert len(uniq) == 2 * 20 and (counts == 3).all()
    cell = s.host[m] * 2 + s.batch[m]
    for i in range(len(uniq)):
        assert np.unique(cell[inverse.ravel() == i]).size == 1
    for i in range(len(uniq)):
        assert sorted(s.repetition[m][inverse.ravel() == i]) == [0, 1, 2]


def test_unbalanced_each_host_one_version_each_request_once():
    s = layout_schedule("unbalanced", 8, 40, 1, seed=1)
    for h in range(8):
        assert np.unique(s.version[s.host == h]).size == 1
    assert (s.batch == 0).all()
    assert np.unique(s.request).size == 80 and s.trials == 80
    assert {int(v) for v in s.version[s.host < 4]} == {0}


def test_request_balanced_same_requests_on_different_hosts():
    s = layout_schedule("request_balanced", 8, 40, 2, seed=1)
    assert (s.batch == 0).all()
    for h in range(8):
        assert np.unique(s.version[s.host == h]).size == 1
    a, b = s.version == 0, s.version == 1
    assert set(s.request[a]) == set(s.request[b]) == set(range(40))
    for r in range(40):
        ha = set(s.host[a & (s.request == r)])
        hb = set(s.host[b & (s.request == r)])
        assert len(ha) == len(hb) == 1 and ha.isdisjoint(hb)
    # host blocks: the host pair that ran the same requests
    for blk in np.unique(s.host_block):
        hosts = np.unique(s.host[s.host_block == blk])
        assert hosts.size == 2
        assert set(s.request[s.host == hosts[0]]) == set(s.request[s.host == hosts[1]])


def test_host_balanced_every_host_both_versions_two_batches_distinct_requests():
    s = layout_schedule("host_balanced", 6, 30, 1, seed=2)
    for h in range(6):
        on = s.host == h
        assert set(s.batch[on]) == {0, 1}
        for b in (0, 1):
            assert np.unique(s.version[on & (s.batch == b)]).size == 1
        assert set(s.version[on]) == {0, 1}
    assert set(s.request[s.version == 0]).isdisjoint(set(s.request[s.version == 1]))
    assert np.unique(s.request).size == 60


def test_fully_balanced_same_request_same_host_versions_swapped_between_batches():
    s = layout_schedule("fully_balanced", 4, 24, 2, seed=3)
    for r in range(24):
        on = s.request == r
        assert np.unique(s.host[on]).size == 1
        assert set(s.version[on]) == {0, 1}
        assert set(s.batch[on]) == {0, 1}
    for h in range(4):
        on = s.host == h
        v0 = np.unique(s.version[on & (s.batch == 0)])
        v1 = np.unique(s.version[on & (s.batch == 1)])
        assert v0.size == v1.size == 1 and v0[0] != v1[0]
    # counterbalanced: half of the hosts start with each version
    first = [int(s.version[(s.host == h) & (s.batch == 0)][0]) for h in range(4)]
    assert sorted(first) == [0, 0, 1, 1]


@pytest.mark.parametrize("kind", LAYOUTS)
def test_execution_order_warmup_cooldown_and_determinism(kind):
    s = layout_schedule(kind, 4, 12, 2, warmup=2, cooldown=1, seed=9)
    t = layout_schedule(kind, 4, 12, 2, warmup=2, cooldown=1, seed=9)
    for col in ("host", "request", "version", "batch", "repetition", "phase", "position"):
        assert np.array_equal(getattr(s, col), getattr(t, col))
    assert not np.array_equal(s.request, layout_schedule(kind, 4, 12, 2, 2, 1, seed=10).request)
    key = np.stack([s.batch, s.host, s.position], axis=1)
    assert (np.diff(key[:, 0]) >= 0).all()
    for h in range(4):
        for b in np.unique(s.batch[s.host == h]):
            run = (s.host == h) & (s.batch == b)
            ph = s.phase[run]
            assert list(s.position[run]) == list(range(run.sum()))
            assert list(ph[:2]) == [PHASE_WARMUP] * 2 and ph[-1] == PHASE_COOLDOWN
            assert (ph[2:-1] == PHASE_MEASURED).all()
            assert (s.repetition[run][ph != PHASE_MEASURED] == -1).all()
            reps = s.repetition[run][ph == PHASE_MEASURED]
            assert (np.diff(reps) >= 0).all()
    counts = layout_counts(kind, 4, 12, 2, warmup=2, cooldown=1)
    assert counts["trials"] == s.trials and counts["batches"] == s.batches
    assert counts["measured_trials"] == s.measured_trials == 2 * 12 * 2
    assert counts["distinct_requests"] == s.distinct_requests


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize(("H", "R", "T"), [(16, 512, 1), (4, 10, 3), (6, 7, 2)])
def test_duplication_closed_form_matches_counts(kind, H, R, T):
    s = layout_schedule(kind, H, R, T, seed=0)
    d = s.duplication
    assert np.allclose(
        (d.nu_R, d.nu_H, d.omega_R, d.omega_H), duplication_coefficients(kind, H, R, T)
    )


def test_duplication_values_of_the_paper_setting():
    # H = 16, R = 512 per version, T = 1: 64 (UB/RB) or 32 (HB/FB) trials per host and version
    assert duplication_coefficients("unbalanced", 16, 512, 1) == (1.0, 64.0, 0.0, 0.0)
    assert duplication_coefficients("request_balanced", 16, 512, 1) == (1.0, 64.0, 1.0, 0.0)
    assert duplication_coefficients("host_balanced", 16, 512, 1) == (1.0, 32.0, 0.0, 32.0)
    assert duplication_coefficients("fully_balanced", 16, 512, 1) == (1.0, 32.0, 1.0, 32.0)


def test_bad_layouts_are_rejected():
    with pytest.raises(ValueError, match="even"):
        layout_schedule("unbalanced", 5, 10, 1)
    with pytest.raises(ValueError, match="unknown layout"):
        layout_schedule("latin_square", 4, 10, 1)
    with pytest.raises(ValueError, match="busy"):
        layout_schedule("fully_balanced", 8, 4, 1)
    with pytest.raises(ValueError, match="positive"):
        layout_schedule("fully_balanced", 8, 16, 0)
