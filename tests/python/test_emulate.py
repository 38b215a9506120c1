"""The emulator's Python side without the emulator: parsers against real captured tool
output (tests/python/data/emulate/, captured on Linux 6.18 / iperf3 3.12), preflight
refusals as one line, the merge into the run schema, the verdicts of `l4slab compare`,
and the study store's backend keys. The live runs are in test_emulate_live.py."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from l4slab import engine
from l4slab.cli import main
from l4slab.emulate.compare import OUTSIDE, WITHIN, _check_host, _with_host, verdicts
from l4slab.emulate.hosts import measured_hosts, pooled_quantiles
from l4slab.emulate.parse import ToolOutputError, parse_iperf3, parse_rate_bps, parse_ss
from l4slab.emulate.preflight import EmulationRefused, check_config, find_binary, kernel_sender_notes
from l4slab.emulate.run import EmuRunResult, _spread, emulator_summary, limited_ms, merge
from l4slab.errors import ScenarioError
from l4slab.scenario import coerce_scenario

DATA = Path(__file__).parent / "data" / "emulate"


def _samples(name: str) -> list[str]:
    return [chunk for chunk in (DATA / name).read_text().split("----\n") if chunk.strip()]


# --- parsers ---------------------------------------------------------------------------------


def test_iperf3_client_json_of_a_cubic_run():
    result = parse_iperf3((DATA / "iperf3-cubic-client.json").read_text())
    # tbf rate 20mbit: the receiver's goodput is below the token rate and near it.
    assert 17.0 < result.goodput_mbps < 20.0
    assert result.cc == "cubic"
    assert result.local_port == 48530 and result.remote_port == 5201
    assert result.retransmits == 3
    assert result.mean_rtt_ms == pytest.approx(30.531)
    assert len(result.intervals) == 3
    # Interval bytes add up to what the sender reports for the whole test.
    assert sum(n for _, _, n, _, _ in result.intervals) == result.bytes_sent
    assert result.bytes_received == 7245792


def test_iperf3_server_json_gives_the_received_bytes_per_interval():
    server = parse_iperf3((DATA / "iperf3-cubic-server.json").read_text())
    assert sum(n for _, _, n, _, _ in server.intervals) == server.bytes_received == 7245792
    assert all(math.isnan(rtt) for _, _, _, rtt, _ in server.intervals)  # the receiver has no sRTT


def test_iperf3_error_and_garbage_are_one_line():
    with pytest.raises(ToolOutputError) as err:
        parse_iperf3((DATA / "iperf3-refused.json").read_text(), where="flows[0] iperf3 client")
    assert str(err.value) == "flows[0] iperf3 client: iperf3 reported: unable to connect to server: Connection refused"
    with pytest.raises(ToolOutputError, match="not iperf3 JSON output: iperf3: error - bad option"):
        parse_iperf3("iperf3: error - bad option\nUsage: ...")
    with pytest.raises(ToolOutputError, match="no end.streams"):
        parse_iperf3('{"start": {}, "intervals": [], "end": {}}')


def test_ss_tin_cubic_samples():
    samples = [parse_ss(chunk) for chunk in _samples("ss-tin-cubic.txt")]
    # Six samples during the 3 s test (control + data connection), two after it ended (none).
    assert [len(s) for s in samples] == [2] * 6 + [0] * 2
    control, data = samples[0]
    assert control.cc == "bbr" and control.bytes_acked == 186  # iperf3's control connection
    assert data.cc == "cubic" and data.local_port == 48530
    assert data.srtt_ms == pytest.approx(3.962) and data.cwnd == 16
    assert data.pacing_rate_bps == 56127640 and data.delivery_rate_bps == 19144464
    assert data.retrans_total == 0
    later = samples[3][1]
    assert later.srtt_ms == pytest.approx(34.209) and later.cwnd == 72 and later.retrans_total == 2
    # sRTT grows as the tbf queue fills: 4 ms, then 26-43 ms.
    assert [round(s[1].srtt_ms) for s in samples[:6]] == [4, 26, 36, 34, 36, 43]


def test_ss_tine_shows_the_negotiated_ecn():
    control, data = parse_ss((DATA / "ss-tine-cubic-ecn.txt").read_text())
    assert control.cc == "bbr" and control.ecn and data.cc == "cubic" and data.ecn
    assert data.local_port == 37030 and data.cwnd == 2895 and data.srtt_ms == pytest.approx(0.253)


def test_ss_tin_bbr_sample_and_rates():
    sockets = parse_ss(_samples("ss-tin-bbr.txt")[1])
    data = max(sockets, key=lambda s: s.bytes_acked)
    assert data.cc == "bbr" and "bbr" in data.fields
    assert parse_rate_bps("46.8Mbps") == pytest.approx(46.8e6)
    assert parse_rate_bps("980kbps") == pytest.approx(980e3)
    assert math.isnan(parse_rate_bps("fast"))


# --- preflight ---------------------------------------------------------------------------------


def _config(**flow):
    scenario = {
        "duration": "2s",
        "bottleneck": {"rate": "20Mbit", "qdisc": "bfifo"},
        "flows": [{"cc": "cubic", "rtt": "20ms", **flow}],
    }
    return coerce_scenario(scenario).resolve()


@pytest.mark.parametrize(
    ("flow", "message"),
    [
        (
            {"cc": "prague"},
            "flows[0].cc: 'prague' is not in this kernel's tcp_available_congestion_control (reno, cubic, bbr)",
        ),
        ({"cc": "bbr2"}, "flows[0].cc: 'bbr2' is not in this kernel's"),
        (
            {"init_cwnd": 4},
            "flows[0].init_cwnd: 4 is not supported by the emulator; the real hosts keep the kernel default 10",
        ),
        ({"delayed_ack": False}, "flows[0].delayed_ack: False is not supported"),
        ({"cc_params": {"beta": 512}}, "flows[0].cc_params: {'beta': 512} cannot be set per flow on a real kernel"),
    ],
)
def test_check_config_refuses_in_one_line(flow, message):
    with pytest.raises(EmulationRefused) as err:
        check_config(_config(**flow), ccs=["reno", "cubic", "bbr"])
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_check_config_refuses_accecn_and_web_sources():
    with pytest.raises(EmulationRefused, match=r"^flows\[0\]\.ecn: net.ipv4.tcp_ecn=3 is refused by this kernel"):
        check_config(_config(ecn="accecn", receiver_ecn="accecn"), ccs=["cubic"])
    web = coerce_scenario(
        {
            "duration": "2s",
            "bottleneck": {"rate": "20Mbit", "qdisc": "bfifo"},
            "sources": [{"kind": "web", "rate": 5.0, "rtt": "20ms"}],
        }  # fmt: skip
    ).resolve()
    with pytest.raises(EmulationRefused, match=r"^sources\[0\]\.kind: 'web' is not supported by the emulator"):
        check_config(web, ccs=["cubic"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"delay_node_timer_latency": "75us"}, "delay_node_timer_latency: 75us is not supported by the emulator"),
        ({"bottleneck": {"rate": "20Mbit", "qdisc": "bfifo", "timer_latency": "5us"}},
         "bottleneck.timer_latency: 5us is not supported by the emulator"),
    ],
)  # fmt: skip
def test_check_config_refuses_a_modelled_timer_lateness(extra, message):
    scenario = {"duration": "2s", "bottleneck": {"rate": "20Mbit", "qdisc": "bfifo"},
                "flows": [{"cc": "cubic", "rtt": "20ms"}], **extra}  # fmt: skip
    with pytest.raises(EmulationRefused, match="^" + re.escape(message)):
        check_config(coerce_scenario(scenario).resolve(), ccs=["cubic"])


def test_kernel_sender_notes_name_a_sender_without_gso_or_deferral():
    assert kernel_sender_notes(_config(tso=True, tso_defer=True)) == []
    (note,) = kernel_sender_notes(_config(tso=True))
    assert note.startswith("flows[0]: the simulated sender has tso_defer = false, the kernel's has GSO")
    (note,) = kernel_sender_notes(_config())  # the engine's defaults: GSO on, deferral off
    assert note.startswith("flows[0]: the simulated sender has tso_defer = false,")
    (note,) = kernel_sender_notes(_config(tso=False, tso_defer=True))
    assert note.startswith("flows[0]: the simulated sender has tso = false,")
    (note,) = kernel_sender_notes(_config(tso=False))
    assert "tso = false and tso_defer = false" in note


def test_the_differential_scenarios_simulate_the_kernels_sender():
    """`examples/emulator/` and the differential study compare the engine with the kernel,
    whose TCP always has GSO and TSO deferral: no simulated sender there may lack them."""
    from l4slab.scenario import load_scenario
    from l4slab.study.spec import load_study

    examples = sorted((Path(__file__).resolve().parents[2] / "examples" / "emulator").glob("*.toml"))
    assert len(examples) >= 10
    for path in examples:
        assert kernel_sender_notes(load_scenario(path).resolve()) == [], path.name
    for point in load_study("differential").points:
        assert kernel_sender_notes(point.config) == [], point.config.get("name")


def test_check_config_accepts_the_differential_flows():
    for flow in ({}, {"cc": "reno"}, {"cc": "bbr"}, {"ecn": "classic", "receiver_ecn": "classic"}):
        check_config(_config(**flow), ccs=["reno", "cubic", "bbr"])


def test_binary_discovery_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("L4SLAB_EMU", str(tmp_path / "missing"))
    with pytest.raises(EmulationRefused, match=r"^L4SLAB_EMU: .*missing is not an executable file$"):
        find_binary()


def test_cli_refuses_before_anything_starts(tmp_path, capsys, monkeypatch):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'duration = "2s"\n[bottleneck]\nrate = "20Mbit"\nqdisc = "bfifo"\n[[flows]]\ncc = "prague"\nrtt = "20ms"\n'
    )
    monkeypatch.setenv("L4SLAB_EMU", str(tmp_path / "missing"))
    assert main(["emulate", str(scenario), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("l4slab: error: ")
    assert not (tmp_path / "out").exists()
    assert main(["run", str(scenario), "--backend", "emulate", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith("l4slab: error: L4SLAB_EMU: ")
    assert not (tmp_path / "out").exists()
    assert main(["compare", str(scenario), "--trials", "0"]) == 2
    assert "--trials: 0 is not in 1..100" in capsys.readouterr().err


# --- merge into the run schema ------------------------------------------------------------------


def test_spread_splits_interval_bytes_over_bins():
    out = _spread([(0.0, 1.0, 1000), (1.0, 1.5, 500)], 0.25, 0.5, 4)
    assert list(out) == [250.0, 500.0, 500.0, 250.0]
    assert out.sum() == 1500


def _emulated_result():
    """The binary's results are the engine's RunResults (protocol), so an engine run of the
    same config stands for emu_results.json; the flow's numbers come from the captured tools."""
    scenario = coerce_scenario(
        {"name": "merge", "duration": "3s", "bin": "500ms", "start_jitter": "0s",
         "bottleneck": {"rate": "20Mbit", "qdisc": "bfifo limit 2bdp"}, "flows": [{"cc": "cubic", "rtt": "20ms"}]}
    )  # fmt: skip
    config = scenario.resolve()
    raw, _ = engine.simulate(config)
    client = parse_iperf3((DATA / "iperf3-cubic-client.json").read_text())
    server = parse_iperf3((DATA / "iperf3-cubic-server.json").read_text())
    samples = [(k, parse_ss(chunk)) for k, chunk in enumerate(_samples("ss-tin-cubic.txt"))]
    merged = merge(raw, config, clients={0: client}, servers={0: server}, launched_s={0: 0.0}, ss_samples={0: samples})
    meta = {"departure_error_ns": {"p50": 12_000, "p99": 48_000, "max": 210_000}, "cpu_busy_fraction": 0.31,
            "packets_forwarded": 9000, "kept_up": True, "kernel": "6.18.44"}  # fmt: skip
    return (
        EmuRunResult(scenario=scenario, config=config, raw=merged, wall_s=5.0, engine_version="l4slab-emu", meta=meta),
        client,
        server,
    )


