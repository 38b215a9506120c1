"""l4slab.analysis.metrics: harm labels, ratios, Jain's index, probabilities, CIs, aggregation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import requires_engine
from l4slab.analysis import metrics as m


def flows_table() -> pd.DataFrame:
    """Two runs (trials) of one point: a Prague and a CUBIC flow each, plus one 1v3 run."""
    rows = [
        # run_id, point, trial, id, cc, label, goodput, throughput, srtt, base, cwnd, drops, marks, sent
        ("r1", "p", 0, 0, "prague", "prague", 90.0, 93.0, 14.7, 10.0, 60, 0, 900, 10000),
        ("r1", "p", 0, 1, "cubic", "cubic", 5.0, 5.2, 19.4, 10.0, 6, 5, 40, 600),
        ("r2", "p", 1, 0, "prague", "prague", 88.0, 91.0, 14.9, 10.0, 58, 0, 880, 9800),
        ("r2", "p", 1, 1, "cubic", "cubic", 7.0, 7.3, 19.6, 10.0, 8, 3, 50, 800),
        ("r3", "q", 0, 0, "prague", "prague", 8.0, 8.3, 11.0, 10.0, 10, 0, 10, 1000),
        ("r3", "q", 0, 1, "cubic", "cubic", 30.0, 31.0, 15.0, 10.0, 30, 1, 0, 3000),
        ("r3", "q", 0, 2, "cubic", "cubic", 30.0, 31.0, 15.0, 10.0, 30, 1, 0, 3000),
        ("r3", "q", 0, 3, "cubic", "cubic", 30.0, 31.0, 15.0, 10.0, 30, 1, 0, 3000),
    ]
    columns = ["run_id", "point", "trial", "id", "cc", "label", "goodput_mbps", "throughput_mbps", "mean_srtt_ms",
               "base_rtt_ms", "final_cwnd", "drops", "marks", "packets_sent"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


# --- harm ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("share", "label"),
    [(0.199, "harmed"), (0.2, "neutral"), (0.5, "neutral"), (0.8, "neutral"), (0.801, "harmful"), (0.0, "harmed")],
)
def test_pam_harm_thresholds(share, label):
    assert m.harm_label(share) == label


def test_harm_generalises_to_n_flows():
    # 4 flows: fair = 25 %, harmed below 10 %, harmful above 40 %
    assert m.harm_label(0.099, 0.25) == "harmed"
    assert m.harm_label(0.10, 0.25) == "neutral"
    assert m.harm_label(0.40, 0.25) == "neutral"
    assert m.harm_label(0.401, 0.25) == "harmful"
    # a group of 10 of 11 flows: fair = 10/11; > 1.6·fair is impossible, < 0.4·fair is harmed
    assert m.harm_label(0.3, 10 / 11) == "harmed"
    assert m.harm_label(float("nan")) is None


def test_harm_labels_vectorised_keeps_index():
    shares = pd.Series([0.1, 0.5, 0.9], index=[7, 8, 9])
    labels = m.harm_labels(shares, 0.5)
    assert list(labels) == ["harmed", "neutral", "harmful"]
    assert list(labels.index) == [7, 8, 9]


def test_shares_of_capacity_and_of_sum():
    flows = flows_table()
    of_link = m.throughput_share(flows, capacity_mbps=100.0)
    assert of_link.iloc[0] == pytest.approx(0.90)
    of_sum = m.throughput_share(flows)
    assert of_sum.iloc[0] == pytest.approx(90 / 95)
    assert of_sum.groupby(flows["run_id"]).sum().to_numpy() == pytest.approx([1.0, 1.0, 1.0])
    by_column = m.throughput_share(flows.assign(rate_mbps=50.0), capacity_mbps="rate_mbps")
    assert by_column.iloc[0] == pytest.approx(1.8)


def test_add_harm_per_flow():
    out = m.add_harm(flows_table(), capacity_mbps=100.0)
    assert list(out["fair_share"]) == pytest.approx([0.5] * 4 + [0.25] * 4)
    assert list(out["harm"]) == ["harmful", "harmed", "harmful", "harmed", "harmed", "neutral", "neutral", "neutral"]


def test_group_harm_uses_group_fair_share():
    flows = flows_table()
    out = m.group_harm(flows, m.flow_class(flows), capacity_mbps=100.0).set_index(["run_id", "group"])
    assert out.loc[("r3", "classic"), "n"] == 3
    assert out.loc[("r3", "classic"), "fair_share"] == pytest.approx(0.75)
    assert out.loc[("r3", "classic"), "share"] == pytest.approx(0.9)
    assert out.loc[("r3", "classic"), "harm"] == "neutral"
    assert out.loc[("r3", "l4s"), "harm"] == "harmed"  # 8 % < 0.4 · 25 %
    assert out.loc[("r1", "l4s"), "harm"] == "harmful"


# --- ratios, fairness, utilisation ---------------------------------------------------------------


def test_rate_and_window_ratio_per_flow_means():
    flows = flows_table()
    rate = m.rate_ratio(flows)
    assert rate["r1"] == pytest.approx(18.0)
    assert rate["r3"] == pytest.approx(8 / 30)  # per-flow mean of the 3 CUBIC flows
    window = m.window_ratio(flows)
    assert window["r2"] == pytest.approx(58 / 8)
    by_label = m.group_ratio(flows, "cubic", "prague", value="goodput_mbps", group="label")
    assert by_label["r1"] == pytest.approx(5 / 90)
    missing = m.group_ratio(flows, "bbr", "prague", group="label")
    assert missing.isna().all()


def test_jain_index_values():
    assert m.jain_index([10, 10, 10, 10]) == pytest.approx(1.0)
    assert m.jain_index([100, 0, 0, 0, 0]) == pytest.approx(1 / 5)
    assert m.jain_index([1, 3]) == pytest.approx(16 / 20)
    assert m.jain_index([0, 0]) == 1.0
    assert math.isnan(m.jain_index([]))
    per_run = m.jain_by_run(flows_table())
    assert per_run["r1"] == pytest.approx(95**2 / (2 * (90**2 + 5**2)))


def test_utilisation_per_run():
    flows = flows_table()
    util = m.utilisation(flows, 100.0)
    assert util["r1"] == pytest.approx(0.982)
    util_col = m.utilisation(flows.assign(rate_mbps=200.0), "rate_mbps", value="goodput_mbps")
    assert util_col["r3"] == pytest.approx(98 / 200)


def test_probabilities_and_queue_delay():
    assert m.probability(5, 100) == pytest.approx(0.05)
    assert math.isnan(m.probability(0, 0))
    series = pd.DataFrame({"marks": [1, 0, 4], "drops": [0, 0, 2], "arrivals": [10, 0, 8]})
    out = m.add_probabilities(series)
    assert list(out["mark_prob"].fillna(-1)) == pytest.approx([0.1, -1, 0.5])
    assert list(out["drop_prob"].fillna(-1)) == pytest.approx([0.0, -1, 0.25])
    flows = m.add_probabilities(flows_table(), trials="packets_sent")
    assert flows["mark_prob"].iloc[0] == pytest.approx(0.09)
    qd = m.srtt_queue_delay(flows_table())
    assert qd.iloc[0] == pytest.approx(4.7)


def test_sojourn_stats_and_ccdf():
    trace = pd.DataFrame({"class": [0] * 4 + [1] * 2, "sojourn_ms": [1.0, 2.0, 3.0, 4.0, 0.1, np.nan]})
    total = m.sojourn_stats(trace)
    assert total.loc[0, "count"] == 5
    assert total.loc[0, "max"] == 4.0
    per_class = m.sojourn_stats(trace, by="class").set_index("class")
    assert per_class.loc[0, "mean"] == pytest.approx(2.5)
    assert per_class.loc[0, "p50"] == pytest.approx(2.5)
    assert per_class.loc[1, "count"] == 1
    x, p = m.ccdf([3.0, 1.0, 2.0, 4.0])
    assert list(x) == [1.0, 2.0, 3.0, 4.0]
    assert list(p) == pytest.approx([0.75, 0.5, 0.25, 0.0])
    upper, ph = m.ccdf_from_histogram([0, 1, 2, 3], [2, 1, 1])
    assert list(upper) == [1, 2, 3]
    assert list(ph) == pytest.approx([0.5, 0.25, 0.0])


# --- confidence intervals and aggregation -------------------------------------------------------


@pytest.mark.parametrize(
    ("df", "expected"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (29, 2.0452), (100, 1.9840)]
)
def test_t_quantile_table(df, expected):
    assert m.t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_symmetry_and_errors():
    assert m.t_quantile(0.025, 4) == pytest.approx(-m.t_quantile(0.975, 4))
    assert m.t_quantile(0.5, 3) == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError):
        m.t_quantile(1.0, 3)


def test_mean_ci_known_samples():
    ci = m.mean_ci([1, 2, 3, 4, 5])
    assert ci.mean == 3.0
    assert ci.half == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert ci.half == pytest.approx(1.963, abs=1e-3)
    assert (ci.low, ci.high) == pytest.approx((3 - ci.half, 3 + ci.half))
    single = m.mean_ci([4.0, float("nan")])
    assert single.n == 1 and single.mean == 4.0 and math.isnan(single.half)


def test_aggregate_every_numeric_column():
    frame = pd.DataFrame(
        {"point": ["a"] * 5 + ["b"] * 2, "trial": [0, 1, 2, 3, 4, 0, 1], "x": [1, 2, 3, 4, 5, 10, 10],
         "y": [2.0] * 5 + [np.nan, 3.0], "label": ["u"] * 7}
    )  # fmt: skip
    out = m.aggregate(frame, "point").set_index("point")
    assert "trial" not in out and "trial_ci" not in out and "label" not in out
    assert out.loc["a", "n"] == 5
    assert out.loc["a", "x"] == 3.0
    assert out.loc["a", "x_ci"] == pytest.approx(1.963, abs=1e-3)
    assert out.loc["b", "x_ci"] == 0.0
    assert out.loc["b", "y"] == 3.0 and math.isnan(out.loc["b", "y_ci"])


def test_pam_cells_from_flows():
    flows = flows_table().assign(queue="fifo_ecn", buffer_bdp=2.0, classic="cubic_ecn")
    cells = m.pam_cells(flows[flows["point"] == "p"])
    assert len(cells) == 1
    row = cells.iloc[0]
    assert row["n"] == 2
    assert row["l4s_mbps"] == pytest.approx(89.0)
    assert row["classic_mbps"] == pytest.approx(6.0)
    assert row["l4s_qdelay_ms"] == pytest.approx(4.8)
    assert row["classic_qdelay_ms"] == pytest.approx(9.5)
    assert row["l4s_mbps_ci"] == pytest.approx(12.7062 * math.sqrt(2) / math.sqrt(2), abs=1e-3)


@requires_engine
def test_l4s_flows_are_the_engines_l4s_ccs_and_testbed_names_it_lacks():
    from l4slab import schema

    engine = schema.engine_schema().congestion_controls
    assert not m.TESTBED_L4S_CCS & set(engine)  # only names the engine does not implement
    assert m.l4s_congestion_controls() == {name for name, cc in engine.items() if cc.l4s} | m.TESTBED_L4S_CCS
    flows = pd.DataFrame({"cc": ["prague", "Prague-v06", "dctcp", "cubic", "bbr2-l4s"]})
    assert list(m.flow_class(flows)) == ["l4s", "l4s", "classic", "classic", "l4s"]
    assert list(m.flow_class(flows, l4s_ccs={"dctcp"})) == ["classic", "classic", "l4s", "classic", "classic"]
