"""`series auto` follows TriScale's Table 2: the median's variability score is the
two-sided interval at C, so 75% needs 3 series and 90% needs 5 (not 2 and 4 one-sided);
other percentiles keep Eq. 4's one-sided bounds."""

from __future__ import annotations

import pytest

from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import Source

SPEC = """benchlang 1
experiment m {{
  benchmark b {{ run "true"
    measure t = wall_time }}
  metric t {{ }}
  kpi t {{ percentile 50 confidence 95% }}
  variability t {{ percentile {p} confidence {c}% }}
  design {{ runs auto series auto }}
}}
"""


@pytest.mark.parametrize(
    ("percentile", "confidence", "series"), [(50, 75, 3), (50, 90, 5), (25, 75, 5), (10, 90, 22)]
)
def test_series_auto_is_triscale_table_2(percentile, confidence, series):
    experiment = compile_source(Source("m.bench", SPEC.format(p=percentile, c=confidence)))
    assert experiment.design.series == series
    if percentile == 50:
        assert "Table 2" in experiment.design.series_reason
