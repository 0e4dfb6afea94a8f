"""How a run ends: by default the short answer (what ran, the ranking in
words with its joint intervals, what was checked, where the rest is); ``-v`` adds the
per-configuration table, the record and the whole headline; ``-q`` drops the progress. Values
come from the command itself (a seeded draw per trial), so the answer does not depend on this
machine's noise."""

from __future__ import annotations

import re

SPEC = """benchlang 1

experiment answer {
  seed 3
  factor speed in [100, 130, 101]
  benchmark b {
    run "sh -c 'echo t=$(( {speed} * (1000 + ($BENCHLANG_SEED % 97)) ))'"
    measure t from stdout regex "t=([0-9]+)"
  }
  metric t { measure mean unit "us" better lower }
  kpi t { percentile 50 confidence 95% }
  design { runs 12 order random }
}
"""


def test_default_short_verbose_whole_quiet_no_progress(tmp_path, cli_in_process):
    (tmp_path / "a.bench").write_text(SPEC)
    outs = {}
    for name, flags in {"default": [], "verbose": ["-v"], "quiet": ["-q"]}.items():
        status, out, err = cli_in_process(
            ["run", "a.bench", "--store", f"{name}.sqlite", *flags], cwd=tmp_path
        )
        assert status == 0, err
        outs[name] = (out, err)
    short, _ = outs["default"]
    lines = short.strip().splitlines()
    assert len(lines) <= 12, short
    assert lines[0] == "Ran 36 trials of answer (3 configurations x 1 series on local): 0 failed"
    assert lines[1].startswith("t by speed: median (ms), lower is better; intervals hold jointly")
    assert re.search(r"at 95% over \d comparisons$", lines[1])
    ranked = [line.split() for line in lines[2:5]]
    assert [r[0] for r in ranked] == ["speed=100", "speed=101", "speed=130"]
    assert ranked[0][-1] == "best"
    found = re.search(r"(\d\.\d\d)× slower than speed=100 \[(\d\.\d\d), (\d\.\d\d)\]", lines[4])
    assert found, lines[4]
    ratio, lower, upper = map(float, found.groups())
    assert 1.25 <= ratio <= 1.35 and 1.0 < lower <= ratio <= upper, lines[4]
    assert "More: benchlang analyze default.sqlite" in short
    verbose, _ = outs["verbose"]
    assert "Reproducibility record" in verbose and "Headline: t (ms)" in verbose
    assert verbose.rstrip().endswith(
        "Per-series KPIs and independence tests: benchlang analyze verbose.sqlite"
    )
    quiet, quiet_err = outs["quiet"]
    assert quiet.replace("quiet.sqlite", "default.sqlite") == short
    assert "trials" not in quiet_err  # no progress


def test_a_ratio_every_round_repeats_exactly_is_not_shown_as_an_interval():
    """Counts that repeat exactly (sim_instructions) have no spread: a zero-width interval is
    no confidence, so the sentence says so and leaves the decision to a margin."""
    import types

    from benchlang.report.headline import ratio_parts

    metric = types.SimpleNamespace(better="lower", unit=None, metric="sim_instructions")
    same = types.SimpleNamespace(ratio=1.01, lower=1.01, upper=1.01, clear=True)
    ratio, interval, unclear, (_, worse) = ratio_parts(metric, same)
    assert (ratio, worse, unclear) == ("1.01×", "higher sim_instructions than", False)
    assert "[" not in interval and "no interval: a margin decides" in interval
