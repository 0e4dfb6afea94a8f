"""``stopping-eval --baseline A B``: the KS distance between two long runs of one benchmark, the
floor of what the adaptive stopping rule can promise (Mittal et al., PMBS 2023, §2), against
scipy.stats.ks_2samp, from files and from stores, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchlang.stats.ks_baseline import ks_baseline, ks_distance
from benchlang.testing.synthetic import synthetic_store

SPEC = """benchlang 1
experiment long {
  seed 4
  benchmark loop { run "true" measure t = wall_time }
  metric t { better lower }
  design { runs 400 }
}
"""


@pytest.mark.parametrize("rounding", [None, 1])
@pytest.mark.parametrize("sizes", [(500, 500), (300, 1000), (7, 11)])
def test_distance_and_p_value_are_scipys(sizes, rounding):
    rng = np.random.default_rng(sum(sizes))
    a, b = rng.lognormal(0, 0.3, sizes[0]), rng.lognormal(0.05, 0.3, sizes[1])
    if rounding is not None:
        a, b = np.round(a, rounding), np.round(b, rounding)  # ties inside and across the runs
    found, scipy = ks_baseline(a, b), stats.ks_2samp(a, b)
    assert found.distance == pytest.approx(scipy.statistic, abs=1e-12)
    assert ks_distance(b, a) == pytest.approx(scipy.statistic, abs=1e-12)
    assert found.p_value == pytest.approx(scipy.pvalue, rel=1e-9)
    assert found.critical == pytest.approx(
        1.3581 * np.sqrt((a.size + b.size) / (a.size * b.size)), rel=1e-3
    )


def write(path: Path, values: np.ndarray) -> Path:
    path.write_text("ms\n" + "".join(f"{v:.6f}\n" for v in values))
    return path


def test_files_from_one_and_from_a_moved_background(tmp_path, cli_in_process):
    rng = np.random.default_rng(9)
    a = write(tmp_path / "a.csv", rng.lognormal(0, 0.2, 2000))
    same = write(tmp_path / "same.csv", rng.lognormal(0, 0.2, 2000))
    moved = write(tmp_path / "moved.csv", rng.lognormal(0.1, 0.2, 2000))
    status, out, err = cli_in_process(["stopping-eval", "--baseline", a, same, "--json"])
    assert status == 0, err
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert doc["kind"] == "benchlang.stopping-eval-baseline"
    x, y = (np.loadtxt(p, skiprows=1) for p in (a, same))
    assert doc["distance"] == pytest.approx(stats.ks_2samp(x, y).statistic, abs=1e-12)
    assert not doc["differ"] and doc["attainable"] and doc["distance"] < doc["critical"]
    status, text, err = cli_in_process(["stopping-eval", "--baseline", a, moved, "--ks", "0.05"])
    assert status == 0, err
    assert "the two runs differ beyond sampling" in text
    assert "ks 0.05 lies below this floor: no stopping point can promise it" in text


def test_stores_give_one_configurations_values_in_trial_order(tmp_path, cli_in_process):
    (tmp_path / "long.bench").write_text(SPEC)
    runs = {}
    for name, shift in (("one", 0.0), ("two", 0.02)):
        values = np.random.default_rng(len(name) + int(100 * shift)).normal(1.0 + shift, 0.05, 400)
        synthetic_store(
            tmp_path / "long.bench", tmp_path / f"{name}.sqlite", lambda p, t, v=values: {"t": v[t]}
        )
        runs[name] = values
    status, out, err = cli_in_process(
        ["stopping-eval", "--baseline", tmp_path / "one.sqlite", tmp_path / "two.sqlite", "--json"]
    )
    assert status == 0, err
    doc = json.loads(out)
    expected = stats.ks_2samp(runs["one"], runs["two"])
    assert doc["n_a"] == doc["n_b"] == 400
    assert doc["distance"] == pytest.approx(expected.statistic, abs=1e-12)
    assert doc["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)


def test_without_streams_or_baseline_it_says_what_to_give(cli_in_process):
    status, _, err = cli_in_process(["stopping-eval"])
    assert status == 2 and "--baseline A B" in err and "Traceback" not in err


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    from scipy.signal import lfilter

    return lfilter([1.0], [1.0, -phi], rng.normal(0.0, 1.0, n)) + 10.0


def test_runs_that_are_not_iid_give_a_descriptive_distance_not_a_verdict(tmp_path, cli_in_process):
    """Two runs of one AR(1) process (phi 0.9): KS calls them different (p < 5%) though nothing
    moved; the independence check (TriScale §4.5, Ljung-Box) says the test does not apply."""
    rng = np.random.default_rng(3)
    x, y = ar1(rng, 2000, 0.9), ar1(rng, 2000, 0.9)
    assert stats.ks_2samp(x, y).pvalue < 0.05
    a, b = write(tmp_path / "a.csv", x), write(tmp_path / "b.csv", y)
    status, out, err = cli_in_process(["stopping-eval", "--baseline", a, b, "--json"])
    assert status == 0, err
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert doc["differ"] is None and not doc["independent_a"] and not doc["independent_b"]
    assert "autocorrelation (Ljung-Box" in doc["descriptive_only"]
    status, text, err = cli_in_process(["stopping-eval", "--baseline", a, b])
    assert status == 0, err
    assert "descriptive only: run a: not independent" in text
    assert "differ beyond sampling" not in text
    status, text, err = cli_in_process(["stopping-eval", "--baseline", a, b, "--ks", "0.01"])
    assert status == 0, err
    assert "undecided" in text and "no stopping point can promise" not in text


def test_a_threshold_below_a_sampling_distance_is_undecided():
    """Two i.i.d. runs of one distribution: a threshold under their (sampling) distance is not
    called unattainable; the floor lies below the critical distance, unplaced."""
    rng = np.random.default_rng(8)
    found = ks_baseline(rng.normal(size=300), rng.normal(size=300), threshold=0.01)
    assert found.differ is False and found.descriptive_only is None
    assert found.distance > 0.01 and found.attainable is None
    moved = ks_baseline(rng.normal(size=300), rng.normal(1.0, 1.0, 300), threshold=0.01)
    assert moved.differ is True and moved.attainable is False


def test_a_threshold_below_a_descriptive_distance_is_undecided():
    """Runs that are not i.i.d. give no test: a threshold under their distance is neither
    attainable nor unattainable (second reading: "unattainable" came from the invalid test)."""
    rng = np.random.default_rng(3)
    found = ks_baseline(ar1(rng, 2000, 0.9), ar1(rng, 2000, 0.9), threshold=0.01)
    assert found.descriptive_only and found.differ is None
    assert found.distance > 0.01 and found.attainable is None
