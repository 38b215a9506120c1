"""The ``udp_prague`` flow kind from a scenario file: its keys reach the engine (which owns the
defaults and ranges), bad values are one line naming the field, and a run reports the flow."""

import importlib.util
import json
from pathlib import Path

import pytest
from l4slab import engine
from l4slab.errors import ScenarioError
from l4slab.scenario import apply_overrides, load_scenario, scenario_from_dict

REPO = Path(__file__).resolve().parents[2]

BASE = {
    "name": "t",
    "duration": "4s",
    "bottleneck": {"rate": "100Mbit", "qdisc": "dualpi2"},
    "flows": [{"kind": "udp_prague", "rtt": "10ms"}],
}


def test_only_the_keys_given_reach_the_engine():
    assert scenario_from_dict(BASE).resolve()["flows"] == [{"kind": "udp_prague", "rtt_ns": 10_000_000, "start_ns": 0}]
    rt = apply_overrides(
        BASE, {"flows[0].fps": 30, "flows[0].frame_budget": "10ms", "flows[0].max_rate": "20Mbit",
               "flows[0].max_packet_size": "1200B", "flows[0].sender_wake_latency": "150us",
               "flows[0].receiver_wake_latency": "40us"},
    )  # fmt: skip
    flow = scenario_from_dict(rt).resolve()["flows"][0]
    assert flow == {
        "kind": "udp_prague", "rtt_ns": 10_000_000, "start_ns": 0, "max_packet_bytes": 1200, "fps": 30,
        "frame_budget_ns": 10_000_000, "max_rate_bps": 20_000_000, "sender_wake_latency_ns": 150_000,
        "receiver_wake_latency_ns": 40_000,
    }  # fmt: skip
    # A list is the measured distribution's quantiles.
    measured = apply_overrides(
        BASE, {"flows[0].receiver_wake_latency": ["1.5us", "20us", "3ms"], "flows[0].sender_timer_latency": "30us"}
    )
    flow = scenario_from_dict(measured).resolve()["flows"][0]
    assert flow["receiver_wake_quantiles_ns"] == [1500, 20_000, 3_000_000] and flow["sender_timer_latency_ns"] == 30_000
    # The busy times per datagram, and a distribution's tail (its top step's own quantiles).
    busy = apply_overrides(
        BASE, {"flows[0].receiver_busy_time": ["2us", "30us", "300us"],
               "flows[0].receiver_busy_time_tail": ["200us", "3ms"],
               "flows[0].sender_busy_time": "10us", "flows[0].receiver_wake_latency": ["20us", "4ms"],
               "flows[0].receiver_wake_latency_tail": ["20us", "25us", "4ms"]},
    )  # fmt: skip
    flow = scenario_from_dict(busy).resolve()["flows"][0]
    assert flow["receiver_busy_quantiles_ns"] == [2000, 30_000, 300_000]
    assert flow["receiver_busy_tail_quantiles_ns"] == [200_000, 3_000_000]
    assert flow["sender_busy_time_ns"] == 10_000
    assert flow["receiver_wake_tail_quantiles_ns"] == [20_000, 25_000, 4_000_000]
    # 0 is an ideal host, the default: not sent, so the run key stays the same.
    ideal = apply_overrides(BASE, {"flows[0].sender_wake_latency": "0s"})
    assert scenario_from_dict(ideal).resolve()["flows"] == scenario_from_dict(BASE).resolve()["flows"]
    assert scenario_from_dict(rt).flow_labels() == ["udp_prague"]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"flows[0].rate": "5Mbit"}, "flows[0].rate: unknown key in a udp_prague flow"),
        ({"flows[0].fps": 300}, "flows[0].fps: 300 is invalid"),
        ({"flows[0].kind": "quic"}, "flows[0].kind: 'quic' is not a flow kind; expected 'tcp', 'udp' or 'udp_prague'"),
    ],
)
def test_one_line_errors(overrides, expected):
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(apply_overrides(BASE, overrides))
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(expected), str(err.value)


