"""stats._kernels: the bootstrap's C kernels give exactly the integers of their numpy forms
(so no result depends on the machine having a compiler), the draws are SplitMix64 and
uniform, and without a build everything still works, identically. The tests that compare the
two forms need the C build; the others also run on the numpy forms alone (CI runs this file
with ``BENCHLANG_NATIVE=0``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import benchlang.stats._kernels as kernels
from benchlang.native import CC_ENV, NATIVE_ENV
from benchlang.stats.headline import rank

needs_c = pytest.mark.skipif(
    kernels.native() is None,
    reason="no build of the kernels (no C compiler, or BENCHLANG_NATIVE=0)",
)


@pytest.fixture
def numpy_only(monkeypatch):
    """Run the body with the numpy forms: ``with numpy_only(): ...``."""

    class Switch:
        def __enter__(self):
            self.before = os.environ.get(NATIVE_ENV)
            monkeypatch.setenv(NATIVE_ENV, "0")

        def __exit__(self, *exc):
            if self.before is None:
                monkeypatch.delenv(NATIVE_ENV)
            else:
                monkeypatch.setenv(NATIVE_ENV, self.before)

    return Switch


def designs(rng):
    """(counts, first, m, n_child): a balanced level, an unbalanced one with a one-child
    parent, parents drawn zero times, and a single parent."""
    out = []
    for m in (np.full(7, 5), np.array([3, 1, 8, 2, 6]), np.array([40])):
        counts = rng.integers(0, 4, (9, m.size)).astype(np.int32)
        counts[2] = 0
        out.append((counts, np.cumsum(m) - m, m, int(m.sum())))
    return out


def test_splitmix_is_the_published_stream():
    # Vigna's splitmix64.c from state 0: its first outputs
    got = kernels.splitmix(0, np.arange(3, dtype=np.uint64))
    assert [int(x) for x in got] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_bounded_draw_is_floor_of_u_times_m_over_2_to_the_64():
    rng = np.random.default_rng(1)
    u = rng.integers(0, 2**64, 2000, dtype=np.uint64, endpoint=False)
    for m in (1, 2, 7, 1000, 65_536, 2**32 - 1):
        want = [(int(x) * m) >> 64 for x in u]
        assert kernels.bounded(u, m).tolist() == want


@needs_c
def test_draw_children_equals_its_numpy_form(numpy_only):
    rng = np.random.default_rng(3)
    for counts, first, m, n_child in designs(rng):
        fast = kernels.draw_children(counts, first, m, n_child, key=12345)
        with numpy_only():
            slow = kernels.draw_children(counts, first, m, n_child, key=12345)
        assert fast.dtype == np.int32 and np.array_equal(fast, slow)
        # each parent's draws land among its own children, c*m of them
        per_parent = np.add.reduceat(fast, first, axis=1)
        assert np.array_equal(per_parent, counts * m)


def test_draws_are_uniform():
    counts = np.full((1, 1), 200_000, dtype=np.int32)
    drawn = kernels.draw_children(counts, np.zeros(1), np.array([10]), 10, key=7)[0]
    expected = 200_000  # 10 children x 200,000 draws each parent: 2,000,000 over 10
    chi2 = float(((drawn - expected) ** 2 / expected).sum())
    assert drawn.sum() == 2_000_000 and chi2 < 27.9  # chi-square 9 df, p = 0.001


@pytest.mark.parametrize("groups", [3, 9, 20])
def test_draw_tally_counts_the_masked_sums_while_drawing(numpy_only, groups):
    rng = np.random.default_rng(groups)
    counts, first, m, n_child = designs(rng)[1]
    masks = rng.integers(0, 3, (n_child, groups))
    tally = kernels.Tally(masks)
    assert tally.lanes is not None and tally.every == 127
    out, sums = kernels.draw_tally(counts, first, m, n_child, 99, tally)
    assert np.array_equal(np.add.reduceat(out, first, axis=1), counts * m)
    assert np.array_equal(out, kernels.draw_children(counts, first, m, n_child, 99))
    assert np.array_equal(sums, out.astype(np.int64) @ masks)
    with numpy_only():
        assert all(
            map(
                np.array_equal,
                (out, sums),
                kernels.draw_tally(counts, first, m, n_child, 99, tally),
            )
        )


def test_masks_too_large_for_8_bit_lanes_are_summed_after_drawing():
    rng = np.random.default_rng(4)
    counts, first, m, n_child = designs(rng)[0]
    masks = rng.integers(0, 1000, (n_child, 2))
    tally = kernels.Tally(masks)
    assert tally.lanes is None
    out, sums = kernels.draw_tally(counts, first, m, n_child, 5, tally)
    assert np.array_equal(sums, out.astype(np.int64) @ masks)


@needs_c
def test_window_crossings_equal_their_numpy_form(numpy_only):
    rng = np.random.default_rng(5)
    block = rng.integers(0, 4, (30, 500)).astype(np.int32)
    widths = np.array([120, 1, 300])
    starts = np.cumsum(widths) - widths
    cols = rng.integers(0, 500, int(widths.sum()))
    below = rng.integers(0, 50, (30, 3))
    total = below + np.add.reduceat(block[:, cols], starts, axis=1)
    low = rng.integers(0, total + 2)
    high = low + rng.integers(-1, 3, low.shape)  # includes high = low - 1 (no value between)
    fast = kernels.window_crossings(block, cols, starts, widths, below, low, high)
    with numpy_only():
        slow = kernels.window_crossings(block, cols, starts, widths, below, low, high)
    assert all(np.array_equal(a, b) for a, b in zip(fast, slow, strict=True))


@needs_c
def test_rank_is_identical_with_and_without_the_kernels(numpy_only):
    """Windows, tallies and the pilot's direct form all in play: 5,000 values a group."""
    rng = np.random.default_rng(6)
    s, r, c = np.meshgrid(np.arange(20), np.arange(250), np.arange(2), indexing="ij")
    config, clusters = c.ravel(), np.stack([s.ravel(), s.ravel() * 250 + r.ravel()], axis=1)
    values = np.exp(np.array([0.0, 0.1])[config] + rng.normal(0, 0.1, config.size))
    fast = rank(values, config, clusters, replicates=300, seed=2)
    with numpy_only():
        slow = rank(values, config, clusters, replicates=300, seed=2)
    assert fast == slow and not fast.descriptive_only


def test_without_a_compiler_the_numpy_forms_run(tmp_path, monkeypatch):
    monkeypatch.setenv(CC_ENV, str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kernels._load.cache_clear()
    try:
        assert kernels.native() is None
        counts, first, m, n_child = designs(np.random.default_rng(8))[0]
        out = kernels.draw_children(counts, first, m, n_child, 3)
    finally:
        kernels._load.cache_clear()
    assert np.array_equal(out, kernels.draw_children(counts, first, m, n_child, 3))
