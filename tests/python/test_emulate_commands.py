"""Command flows (the user's own sender and receiver through the emulated bottleneck) and
nothing left behind after a SIGKILL of ``l4slab emulate`` at any moment.

Live: they need root, /dev/net/tun, iperf3 and the emulator (``target/release/l4slab-emu``
or the extension's ``emu_main``), and skip with a one-line reason otherwise. Each runs
under its own namespace prefix and temporary directory; every process it starts carries a
marker in its environment, so what is left is found by the marker, not by a name."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from conftest import emulation_skip_reason
from l4slab.cli import main
from l4slab.emulate.compare import NOT_KEPT_UP

PREFIX = "l4scmd"

#: A paced UDP sender: RATE_PPS datagrams of PAYLOAD bytes with one ECN codepoint for
#: DURATION s; first it asks for SCHED_FIFO 50 and records whether it got it.
SENDER = r'''
import json, os, socket, sys, time
dst, port, duration, out, tos = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], int(sys.argv[5])
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    rt = "granted"
except PermissionError:
    rt = "refused"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
payload, pps = 1000, 800
start = time.monotonic(); n = 0
while True:
    due = start + n / pps
    if due - start >= duration:
        break
    delay = due - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    s.sendto(n.to_bytes(8, "big") + bytes(payload - 8), (dst, port))
    n += 1
json.dump({"packets": n, "payload_bytes": n * payload, "realtime": rt}, open(os.path.join(out, "send.json"), "w"))
'''

#: The receiver: counts datagrams, payload bytes and those that arrived CE (IP_RECVTOS),
#: until 1.5 s without a datagram (or DURATION + 4 s).
RECEIVER = r'''
import json, os, socket, sys, time
bind, port, duration, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind((bind, port))
s.settimeout(0.5)
packets = payload = ce = 0
start = time.monotonic(); last = None
while time.monotonic() - start < duration + 4:
    try:
        data, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(1))
    except socket.timeout:
        if last is not None and time.monotonic() - last > 1.5:
            break
        continue
    last = time.monotonic()
    packets += 1; payload += len(data)
    for level, kind, value in anc:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS and value and value[0] & 3 == 3:
            ce += 1
json.dump({"packets": packets, "payload_bytes": payload, "ce": ce}, open(os.path.join(out, "recv.json"), "w"))
'''




# Not `serial`: nothing here judges timing. The count tests keep a run the host stalled
# (`--accept-late`, recorded and checked by `_late_is_recorded`: a stall delays packets, it
# loses none), the SIGKILL test judges what is left behind, the priority test a refusal. So
# they run beside other tests; the timing tests (test_emulate_live.py) run alone.
_CANNOT_EMULATE = emulation_skip_reason()
pytestmark = [pytest.mark.skipif(_CANNOT_EMULATE is not None, reason=_CANNOT_EMULATE or "")]


def _late_is_recorded(summary: dict, stderr: str) -> None:
    """A count test runs with ``--accept-late``: a run the host stalled (``kept_up`` false,
    a departure more than 5 ms late) is kept for its counts, which no stall changes, but
    never silently: the summary says ``kept_up`` false with the reason, and so does stderr."""
    emulator = summary["emulator"]
    if emulator["kept_up"]:
        assert emulator["accepted_late"] is None and "did not keep up" not in stderr
    else:
        assert emulator["departures_late"] > 0 and emulator["stalls"] > 0, emulator
        assert "did not keep up" in emulator["accepted_late"] and "counts only" in emulator["accepted_late"]
        assert f"warning: {emulator['accepted_late']}" in stderr


def _scenario(tmp_path: Path, duration: str, *, sender_args: str = "", kind: str = "udp", stop: str = "") -> Path:
    """DualPI2 at 20 Mbit/s, 20 ms: a kernel CUBIC flow (iperf3, classic ECN) and a command
    flow (the UDP programs above; its simulated counterpart a 6.4 Mbit/s ECT(1) UDP flow)."""
    (tmp_path / "send.py").write_text(SENDER)
    (tmp_path / "recv.py").write_text(RECEIVER)
    path = tmp_path / "cmd.toml"
    stop = f'stop = "{stop}"\n' if stop else ""
    path.write_text(
        f'name = "cmd"\nduration = "{duration}"\n'
        '[bottleneck]\nrate = "20Mbit"\nqdisc = "dualpi2"\n'
        '[[flows]]\ncc = "cubic"\nrtt = "20ms"\necn = 1\n'
        f'[[flows]]\nkind = "{kind}"\nrate = "6.4Mbit"\nrtt = "20ms"\necn = "ect1"\n{stop}'
        "[flows.command]\n"
        f'sender = "{sys.executable} {tmp_path / "send.py"} {{receiver_addr}} {{port}} {{duration}} {{out_dir}} '
        f'{sender_args or 1}"\n'
        f'receiver = "{sys.executable} {tmp_path / "recv.py"} {{receiver_addr}} {{port}} {{duration}} {{out_dir}}"\n'
    )
    return path


def test_a_command_flow_is_measured_by_the_bottleneck_against_its_own_count(tmp_path, capsys, monkeypatch):
    """An ECT(1) UDP program beside kernel CUBIC through DualPI2: the bottleneck's count of
    the packets, payload and CE marks it delivered to the command flow's receiver equals
    the receiving program's own count within 1 % (both count every datagram of the run: the
    receiver is bound before the sender starts, the tail delivers the backlog); the flow is
    labelled from the codepoint seen (ect1, not rfc3168) and went through the L queue; the
    program could not take a real-time priority; its outputs are kept in the run directory."""
    monkeypatch.setenv("L4SLAB_EMU_PREFIX", PREFIX)
    out = tmp_path / "run"
    # The program stops 2 s before the run does: started late on a loaded host (Python's
    # start-up, the wait for the receiver's socket), it still ends while the emulator forwards.
    status = main(["emulate", str(_scenario(tmp_path, "5s", stop="3s")), "--out", str(out), "--accept-late"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    summary = json.loads((out / "summary.json").read_text())
    _late_is_recorded(summary, captured.err)
    flow = summary["flows"][1]
    assert flow["kind"] == "command" and flow["cc"] == Path(sys.executable).name
    assert flow["ecn_mode"] is None and flow["ecn_codepoint"] == "ect1"
    view = summary["emulator"]["flows"][1]
    sent = json.loads((out / "commands" / "flow-1" / "out" / "send.json").read_text())
    got = json.loads((out / "commands" / "flow-1" / "out" / "recv.json").read_text())
    assert sent["realtime"] == "refused"
    assert view["packets_sent"] == pytest.approx(sent["packets"], rel=0.01)
    assert view["sent_by_codepoint"]["ect1"] == view["packets_sent"]
    assert view["packets_delivered"] == pytest.approx(got["packets"], rel=0.01)
    # IP bytes: 28 bytes of IPv4 + UDP header on each datagram's payload.
    assert view["ip_bytes_delivered"] - 28 * view["packets_delivered"] == pytest.approx(got["payload_bytes"], rel=0.01)
    assert got["ce"] > 0, "DualPI2 marked the L queue beside a CUBIC flow"
    assert view["ce_delivered"] == pytest.approx(got["ce"], rel=0.01)
    classes = {c["class"]: c for c in summary["emulator"]["classes"]}
    assert classes["L"]["packets"] > 0 and classes["C"]["packets"] > 0
    assert classes["L"]["marks"] > 0
    # DualPI2's state as the traffic ended (CUBIC still running), not after the idle tail,
    # where the queues are empty and the PI controller has taken prob to 0. One of them is
    # not: at an instant CUBIC has just backed off, prob alone can be 0 (seen once at load 9).
    extra = summary["bottleneck"]["qdisc"]["extra"]
    assert extra["prob"] > 0 or extra["pkts_in_c"] > 0 or extra["delay_c_ms"] > 0, extra
    # The kernel's CUBIC flow is still labelled from its negotiation (classic ECN).
    assert summary["flows"][0]["ecn_mode"] == "rfc3168"
    assert (out / "commands" / "flow-1" / "receiver.log").is_file()


def _udp_prague_program() -> str | None:
    """The project's UDP-Prague sender/receiver (``l4slab-udp-prague``): ``$L4SLAB_UDP_PRAGUE``,
    the source tree's ``target/release/``, the console script installed beside this Python
    (the extension's ``udp_prague_main``), ``PATH``."""
    env = os.environ.get("L4SLAB_UDP_PRAGUE")
    if env:
        return env if os.access(env, os.X_OK) else None
    repo = Path(__file__).resolve().parents[2]
    target = Path(os.environ.get("CARGO_TARGET_DIR") or repo / "target") / "release" / "l4slab-udp-prague"
    script = Path(sys.executable).parent / "l4slab-udp-prague"
    for candidate in (target, script):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("l4slab-udp-prague")


def _udp_prague_scenario(path: Path, head: str, flows: str) -> Path:
    """``head`` (name, duration, bottleneck), then ``flows`` ending with a ``udp_prague`` entry
    run as a command flow by the project's program (skips if it is not built)."""
    program = _udp_prague_program()
    if program is None:
        pytest.skip("l4slab-udp-prague is not built (cargo build --release -p l4slab-emu)")
    path.write_text(
        head + flows + "[flows.command]\n"
        f'sender = "{program} send --dst {{receiver_addr}} --port {{port}} --duration {{duration}} '
        '--out {out_dir}/send.json"\n'
        f'receiver = "{program} recv --bind {{receiver_addr}} --port {{port}} --duration {{until_end}} '
        '--out {out_dir}/recv.json"\n'
    )
    return path


def test_udp_prague_program_through_dualpi2_is_counted_by_the_bottleneck_as_by_itself(tmp_path, capsys, monkeypatch):
    """The project's UDP-Prague program as a command flow (its simulated counterpart the
    engine's ``udp_prague`` flow) against kernel CUBIC through DualPI2 (20 Mbit/s, 20 ms): the bottleneck's own count of the packets, IP bytes and CE
    marks it delivered to the flow equals the receiving program's count within 1 %, and what
    it read from the sender the sending program's count (the receiver listens until the
    emulator stops forwarding, ``{until_end}``; the sender stops 2 s before the run ends)."""
    path = _udp_prague_scenario(
        tmp_path / "udp-prague.toml",
        'name = "udpprague"\nduration = "8s"\n[bottleneck]\nrate = "20Mbit"\nqdisc = "dualpi2"\n',
        '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n[[flows]]\nkind = "udp_prague"\nrtt = "20ms"\nstop = "6s"\n',
    )
    monkeypatch.setenv("L4SLAB_EMU_PREFIX", PREFIX)
    out = tmp_path / "run"
    status = main(["emulate", str(path), "--out", str(out), "--accept-late"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    summary = json.loads((out / "summary.json").read_text())
    _late_is_recorded(summary, captured.err)
    view = summary["emulator"]["flows"][1]
    sent = json.loads((out / "commands" / "flow-1" / "out" / "send.json").read_text())
    got = json.loads((out / "commands" / "flow-1" / "out" / "recv.json").read_text())
    assert got["packets_received"] > 1000, got  # it ran and got through
    assert view["packets_sent"] == pytest.approx(sent["packets_sent"], rel=0.01)
    assert view["ip_bytes_sent"] == pytest.approx(sent["ip_bytes_sent"], rel=0.01)
    assert view["packets_delivered"] == pytest.approx(got["packets_received"], rel=0.01)
    assert view["ip_bytes_delivered"] == pytest.approx(got["ip_bytes_received"], rel=0.01)
    assert got["ce_packets"] > 0, "DualPI2 marks a scalable sender in its L queue"
    assert view["ce_delivered"] == pytest.approx(got["ce_packets"], rel=0.01)
    assert view["ecn_codepoint"] == "ect1" and summary["flows"][1]["kind"] == "command"
    assert summary["flows"][0]["goodput_mbps"] > 1.0  # CUBIC shared the link
    # Each end measured its host from the kernel's arrival stamps: every datagram read has
    # a wait, the wake-ups are a subset of the reads, the sender's timer fired late by ≥ 0.
    assert got["read_us"]["count"] == got["packets_received"] + got["other_datagrams"], got["read_us"]
    assert sent["read_us"]["count"] >= sent["acks_received"] > 1000, sent["read_us"]
    for end in (got, sent):
        wake, read = end["wake_us"], end["read_us"]
        assert 0 < wake["count"] <= read["count"], (wake, read)
        assert 0 <= wake["p50"] <= wake["p99"] <= wake["max"] + 1, wake
    assert sent["timer_late_us"]["count"] > 0 and sent["timer_late_us"]["mean"] >= 0
    # Busy: one sample per data packet answered (the receiver), per ACK read (the sender, but
    # the last); the tail runs from the 99.9th percentile to the maximum.
    assert got["busy_us"]["count"] == got["packets_received"], got["busy_us"]["count"]
    assert sent["acks_received"] - 1 <= sent["busy_us"]["count"] <= sent["acks_received"], sent["busy_us"]["count"]
    for end in (got, sent):
        for field in ("wake_us", "busy_us"):
            q, tail = end[field]["quantiles"], end[field]["tail"]
            assert len(tail) == len(q) == 1001 and tail[0] == q[999] and tail[-1] == q[-1], field
    # The summary and the printed run carry the program's host.
    hosts = summary["emulator"]["program_hosts"]["1"]
    assert hosts["sender_wake"]["p99"] == sent["wake_us"]["p99"] and hosts["receiver_wake"]["p50"] == got["wake_us"]["p50"]
    assert hosts["sender_timer"]["max"] == sent["timer_late_us"]["max"]
    assert hosts["receiver_busy"]["p50"] == got["busy_us"]["p50"] and "receiver_wake_tail" not in hosts
    assert "flow 1 program's host, latency: sender wake P50/P90/P99/max" in captured.out


def test_a_command_that_fails_fails_the_run_in_one_line(tmp_path, capsys, monkeypatch):
    """A command flow whose program exits non-zero by itself (here it cannot even start)
    is not the flow the scenario describes: the run fails with one line naming the flow,
    the side, the status and the program's last line, and writes no results."""
    monkeypatch.setenv("L4SLAB_EMU_PREFIX", PREFIX)
    path = _scenario(tmp_path, "3s")
    path.write_text(path.read_text().replace(f"sender = \"{sys.executable} ", "sender = \"/nonexistent/l4s-sender "))
    out = tmp_path / "run"
    status = main(["emulate", str(path), "--out", str(out), "--accept-late"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert status != 0
    assert err.startswith("l4slab: error: flows[1].command.sender: exited with status "), err
    assert "/nonexistent/l4s-sender" in err and "No such file or directory" in err, err
    assert not (out / "summary.json").exists()


def test_compare_sets_a_command_flow_against_the_simulated_flow_it_names(tmp_path, capsys, monkeypatch):
    """`l4slab compare` runs the command flow emulated and its entry's own description (a
    6.4 Mbit/s ECT(1) UDP flow; the program sends 6.4 Mbit/s of payload-plus-headers) simulated:
    the flow's goodput is a row with data on both sides, within spread."""
    monkeypatch.setenv("L4SLAB_EMU_PREFIX", PREFIX)
    rows_file = tmp_path / "rows.json"
    argv = ["compare", str(_scenario(tmp_path, "4s", stop="3s")), "--trials", "1", "--json", str(rows_file)]
    status = main([*argv, "--accept-late"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    payload = json.loads(rows_file.read_text())
    rows = {(r["metric"], r["flow"]): r for r in payload["rows"]}
    row = rows[("throughput_mbps", 1)]
    assert row["sim"] is not None and row["emu_mean"] is not None, row
    assert row["verdict"] == "within spread", row
    assert rows[("mean_srtt_ms", 1)]["verdict"] == "no data"  # no tool reports a program's sRTT
    # A trial the host stalled is kept for its counts; its timing rows are refused, said.
    (emulator,) = payload["emulator"]
    sojourn = rows[("mean_sojourn_ms", None)]["verdict"]
    if emulator["kept_up"]:
        assert emulator["accepted_late"] is None and sojourn != NOT_KEPT_UP
    else:
        assert emulator["accepted_late"] and sojourn == NOT_KEPT_UP
        assert "kept although the host stalled the emulator" in captured.out


def _marked(marker: str) -> list[str]:
    """Processes whose environment carries ``marker`` (everything the run started)."""
    found = []
    needle = f"L4SLAB_KILL_MARK={marker}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(f"{Path(f'/proc/{pid}/comm').read_text().strip()}[{pid}]")
        except OSError:
            continue
    return found


def _namespaces(prefix: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir("/run/netns") if n.startswith(f"{prefix}-"))
    except OSError:
        return []


def _tun_devices(prefix: str) -> list[str]:
    """TUN devices in the prefix's namespaces (the root namespace gets none)."""
    found = []
    for name in _namespaces(prefix):
        listing = subprocess.run(
            ["ip", "-n", name, "-o", "link", "show", "type", "tun"], capture_output=True, text=True, timeout=10
        )
        found += [f"{name}:{line.split(':')[1].strip()}" for line in listing.stdout.splitlines() if ":" in line]
    return found


def test_compare_on_the_measured_host_runs_the_model_with_what_the_program_measured(tmp_path, capsys, monkeypatch):
    """`l4slab compare --host measured`: the UDP-Prague program alone through DualPI2 (one
    trial); the simulated seed runs the engine's `udp_prague` flow with the wake-up
    quantiles the program's two ends measured in that trial, and says so."""
    path = _udp_prague_scenario(
        tmp_path / "alone.toml",
        'name = "alone"\nduration = "4s"\n[bottleneck]\nrate = "20Mbit"\nqdisc = "dualpi2"\n',
        '[[flows]]\nkind = "udp_prague"\nrtt = "10ms"\n',
    )
    monkeypatch.setenv("L4SLAB_EMU_PREFIX", PREFIX)
    rows_file, out = tmp_path / "rows.json", tmp_path / "runs"
    argv = ["compare", str(path), "--trials", "1", "--host", "measured", "--json", str(rows_file), "--out", str(out)]
    status = main([*argv, "--accept-late"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert json.loads(rows_file.read_text())["host"] == "measured"
    assert "simulated on the measured host, flow 0" in captured.out and "sender wake P50" in captured.out, captured.out
    trial = out / "emulate" / "trial-0" / "commands" / "flow-0" / "out"
    (simulated,) = json.loads((out / "sim" / "seed-1" / "scenario.json").read_text())["flows"]
    for knob, name, field in (("sender_wake", "send.json", "wake_us"), ("receiver_wake", "recv.json", "wake_us"),
                              ("sender_timer", "send.json", "timer_late_us"), ("sender_busy", "send.json", "busy_us"),
                              ("receiver_busy", "recv.json", "busy_us")):  # fmt: skip
        measured = json.loads((trial / name).read_text())[field]
        assert measured["count"] > 0, measured
        assert simulated[f"{knob}_quantiles_ns"] == [round(v * 1000) for v in measured["quantiles"]], knob
        assert simulated[f"{knob}_tail_quantiles_ns"] == [round(v * 1000) for v in measured["tail"]], knob


def test_sigkill_at_any_moment_leaves_nothing_after_cleanup(tmp_path, monkeypatch, capsys):
    """``l4slab emulate`` (an iperf3 CUBIC flow and a command flow, 2 s) is SIGKILLed at 10
    moments drawn from a seeded generator between its start and its end (about 5 s); after
    ``l4slab cleanup`` there are 0 processes it started (found by a marker in their
    environment: emulator, iperf3 client and server, the commands, ss), 0 namespaces with
    its prefix, 0 TUN devices and 0 work directories in its temporary directory."""
    rng = random.Random(20261128)
    scenario = _scenario(tmp_path, "2s")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    moments = sorted(rng.uniform(0.0, 5.0) for _ in range(10))
    prefix = "l4skill"
    results = []
    for moment in moments:
        marker = uuid.uuid4().hex
        env = {**os.environ, "L4SLAB_EMU_PREFIX": prefix, "TMPDIR": str(tmp), "L4SLAB_KILL_MARK": marker}
        proc = subprocess.Popen(
            [sys.executable, "-m", "l4slab", "emulate", str(scenario)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(moment)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # `l4slab cleanup` (the same function, in this process: a second interpreter per
        # moment would double the test's time), with the run's prefix and temporary directory.
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        assert main(["cleanup", "--prefix", prefix]) == 0
        # The killed run's processes end asynchronously (the emulator on its parent's death,
        # SIGKILLed programs): what cleanup left must be gone within a bounded time.
        deadline = time.monotonic() + 10.0
        while True:
            left = {
                "processes": _marked(marker),
                "namespaces": _namespaces(prefix),
                "tun": _tun_devices(prefix),
                "work_dirs": sorted(p.name for p in tmp.iterdir() if p.name.startswith("l4slab-emu-")),
            }
            if not any(left.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        results.append((round(moment, 2), left))
    leftovers = [(moment, left) for moment, left in results if any(left.values())]
    assert leftovers == [], leftovers


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can take a real-time priority to be refused")
def test_a_command_cannot_take_a_real_time_priority():
    """As root a program can make itself SCHED_FIFO (as udp_prague does, SCHED_RR 99); started
    as a command flow's program (no CAP_SYS_NICE, RLIMIT_RTPRIO 0) it gets EPERM."""
    from l4slab.emulate.commands import drop_realtime

    probe = "import os\ntry:\n os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50)); print('granted')\nexcept PermissionError: print('refused')"
    free = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    bound = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, preexec_fn=drop_realtime
    )
    assert free.stdout.strip() == "granted", free.stderr
    assert bound.stdout.strip() == "refused", bound.stderr
