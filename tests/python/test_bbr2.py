"""BBRv2 (``bbr2``) and L4S-BBRv2 (``bbr2-l4s``) from the front end: the receiving
socket's ``receiver_cc_params`` (PAM 2025's two-sided BBRv2 ECN) reaches the engine,
and a mistake in it is one line naming the field."""

import pytest
from l4slab import schema
from l4slab.errors import ScenarioError
from l4slab.scenario.model import Scenario
from l4slab.scenario.resolve import resolve_scenario


def _scenario(**flow):
    return Scenario.model_validate(
        {
            "duration": "1s",
            "bottleneck": {"rate": "100Mbit", "qdisc": "bfifo", "buffer": "2bdp"},
            "flows": [{"cc": "bbr2", "rtt": "10ms", **flow}],
        }
    )


def test_two_sided_bbr2_passes_receiver_cc_params_to_the_engine():
    params = {"ecn_enable": True, "ecn_max_rtt_us": 0}
    config = resolve_scenario(_scenario(ecn=1, cc_params=params, receiver_cc="bbr2", receiver_cc_params=params))
    flow = config["flows"][0]
    assert flow["receiver_cc"] == "bbr2"
    assert flow["receiver_cc_params"] == params
    assert flow["cc_params"] == params


def test_bbr2_l4s_is_registered_as_l4s_with_an_accecn_receiver():
    assert {"bbr2", "bbr2-l4s"} <= set(schema.congestion_control_names())
    assert schema.receiver_defaults("bbr2-l4s") == {"receiver_ecn": 3}
    assert schema.receiver_defaults("bbr2") == {}


def test_a_bad_receiver_cc_param_names_the_field():
    with pytest.raises(ScenarioError) as info:
        resolve_scenario(_scenario(receiver_cc="bbr2", receiver_cc_params={"ecn_enabled": True}))
    message = str(info.value)
    assert "receiver_cc_params" in message and "ecn_enabled" in message
    assert "\n" not in message.strip()