def test_merge_takes_the_flow_numbers_from_the_real_stack(tmp_path):
    result, client, server = _emulated_result()
    flow = result.summary["flows"][0]
    # Goodput: the receiver's bytes inside the 3 s window over the window (the engine's definition).
    in_window = sum(n * max(0.0, min(b, 3.0) - a) / (b - a) for a, b, n, _, _ in server.intervals)
    assert flow["goodput_mbps"] == pytest.approx(in_window * 8 / 3.0 / 1e6)
    assert flow["mean_srtt_ms"] == pytest.approx(sum(r for *_, r, _ in client.intervals) / 3)
    assert flow["queuing_delay_ms"] == pytest.approx(flow["mean_srtt_ms"] - 20.0)
    assert flow["retransmits"] == 3 and flow["final_cwnd"] == 84 and flow["ecn_mode"] == "off"
    series = result.flow_series
    assert list(series["srtt_ms"][:6]) == pytest.approx([3.962, 25.807, 35.917, 34.209, 36.292, 42.558])
    assert series["delivery_rate_mbps"].iloc[0] == pytest.approx(19.144464)
    assert int(series["retransmits"].sum()) == 2  # ss's retrans total reached 2
    assert series["goodput_mbps"].sum() * 0.5 / 8 * 1e6 == pytest.approx(
        sum(n for a, b, n, _, _ in server.intervals if a < 3.0) + 0, rel=0.02
    )
    emulator = result.summary["emulator"]
    assert result.summary["backend"] == "emulate"
    assert emulator["departure_error_p99_us"] == 48.0 and emulator["cpu_headroom"] == pytest.approx(0.69)

    out = result.write(tmp_path / "run")
    for name in (
        "summary.json",
        "scenario.json",
        "flows.parquet",
        "flow_series.parquet",
        "bottleneck_series.parquet",
        "emu_meta.json",
    ):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["emulator"]["kept_up"] is True
    assert os.stat(out / "summary.json").st_mtime_ns >= os.stat(out / "emu_meta.json").st_mtime_ns
    flows = pd.read_parquet(out / "flows.parquet")
    assert flows["goodput_mbps"].iloc[0] == pytest.approx(flow["goodput_mbps"])


