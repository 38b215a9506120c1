"""A command flow's ``command`` table: what a scenario may say (no emulator needed)."""

from __future__ import annotations

import pytest
from l4slab.errors import ScenarioError
from l4slab.scenario import coerce_scenario

BASE = 'duration = "2s"\n[bottleneck]\nrate = "20Mbit"\n[[flows]]\nkind = "udp"\nrate = "5Mbit"\nrtt = "20ms"\n'


def test_templates_are_checked_at_load_in_one_line():
    text = BASE + '[flows.command]\nsender = "prog --to {receiver_adr} --port {port}"\n'
    with pytest.raises(ScenarioError) as err:
        coerce_scenario(text)
    message = str(err.value)
    assert "\n" not in message and "{receiver_adr}" in message and "{receiver_addr}" in message


def test_a_command_flow_resolves_to_its_simulated_counterpart():
    """The engine never sees the command: ``l4slab run`` simulates the flow the entry names."""
    from l4slab.emulate.commands import command_flows, command_words

    text = BASE.replace("[[flows]]", "[[flows]]\ncount = 2") + (
        '[flows.command]\nsender = "prog --to {receiver_addr}:{port} -t {duration} --out \'{out_dir}/a b\'"\n'
    )
    scenario = coerce_scenario(text)
    config = scenario.resolve()
    assert [f["kind"] for f in config["flows"]] == ["udp", "udp"]
    assert all("command" not in f for f in config["flows"])
    commands = command_flows(scenario)
    assert sorted(commands) == [0, 1]
    fields = {"receiver_addr": "10.251.0.2", "port": 5201, "duration": "2", "out_dir": "/x", "flow": 1,
              "sender_addr": "10.250.0.2"}
    assert command_words(commands[1].sender, fields) == ["prog", "--to", "10.251.0.2:5201", "-t", "2", "--out", "/x/a b"]
