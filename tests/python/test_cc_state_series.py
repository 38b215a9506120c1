"""The per-flow CC-state series (BBR's bandwidth estimate, min RTT, pacing gain, mode):
present in ``flow_series`` only when a flow's CC reports them, NaN / "" for the others."""

import math

import l4slab
import numpy as np
import pandas as pd
from conftest import requires_engine
from l4slab.analysis import figures
from l4slab.results import CC_STATE_SERIES, rebin
from matplotlib.figure import Figure

pytestmark = requires_engine

MIXED = """
name = "bbr-and-cubic"
duration = "3s"
seed = 5
bin = "50ms"
[bottleneck]
rate = "100Mbit"
qdisc = "bfifo"
buffer = "2bdp"
[[flows]]
cc = "bbr"
rtt = "10ms"
[[flows]]
cc = "cubic"
rtt = "10ms"
"""


def test_bbr_rows_carry_the_model_state_and_cubic_rows_none(tmp_path):
    result = l4slab.run(MIXED)
    series = result.flow_series
    assert set(CC_STATE_SERIES) <= set(series.columns)
    bbr, cubic = series[series["flow"] == 0], series[series["flow"] == 1]
    assert len(bbr) == len(cubic) == 60
    assert cubic["bw_est_mbps"].isna().all() and (cubic["cc_mode"] == "").all()
    assert set(bbr["cc_mode"]) <= {"STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"}
    assert bbr["cc_mode"].iloc[0] == "STARTUP" and bbr["cc_mode"].iloc[-1] == "PROBE_BW"
    # The estimate of a flow sharing 100 Mbit/s lies within the link's payload rate.
    late = bbr["bw_est_mbps"].iloc[-20:]
    assert late.between(5.0, 100.0).all(), late.tolist()
    assert bbr["min_rtt_ms"].iloc[-1] >= 10.0
    gains = set(np.round(bbr["pacing_gain"].dropna(), 3))
    assert round(739 / 256, 3) in gains
    assert bbr["inflight_hi"].isna().all(), "BBRv1 has no inflight bounds"
    # Through the run directory and re-binning.
    directory = result.write(tmp_path / "run")
    again = pd.read_parquet(directory / "flow_series.parquet")
    assert list(again["cc_mode"]) == list(series["cc_mode"])
    wide = rebin(series, "1s")
    assert list(wide[wide["flow"] == 0]["cc_mode"])[-1] == bbr["cc_mode"].iloc[-1], "the last mode of the bin"
    fig = figures.cc_mode_timeline(series)
    assert isinstance(fig, Figure)


def test_runs_without_a_model_based_cc_have_no_state_columns():
    result = l4slab.run(MIXED.replace('cc = "bbr"', 'cc = "reno"'))
    assert not set(CC_STATE_SERIES) & set(result.flow_series.columns)
    assert not any(math.isnan(v) for v in result.flow_series["cwnd"])