def test_rwnd_and_sndbuf_limited_time_is_read_from_the_data_connection():
    # Two real samples of kernel BBR over the emulated dualpi2 (50 Mbit/s, 30 ms): STARTUP
    # before its first loss, and 308 ms in, after the loss froze snd_una and the sender sat
    # at snd_una + snd_wnd for 124 ms (tcpi_rwnd_limited). The control connection (port
    # 47501) reports no such counter.
    samples = [(k, parse_ss(chunk)) for k, chunk in enumerate(_samples("ss-tin-bbr-rwnd-limited.txt"))]
    client = dataclasses.replace(parse_iperf3((DATA / "iperf3-cubic-client.json").read_text()), local_port=56111)
    out = limited_ms({0: samples}, {0: client}, 2)
    assert out == {"rwnd": [124.0, None], "sndbuf": [0.0, None]}
    summary = emulator_summary({"limited_ms": out})
    assert summary["rwnd_limited_ms"] == [124.0, None] and summary["sndbuf_limited_ms"] == [0.0, None]
    client = dataclasses.replace(client, local_port=47501)  # the control connection: never limited
    assert limited_ms({0: samples}, {0: client}, 1)["rwnd"] == [0.0]


def test_emulated_run_is_printed_with_the_emulator_error(capsys):
    from l4slab.cli.runtable import print_result

    result, _, _ = _emulated_result()
    print_result(result, None)
    out = capsys.readouterr().out
    assert "emulator: departure error P50/P99/max 12.0/48.0/210.0 µs" in out
    assert "kept up: yes" in out


