"""The kernel backend's packet capture (``[capture]``): ``tcpdump`` in the guest, the file as
the engine writes its own (``python/l4slab/kernel/capture.py``).

Without a guest: the script's ``tcpdump`` line per capture point, and the reading of a
synthetic pcap (the window on the probe's clock, ``max_packets`` and the missed count, the
refusals). With one: Prague alone in DualPI2 at 100 Mbit/s, 10 ms, 3 s, captured at the
bottleneck's egress and at the sender, each file against the qdisc's own counters and the
engine's capture of the same scenario.
"""

from __future__ import annotations

import struct
import subprocess
from collections import Counter
from pathlib import Path

import l4slab
import pytest
from conftest import requires_engine
from l4slab.kernel.capture import CaptureError, read_capture
from l4slab.kernel.run import resolve
from l4slab.kernel.testbed import plan
from test_kernel_prague import KERNEL, needs_guest

pytestmark = requires_engine

SCENARIO = {
    "name": "capture",
    "duration": "3s",
    "bottleneck": {"rate": "100Mbit", "qdisc": "dualpi2"},
    "flows": [{"cc": "prague", "rtt": "10ms"}],
}


def _testbed(capture):
    scenario, config = resolve({**SCENARIO, "capture": capture})
    return plan(scenario, config)


def test_the_script_runs_tcpdump_where_the_capture_is():
    bottleneck = _testbed({"point": "bottleneck", "start": "1s", "stop": "2500ms"})
    line = next(x for x in bottleneck.script.splitlines() if "tcpdump" in x)
    assert "ip netns exec rtr timeout -s INT 2 tcpdump" in line and "-i bn -Q out" in line
    assert "-s 94 --time-stamp-precision=nano" in line and line.endswith("> $O/capture.err 2>&1 &")
    assert "W=$((T0 + 1000000000 -" in line and line.rstrip(" &").endswith("ip ) > $O/capture.err 2>&1")
    assert (bottleneck.capture.start_ns, bottleneck.capture.stop_ns) == (1_000_000_000, 2_500_000_000)
    assert "wait $CAP; echo $? > $O/capture.rc" in bottleneck.script
    sender = _testbed({"point": "sender", "flow": 0})
    line = next(x for x in sender.script.splitlines() if "tcpdump" in x)
    assert "ip netns exec s0 timeout -s INT 3 tcpdump" in line and "-i eth0 -n" in line and "-Q" not in line
    assert "'ip and host 10.1.0.1 and host 10.2.0.1'" in line
    assert sender.capture.name == "sender-0" and bottleneck.capture.name == "bottleneck-egress"
    assert "tcpdump" not in _testbed(None).script


def _pcap(records, magic=0xA1B23C4D, linktype=1):
    out = struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 94, linktype)
    for ns, frame in records:
        out += struct.pack("<IIII", ns // 10**9, ns % 10**9, len(frame), len(frame) + 100) + frame
    return out


def _run_dir(tmp_path, records, err="0 packets dropped by kernel\n", rc="0", **pcap):
    (tmp_path / "capture.pcap").write_bytes(_pcap(records, **pcap))
    (tmp_path / "capture.err").write_text(f"tcpdump: listening on bn\n{len(records)} packets captured\n{err}")
    (tmp_path / "capture.rc").write_text(rc + "\n")
    # t0 = 5 s of CLOCK_MONOTONIC; CLOCK_REALTIME = MONOTONIC + 1 000 s + 256 ns
    (tmp_path / "capture-clocks.txt").write_text("5000000000 5000005000 1005000005256\n")
    return tmp_path


def _epbs(pcapng):
    """(timestamp ns, captured length, original length) of each Enhanced Packet Block."""
    out, at = [], 0
    while at < len(pcapng):
        kind, length = struct.unpack("<II", pcapng[at : at + 8])
        if kind == 6:
            _iface, high, low, caplen, origlen = struct.unpack("<IIIII", pcapng[at + 8 : at + 28])
            out.append(((high << 32) | low, caplen, origlen))
        at += length
    return out


def test_packets_are_put_on_the_probes_clock_and_bounded(tmp_path):
    """Each packet's time is its CLOCK_REALTIME stamp less the clocks' offset, less t0; the
    window [start, stop) is kept, its first max_packets written and the rest counted."""
    real = 1_000_000_000_256 + 5_000_000_000  # realtime of t0
    frames = [bytes([k]) * 60 for k in range(6)]
    times = [-1, 0, 400_000_000, 999_999_999, 1_000_000_000, 2_000_000_000]  # ns after t0
    run = _run_dir(tmp_path, [(real + t, f) for t, f in zip(times, frames, strict=True)])
    testbed = _testbed({"point": "bottleneck", "stop": "1s"})
    capture = read_capture(run, testbed.capture)
    assert (capture.packets, capture.missed) == (3, 0)
    assert [t for t, _, _ in _epbs(capture.pcapng)] == [0, 400_000_000, 999_999_999]
    assert capture.pcapng[:4] == b"\x0a\x0d\x0d\x0a" and b"bottleneck-egress" in capture.pcapng
    assert [(c, o) for _, c, o in _epbs(capture.pcapng)] == [(60, 160)] * 3
    bounded = read_capture(run, _testbed({"point": "bottleneck", "stop": "1s", "max_packets": 2}).capture)
    assert (bounded.packets, bounded.missed) == (2, 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"err": "3 packets dropped by kernel\n"}, "dropped 3 packets before tcpdump read them"),
        ({"err": ""}, "did not finish its capture"),
        ({"rc": "1"}, "tcpdump failed (exit status 1)"),
        ({"magic": 0xA1B2C3D4}, "is not a nanosecond pcap"),
        ({"linktype": 113}, "link type 113, not Ethernet"),
    ],
)
def test_an_incomplete_or_foreign_capture_is_refused_in_one_line(tmp_path, change, message):
    run = _run_dir(tmp_path, [(10**12, b"x" * 60)], **change)
    with pytest.raises(CaptureError) as info:
        read_capture(run, _testbed({"point": "bottleneck"}).capture)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_truncated_capture_is_refused(tmp_path):
    run = _run_dir(tmp_path, [(10**12, b"x" * 60)])
    data = (run / "capture.pcap").read_bytes()
    (run / "capture.pcap").write_bytes(data[:-10])
    with pytest.raises(CaptureError, match="ends inside a packet"):
        read_capture(run, _testbed({"point": "bottleneck"}).capture)


