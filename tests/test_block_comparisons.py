"""Single-host data gets a comparison and says what it rests on, through
the real CLI: a hyperfine file (its commands ran in blocks, one after another) gets a ratio with
a stratified-bootstrap interval conditional on no drift between the blocks; a one-host run in
random order gets its paired interval and the independence check it rests on; a configuration
whose first trial ran far slower than the rest gets a note suggesting a warm-up."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from benchlang.cli import main

needs_hyperfine = pytest.mark.skipif(
    shutil.which("hyperfine") is None, reason="hyperfine is not installed (.ci/run installs it)"
)
BLOCKS = "no drift between the configuration blocks, which ran one after another"


def strict(text: str):
    """``text`` parsed as strict JSON (NaN and Infinity refused)."""

    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def hyperfine_json(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hf") / "real.json"
    subprocess.run(
        ["hyperfine", "-N", "--runs", "20", "--export-json", str(out), "sleep 0.001",
         "sleep 0.003"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


def seeded(real: Path, target: Path, times: list[np.ndarray]) -> Path:
    """The real hyperfine file with each command's ``times`` replaced by seeded values (the
    rest of hyperfine's export kept as written), so the numbers are known."""
    doc = json.loads(real.read_text())
    for result, values in zip(doc["results"], times, strict=True):
        result["times"] = values.tolist()
        result["exit_codes"] = [0] * len(values)
        result["mean"], result["stddev"] = float(values.mean()), float(values.std(ddof=1))
    target.write_text(json.dumps(doc))
    return target


