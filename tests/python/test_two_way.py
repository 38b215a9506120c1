"""Data both ways: ``[reverse_bottleneck]`` and ``direction = "reverse"`` flows."""

from __future__ import annotations

import pytest
from l4slab.errors import ScenarioError
from l4slab.scenario import scenario_from_toml

TWO_WAY = """
name = "two-way"
duration = "10s"
[bottleneck]
rate = "10Mbit"
qdisc = "bfifo"
buffer = "1bdp"
[reverse_bottleneck]
rate = "10Mbit"
qdisc = "bfifo"
buffer = "8bdp"
[[flows]]
cc = "cubic"
rtt = "20ms"
[[flows]]
cc = "cubic"
rtt = "20ms"
direction = "reverse"
[[flows]]
kind = "udp"
rate = "10%"
rtt = "20ms"
direction = "reverse"
"""


def test_reverse_flows_and_link_resolve_to_the_engine_fields():
    config = scenario_from_toml(TWO_WAY).resolve()
    assert config["reverse_bottleneck"]["qdisc"] == {
        "kind": "bfifo",
        "limit_bytes": 200_000,
    }  # 8 BDP of 10 Mbit/s x 20 ms
    assert "reverse" not in config["flows"][0]  # forward flows keep their engine config (and run ids)
    assert config["flows"][1]["reverse"] is True
    # A reverse UDP flow's % is a share of the link its data crosses.
    assert config["flows"][2]["rate_bps"] == 1_000_000


def test_forward_only_scenarios_have_no_reverse_link():
    config = scenario_from_toml(
        TWO_WAY.split("[reverse_bottleneck]")[0] + "[[flows]]\ncc = 'cubic'\nrtt = '20ms'\n"
    ).resolve()
    assert "reverse_bottleneck" not in config


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('direction = "reverse"', 'direction = "back"'), "flows[1].direction: 'back' is invalid"),
        (('buffer = "8bdp"', 'buffer = "lots"'), "reverse_bottleneck.buffer: 'lots' is not a buffer size"),
        (('buffer = "8bdp"', 'buffer = "8bdp"\nbdp_rtt = "0s"'), "reverse_bottleneck.bdp_rtt: must be > 0"),
        # Errors inside the reverse link's qdisc name that link, not the forward one.
        (('qdisc = "bfifo"\nbuffer = "8bdp"', 'qdisc = "bogus"'), "reverse_bottleneck.qdisc: unknown qdisc 'bogus'"),
        (('qdisc = "bfifo"\nbuffer = "8bdp"', 'qdisc = "bfifo limit 0"'), "reverse_bottleneck.qdisc.limit: '0'"),
        (
            ('qdisc = "bfifo"\nbuffer = "8bdp"', 'qdisc = "bfifo limit 1000"\nbuffer = "1bdp"'),
            "reverse_bottleneck.buffer: given together with reverse_bottleneck.qdisc 'limit'",
        ),
    ],
)
def test_mistakes_name_the_field(change, message):
    with pytest.raises(ScenarioError) as err:
        scenario_from_toml(TWO_WAY.replace(*change)).resolve()
    assert str(err.value).startswith(message)


def test_acks_behind_reverse_data_carry_its_queueing_delay():
    import l4slab

    flows = l4slab.run(TWO_WAY).flows
    forward, reverse = flows.iloc[0], flows.iloc[1]
    # The forward flow's 1-BDP buffer bounds its own queue to ~20 ms; its ACKs wait in
    # the reverse queue behind up to 160 ms of reverse data.
    assert forward.queuing_delay_ms > 60
    assert reverse.queuing_delay_ms > 60
    assert 7.0 < reverse.goodput_mbps < 10.0