# --- compare verdicts ------------------------------------------------------------------------------


def _summary(goodput, srtt, sojourn, drops, marks):
    return {"flows": [{"id": 0, "kind": "tcp", "goodput_mbps": goodput, "mean_srtt_ms": srtt}],
            "bottleneck": {"sojourn_ms": {"mean": sojourn}, "qdisc": {"drops": drops, "marks": marks}}}  # fmt: skip


def test_verdicts_apply_the_throughput_and_relative_tolerances():
    emu = [_summary(g, 40.0, 10.0, 100, 0) for g in (17.0, 18.0, 19.0, 18.0, 18.0)]
    sd = pd.Series([17.0, 18.0, 19.0, 18.0, 18.0]).std()
    rows = {r.metric: r for r in verdicts([_summary(20.9, 45.9, 11.4, 119, 0)], emu)}
    assert rows["throughput_mbps"].tolerance == 3.0 > 2 * sd  # the 3 Mbit/s floor
    assert rows["throughput_mbps"].verdict == WITHIN  # 2.9 from the mean
    assert rows["mean_srtt_ms"].verdict == WITHIN  # 14.75 % above
    assert rows["mean_sojourn_ms"].verdict == WITHIN
    assert rows["drops"].verdict == WITHIN and rows["marks"].verdict == WITHIN  # 19 %; 0 and 0
    rows = {r.metric: r for r in verdicts([_summary(21.1, 46.1, 8.4, 121, 3)], emu)}
    assert [rows[m].verdict for m in ("throughput_mbps", "mean_srtt_ms", "mean_sojourn_ms", "drops", "marks")] == [
        OUTSIDE
    ] * 5
    wide = [_summary(g, 40.0, 10.0, 0, 0) for g in (10.0, 14.0, 18.0, 22.0, 26.0)]
    row = verdicts([_summary(27.0, 40.0, 10.0, 0, 0)], wide)[0]
    assert row.tolerance == pytest.approx(2 * pd.Series([10.0, 14.0, 18.0, 22.0, 26.0]).std())
    assert row.verdict == WITHIN and row.trials == 5


