"""Packet capture (``[capture]``): a pcapng that tshark reads as real IPv4/TCP traffic.

The tshark tests run wherever tshark is installed (``.ci/run`` installs Debian's
``tshark``); they are skipped, with the reason, only where it is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from l4slab.errors import ScenarioError
from l4slab.runner import run
from l4slab.scenario import scenario_from_toml

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (apt-get install tshark)")

SCENARIO = """
name = "capture"
duration = "3s"
trace_sojourn = true
[bottleneck]
rate = "20Mbit"
qdisc = "dualpi2"
[[flows]]
cc = "prague"
rtt = "10ms"
[[flows]]
cc = "cubic"
ecn = 1
rtt = "10ms"
[capture]
point = "{point}"
{flow}
start = "1s"
stop = "2s"
"""


def _run(tmp_path: Path, point: str, flow: int | None = None) -> tuple[object, Path]:
    text = SCENARIO.format(point=point, flow="" if flow is None else f"flow = {flow}")
    result = run(scenario_from_toml(text))
    out = tmp_path / point
    result.write(out)
    return result, out / "capture.pcapng"


def _tshark(path: Path, *fields: str, display_filter: str | None = None) -> list[list[str]]:
    cmd = [TSHARK, "-r", str(path), "-T", "fields", "-E", "separator=\t"]
    if display_filter:
        cmd += ["-Y", display_filter]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
    return [line.split("\t") for line in out.stdout.splitlines() if line]


def test_capture_is_written_beside_the_run_and_counted(tmp_path):
    result, path = _run(tmp_path, "bottleneck")
    assert path.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a", "a pcapng section header block"
    info = result.raw["capture"]
    assert info["packets"] > 1000 and info["missed"] == 0
    # Every packet the bottleneck sent in the window, as the sojourn trace lists them.
    trace = result.sojourn
    in_window = trace[(trace["time_s"] >= 1.0) & (trace["time_s"] < 2.0)]
    assert info["packets"] == len(in_window)


@needs_tshark
def test_tshark_reads_the_bottleneck_capture_per_flow_with_ecn_and_no_malformed_packet(tmp_path):
    result, path = _run(tmp_path, "bottleneck")
    rows = _tshark(path, "ip.src", "ip.dsfield.ecn", "frame.len", "frame.comment")
    # Packets per flow = the sojourn trace's packets per flow in the window.
    trace = result.sojourn
    in_window = trace[(trace["time_s"] >= 1.0) & (trace["time_s"] < 2.0)]
    expected = Counter({f"10.1.0.{flow}": n for flow, n in in_window["flow"].value_counts().items()})
    assert Counter(r[0] for r in rows) == expected
    # ECN codepoints: Prague sends ECT(1) (1), ECN-CUBIC ECT(0) (2); CE (3) where marked.
    ecn = {src: Counter(r[1] for r in rows if r[0] == src) for src in expected}
    assert set(ecn["10.1.0.0"]) <= {"1", "3"} and ecn["10.1.0.0"]["1"] > 0
    assert set(ecn["10.1.0.1"]) <= {"2", "3"} and ecn["10.1.0.1"]["2"] > 0
    # Full-size frames are 1514 bytes on the wire, as the qdisc saw them.
    assert Counter(r[2] for r in rows).most_common(1)[0][0] == "1514"
    # The simulator's per-packet sojourn and queue (DualPI2's C/L) ride in the comments.
    assert all("sojourn_us=" in r[3] for r in rows)
    assert {r[3].split("queue=")[1].split()[0] for r in rows} == {"C", "L"}
    assert _tshark(path, "frame.number", display_filter="_ws.malformed || _ws.expert.severity == error") == []


@needs_tshark
def test_tshark_decodes_the_accecn_option_and_ace_field_at_the_prague_sender(tmp_path):
    _, path = _run(tmp_path, "sender", flow=0)
    acks = _tshark(
        path,
        "tcp.options.acc_ecn.ee1b",
        "tcp.options.acc_ecn.eceb",
        "tcp.flags.ae",
        display_filter="ip.src == 10.2.0.0",
    )
    assert len(acks) > 100
    with_option = [a for a in acks if a[0]]
    assert len(with_option) == len(acks), "every ACK carries the AccECN option (tcp_ecn_option = 2)"
    # The E1B counter (ECT(1) bytes received) grows over the window.
    e1b = [int(a[0]) for a in with_option]
    assert e1b[-1] > e1b[0]
    data = _tshark(path, "ip.dsfield.ecn", display_filter="ip.src == 10.1.0.0 && tcp.len > 0")
    assert data and {d[0] for d in data} == {"1"}, "the sender's own data leaves it as ECT(1)"
    assert _tshark(path, "frame.number", display_filter="_ws.malformed") == []


def _expert(path: Path) -> str:
    """The summaries of tshark's expert info (``-z expert``) without the per-frame comments."""
    out = subprocess.run([TSHARK, "-r", str(path), "-q", "-z", "expert"], capture_output=True, text=True, check=True,
                         timeout=120)  # fmt: skip
    return "\n".join(line for line in out.stdout.splitlines() if "Comment" not in line and "flow=" not in line)


#: Expert-info summaries tshark gives only when the sequence space or the timestamps are
#: wrong: a SYN that does not consume a sequence number makes every first segment look like
#: a keep-alive probe (seq = next - 1), an ACK above every segment seen is "unseen".
FALSE_FLAGS = ("keep-alive", "ACKed segment that wasn't captured", "ACKed unseen", "Window is full", "zero window")