def test_the_engine_checks_the_ranges_in_one_line():
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(apply_overrides(BASE, {"flows[0].max_packet_size": "100B"})).resolve()
    assert str(err.value) == "flows[0].max_packet_bytes: 100 is out of range (allowed 150..=65507)"
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(apply_overrides(BASE, {"flows[0].receiver_wake_latency": "2s"})).resolve()
    assert str(err.value).startswith("flows[0].receiver_wake_latency_ns: 2000000000 is out of range"), str(err.value)
    for wake, says in (
        (["20us", "1.5us"], "flows[0].sender_wake_quantiles_ns: 1500 after 20000 (allowed: non-decreasing quantiles)"),
        (["20us"], "flows[0].sender_wake_quantiles_ns: 1 values (allowed 2..=1001 quantiles"),
    ):
        with pytest.raises(ScenarioError) as err:
            scenario_from_dict(apply_overrides(BASE, {"flows[0].sender_wake_latency": wake})).resolve()
        assert str(err.value).startswith(says), str(err.value)
    for overrides, says in (
        ({"flows[0].sender_busy_time_tail": ["1us", "2us"]},
         "flows[0].sender_busy_tail_quantiles_ns: given without sender_busy_quantiles_ns"),
        ({"flows[0].sender_timer_latency": ["1us", "2us"], "flows[0].sender_timer_latency_tail": ["3us", "2us"]},
         "flows[0].sender_timer_tail_quantiles_ns: 2000 after 3000 (allowed: non-decreasing quantiles)"),
    ):  # fmt: skip
        with pytest.raises(ScenarioError) as err:
            scenario_from_dict(apply_overrides(BASE, overrides)).resolve()
        assert str(err.value).startswith(says) and "\n" not in str(err.value), str(err.value)


def test_the_example_runs_and_reports_the_flows():
    scenario = load_scenario(REPO / "examples" / "udp-prague.toml")
    config = scenario.resolve()
    config["duration_ns"], config["warmup_ns"] = 6_000_000_000, 3_000_000_000
    results, _ = engine.simulate(config)
    flows = results["flows"]
    assert [(f["kind"], f["cc"]) for f in flows] == [("udp_prague", "udp_prague")] * 2 + [("tcp", "cubic")]
    assert all(f["goodput_mbps"] > 0 for f in flows)
    assert flows[0]["acks_per_packet"] == 1.0


def test_the_trials_script_runs_the_engine_on_the_measured_host(tmp_path, capsys):
    """`udp_prague_trials.py sim --hosts FILE` pools the emulated trials' measured quantiles
    (each trial's points equally weighted) and runs the engine with them: here two trials
    whose programs woke (and whose sender's timer fired) 0-200 µs and 100-300 µs late."""
    spec = importlib.util.spec_from_file_location("trials", REPO / "examples" / "emulator" / "udp_prague_trials.py")
    trials = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trials)
    rows = [
        {f"{knob}_quantiles_us": [lo + 2.0 * k for k in range(101)] for knob in trials.KNOBS} for lo in (0.0, 100.0)
    ]
    hosts = tmp_path / "hosts.jsonl"
    hosts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pooled = trials.pooled_quantiles([r["sender_wake_quantiles_us"] for r in rows])
    assert (pooled[0], pooled[50], pooled[100]) == (0.0, 150.0, 300.0)
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'duration = "2s"\nwarmup = "1s"\n[bottleneck]\nrate = "20Mbit"\nqdisc = "dualpi2"\n'
        '[[flows]]\nkind = "udp_prague"\nrtt = "10ms"\n'
    )
    assert trials.main([str(scenario), "1", "sim", "--hosts", str(hosts)]) == 0
    out = capsys.readouterr().out
    # The mixture of U(0, 200) and U(100, 300): F(260) = (1 + 0.8) / 2 = 0.9, F(296) = 0.99.
    assert "hosts: sender wake P50 150 µs, P90 260, P99 296, max 300; receiver wake P50 150" in out, out
    assert "; sender timer P50 150 µs" in out, out
    assert "sim, 1 trials: L mean sojourn ms" in out


def test_the_trials_script_refuses_missing_files_in_one_line(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("trials", REPO / "examples" / "emulator" / "udp_prague_trials.py")
    trials = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trials)
    scenario = tmp_path / "s.toml"
    scenario.write_text('duration = "1s"\n[bottleneck]\nrate = "20Mbit"\nqdisc = "dualpi2"\n'
                        '[[flows]]\nkind = "udp_prague"\nrtt = "10ms"\n')  # fmt: skip
    with pytest.raises(SystemExit) as err:
        trials.main([str(scenario), "1", "sim", "--hosts", str(tmp_path / "none.jsonl")])
    assert str(err.value).startswith("--hosts: ") and "No such file" in str(err.value)
    with pytest.raises(SystemExit) as err:
        trials.main([str(tmp_path / "none.toml"), "1", "sim"])
    assert err.value.code == 2 and "scenario: " in capsys.readouterr().err
    # The whole table needs a new file for the program's trials.
    for argv, says in (
        ([], "--save: required with table"),
        (["--save", str(scenario)], "exists (table starts a new one)"),
    ):
        with pytest.raises(SystemExit) as err:
            trials.main([str(scenario), "1", "table", *argv])
        assert err.value.code == 2 and says in capsys.readouterr().err
