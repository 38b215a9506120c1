"""Congestion-control module parameters (``cc_params``) reach the engine, and a bad
one is a one-line user error."""

import l4slab
import pytest
from l4slab.errors import ScenarioError

pytest.importorskip("l4slab._core")

BASE = {
    "duration": "3s",
    "bottleneck": {"rate": "20Mbit", "qdisc": "bfifo limit 100000"},
}


def _scenario(cc_params):
    return {**BASE, "flows": [{"cc": "cubic", "rtt": "20ms", "cc_params": cc_params}]}


def test_cubic_beta_changes_the_reduction():
    # beta 512/1024 halves like Reno instead of 717/1024: more loss recovery per drop
    # leaves a lower mean cwnd at the same buffer.
    default = l4slab.run(_scenario({}))
    halving = l4slab.run(_scenario({"beta": 512, "fast_convergence": False}))
    assert halving.raw["flows"][0]["final_cwnd"] != default.raw["flows"][0]["final_cwnd"]
    assert halving.flow_series["cwnd"].mean() < default.flow_series["cwnd"].mean()


def test_unknown_cc_param_is_a_one_line_error():
    with pytest.raises(ScenarioError) as err:
        l4slab.run(_scenario({"betta": 512}))
    message = str(err.value)
    assert "\n" not in message
    assert "flows[0].cc_params" in message and "betta" in message
