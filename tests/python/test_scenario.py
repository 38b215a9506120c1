"""Scenario validation (one-line errors with field paths) and resolution into the engine config."""

import json
from pathlib import Path

import l4slab
import pytest
from l4slab.errors import ScenarioError
from l4slab.scenario import (
    apply_overrides,
    coerce_scenario,
    load_scenario,
    parse_override,
    scenario_from_dict,
    scenario_from_toml,
)

REPO = Path(__file__).resolve().parents[2]

BASE = {
    "name": "t",
    "duration": "10s",
    "bottleneck": {"rate": "100Mbit", "qdisc": "bfifo limit 250000"},
    "flows": [{"cc": "cubic", "rtt": "10ms", "count": 2}, {"kind": "udp", "rate": "50%", "rtt": "10ms"}],
}


def error_of(data=None, **overrides):
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(apply_overrides(data or BASE, overrides))
    message = str(err.value)
    assert "\n" not in message
    return message


def test_resolve_matches_engine_config():
    config = scenario_from_dict(BASE).resolve()
    assert config == {
        "seed": 1,
        "duration_ns": 10_000_000_000,
        "bin_ns": 100_000_000,
        "warmup_ns": 0,
        "start_jitter_ns": 1_000_000,
        "trace_sojourn": False,
        "bottleneck": {
            "rate_bps": 100_000_000,
            "burst_bytes": 1600,
            "access_rate_bps": 10_000_000_000,
            "qdisc": {"kind": "bfifo", "limit_bytes": 250_000},
        },
        "flows": [
            {"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000, "start_ns": 0},
            {"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000, "start_ns": 0},
            {
                "kind": "udp",
                "rtt_ns": 10_000_000,
                "start_ns": 0,
                "rate_bps": 50_000_000,
                "payload_bytes": 1472,
                "ecn": "not-ect",
            },
        ],
    }
    json.dumps(config, allow_nan=False)


def test_count_expands_and_labels():
    scenario = scenario_from_dict(apply_overrides(BASE, {"flows[0].count": 3}))
    assert len(scenario.resolve()["flows"]) == 4
    assert scenario.flow_labels() == ["cubic", "cubic", "cubic", "udp"]
    assert [group for group, _ in scenario.expanded_flows()] == [0, 0, 0, 1]


def test_udp_percent_rate_and_packet_size():
    scenario = scenario_from_dict(
        apply_overrides(BASE, {"flows[1].rate": "140%", "flows[1].packet_size": "1000B", "flows[1].ecn": "ECT1"})
    )
    udp = scenario.resolve()["flows"][2]
    assert udp["rate_bps"] == 140_000_000
    assert udp["payload_bytes"] == 972
    assert udp["ecn"] == "ect1"


def test_expert_knobs_reach_the_engine():
    knobs = {
        "flows[0].mss": 1000,
        "flows[0].init_cwnd": 4,
        "flows[0].rto_min": "1s",
        "flows[0].delayed_ack": False,
        "flows[0].drop_segments": [5, 6],
        "flows[0].bytes": "10mb",
        "flows[0].fwd_delay": "2ms",
        "flows[0].stop": "5s",
        "flows[0].rwnd": "64k",
        "bottleneck.burst": "3000B",
        "bottleneck.access_rate": "1gbit",
    }
    config = scenario_from_dict(apply_overrides(BASE, knobs)).resolve()
    tcp = config["flows"][0]
    assert tcp["mss"] == 1000 and tcp["init_cwnd"] == 4 and tcp["rto_min_ns"] == 1_000_000_000
    assert tcp["delayed_ack"] is False and tcp["drop_segments"] == [5, 6]
    assert tcp["bytes"] == 10 * 2**20 and tcp["fwd_delay_ns"] == 2_000_000 and tcp["stop_ns"] == 5_000_000_000
    assert tcp["rwnd_bytes"] == 65_536
    assert config["bottleneck"]["burst_bytes"] == 3000 and config["bottleneck"]["access_rate_bps"] == 10**9


def test_host_timer_latencies_resolve_only_when_set():
    """Off (the default) leaves the engine config as it was, so stored run keys do not
    change; set, both reach the engine in ns (net/host_timer.rs)."""
    off = scenario_from_dict(BASE).resolve()
    assert "timer_latency_ns" not in off["bottleneck"] and "delay_node_timer_latency_ns" not in off
    on = scenario_from_dict(
        apply_overrides(BASE, {"bottleneck.timer_latency": "10us", "delay_node_timer_latency": "5us"})
    ).resolve()
    assert on["bottleneck"]["timer_latency_ns"] == 10_000 and on["delay_node_timer_latency_ns"] == 5_000


def test_host_timer_latency_out_of_range_names_the_field():
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(apply_overrides(BASE, {"delay_node_timer_latency": "2s"})).resolve()
    assert str(err.value) == "delay_node_timer_latency: '2s' is out of range; allowed 0s..1s (a mean lateness)"
    with pytest.raises(ScenarioError, match=r"^bottleneck\.timer_latency: '1500ms' is out of range"):
        scenario_from_dict(apply_overrides(BASE, {"bottleneck.timer_latency": "1500ms"})).resolve()


def tcp_flow(**fields):
    """The engine config of one TCP flow with ``fields`` set."""
    data = {"duration": "1s", "bottleneck": {"rate": "100Mbit"}, "flows": [{"rtt": "10ms", **fields}]}
    return scenario_from_dict(data).resolve()["flows"][0]


def test_ecn_low_route_feature_reaches_the_engine_only_when_set():
    # `ip route ... features ecn_low` (google/bbr v3 RTAX_FEATURE_ECN_LOW): off unless given.
    assert "ecn_low" not in tcp_flow(cc="bbr3")
    flow = tcp_flow(cc="bbr3", ecn="classic", ecn_low=True)
    assert flow["ecn_low"] is True and flow["ecn"] == 1 and flow["cc"] == "bbr3"


def test_tcp_ecn_options_reach_the_engine():
    flow = tcp_flow(ecn="classic", receiver_ecn=1, ecn_option=0, receiver_cc="reno", fq_pacing=True)
    assert flow == {
        "kind": "tcp",
        "cc": "cubic",
        "rtt_ns": 10_000_000,
        "start_ns": 0,
        "fq_pacing": True,
        "ecn": 1,
        "ecn_option": 0,
        "receiver_cc": "reno",
        "receiver_ecn": 1,
    }
    # Linux numbers 0–5 as they are; the friendly words off / classic / accecn.
    assert [tcp_flow(ecn=value)["ecn"] for value in (0, 1, 2, 3, 4, 5, "off", "classic", "accecn", "AccECN")] == [
        0,
        1,
        2,
        3,
        4,
        5,
        0,
        1,
        3,
        3,
    ]
    # Unset options are not sent: the engine's Linux defaults apply (tcp_ecn 2, option 2, no pacing).
    assert tcp_flow() == {"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000, "start_ns": 0}


@pytest.mark.parametrize(
    "cc, fields, receiver",
    [
        ("prague", {}, {"receiver_ecn": 3}),
        ("prague-v06", {}, {"receiver_ecn": 3}),
        ("prague", {"receiver_ecn": "off"}, {"receiver_ecn": 0}),
        ("dctcp", {}, {"receiver_cc": "dctcp", "receiver_ecn": 1}),
        ("dctcp", {"receiver_cc": "cubic"}, {"receiver_cc": "cubic", "receiver_ecn": 1}),
        ("dctcp", {"receiver_ecn": 3}, {"receiver_cc": "dctcp", "receiver_ecn": 3}),
        ("cubic", {}, {}),
        ("reno", {}, {}),
    ],
)
def test_friendly_receiver_defaults(cc, fields, receiver):
    """Prague gets an AccECN receiver and DCTCP a DCTCP receiver with classic ECN, unless given."""
    pytest.importorskip("l4slab._core")
    flow = tcp_flow(cc=cc, **fields)
    assert {k: v for k, v in flow.items() if k.startswith("receiver_")} == receiver


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"flows[0].ecn": 6}, "flows[0].ecn: 6 is not a tcp_ecn mode; expected 0..5 or e.g. 2, 'off' (0)"),
        ({"flows[0].ecn": "on"}, "flows[0].ecn: 'on' is not a tcp_ecn mode"),
        ({"flows[0].receiver_ecn": True}, "flows[0].receiver_ecn: True is not a tcp_ecn mode"),
        ({"flows[0].ecn_option": 4}, "flows[0].ecn_option: 4 is invalid: input should be less than or equal to 3"),
        ({"flows[0].fq_pacing": "yes"}, "flows[0].fq_pacing: 'yes' is invalid: input should be a valid boolean"),
        (
            {"flows[0].receiver_ecm": 3},
            "flows[0].receiver_ecm: unknown key in a tcp flow (did you mean 'receiver_ecn'?",
        ),
    ],
)
def test_tcp_option_errors(overrides, expected):
    assert error_of(**overrides).startswith(expected)


