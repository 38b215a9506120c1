"""End to end through the Rust engine (skipped when l4slab._core is not built)."""

import json

import l4slab
import pandas as pd
import pytest
from conftest import requires_engine
from l4slab.engine import version as engine_version
from test_output import check_summary_schema

pytestmark = requires_engine

SHORT = """
name = "short"
duration = "2s"
seed = 3
[bottleneck]
rate = "100Mbit"
qdisc = "bfifo"
buffer = "2bdp"
[[flows]]
cc = "cubic"
rtt = "10ms"
[[flows]]
cc = "reno"
rtt = "10ms"
"""


def test_short_run_schema_and_conservation(tmp_path):
    result = l4slab.run(SHORT)
    directory = result.write(tmp_path / "short")
    summary = json.loads((directory / "summary.json").read_text())
    check_summary_schema(summary)
    assert summary == result.summary
    assert summary["scenario"] == "short" and summary["seed"] == 3 and summary["duration_s"] == 2.0
    assert summary["bottleneck"]["qdisc_config"] == "bfifo limit 250000"
    assert (
        summary["packets_sent"]
        == summary["packets_delivered"] + summary["packets_dropped"] + summary["packets_in_flight"]
    )
    assert summary["packets_sent"] == summary["packets_data"] + summary["packets_acks"]
    assert summary["packets_delivered"] > 0
    assert [f["cc"] for f in summary["flows"]] == ["cubic", "reno"]
    assert 0 < summary["bottleneck"]["utilisation"] <= 1.01
    assert json.loads((directory / "scenario.json").read_text()) == result.config

    series = pd.read_parquet(directory / "flow_series.parquet")
    assert set(series["flow"]) == {0, 1} and len(series) == 2 * 20  # 2 s of 100 ms bins
    assert series["goodput_mbps"].sum() > 0
    assert len(pd.read_parquet(directory / "bottleneck_series.parquet")) == 20
    assert result.wall_s > 0 and result.engine_version == engine_version() == summary["engine_version"]


def test_same_seed_same_summary_and_seed_override():
    first = l4slab.run(SHORT)
    again = l4slab.run(SHORT)
    assert first.summary == again.summary
    other = l4slab.run(SHORT, seed=4)
    assert other.summary["seed"] == 4


def test_overrides_and_udp_percent():
    result = l4slab.run(
        SHORT,
        flows__1={"kind": "udp", "rate": "20%", "rtt": "10ms", "ecn": "ect1"},
        trace_sojourn=True,
    )
    udp = result.flows.set_index("id").loc[1]
    assert udp["kind"] == "udp" and udp["goodput_mbps"] == pytest.approx(20 * 1472 / 1514, rel=0.05)
    assert result.sojourn is not None and len(result.sojourn) > 0


def test_count_expansion_runs_n_flows():
    result = l4slab.run(SHORT, flows__0__count=3)
    assert len(result.flows) == 4
    assert result.flows["group"].tolist() == [0, 0, 0, 1]


def test_demo_runs_the_demo_study_and_writes_its_report(tmp_path, capsys):
    from l4slab.cli import main
    from l4slab.study import load, load_study

    assert main(["demo", "--out", str(tmp_path), "--duration", "2s", "--jobs", "2"]) == 0
    report = tmp_path / "report" / "report.md"
    out = capsys.readouterr().out
    assert f"wrote {report}" in out
    # It ends by naming the page to open.
    assert out.splitlines()[-1] == f"open {report.with_suffix('.html')} in a browser"
    text = report.read_text()
    assert "| label |" in text and "goodput.png" in text
    assert "## Congestion windows" in text and "## Bottleneck sojourn per buffer" in text
    for figure in ("goodput.png", "cwnd.png", "sojourn.png"):
        assert (tmp_path / "report" / figure).stat().st_size > 1000
    buffers = load_study("demo").factors[0].values
    data = load(tmp_path)
    assert sorted(data.runs["bottleneck_buffer"]) == sorted(buffers) and len(buffers) == 4
    assert (data.runs["status"] == "done").all()
    assert set(data.flows["cc"]) == {"cubic", "reno"}
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert {point["scenario"]["duration"] for point in plan["points"]} == {"2s"}