@needs_tshark
@pytest.mark.parametrize("point,flow", [("bottleneck", None), ("sender", 0), ("receiver", 1)])
def test_tshark_expert_info_raises_no_false_flag_and_data_echo_timestamps(tmp_path, point, flow):
    """The reference capture at each point (from the start, handshake included): Wireshark's
    TCP analysis finds no keep-alive, no ACK of an unseen segment, no full window, and every
    data segment echoes a timestamp (TSecr = the TSval of the newest ACK its sender had,
    RFC 7323 §4.3), which advances over the run."""
    text = SCENARIO.format(point=point, flow="" if flow is None else f"flow = {flow}").replace('start = "1s"\n', "")
    out = tmp_path / point
    run(scenario_from_toml(text)).write(out)
    path = out / "capture.pcapng"
    expert = _expert(path)
    for flag in FALSE_FLAGS:
        assert flag.lower() not in expert.lower(), f"{flag!r} in tshark's expert info:\n{expert}"
    # The handshake as tshark sees it: SYN and SYN/ACK with MSS, SACK_PERM, TS and WS (10: the
    # shift of a mainline host's 32 MiB tcp_rmem[2], tcp_select_initial_window), and the first
    # data byte one past the ISN (relative sequence 1).
    syns = _tshark(path, "tcp.flags.ack", "tcp.options.mss_val", "tcp.options.wscale.shift", "tcp.options.sack_perm",
                   display_filter="tcp.flags.syn == 1")  # fmt: skip
    assert syns and all(s[1] == "1460" and s[2] == "10" and s[3] for s in syns), syns
    first = _tshark(path, "tcp.stream", "tcp.seq", display_filter="tcp.len > 0")
    firsts = {}
    for stream, seq in first:
        firsts.setdefault(stream, int(seq))
    assert set(firsts.values()) == {1}, firsts
    data = _tshark(
        path, "tcp.stream", "frame.time_relative", "tcp.options.timestamp.tsecr", display_filter="tcp.len > 0"
    )
    assert len(data) > 1000
    assert all(int(d[2]) != 0 for d in data), "a data segment with TSecr = 0"
    for stream in {d[0] for d in data}:
        echoes = [int(d[2]) for d in data if d[0] == stream]
        # The echo follows the ACKs' TSval clock (ms): over the 2-s window, by 2 s less about an RTT.
        assert 1950 <= (echoes[-1] - echoes[0]) % 2**32 <= 2000, (stream, echoes[0], echoes[-1])


LOSSY = """
name = "lossy"
duration = "4s"
[bottleneck]
rate = "20Mbit"
qdisc = "pfifo limit 20"
[[flows]]
cc = "cubic"
rtt = "20ms"
[[flows]]
cc = "reno"
rtt = "20ms"
start = "0.5s"
[capture]
point = "sender"
flow = 0
"""


@needs_tshark
def test_tshark_sees_losses_at_the_sender_as_retransmissions_not_as_gaps(tmp_path):
    """Tail drops at a 20-packet pfifo: at the sender, which sees every segment it sends,
    tshark finds the fast retransmissions and duplicate ACKs (with SACK blocks inside the
    sequence space) and none of the flags that would mean a broken sequence space."""
    result = run(scenario_from_toml(LOSSY))
    assert int(result.flows.loc[0, "retransmits"]) > 0
    result.write(tmp_path / "lossy")
    path = tmp_path / "lossy" / "capture.pcapng"
    expert = _expert(path)
    assert "fast retransmission" in expert and "Duplicate ACK" in expert, expert
    for flag in (*FALSE_FLAGS, "Previous segment(s) not captured"):
        assert flag.lower() not in expert.lower(), f"{flag!r} in tshark's expert info:\n{expert}"
    sacks = _tshark(path, "tcp.ack", "tcp.options.sack_le", "tcp.options.sack_re", display_filter="tcp.options.sack_le")
    assert sacks
    for ack, left, right in sacks:
        for lo, hi in zip(left.split(","), right.split(","), strict=True):
            assert int(lo) < int(hi), (ack, left, right)


def test_the_capture_file_is_a_writers_file_listed_and_removed_with_the_run(tmp_path):
    """The capture reaches the run directory as any measurement writer's file does: by name
    (``RunResult.files``), listed in ``meta.json``; a run without a capture written into the
    same directory removes it, so the directory describes one run."""
    import json

    text = SCENARIO.format(point="bottleneck", flow="")
    with_capture = run(scenario_from_toml(text))
    assert set(with_capture.files) == {"capture.pcapng"}
    assert with_capture.capture_pcapng == with_capture.files["capture.pcapng"]
    with_capture.write(tmp_path)
    assert json.loads((tmp_path / "meta.json").read_text())["files"] == ["capture.pcapng"]
    assert (tmp_path / "capture.pcapng").read_bytes() == with_capture.capture_pcapng
    without = run(scenario_from_toml(text.split("[capture]")[0]))
    assert without.files == {} and without.capture_pcapng is None
    without.write(tmp_path)
    assert not (tmp_path / "capture.pcapng").exists()
    assert json.loads((tmp_path / "meta.json").read_text())["files"] == []


def test_capture_errors_name_the_field():
    with pytest.raises(ScenarioError, match=r"capture\.flow: required at point sender"):
        scenario_from_toml(SCENARIO.format(point="sender", flow="")).resolve()
    with pytest.raises(ScenarioError, match=r"capture\.flow: 5 is not a flow"):
        scenario_from_toml(SCENARIO.format(point="bottleneck", flow="flow = 5")).resolve()
    with pytest.raises(ScenarioError, match=r"capture\.point"):
        scenario_from_toml(SCENARIO.format(point="router", flow="")).resolve()