def test_receiver_cc_is_checked_against_the_engine():
    pytest.importorskip("l4slab._core")
    # A name no CC has or resembles (the known list grows as CCs are added).
    error = error_of(**{"flows[0].receiver_cc": "vegas"})
    assert error.startswith("flows[0].receiver_cc: 'vegas' is not a known congestion control; known: reno, cubic,")
    assert "\n" not in error


def test_buffer_with_bdp():
    data = apply_overrides(BASE, {"bottleneck.qdisc": "pfifo", "bottleneck.buffer": "2bdp"})
    assert scenario_from_dict(data).resolve()["bottleneck"]["qdisc"] == {"kind": "pfifo", "limit_packets": 167}


def test_bdp_needs_a_common_rtt_or_bdp_rtt():
    data = apply_overrides(BASE, {"flows[1].rtt": "20ms", "bottleneck.qdisc": "bfifo", "bottleneck.buffer": "1bdp"})
    with pytest.raises(
        ScenarioError,
        match=r"^bottleneck\.buffer: '1bdp' needs a BDP, but the flows have different base RTTs "
        r"\(10ms, 20ms\); set bottleneck\.bdp_rtt",
    ):
        scenario_from_dict(data).resolve()
    data["bottleneck"]["bdp_rtt"] = "20ms"
    assert scenario_from_dict(data).resolve()["bottleneck"]["qdisc"]["limit_bytes"] == 250_000


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"durtion": "1s"}, "durtion: unknown key (did you mean 'duration'?); allowed: name, duration,"),
        ({"bottleneck.rat": "1Mbit"}, "bottleneck.rat: unknown key (did you mean 'rate'?); allowed: rate, qdisc,"),
        ({"flows[0].ccc": "reno"}, "flows[0].ccc: unknown key in a tcp flow (did you mean 'cc'?); allowed: kind, rtt,"),
        ({"flows[1].cc": "reno"}, "flows[1].cc: unknown key in a udp flow; allowed:"),
        ({"flows[1].rtt": "10"}, "flows[1].rtt: '10' is not a time with a unit; expected e.g. '10ms'"),
        ({"flows[0].rtt": 10}, "flows[0].rtt: 10 is not a time with a unit"),
        ({"bottleneck.rate": "100Mbps"}, "bottleneck.rate: '100Mbps' is ambiguous"),
        ({"flows[1].rate": "fast"}, "flows[1].rate: 'fast' is not a rate; expected e.g. '50%'"),
        ({"flows[0].count": 0}, "flows[0].count: 0 is invalid: input should be greater than or equal to 1"),
        ({"flows[0].count": "2"}, "flows[0].count: '2' is invalid: input should be a valid integer"),
        ({"flows[0].kind": "quic"}, "flows[0].kind: 'quic' is not a flow kind; expected 'tcp', 'udp' or 'udp_prague'"),
        ({"flows[1].ecn": "ect2"}, "flows[1].ecn: 'ect2' is not an ECN codepoint"),
        ({"bottleneck.qdisc": "bfifo limt 1"}, "bottleneck.qdisc: bfifo has no parameter 'limt'"),
        ({"warmup": "10s"}, "warmup: '10s' must be shorter than duration '10s'"),
        ({"flows[0].fwd_delay": "11ms"}, "flows[0].fwd_delay: '11ms' exceeds the rtt '10ms'"),
        ({"flows[0].start": "10s"}, "flows[0].start: '10s' is not before the end of the run"),
        ({"flows[0].stop": "0s"}, "flows[0].stop: '0s' is not after start '0s'"),
        ({"flows[1].packet_size": "28B"}, "flows[1].packet_size: 28 B leaves a UDP payload of 0 B"),
        ({"flows[0].mss": 10}, "flows[0].mss: 10 is invalid: input should be greater than or equal to 88"),
        ({"seed": -1}, "seed: -1 is invalid"),
        ({"trace_sojourn": "yes"}, "trace_sojourn: 'yes' is invalid: input should be a valid boolean"),
        ({"flows": []}, "flows: at least one [[flows]] entry is required"),
        ({"bottleneck": "100Mbit"}, "bottleneck: '100Mbit' is not a table"),
    ],
)
def test_one_line_errors(overrides, expected):
    assert error_of(**overrides).startswith(expected)


