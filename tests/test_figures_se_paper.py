"""`se-curves --style paper` (Perflab, Bakshy & Frachtenberg, WWW 2015, Figs. 2 and 4) as drawn
(item 5): every panel's y axis labelled even when it spans less than a decade (the
log locator labels only powers of ten), and the run's own design is a point of its curve, so
its ring is drawn. On a store of seeded synthetic values for specs/ab-layout.bench."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from benchlang.cli import main
from benchlang.testing.synthetic import lognormal, synthetic_store

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"


def _value(plan, t):
    """About 20-60 ms per request, version new 5% slower, 5% lognormal noise."""
    levels = dict(plan.configurations[int(plan.trial_configuration[t])].levels)
    work = 1.05 if levels["version"] == "new" else 1.0
    return {"cpu": 0.02 * float(levels["request"]) / 1e6 * work * lognormal(plan, t, 0.05)}


def test_se_curves_paper_labels_every_panel_and_rings_the_run(tmp_path, capsys):
    store = tmp_path / "ab.sqlite"
    synthetic_store(ROOT / "specs" / "ab-layout.bench", store, _value)
    assert main(["figure", str(store), "se-curves", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    meta, columns = data["meta"], data["columns"]
    at = [columns.index(k) for k in ("layout", "hosts", "requests")]
    ringed = [r for r in data["rows"] if [r[i] for i in at] == [meta[k] for k in ("layout", "hosts", "requests")]]  # fmt: skip
    assert len(ringed) == 1 and ringed[0][columns.index("analytic_se")] > 0
    out = tmp_path / "se.svg"
    assert main(["figure", str(store), "se-curves", "-o", str(out), "--style", "paper"]) == 0
    capsys.readouterr()
    panels = [
        g for g in ET.parse(out).getroot().iter(f"{SVG}g") if g.get("id", "").startswith("axes_")
    ]
    assert len(panels) == 4
    for panel in panels:
        labelled = [
            t
            for t in panel.iter(f"{SVG}g")
            if t.get("id", "").startswith("ytick_")
            and any(x.get("id", "").startswith("text_") for x in t.iter(f"{SVG}g"))
        ]
        assert len(labelled) >= 2, panel.get("id")