#: Every AQM at its PAM 2025 configuration for 2 BDP (PAM 2025 paper §3), plus non-default knobs.
AQM_RUNS = [
    (
        "fq limit 2bdp flow_limit 2bdp orphan_mask 0 ce_threshold 5ms",
        "fq limit 167 flow_limit 167 orphan_mask 0 ce_threshold 5ms",
    ),
    ("fq limit 167 flow_limit 167 ce_threshold 5ms fastpath", "fq limit 167 flow_limit 167 ce_threshold 5ms fastpath"),
    ("pie limit 167 target 5ms noecn", "pie limit 167 target 5ms noecn"),
    (
        "pie limit 167 target 5ms ecn bytemode dq_rate_estimator",
        "pie limit 167 target 5ms ecn bytemode dq_rate_estimator",
    ),
    ("codel limit 167 target 5ms interval 100ms noecn", "codel limit 167 target 5ms interval 100ms noecn"),
    ("codel limit 167 target 5ms interval 100ms ecn", "codel limit 167 target 5ms interval 100ms ecn"),
    ("fq_codel limit 167 target 5ms interval 100ms ecn", "fq_codel limit 167 target 5ms interval 100ms ecn"),
    (
        "fq_codel limit 167 target 5ms interval 100ms ecn ce_threshold 1ms ce_threshold_selector 0x01/0x01",
        "fq_codel limit 167 target 5ms interval 100ms ecn ce_threshold 1ms ce_threshold_selector 0x01/0x01",
    ),
    ("dualpi2 target 5ms", "dualpi2 limit 10000 target 5ms"),
    (
        "dualpi2 target 5ms alpha 0.16 beta 3.2 step_thresh 5pkt any_ect variant l4steam",
        "dualpi2 limit 10000 target 5ms alpha 0.16 beta 3.2 step_thresh 5pkt any_ect variant l4steam",
    ),
]

MIXED = """
name = "mixed"
duration = "2s"
seed = 5
[bottleneck]
rate = "100Mbit"
qdisc = "bfifo"
[[flows]]
cc = "cubic"
rtt = "10ms"
[[flows]]
cc = "cubic"
rtt = "10ms"
ecn = "classic"
[[flows]]
cc = "prague"
rtt = "10ms"
[[flows]]
cc = "dctcp"
rtt = "10ms"
"""


@pytest.mark.parametrize("qdisc, described", AQM_RUNS)
def test_each_aqm_runs_end_to_end_with_packet_conservation(qdisc, described):
    result = l4slab.run(MIXED, bottleneck__qdisc=qdisc)
    summary = result.summary
    check_summary_schema(summary)
    bottleneck = summary["bottleneck"]
    assert bottleneck["qdisc_config"] == described
    assert result.config["bottleneck"]["qdisc"]["kind"] == qdisc.split()[0]
    assert (
        summary["packets_sent"]
        == summary["packets_delivered"] + summary["packets_dropped"] + summary["packets_in_flight"]
    )
    assert summary["packets_delivered"] > 0 and bottleneck["utilisation"] > 0.5
    stats = bottleneck["qdisc"]
    assert stats["kind"] == qdisc.split()[0] and stats["sent_packets"] > 0 and isinstance(stats["extra"], dict)
    assert stats["extra"], "each AQM reports its tc -s extras"
    assert sum(f["drops"] for f in summary["flows"]) + sum(f["marks"] for f in summary["flows"]) > 0
    classes = bottleneck["sojourn_by_class"]
    if qdisc.startswith("dualpi2"):
        assert [c["class"] for c in classes] == ["C", "L"]
        assert result.classes["class"].tolist() == ["C", "L"]
    else:
        assert [c["class"] for c in classes] == ["all"]
    frame = result.bottleneck_series
    assert {"mark_prob", "drop_prob"} <= set(frame.columns)
    assert l4slab.rebin(frame, "1s")["arrivals"].sum() == frame["arrivals"].sum()


def test_friendly_ecn_defaults_negotiate_in_the_engine():
    """Prague gets AccECN and DCTCP classic ECN with DCTCP feedback without extra settings."""
    result = l4slab.run(MIXED, bottleneck__qdisc="dualpi2 target 5ms")
    flows = result.summary["flows"]
    if "ecn_mode" not in flows[0]:
        pytest.skip("engine does not report ecn_mode")
    assert [f["ecn_mode"] for f in flows] == ["off", "rfc3168", "accecn", "rfc3168"]
    assert flows[2]["marks"] > 0 and flows[3]["marks"] > 0
    off = l4slab.run(MIXED, bottleneck__qdisc="dualpi2 target 5ms", flows__2__receiver_ecn="off")
    assert off.summary["flows"][2]["ecn_mode"] != "accecn"


def test_every_accepted_parameter_is_accepted_by_the_engine():
    texts = [
        "fq limit 50 flow_limit 20 quantum 1514 initial_quantum 0 refill_delay 1ms orphan_mask 0 buckets 64 "
        "ce_threshold 0s fastpath",
        "pie limit 50 target 1ms tupdate 2ms alpha 0 beta 32 ecn bytemode dq_rate_estimator",
        "codel limit 50 target 1ms interval 10ms ecn ce_threshold 500us",
        "fq_codel limit 50 flows 1 quantum 256 target 1ms interval 10ms noecn ce_threshold 1ms "
        "ce_threshold_selector 0x02/0x03 memory_limit 1mb drop_batch 1",
        "dualpi2 limit 50 memlimit 100000 target 1ms tupdate 2ms alpha 0.5 beta 5 step_thresh 3pkt min_qlen_step 1 "
        "coupling_factor 1 overflow drop_enqueue cla_ect classic_protection 0 no_split_gso",
        "dualpi2 limit 50 alpha 0 step_thresh 100us drop_enqueue any_ect variant l4steam",
    ]
    for text in texts:
        result = l4slab.run(MIXED, duration="300ms", bottleneck__qdisc=text)
        assert result.summary["packets_delivered"] > 0