def analyze(path: Path, tmp_path: Path, capsys) -> tuple[str, dict]:
    store = tmp_path / f"{path.stem}.sqlite"
    assert main(["import", str(path), "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["analyze", "--store", str(store)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # lines unwrapped
    assert main(["analyze", "--store", str(store), "--json"]) == 0
    doc = strict(capsys.readouterr().out)
    return text, doc["headline"][0]


@needs_hyperfine
def test_a_real_hyperfine_file_gets_a_ratio_with_its_block_assumption(
    hyperfine_json, tmp_path, capsys
):
    text, headline = analyze(hyperfine_json, tmp_path, capsys)
    (ranking,) = headline["rankings"]
    assert ranking["scheme"] == "blocks" and BLOCKS in ranking["assumption"]
    assert "`benchlang run` with `order random` tests it" in ranking["assumption"]
    assert BLOCKS in text
    (c,) = ranking["comparisons"]
    assert c["ratio"] >= 1.0  # the order on a busy machine is whatever it measured
    assert f"{c['ratio']:.2f}×" in text
    # the interval is given exactly when the independence check of both blocks passed
    passed = ranking["check"].startswith("the independence check of")
    assert passed == (c["lower"] is not None) == (not ranking["descriptive_only"])
    if passed:
        assert c["lower"] <= c["ratio"] <= c["upper"]
        assert f"[{c['lower']:.2f}, {c['upper']:.2f}]" in text
    else:
        assert "DESCRIPTIVE ONLY: the" in text and "independence check failed" in text


@needs_hyperfine
def test_seeded_blocks_give_an_interval_that_holds_the_true_ratio_and_beats_hyperfines_spread(
    hyperfine_json, tmp_path, capsys
):
    rng = np.random.default_rng(35)
    a = rng.lognormal(math.log(1e-3), 0.1, 20)
    b = 2.0 * rng.lognormal(math.log(1e-3), 0.1, 20)
    text, headline = analyze(seeded(hyperfine_json, tmp_path / "hf.json", [a, b]), tmp_path, capsys)
    (ranking,) = headline["rankings"]
    (c,) = ranking["comparisons"]
    assert not ranking["descriptive_only"] and ranking["units"] == [20]
    assert c["ratio"] == pytest.approx(math.exp(np.median(np.log(b)) - np.median(np.log(a))))
    assert c["lower"] < 2.0 < c["upper"] and c["clear"]
    # hyperfine prints mean(b)/mean(a) ± the propagated standard deviations: a spread of
    # single runs; the interval on the ratio is narrower with 20 runs each
    ratio = b.mean() / a.mean()
    spread = ratio * math.hypot(a.std(ddof=1) / a.mean(), b.std(ddof=1) / b.mean())
    assert c["upper"] - c["lower"] < 2 * spread  # hyperfine's [ratio - sd, ratio + sd]
    assert "jointly at 95% over 1 comparison, bootstrap of each configuration's block" in text
    assert f"[{c['lower']:.2f}, {c['upper']:.2f}]" in text
    assert headline["slow_starts"] == []


@needs_hyperfine
def test_a_trend_inside_a_block_makes_the_comparison_descriptive(hyperfine_json, tmp_path, capsys):
    rng = np.random.default_rng(8)
    trend = 1e-3 * (1 + 0.5 * np.arange(20) / 20) * rng.lognormal(0, 0.02, 20)
    flat = 2e-3 * rng.lognormal(0, 0.02, 20)
    text, headline = analyze(
        seeded(hyperfine_json, tmp_path / "trend.json", [trend, flat]), tmp_path, capsys
    )
    (ranking,) = headline["rankings"]
    assert ranking["descriptive_only"] and ranking["comparisons"][0]["lower"] is None
    assert "independence check failed" in ranking["check"]
    assert BLOCKS in ranking["assumption"]
    assert "ratios only" in text


@needs_hyperfine
def test_a_first_run_far_slower_than_the_rest_gets_a_warmup_note(hyperfine_json, tmp_path, capsys):
    rng = np.random.default_rng(6)
    cold = rng.lognormal(math.log(1e-3), 0.05, 20)
    cold[0] = 3e-3  # the first run: a cold cache
    warm = rng.lognormal(math.log(2e-3), 0.05, 20)
    text, headline = analyze(
        seeded(hyperfine_json, tmp_path / "cold.json", [cold, warm]), tmp_path, capsys
    )
    (note,) = headline["slow_starts"]
    assert note["configuration"] == "sleep 0.001" and note["leading"] == 1
    assert note["first"] == pytest.approx(3e-3) and note["median"] == pytest.approx(np.median(cold))
    assert (
        "Note: sleep 0.001: the first trial ran far worse than the rest (3.000 ms against" in text
    )
    assert '"warmup 1" in the design (hyperfine: --warmup 1) runs such trials first' in text


RANDOM_ORDER = textwrap.dedent(
    """\
    benchlang 1
    experiment onehost {
      seed 4
      factor k in [1.0, 1.3]
      benchmark gen {
        run "awk -v s=$BENCHLANG_SEED -v k={k} 'BEGIN{{srand(s); u = 1 - rand(); v = rand(); print \\"v=\\" k * exp(0.05 * sqrt(-2 * log(u)) * cos(6.2831853 * v))}}'"
        measure v from stdout regex "v=([0-9.eE+-]+)"
      }
      metric v { measure mean unit "s" better lower }
      kpi v { percentile 50 confidence 95% }
      design { runs 5 series 5 order random }
    }
    """
)


def test_a_one_host_random_order_run_gets_a_paired_interval_and_says_its_check(tmp_path, capsys):
    spec = tmp_path / "onehost.bench"
    spec.write_text(RANDOM_ORDER)
    store = tmp_path / "onehost.sqlite"
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    assert main(["analyze", "--store", str(store), "--json"]) == 0
    (ranking,) = strict(capsys.readouterr().out)["headline"][0]["rankings"]
    assert ranking["scheme"] == "paired" and ranking["levels"] == ["series", "round"]
    assert (
        "assumes the rounds, each running every configuration once (random order)"
        in (ranking["assumption"])
    )
    assert ranking["assumption"].endswith("measured on one host: the ratios hold for this host")
    assert ranking["check"].startswith("the independence check of")
    (c,) = ranking["comparisons"]
    assert c["lower"] < 1.3 < c["upper"] and c["clear"]
    assert main(["analyze", "--store", str(store)]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert f"Check: {ranking['check']}." in flat
    assert f"k=1.0 is {c['ratio']:.2f}× faster than k=1.3 [{c['lower']:.2f}, {c['upper']:.2f}]" in (
        flat
    )


def test_rank_blocks_orients_refuses_and_names_its_scheme():
    from benchlang.stats.block_ranking import min_units, rank_blocks

    assert [min_units(p) for p in (50, 75, 90, 95, 99)] == [5, 10, 25, 50, 250]
    rng = np.random.default_rng(3)
    config = np.repeat([0, 1], 30)
    clusters = np.stack([np.zeros(60), np.zeros(60), config], axis=1)  # one round per block
    values = np.where(config == 0, 150.0, 100.0) * rng.lognormal(0, 0.02, 60)
    r = rank_blocks(values, config, clusters, better="higher", seed=2)
    assert r.scheme == "blocks" and r.order == (0, 1) and r.levels == ("trial",)
    (c,) = r.comparisons
    assert c.lower < 1.5 < c.upper and c.clear and r.units == (30,)
    p95 = rank_blocks(values, config, clusters, percentile=95, seed=2)
    assert p95.descriptive_only and math.isnan(p95.comparisons[0].lower)
    assert (
        "30 trial units in its block: too few for a bootstrap interval of the p95"
        in (p95.reasons[0])
    )
    assert p95.to_dict()["comparisons"][0]["lower"] is None


def test_slow_start_rule():
    from benchlang.stats.slow_start import slow_start

    rng = np.random.default_rng(1)
    warm = rng.lognormal(0, 0.05, 20)
    assert not slow_start(warm).flagged
    cold = np.concatenate([[2.0, 1.9], warm])
    s = slow_start(cold)
    assert s.leading == 2 and s.first == 2.0 and s.score > 5
    outlier_later = np.concatenate([[2.0], warm[:10], [2.1], warm[10:]])
    assert not slow_start(outlier_later).flagged, "a later trial as slow: not apart"
    assert slow_start(warm[:4]) is None
    ties = np.array([2.0, 1, 1, 1, 1, 1, 1, 1])  # MAD 0: the mean absolute deviation scales
    assert slow_start(ties).leading == 1
    assert slow_start(np.ones(8)).to_dict()["score"] is None
