"""Topologies and links that change over time, from the scenario file to the report:
``[topology]``, a flow's ``hops``, ``netem``/``rate_schedule``/``rate_trace``/``aggregate``
on a link, and the measured links side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli_in_process, one_line_error
from l4slab.errors import ScenarioError
from l4slab.scenario import scenario_from_toml
from l4slab.scenario.links import parse_netem, parse_rate_schedule

REPO = Path(__file__).resolve().parents[2]

CHAIN = """
name = "chain"
duration = "2s"
[bottleneck]
rate = "40Mbit"
qdisc = "dualpi2"
netem = "delay 1ms 500us inorder loss gemodel 1% 25%"
rate_schedule = ["1s rate 20Mbit"]
[topology]
kind = "chain"
[[topology.hops]]
rate = "200Mbit"
qdisc = "fq_codel"
netem = "delay 2ms"
aggregate = "4ms 64kb"
[[flows]]
cc = "prague"
rtt = "20ms"
[[flows]]
cc = "cubic"
rtt = "20ms"
hops = 1
"""


def test_link_models_and_topology_resolve_to_the_engine_fields():
    config = scenario_from_toml(CHAIN).resolve()
    b = config["bottleneck"]
    assert b["delay_ns"] == 1_000_000
    assert b["jitter"] == {"jitter_ns": 500_000, "reorder": False}
    assert b["loss"] == {"model": "gemodel", "p": 0.01, "r": 0.25, "bad_loss": 1.0, "good_loss": 0.0}
    assert b["rate_schedule"] == [{"at_ns": 1_000_000_000, "rate_bps": 20_000_000}]
    hop = config["topology"]["hops"][0]
    assert config["topology"]["kind"] == "chain"
    assert hop["aggregate"] == {"interval_ns": 4_000_000, "max_bytes": 65_536}
    assert hop["delay_ns"] == 2_000_000 and "jitter" not in hop and "loss" not in hop
    assert "hops" not in config["flows"][0] and config["flows"][1]["hops"] == [1, 1]


def test_netem_and_schedule_spelling():
    assert parse_netem("delay 5ms 1ms") == {"delay_ns": 5_000_000, "jitter": {"jitter_ns": 1_000_000, "reorder": True}}
    assert parse_netem("loss 1%") == {"loss": {"model": "random", "p": 0.01}}
    assert parse_netem("loss random 0.5%")["loss"]["p"] == pytest.approx(0.005)
    # A ramp: one change per step, linear from the rate in force to the target.
    ramp = parse_rate_schedule(["1s..2s rate 20Mbit step 250ms"], 100_000_000)
    assert [s["at_ns"] for s in ramp] == [1_250_000_000, 1_500_000_000, 1_750_000_000, 2_000_000_000]
    assert [s["rate_bps"] for s in ramp] == [80_000_000, 60_000_000, 40_000_000, 20_000_000]


def test_a_parking_lot_has_its_rates_and_the_bottlenecks_qdisc(tmp_path):
    text = (REPO / "examples/topology/parking-lot.toml").read_text()
    config = scenario_from_toml(text).resolve()
    assert config["topology"] == {"kind": "parking_lot", "rates_bps": [50_000_000]}
    assert [f.get("hops") for f in config["flows"]] == [[0, 1], [0, 0], [1, 1]]


def test_a_rate_trace_is_read_relative_to_the_scenario_file(tmp_path):
    from l4slab.scenario import load_scenario

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/cap.trace").write_text("# capacity\n0s 10Mbit\n0.5s 5Mbit\n1 20000000\n")
    text = CHAIN.replace('rate_schedule = ["1s rate 20Mbit"]', 'rate_trace = "sub/cap.trace"')
    (tmp_path / "s.toml").write_text(text)
    config = load_scenario(tmp_path / "s.toml").resolve()
    assert config["bottleneck"]["rate_schedule"] == [
        {"at_ns": 0, "rate_bps": 10_000_000},
        {"at_ns": 500_000_000, "rate_bps": 5_000_000},
        {"at_ns": 1_000_000_000, "rate_bps": 20_000_000},
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('netem = "delay 2ms"', 'netem = "delay 2ms 3ms"'), "topology.hops[0].netem: netem delay: the jitter exceeds"),
        (('netem = "delay 2ms"', 'netem = "duplicate 1%"'), "'duplicate' is not understood here"),
        (("hops = 1", "hops = 2"), "flows[1].hops: [2, 2] is not a range of hops (allowed 0 <= first <= last <= 1)"),
        (("hops = 1", 'hops = "x"'), "flows[1].hops: 'x' is not a range of hops"),
        (('rate_schedule = ["1s rate 20Mbit"]', 'rate_schedule = ["1s 20Mbit"]'), "bottleneck.rate_schedule: [0]"),
        (('kind = "chain"', 'kind = "parking_lot"'), "topology.rates: a parking_lot lists the rates"),
        (('aggregate = "4ms 64kb"', 'aggregate = "4ms 100"'), "aggregate.max_bytes: 100 is out of range"),
    ],
)
def test_mistakes_are_one_line_naming_the_field(change, message):
    with pytest.raises(ScenarioError) as err:
        scenario_from_toml(CHAIN.replace(*change)).resolve()
    text = str(err.value)
    assert "\n" not in text and message in text, text


def test_the_parking_lot_runs_and_reports_both_links_side_by_side(tmp_path, capsys):
    from l4slab.runner import run as run_scenario

    text = (REPO / "examples/topology/parking-lot.toml").read_text().replace('duration = "60s"', 'duration = "12s"')
    text = text.replace('warmup = "10s"', 'warmup = "4s"')
    result = run_scenario(scenario_from_toml(text))
    links = result.links
    assert list(links["link"]) == ["bottleneck", "hop1"]
    assert list(links["rate_mbps"]) == [100.0, 50.0]
    assert (links["utilisation"] > 0.9).all()
    assert {"sojourn_c_ms", "sojourn_l_ms"} <= set(links.columns)
    hop1 = result.link_series("hop1")
    assert len(hop1) == len(result.bottleneck_series) and "sojourn_l_ms" in hop1
    assert result.summary["links"][0]["name"] == "hop1"
    with pytest.raises(ScenarioError, match="'hop9' is not a measured link of this run; measured: bottleneck, hop1"):
        result.link_series("hop9")
    scenario_file = tmp_path / "p.toml"
    scenario_file.write_text(text)
    done = cli_in_process(capsys, "run", str(scenario_file), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "links (summary window)" in done.stdout and "hop1" in done.stdout


def test_a_bad_topology_is_a_one_line_cli_error(tmp_path, capsys):
    scenario_file = tmp_path / "bad.toml"
    scenario_file.write_text(CHAIN.replace("hops = 1", "hops = [1, 0]"))
    line = one_line_error(cli_in_process(capsys, "run", str(scenario_file), "--out", str(tmp_path / "out")))
    assert "flows[1].hops: [1, 0] is not a range of hops" in line