def test_missing_fields():
    assert error_of({"duration": "1s", "flows": BASE["flows"]}).startswith(
        "bottleneck: missing; add a [bottleneck] table"
    )
    assert (
        error_of({"duration": "1s", "bottleneck": {"rate": "1Mbit"}, "flows": [{}]})
        == "flows[0].rtt: missing; expected e.g. '10ms'"
    )


def test_multiple_problems_are_counted_on_one_line():
    message = error_of({"bottleneck": {"rate": "1Mbit"}, "flows": [{"rtt": "1ms"}]}, durtion="1s")
    assert message.startswith("duration: missing") or message.startswith("durtion: unknown key")
    assert "(and 1 more problem)" in message


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, "flows[0].receiver_wake_latency: 0 is not a time with a unit; expected e.g."),
        ("x", "flows[0].receiver_wake_latency: 'x' is not a time with a unit"),
        (["1us", "x"], "flows[0].receiver_wake_latency[1]: 'x' is not a time with a unit"),
    ],
)
def test_a_union_field_fails_as_one_problem_named_by_its_path(value, expected):
    # A value of `time | list of times` fails once per member of the union: one problem,
    # told by the member it was meant for, and no pydantic member label in the path.
    data = {**BASE, "flows": [{"kind": "udp_prague", "rtt": "10ms", "receiver_wake_latency": value}]}
    message = error_of(data)
    assert message == expected or (message.startswith(expected) and "more problem" not in message)
    assert "[validate()]" not in message and "function-" not in message