def test_aligned_config_starts_the_simulated_data_where_the_emulated_data_started():
    """iperf3 sends its first bulk data 3-5 RTTs after launch; `compare` starts each
    simulated TCP flow one base RTT (the engine's SYN/SYN-ACK) before the measured data
    start, jitter off. The engine's first goodput then appears within one RTT after the
    measured start, where the unaligned run had it in the first 50 ms."""
    from l4slab.emulate.compare import aligned_config

    scenario = coerce_scenario(
        'name = "al"\nduration = "1s"\nbin = "10ms"\n[bottleneck]\nrate = "20Mbit"\nqdisc = "bfifo limit 2bdp"\n'
        '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n[[flows]]\nkind = "udp"\nrate = "1Mbit"\nrtt = "20ms"\n'
        'start = "100ms"\n'
    )
    config = scenario.resolve()
    assert config["start_jitter_ns"] > 0
    aligned = aligned_config(config, [300_000_000, 123_000_000])
    assert aligned["start_jitter_ns"] == 0
    assert aligned["flows"][0]["start_ns"] == 280_000_000  # 300 ms - one 20 ms RTT
    assert aligned["flows"][1]["start_ns"] == 100_000_000  # UDP: the scenario's start, no jitter
    assert config["flows"][0]["start_ns"] == 0  # the input is not changed
    assert aligned_config(config, [None])["flows"][0]["start_ns"] == 0  # nothing measured: unchanged
    assert aligned_config(config, [])["flows"][0]["start_ns"] == 0
    assert aligned_config(config, [10_000_000])["flows"][0]["start_ns"] == 0  # never before t0

    def first_goodput_s(cfg) -> float:
        raw, _ = engine.simulate(cfg)
        goodput = raw["flow_series"][0]["goodput_mbps"]
        return next(k for k, g in enumerate(goodput) if g and g > 0) * cfg["bin_ns"] / 1e9

    # Data reaches the receiver one one-way delay (10 ms) after it left: bin [300, 310) ms
    # or the next (the bin holds delivery times); unaligned, within the first 50 ms.
    assert 0.30 <= first_goodput_s(aligned) <= 0.32
    assert first_goodput_s(config) < 0.05


