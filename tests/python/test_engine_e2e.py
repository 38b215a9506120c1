"""End to end through the Rust engine (skipped when l4slab._core is not built)."""

import json

import l4slab
import pandas as pd
import pytest
from conftest import requires_engine
from l4slab.runner import engine_version
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


def test_demo_writes_report(tmp_path):
    from l4slab.demo import DEMO_BUFFERS, run_demo

    report = run_demo(tmp_path, duration="2s", jobs=2)
    assert report.name == "report.md"
    text = report.read_text()
    assert "| run |" in text and "goodput.png" in text
    for figure in ("goodput.png", "cwnd.png", "sojourn.png"):
        assert (tmp_path / figure).stat().st_size > 1000
    runs = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(runs) == len(DEMO_BUFFERS)
    for run_dir in runs:
        assert (run_dir / "summary.json").exists()
