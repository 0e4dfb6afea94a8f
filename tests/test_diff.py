"""`benchlang diff` end to end: two real runs of one spec (same plan) into two stores, the
measured values synthetic and seeded (docs/testing.md): each trial prints a log-normal value
from its plan seed salted by $SALT (a scrambled uniform per salt, so the two runs' noise differs) times $EFFECT_<tool>
(the "after" run slows one tool down by a known factor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

VALUE_AWK = """\
BEGIN {
  u = (ENVIRON["BENCHLANG_SEED"] % 2147483648 + 0.5) / 2147483648 * 7919 * ENVIRON["SALT"]
  u = u + 0.6180339887 * ENVIRON["SALT"]; u = u - int(u); p = u < 0.5 ? u : 1 - u
  t = sqrt(-2 * log(p))
  z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)
  if (u < 0.5) z = -z
  e = ENVIRON["EFFECT_" tool]; if (e == "") e = 1
  printf "v=%.12g\\n", (tool == "fast" ? 0.010 : 0.020) * e * exp(0.02 * z)
}
"""

SPEC = """benchlang 1
experiment pr {
  seed 5
  factor tool in ["fast", "slow"]
  benchmark work {
    run "awk -v tool={tool} -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }
  metric v { unit "s" better lower }
  kpi v { percentile 50 confidence 95% }
  design { runs 5 series 6 }
}
"""


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    """before.sqlite, after_same.sqlite (no change) and after_slow.sqlite ('slow' x1.10)."""
    import os
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("diff")
    (root / "value.awk").write_text(VALUE_AWK)
    (root / "pr.bench").write_text(SPEC)
    for store, salt, effect in (
        ("before", 1, "1"),
        ("after_same", 2, "1"),
        ("after_slow", 3, "1.10"),
    ):
        env = {**os.environ, "SALT": str(salt), "EFFECT_slow": effect}
        done = subprocess.run(
            [sys.executable, "-m", "benchlang", "run", "pr.bench", "--store", f"{store}.sqlite",
             "--quiet"],
            cwd=root, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    return root


def test_an_unchanged_rerun_passes_the_gate(stores, cli_in_process):
    status, out, err = cli_in_process(
        ["diff", "before.sqlite", "after_same.sqlite", "--margin", "5%"], cwd=stores
    )
    assert status == 0, out + err
    assert (
        "spread: within session only (one session per side); 90% stratified cluster-bootstrap interval"
        in out
    )
    assert "no configuration is worse beyond 5% with confidence" in out
    assert "warning" not in out, "same spec, same plan: nothing to warn about"


def test_one_session_a_side_shows_the_slowdown_within_session_but_does_not_gate(
    stores, cli_in_process
):
    """One store a side is one session a side: the within-session interval sees the slowdown,
    but without the spread between sessions it decides nothing."""
    status, out, err = cli_in_process(
        ["diff", "before.sqlite", "after_slow.sqlite", "--margin", "2%"], cwd=stores
    )
    assert status == 0, out + err
    assert "no configuration is worse beyond 2% with confidence" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("work[")}
    assert rows["work[tool=slow]"].rstrip().endswith("inconclusive (within session: worse)")
    assert "worse" not in rows["work[tool=fast]"]
    assert "one session per side: the spread between sessions is unknown" in out


def test_diff_without_a_margin_reports_intervals_in_markdown_and_json(stores, cli_in_process):
    status, md, err = cli_in_process(
        ["diff", "before.sqlite", "after_slow.sqlite", "--format", "markdown"], cwd=stores
    )
    assert status == 0, err
    assert "| configuration | A median | B median | B/A | change | 95% interval | verdict |" in md
    assert "| work\\[tool=slow\\]" not in md and "| work[tool=slow] |" in md
    status, text, _ = cli_in_process(
        ["diff", "before.sqlite", "after_slow.sqlite", "--format", "json"], cwd=stores
    )
    document = json.loads(text)
    assert document["schema"] == 1 and document["margin"] is None
    (metric,) = document["metrics"]
    ratios = {r["label"]: r["interval"] for r in metric["rows"]}
    slow = ratios["work[tool=slow]"]
    assert slow["lower"] <= 1.10 <= slow["upper"] and slow["lower"] > 1.0
    assert ratios["work[tool=fast]"]["lower"] <= 1.0 <= ratios["work[tool=fast]"]["upper"]


def test_bad_margins_and_missing_stores_are_one_line_errors(stores, cli_in_process):
    status, _, err = cli_in_process(
        ["diff", "before.sqlite", "after_same.sqlite", "--margin", "two"], cwd=stores
    )
    assert status == 2 and "is not a percent" in err and "Traceback" not in err
    status, _, err = cli_in_process(["diff", "before.sqlite", "nope.sqlite"], cwd=stores)
    assert status == 2 and "nope.sqlite" in err and "Traceback" not in err
