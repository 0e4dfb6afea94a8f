"""``run --export-json/--export-csv/--export-markdown`` write the same documents that
``results --format json|csv|markdown`` prints later from the store; seeded synthetic values."""

from __future__ import annotations

import json
import textwrap

SPEC = textwrap.dedent(
    """\
    benchlang 1
    experiment labels {
      seed 3
      factor tool in ["alpha", "[bold]beta"]
      factor size in [1, 2]
      benchmark gen {
        run "echo {tool} > /dev/null; awk -v s=$BENCHLANG_SEED -v k={size} 'BEGIN{{srand(s); print \\"v=\\" k*(1+rand()/20)}}'"
        measure v from stdout regex "v=([0-9.]+)"
      }
      metric v { measure mean unit "s" better lower }
      kpi v { percentile 50 confidence 95% }
      variability v { percentile 25 confidence 75% }
      design { runs 5 series 5 order random }
    }
    """
)


def test_run_exports_match_results_formats(tmp_path, cli_in_process):
    (tmp_path / "labels.bench").write_text(SPEC)
    status, out, err = cli_in_process(
        [
            "run",
            "labels.bench",
            "--store",
            "l.sqlite",
            "-q",
            "--export-json",
            "r.json",
            "--export-csv",
            "r.csv",
            "--export-markdown",
            "r.md",
        ],
        cwd=tmp_path,
    )
    assert status == 0, err
    assert "wrote json to r.json" in out and "v by size (tool=alpha): median (s)" in out
    later = [
        cli_in_process(["results", "l.sqlite", "--format", form], cwd=tmp_path)
        for form in ("json", "csv", "markdown")
    ]
    for (code, text, error), name in zip(later, ("r.json", "r.csv", "r.md"), strict=True):
        assert code == 0, error
        assert text == (tmp_path / name).read_text(), name
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["schema"] == 1 and len(doc["trials"]) == 100
    assert {t["status"] for t in doc["trials"]} == {"ok"}
    assert [len(h["rankings"]) for h in doc["headline"]] == [4]
    md = (tmp_path / "r.md").read_text().splitlines()
    assert md[0].endswith("| Relative |") and len(md) == 6