# --- the study store's backend key ---------------------------------------------------------------------


def test_study_backend_runs_are_keyed_apart():
    from l4slab.study.runs import _for_backend
    from l4slab.study.spec import load_study, run_id

    spec = load_study("differential")
    assert len(spec.points) >= 8 and spec.trials == 5
    emulated = _for_backend(spec, "emulate")
    sim_ids = {r.id for r in spec.runs}
    emu_ids = {r.id for r in emulated.runs}
    assert len(emu_ids) == len(sim_ids) and not sim_ids & emu_ids
    assert run_id(spec.config(spec.runs[0]), spec.model, "sim") == spec.runs[0].id
    assert run_id(spec.config(spec.runs[0]), spec.model, "emulate") == emulated.runs[0].id
    ccs = {flow["cc"] for point in spec.points for flow in point.config["flows"]}
    kinds = {point.config["bottleneck"]["qdisc"]["kind"] for point in spec.points}
    assert ccs == {"cubic", "reno", "bbr"} and kinds == {"bfifo", "pie", "codel", "fq_codel", "dualpi2"}
    for point in spec.points:
        check_config(point.config, ccs=["reno", "cubic", "bbr"])


def test_study_run_emulate_refuses_other_executors(tmp_path, capsys):
    assert (
        main(
            [
                "study",
                "run",
                "differential",
                "--out",
                str(tmp_path / "d"),
                "--backend",
                "emulate",
                "--executor",
                "dask-local",
            ]
        )
        == 2
    )
    assert "--executor: dask-local cannot run emulated runs" in capsys.readouterr().err


