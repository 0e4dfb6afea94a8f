"""One family per run: Holm and Benjamini-Hochberg against hand computation
and statsmodels, the intervals' levels, and through the real CLI a run with three metrics and
four ``compare`` items that prints its family, its correction and strict JSON. The family-wise
error and FDR simulation is benchmarks/sim_family.py (docs/statistics.md)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import attrs
import numpy as np
import pytest

from benchlang.cli import main
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import Source, SpecError
from benchlang.stats.family import adjust, benjamini_hochberg, holm

P = np.array([0.01, 0.04, 0.03, 0.005])


def test_holm_by_hand():
    """Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; running max."""
    assert holm(P) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_benjamini_hochberg_by_hand():
    """Sorted times 4/i: 0.02, 0.02, 0.04, 0.04; running min from the largest."""
    assert benjamini_hochberg(P) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_adjustments_agree_with_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(3)
    for m in (1, 2, 7, 30):
        p = rng.uniform(size=m) ** 3
        for ours, name in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
            reject, ref, _, _ = multitest.multipletests(p, alpha=0.05, method=name)
            assert ours(p) == pytest.approx(ref, abs=1e-12)
            assert ((ours(p) <= 0.05) == reject).all()


def test_batched_rows_adjust_independently():
    rng = np.random.default_rng(4)
    p = rng.uniform(size=(5, 6))
    assert np.allclose(holm(p), np.stack([holm(row) for row in p]))
    assert np.allclose(benjamini_hochberg(p), np.stack([benjamini_hochberg(row) for row in p]))


def test_interval_levels_follow_the_correction():
    holm_family = adjust(P, "holm", 0.05)
    assert holm_family.interval_confidence == pytest.approx(100 * (1 - 0.05 / 4))
    assert holm_family.rejected == (True, False, False, True)
    bh = adjust(P, "bh", 0.05)
    assert bh.rejected == (True, True, True, True)
    assert bh.interval_confidence == pytest.approx(100 * (1 - 4 * 0.05 / 4))  # R = 4 selected
    none = adjust(np.array([0.01, np.nan]), "none", 0.05)
    assert none.p_adjusted == (0.01, 1.0) and none.interval_confidence == pytest.approx(95.0)


SPEC = textwrap.dedent(
    """\
    benchlang 1
    experiment fam {
      seed 4
      factor tool in [1.0, 1.3]
      factor opt in ["o1", "o2"]
      benchmark gen {
        run "awk -v s=$BENCHLANG_SEED -v k={tool} -v o={opt} 'BEGIN{{srand(s); for (i = 0; i < 3; i++) {{u = 1 - rand(); v = rand(); z[i] = exp(0.05 * sqrt(-2 * log(u)) * cos(6.2831853 * v))}}; print \\"a=\\" k * z[0] \\" b=\\" z[1] \\" c=\\" z[2]}}'"
        measure a from stdout regex "a=([0-9.eE+-]+)"
        measure b from stdout regex "b=([0-9.eE+-]+)"
        measure c from stdout regex "c=([0-9.eE+-]+)"
      }
      metric a { measure mean better lower }
      metric b { measure mean better lower }
      metric c { measure mean better lower }
      design { runs 4 series 5 order random }
      analysis {
    FAMILY    compare a by tool with bootstrap { replicates 2000 }
        compare a by opt with bootstrap { replicates 2000 }
        compare b by tool with mann_whitney
        compare c by opt with median_ratio { replicates 500 }
        anova a ~ tool * opt
      }
    }
    """
)


def strict(text: str):
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, Path]:
    """80 seeded trials: metric a is 1.3 times slower with tool 1.3, b and c are null."""
    where = tmp_path_factory.mktemp("family")
    spec = where / "fam.bench"
    spec.write_text(SPEC.replace("FAMILY", ""))
    out = where / "fam.sqlite"
    assert main(["run", str(spec), "--store", str(out), "-q"]) == 0
    return spec, out


def analyze(capsys, store: Path, spec: Path) -> tuple[str, list[dict]]:
    capsys.readouterr()
    assert main(["analyze", str(spec), "--store", str(store)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert main(["analyze", str(spec), "--store", str(store), "--json"]) == 0
    return text, strict(capsys.readouterr().out)["comparisons"]


def test_a_run_prints_its_family_holm_by_default(store, capsys):
    spec, db = store
    text, comparisons = analyze(capsys, db, spec)
    sentence = (
        "family of 4 tests over 3 metrics, Holm at 5% (FWER); intervals 98.75% Bonferroni "
        "simultaneous"
    )
    assert sentence in text
    assert "Holm has no simultaneous intervals: the intervals above are Bonferroni's" in text
    assert "outside the family (their own tables): a by tool+opt (anova)" in text
    *members, anova = comparisons
    assert "family" not in anova
    family = members[0]["family"]
    assert family["sentence"] == sentence and family["tests"] == 4 and family["metrics"] == 3
    tests = [t for c in members for t in c["family"]["members"]]
    p = np.array([t["p_value"] for t in tests])
    assert [t["p_adjusted"] for t in tests] == pytest.approx(holm(p).tolist())
    assert [t["rejected"] for t in tests] == [True, False, False, False]
    # Bonferroni folded in, not stacked: each compare's interval at 1 - 0.05/4.
    assert members[0]["levels"]["per_pair_confidence"] == pytest.approx(98.75)
    assert members[2]["result"]["confidence"] == pytest.approx(98.75)


def test_benjamini_hochberg_on_request_gives_fcr_intervals(store, capsys, tmp_path):
    _, db = store
    spec = tmp_path / "bh.bench"
    spec.write_text(SPEC.replace("FAMILY", "    family { correction bh level 10% }\n"))
    text, comparisons = analyze(capsys, db, spec)
    tests = [t for c in comparisons if "family" in c for t in c["family"]["members"]]
    p = np.array([t["p_value"] for t in tests])
    adjusted = benjamini_hochberg(p)
    assert [t["p_adjusted"] for t in tests] == pytest.approx(adjusted.tolist())
    r = int((adjusted <= 0.10).sum())
    level = 100 * (1 - r * 0.10 / 4)
    assert f"Benjamini-Hochberg at 10% (FDR); intervals {level:.4g}% false-coverage-rate" in text
    assert comparisons[0]["levels"]["per_pair_confidence"] == pytest.approx(level)
    assert "FDR control assumes independent or positively dependent tests" in text


def test_the_family_setting_is_checked(tmp_path):
    text = SPEC.replace("FAMILY", "    family { correction bonferroni level 200% }\n")
    with pytest.raises(SpecError) as err:
        compile_source(Source("bad.bench", text), tmp_path)
    shown = " ".join(d.message for d in err.value.diagnostics)
    assert "expected one of holm, bh, none" in shown and "outside (0%, 100%)" in shown


def test_a_lone_compare_keeps_its_own_confidence():
    """Without a ``family`` setting the family's alpha is the compares' own: one compare at 90%
    is a family of one at 10%, its interval unchanged (Bonferroni over one test)."""
    from benchlang import model
    from benchlang.app.comparisons import compare_all
    from tests.test_compare_levels import data_for, experiment, rounds_design

    exp = experiment(["a", "b"])
    own = model.Comparison("time", "tool", "bootstrap", {"confidence": 90.0, "replicates": 500})
    exp = attrs.evolve(exp, comparisons=(own,))
    y, tool, rounds = rounds_design(["a", "b"], 12, [1.0, 1.2], seed=2)
    (result,) = compare_all(data_for(exp, y, tool, rounds=rounds))
    assert result.levels.confidence == pytest.approx(90.0)
    assert result.family.sentence.startswith("family of 1 test over 1 metric, Holm at 10% (FWER)")
