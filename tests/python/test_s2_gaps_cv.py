"""S2 §5.2 (Zeynali et al.), Figures 8 and 9 on a reduced grid of the built-in s2-many-flows
study, and the per-flow inter-packet gaps computed from the bottleneck's sojourn trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from l4slab.analysis import paper_metrics as pm
from test_study_seed_statements import reduced_study, render

pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("l4slab._core") is None, reason="the engine is not built"
)


def test_flow_gaps_stay_within_a_flow_and_arrival_subtracts_the_sojourn():
    # Flows 0 and 1 interleaved; flow 0 departs at 1, 3, 6 ms, flow 1 at 2, 4 ms.
    trace = pd.DataFrame(
        {"time_s": [0.001, 0.002, 0.003, 0.004, 0.006], "flow": [0, 1, 0, 1, 0], "sojourn_ms": [0.5, 0, 1.0, 0, 2.5]}
    )
    dep = pm.flow_gaps(trace)
    assert sorted(dep[dep["flow"] == 0]["gap_ms"].round(9)) == [2.0, 3.0]
    assert dep[dep["flow"] == 1]["gap_ms"].round(9).tolist() == [2.0]
    # Arrivals of flow 0 at 0.5, 2.0, 3.5 ms: gaps 1.5, 1.5.
    arr = pm.flow_gaps(trace, at="arrival")
    assert arr[arr["flow"] == 0]["gap_ms"].round(9).tolist() == [1.5, 1.5]
    assert pm.flow_gaps(trace.iloc[:0]).empty
    with pytest.raises(ValueError, match="at must be"):
        pm.flow_gaps(trace, at="sender")


def test_s2_many_flows_cv_at_40ms_and_gaps(tmp_path):
    """S2 §5.2: at 40 ms the pacing-rate (logarithmic) scheme's throughput CV over 50 ms bins
    is below the default's and the fixed MSS's (Fig. 9). Figure 8's gaps: with full-size
    packets (fixed) a flow's departures from the 10 Mbit/s link are at least one 1514-B
    serialisation time (1.211 ms) apart and N of them on average (each flow has 1/N of the
    link); at 20 flows the logarithmic scheme's smaller packets give smaller gaps than fixed."""
    schemes = [
        {"segment_sizing": {"scheme": "default"}},
        {"segment_sizing": {"scheme": "fixed"}},
        {"segment_sizing": {"scheme": "logarithmic", "k": 4.0}},
    ]
    rules = [{"flows.0.count": [10, 20], "flows.0.rtt": "40ms", "flows.0.cc_params": schemes}]
    data, module = reduced_study("s2-many-flows", tmp_path, rules, {"duration": "20s", "warmup": "10s"})
    cv = module.throughput_cv(data).set_index(["flows_0_count", "scheme"])["cv"]
    for n in (10, 20):
        assert cv[(n, "logarithmic")] < min(cv[(n, "default")], cv[(n, "fixed")]), (n, cv.to_dict())
    gaps = module.gap_runs(data)
    dep = gaps[gaps["where"] == "departure"]
    serialisation_ms = 1514 * 8 / 10e6 * 1e3
    for n in (10, 20):
        fixed = dep[(dep["flows"] == n) & (dep["scheme"] == "fixed")]["gap_ms"]
        assert fixed.min() >= serialisation_ms * (1 - 1e-6), fixed.min()
        assert fixed.mean() == pytest.approx(n * serialisation_ms, rel=0.15)
    med = dep.groupby(["flows", "scheme"])["gap_ms"].median()
    assert med[(20, "logarithmic")] < med[(20, "fixed")]
    lines = render(module, data, tmp_path)
    assert any("many_flows_gaps.png" in line for line in lines)
    assert np.isfinite(med.to_numpy()).all()


def test_s2_fairness_ten_prague_vs_ten_cubic_near_one_and_above_fixed(tmp_path):
    """S2 §5.4 (Fig. 11c): against CUBIC "fairness remains close to 1" and every dynamic
    segment-sizing scheme improves Jain's index (over all 2N flows' goodput in the 60-s
    window) on the fixed-MSS baseline (simulated: default 0.94-0.95, logarithmic 0.94-0.97,
    fixed 0.71-0.73, where most fixed-MSS Prague flows stay near 0.11 Mbit/s)."""
    schemes = [
        {"segment_sizing": {"scheme": "default"}},
        {"segment_sizing": {"scheme": "fixed"}},
        {"segment_sizing": {"scheme": "logarithmic", "k": 4.0}},
    ]
    rules = [{"flows.1.cc": "cubic", "flows.0.count": 10, "flows.0.start": "0s", "flows.0.cc_params": schemes}]
    data, module = reduced_study("s2-fairness", tmp_path, rules, {})
    jfi = module.jain_per_run(data.flows).set_index("scheme")["jfi"]
    assert jfi["default"] > 0.9 and jfi["logarithmic"] > 0.9, jfi.to_dict()
    assert min(jfi["default"], jfi["logarithmic"]) > jfi["fixed"] + 0.1, jfi.to_dict()