def test_the_measured_host_is_read_from_the_programs_outputs_and_given_to_the_simulation():
    """`compare --host measured`: every JSON file a command flow's l4slab-udp-prague wrote
    gives its end's wake-up quantiles (µs); the simulated flow gets them in ns, replacing a
    mean; anything else in the outputs is ignored."""
    q = [float(k) for k in range(101)]
    outputs = {
        1: {
            "out/send.json": json.dumps({"program": "l4slab-udp-prague", "role": "send", "wake_us": {"count": 5, "quantiles": q}}).encode(),
            "out/recv.json": json.dumps({"program": "l4slab-udp-prague", "role": "recv", "wake_us": {"count": 0}}).encode(),
            "out/other.json": json.dumps({"program": "quiche", "role": "send"}).encode(),
            "receiver.log": b"not json",
        },
        0: {"out/broken.json": b"{"},
    }
    hosts = measured_hosts(outputs)
    assert hosts == {1: {"sender_wake": q}}
    config = {"flows": [{"kind": "tcp"}, {"kind": "udp_prague", "sender_wake_latency_ns": 5}]}
    simulated = _with_host(config, hosts)
    assert simulated["flows"][1] == {"kind": "udp_prague", "sender_wake_quantiles_ns": [k * 1000 for k in range(101)]}
    # The sender's timer lateness is a measurement of its own.
    timer = {"program": "l4slab-udp-prague", "role": "send", "timer_late_us": {"count": 3, "quantiles": [1.0, 2.0]}}
    assert measured_hosts({0: {"t.json": json.dumps(timer).encode()}}) == {0: {"sender_timer": [1.0, 2.0]}}
    assert config["flows"][1] == {"kind": "udp_prague", "sender_wake_latency_ns": 5}  # the caller's config untouched
    # The busy time per datagram, and each distribution's tail (its top step's own points):
    # knobs of their own, given to the engine as ``<knob>_tail_quantiles_ns``.
    recv = {"program": "l4slab-udp-prague", "role": "recv",
            "busy_us": {"count": 4, "quantiles": [1.0, 30.0], "tail": [30.0, 40.0]}}  # fmt: skip
    hosts = measured_hosts({0: {"r.json": json.dumps(recv).encode()}})
    assert hosts == {0: {"receiver_busy": [1.0, 30.0], "receiver_busy_tail": [30.0, 40.0]}}
    simulated = _with_host({"flows": [{"kind": "udp_prague", "receiver_busy_time_ns": 7}]}, hosts)
    assert simulated["flows"][0] == {"kind": "udp_prague", "receiver_busy_quantiles_ns": [1000, 30_000],
                                     "receiver_busy_tail_quantiles_ns": [30_000, 40_000]}  # fmt: skip
    # Two trials pooled with equal weight: U(0, 100) and U(100, 200) give U(0, 200).
    pooled = pooled_quantiles([q, [v + 100 for v in q]])
    assert (pooled[0], pooled[50], pooled[100]) == (0.0, 100.0, 200.0)


@pytest.mark.parametrize(
    ("host", "backend", "flows", "message"),
    [
        ("real", "emulate", [], "--host: 'real' is not ideal or measured"),
        ("measured", "kernel", [], "--host: measured needs the emulate backend"),
        ("measured", "emulate", [{"cc": "cubic", "rtt": "20ms"}], "--host: measured needs a udp_prague flow with a command"),
    ],
)
def test_a_measured_host_needs_a_program_that_measures_it(host, backend, flows, message):
    scenario = coerce_scenario({"duration": "2s", "bottleneck": {"rate": "20Mbit", "qdisc": "dualpi2"},
                                "flows": flows or [{"cc": "cubic", "rtt": "20ms"}]})  # fmt: skip
    with pytest.raises(ScenarioError, match="^" + re.escape(message)):
        _check_host(host, backend, scenario)
    _check_host("ideal", backend, scenario)  # the default needs nothing


def test_arrival_lateness_reaches_the_summary_and_the_emulator_line():
    """The emulator's arrival lateness (`emu_meta.json` `arrival_late_ns`, ns) is reported in
    µs; with no stamped packet (read-time stamps) it is absent, not 0."""
    from l4slab.cli.runtable import emulator_line

    meta = {"departure_error_ns": {"p50": 5_000, "p99": 50_000, "max": 900_000}, "kept_up": True,
            "arrival_late_ns": {"stamped": 1000, "unstamped": 2, "p50": 15_000, "p99": 88_000, "max": 1_900_000}}  # fmt: skip
    summary = emulator_summary(meta)
    assert (summary["arrival_late_p50_us"], summary["arrival_late_p99_us"]) == (15.0, 88.0)
    assert summary["arrival_late_max_us"] == 1900.0 and summary["arrivals_unstamped"] == 2
    assert "arrivals read P50/P99/max 15" in emulator_line(summary)
    meta["arrival_late_ns"] = {"stamped": 0, "unstamped": 0, "p50": 0, "p99": 0, "max": 0}
    summary = emulator_summary(meta)
    assert summary["arrival_late_p50_us"] is None and summary["arrivals_unstamped"] is None
    assert "arrivals read" not in emulator_line(summary)
