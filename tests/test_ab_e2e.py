"""End to end: a local A/B experiment detects a known 5% slowdown and does not flag an A/A
comparison (Bakshy & Frachtenberg's reweighting bootstrap), through `benchlang run` and
`benchlang analyze` in process (its trials are processes), with the real local backend and
store.

The measured value is synthetic and seeded (docs/testing.md): each trial runs a small awk
program that prints a lognormal value derived from the trial's seed (``BENCHLANG_SEED``, fixed by
the plan) and its request level, times 1.05 for the treatment. The pipeline (spec, plan, run,
store, analysis) is the real one; the numbers do not depend on how busy the machine is, so the
statistical assertions are exact for these seeds. How well the bootstrap does on real CPU noise
is measured by benchmarks/bench_ab_calibration.py, not asserted here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

# value.awk (awk -v impl=IMPL -v request=REQUEST -v effect=EFFECT): the request's base
# (REQUEST / 1e6, a request effect the clustered bootstrap must see through) x EFFECT for the
# treatment x exp(0.02 z), z the standard normal quantile (Abramowitz & Stegun 26.2.23) of the
# trial's seed as a uniform (the plan's seeds are 31-bit SplitMix64 draws; only IEEE arithmetic,
# so every awk gives the same values).
VALUE_AWK = """\
BEGIN {
  u = (ENVIRON["BENCHLANG_SEED"] % 2147483648 + 0.5) / 2147483648; p = u < 0.5 ? u : 1 - u
  t = sqrt(-2 * log(p))
  z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)
  if (u < 0.5) z = -z
  printf "v=%.12g\\n", request / 1e6 * (impl == "treatment" ? effect : 1) * exp(0.02 * z)
}
"""

SPEC = """benchlang 1
experiment ab {{
  seed {seed}
  factor impl in ["control", "treatment"]
  factor input in 1000000..2100000 step 100000
  benchmark work {{
    run "awk -v impl={{impl}} -v request={{input}} -v effect={effect} -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }}
  metric v {{ better lower }}
  design {{ runs {runs} order random }}
  analysis {{
    compare v by impl with bootstrap {{ cluster request replicates 4000 log true confidence {confidence}% }}
  }}
}}
"""


def _run(workdir: Path, cli_in_process, effect: float, confidence: int, seed: int) -> dict:
    workdir.mkdir()
    (workdir / "value.awk").write_text(VALUE_AWK)
    (workdir / "ab.bench").write_text(
        SPEC.format(seed=seed, effect=effect, runs=6, confidence=confidence)
    )
    status, out, err = cli_in_process(
        ["run", "ab.bench", "--store", "ab.sqlite", "--quiet"], cwd=workdir, timeout=600
    )
    assert status == 0, out + err
    assert "Traceback" not in err
    status, analysis, err = cli_in_process(
        ["analyze", "ab.bench", "--store", "ab.sqlite", "--json"], cwd=workdir
    )
    assert status == 0, err
    (comparison,) = json.loads(analysis)["comparisons"]
    return {"comparison": comparison, "stdout": out}


def _relative(b: dict) -> tuple[float, float, float]:
    return tuple(math.expm1(b[k]) for k in ("estimate", "ci_low", "ci_high"))


@pytest.mark.slow
def test_known_five_percent_slowdown_is_detected(tmp_path: Path, cli_in_process) -> None:
    got = _run(tmp_path / "ab", cli_in_process, 1.05, confidence=95, seed=11)
    c = got["comparison"]
    b = c["bootstrap"]
    assert c["problem"] is None and c["trials"] == 2 * 12 * 6
    assert b["log"] and b["cluster"] == "request" and b["clusters"] == 12
    effect, low, high = _relative(b)
    report = f"{effect:+.2%} [{low:+.2%}, {high:+.2%}]"
    assert b["significant"] and low > 0, report
    # Seeded: the estimate is a fixed number; the band only allows for a change of the
    # bootstrap's resampling, never for load.
    assert 0.04 < effect < 0.06 and high < 0.08, report
    assert "comparisons: reweighting bootstrap" in got["stdout"]


@pytest.mark.slow
def test_a_a_is_not_flagged(tmp_path: Path, cli_in_process) -> None:
    got = _run(tmp_path / "aa", cli_in_process, 1.0, confidence=99, seed=11)
    b = got["comparison"]["bootstrap"]
    assert b["confidence"] == pytest.approx(99.0)
    effect, low, high = _relative(b)
    report = f"{effect:+.2%} [{low:+.2%}, {high:+.2%}]"
    assert not b["significant"] and low <= 0 <= high, report
    assert abs(effect) < 0.01, report