def _tshark_ecn(path: Path) -> Counter:
    done = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "ip.dsfield.ecn"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return Counter(done.stdout.split())


needs_tshark = pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v tshark"], capture_output=True).returncode != 0,
    reason="tshark is not installed (apt-get install tshark)",
)


@needs_guest
@needs_tshark
def test_the_bottleneck_capture_holds_what_the_qdisc_sent(tmp_path):
    """At the bottleneck's egress, the whole run: every packet the qdisc sent but at most
    one (measured: 23 057 of 23 058, the last one leaving after t0 + 3 s), its CE marks
    exactly (723 of 723, ECN field 3 in the file; the rest ECT(1)), in time order within
    the run. The engine's capture of the same scenario: 22 774 packets and 691 CE, as its
    qdisc counts them; the two within 3 % in packets and 15 % in CE."""
    from l4slab.kernel.run import run_kernel

    scenario = {**SCENARIO, "capture": {"point": "bottleneck"}}
    runs = {"kernel": run_kernel(scenario, kernel=KERNEL), "engine": l4slab.run(scenario)}
    counts = {}
    for name, run in runs.items():
        path = tmp_path / f"{name}.pcapng"
        path.write_bytes(run.capture_pcapng)
        ecn = _tshark_ecn(path)
        bottleneck = run.summary["bottleneck"]
        sent = bottleneck["qdisc"]["sent_packets"]
        assert run.raw["capture"]["missed"] == 0 and run.raw["capture"]["packets"] == sum(ecn.values()), name
        assert sent - 1 <= sum(ecn.values()) <= sent, (name, sum(ecn.values()), sent)
        assert ecn["3"] == bottleneck["marks"] and set(ecn) == {"1", "3"}, (name, ecn, bottleneck["marks"])
        times = [t for t, _, _ in _epbs(run.capture_pcapng)]
        assert times == sorted(times) and 0 <= times[0] and times[-1] < 3 * 10**9, name
        counts[name] = (sum(ecn.values()), ecn["3"])
    (kp, kce), (ep, ece) = counts["kernel"], counts["engine"]
    assert abs(kp - ep) <= 0.03 * kp and abs(kce - ece) <= 0.15 * kce, counts


@needs_guest
def test_the_sender_capture_holds_both_directions_of_its_flow(tmp_path):
    """At the sender's NIC, 1-1.5 s: its data out (from 10.1.0.1) and its ACKs in (from the
    receiver, 10.2.0.1), the window's packets within [1 s, 1.5 s) of t0. Measured: 4 031
    out, 2 013 in (an ACK per two segments: the receiver's delayed ACK); the engine's
    capture of the same window 3 935 and 1 964 (its synthesised addresses are 10.1.0.0 and
    10.2.0.0 for flow 0). Run again, the file is the same, byte for byte (the guest's
    randomness from the seed; ``tcpdump`` draws from it too, so a run with a capture is not
    the same draw as the run without)."""
    from l4slab.kernel.run import run_kernel

    scenario = {**SCENARIO, "capture": {"point": "sender", "flow": 0, "start": "1s", "stop": "1500ms"}}
    run = run_kernel(scenario, kernel=KERNEL)
    data = run.capture_pcapng
    assert b"sender-0" in data
    assert run_kernel(scenario, kernel=KERNEL).capture_pcapng == data  # the same seed and capture: the same file
    packets = _epbs(data)
    times = [t for t, _, _ in packets]
    assert len(packets) > 1000 and 1_000_000_000 <= min(times) and max(times) < 1_500_000_000
    # IPv4 source address at Ethernet 14 + 12: count the sender's packets and the others
    sources = Counter()
    at = 0
    while at < len(data):
        kind, length = struct.unpack("<II", data[at : at + 8])
        if kind == 6:
            sources[data[at + 28 + 26 : at + 28 + 30]] += 1
        at += length
    out, back = sources[bytes([10, 1, 0, 1])], sources[bytes([10, 2, 0, 1])]
    assert out + back == len(packets) and out > 0 and 0.3 <= back / out <= 0.7, (out, back)
