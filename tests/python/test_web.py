"""Web traffic and SYN flood sources in the scenario format (``[[sources]]``)."""

import math

import l4slab
import pytest
from l4slab.errors import ScenarioError
from l4slab.scenario import scenario_from_dict, scenario_from_toml
from l4slab.scenario.sources import parse_sizes, parse_web_rate

WEB_TOML = """
name = "web"
duration = "10s"
[bottleneck]
rate = "40Mbit"
qdisc = "dualpi2"
[[flows]]
cc = "cubic"
rtt = "10ms"
ecn = "classic"
receiver_ecn = "classic"
[[sources]]
kind = "web"
rate = "0.25/s per Mbit"
cc = "prague"
rtt = "10ms"
ecn = "accecn"
receiver_ecn = "accecn"
[[sources]]
kind = "syn_flood"
rate = "1Mbit"
ecn = "ect0"
rtt = "10ms"
"""


def test_web_rate_and_sizes_parse_in_the_papers_terms():
    # The DualQ paper's App. C: 1 (low) or 10 (high) requests/s at 4 Mbit/s, scaled with the rate.
    assert parse_web_rate("10/s per 4Mbit").per_second(200_000_000) == pytest.approx(500.0)
    assert parse_web_rate("2.5/s per Mbit").per_second(120_000_000) == pytest.approx(300.0)
    assert parse_web_rate("300/s").per_second(1) == 300.0
    assert parse_sizes("pareto(0.9, 1000B, 1000000B)") == (0.9, 1000, 1_000_000)
    assert parse_sizes("Pareto(1.2, 1kB, 1MB)") == (1.2, 1024, 1024 * 1024)


def test_sources_resolve_to_the_engine_config():
    config = scenario_from_toml(WEB_TOML).resolve()
    web, flood = config["sources"]
    assert web["kind"] == "web" and web["cc"] == "prague"
    assert web["rate_per_s"] == pytest.approx(10.0)
    assert web["sizes"] == {"alpha": 0.9, "min_bytes": 1000, "max_bytes": 1_000_000}
    assert (web["ecn"], web["receiver_ecn"]) == (3, 3)
    assert "bytes" not in web
    assert flood == {
        "kind": "syn_flood",
        "rtt_ns": 10_000_000,
        "start_ns": 0,
        "rate_bps": 1_000_000,
        "syn_bytes": 54,
        "ecn": "ect0",
    }


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"kind": "web", "rate": "fast", "rtt": "10ms"}, "sources[0].rate: 'fast' is not a request rate"),
        (
            {"kind": "web", "rate": "1/s", "rtt": "10ms", "sizes": "lognormal(1, 2)"},
            "sources[0].sizes: 'lognormal(1, 2)' is not a size distribution",
        ),
        ({"kind": "web", "rate": "1/s", "rtt": "10ms", "bytes": "1kb"}, "sources[0].bytes: not allowed"),
        ({"kind": "web", "rate": "1/s", "rtt": "10ms", "count": 2}, "sources[0].count: a source is one entry"),
        ({"kind": "web", "rate": "1/s"}, "sources[0].rtt: missing"),
        ({"kind": "smtp", "rtt": "10ms"}, "sources[0].kind: 'smtp' is not a source kind"),
    ],
)
def test_source_errors_are_one_line(source, expected):
    data = {"duration": "10s", "bottleneck": {"rate": "10Mbit"}, "sources": [source]}
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(data).resolve()
    message = str(err.value)
    assert "\n" not in message and message.startswith(expected), message


@pytest.mark.parametrize(
    ("knobs", "expected"),
    [
        (
            {"receiver_cc_params": {"no_such_knob": 1}},
            "receiver_cc_params: no_such_knob: unknown cubic parameter (known: beta, ",
        ),
        (
            {"receiver_cc": "dctcp", "receiver_cc_params": {"shift_g": 99}},
            "receiver_cc_params: shift_g: 99 is out of range",
        ),
        ({"cc_params": {"beta": 5000}}, "cc_params: beta: 5000 is out of range (allowed 1..=1023)"),
    ],
)
def test_a_tcp_knob_is_refused_in_the_same_line_on_a_flow_and_a_web_source(knobs, expected):
    """A web source's connections are TCP flows built and checked as a [[flows]] entry is: a
    bad receiver_cc_params (which a web source once ignored) gets the flow's message."""
    lines = []
    flow, web = {"cc": "cubic", "rtt": "10ms"}, {"kind": "web", "rate": "1/s", "rtt": "10ms"}
    for where, entry in (("flows", flow), ("sources", web)):
        data = {"duration": "10s", "bottleneck": {"rate": "10Mbit"}, where: [{**entry, **knobs}]}
        with pytest.raises(ScenarioError) as err:
            scenario_from_dict(data).resolve()
        message = str(err.value)
        assert "\n" not in message and message.startswith(f"{where}[0].{expected}"), message
        lines.append(message.removeprefix(f"{where}[0]."))
    assert lines[0] == lines[1]


def test_a_run_with_web_traffic_writes_its_request_table(tmp_path):
    pytest.importorskip("l4slab._core")
    result = l4slab.run(WEB_TOML)
    requests = result.requests
    assert requests is not None
    # ~10 requests/s for 10 s: Poisson(100) within 4σ.
    assert abs(len(requests) - 100) < 40
    done = requests.dropna(subset=["fct_s"])
    assert len(done) >= 0.9 * len(requests)
    assert (done["efficiency"] <= 1.0).all() and (done["efficiency"] > 0).all()
    assert set(done["cc"]) == {"prague"} and set(done["ecn_mode"]) == {"accecn"}
    # A small response needs at least the 2 RTTs of handshake and request.
    assert done["fct_s"].min() >= 0.020
    assert math.isclose(done["ideal_fct_s"].iloc[0], 0.010 + done["size_bytes"].iloc[0] * 8 / 40e6)
    flood = result.flows[result.flows["kind"] == "synflood"]
    assert len(flood) == 1 and flood["throughput_mbps"].iloc[0] == pytest.approx(1.0, rel=0.02)
    directory = result.write(tmp_path / "run")
    assert (directory / "requests.parquet").exists()