def test_unknown_congestion_control_when_engine_available():
    pytest.importorskip("l4slab._core")
    assert error_of(**{"flows[0].cc": "cubc"}).startswith(
        "flows[0].cc: 'cubc' is not a known congestion control (did you mean 'cubic'?); known:"
    )


def test_toml_errors_are_one_line(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('duration = "1s"\n[bottleneck\nrate = 1\n')
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}: invalid TOML:") and "\n" not in str(err.value)
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario(tmp_path / "absent.toml")


def test_name_defaults_to_file_stem(tmp_path):
    path = tmp_path / "my_cell.toml"
    data = {k: v for k, v in BASE.items() if k != "name"}
    path.write_text('duration = "1s"\n[bottleneck]\nrate = "10Mbit"\n[[flows]]\nrtt = "10ms"\n')
    assert load_scenario(path).name == "my_cell"
    assert scenario_from_dict(data).name == "scenario"


def test_reference_scenario_is_packaged_and_linked():
    packaged = Path(str(l4slab.reference_scenario_path()))
    scenario = load_scenario(packaged)
    config = scenario.resolve()
    assert scenario.name == "reference" and config["duration_ns"] == 60 * 10**9 and config["seed"] == 1
    assert config["bottleneck"]["qdisc"] == {"kind": "bfifo", "limit_bytes": 250_000}
    assert [f["cc"] for f in config["flows"]] == ["cubic", "cubic"]
    example = REPO / "examples" / "reference.toml"
    if example.exists():
        assert example.is_symlink()
        assert load_scenario(example).resolve() == config


def test_overrides():
    assert parse_override("flows[0].count=3") == ("flows[0].count", 3)
    assert parse_override("bottleneck.rate=50Mbit") == ("bottleneck.rate", "50Mbit")
    assert parse_override("bottleneck.qdisc=pfifo limit 84") == ("bottleneck.qdisc", "pfifo limit 84")
    assert parse_override('name="x y"') == ("name", "x y")
    assert parse_override("trace_sojourn=true") == ("trace_sojourn", True)
    updated = apply_overrides(BASE, {"flows.0.cc": "reno", "flows__1__rate": "10%", "flows[2]": {"rtt": "5ms"}})
    assert (
        updated["flows"][0]["cc"] == "reno"
        and updated["flows"][1]["rate"] == "10%"
        and updated["flows"][2] == {"rtt": "5ms"}
    )
    assert BASE["flows"][0]["cc"] == "cubic"  # the input is not modified
    with pytest.raises(ScenarioError, match=r"^flows\[5\]\.cc: no such entry; flows has 2"):
        apply_overrides(BASE, {"flows[5].cc": "reno"})
    with pytest.raises(ScenarioError, match=r"^--set: 'rate' is not key=value"):
        parse_override("rate")
    with pytest.raises(ScenarioError, match=r"bottleneck\.qdisc is not a table"):
        apply_overrides(BASE, {"bottleneck.qdisc.limit": 3})


def test_coerce_accepts_every_form(tmp_path):
    toml_text = (REPO / "python" / "l4slab" / "scenarios" / "reference.toml").read_text()
    path = tmp_path / "s.toml"
    path.write_text(toml_text)
    from_path = coerce_scenario(str(path))
    from_pathlike = coerce_scenario(path)
    from_toml = coerce_scenario(toml_text)
    from_scenario = coerce_scenario(from_toml)
    assert from_path.resolve() == from_pathlike.resolve() == from_toml.resolve() == from_scenario.resolve()
    assert coerce_scenario(toml_text, {"duration": "5s"}).duration == 5 * 10**9
    with pytest.raises(ScenarioError, match="no such scenario file"):
        coerce_scenario("absent.toml")
    with pytest.raises(ScenarioError, match="is not a path, TOML string, dict or Scenario"):
        coerce_scenario(42)


def test_scenario_from_toml_string():
    scenario = scenario_from_toml('duration = "2s"\n[bottleneck]\nrate = "1gbit"\n[[flows]]\nrtt = "1ms"\n')
    assert scenario.resolve()["bottleneck"]["qdisc"] == {"kind": "pfifo", "limit_packets": 1000}
