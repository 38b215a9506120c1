"""One emulated run: the scenario's links and qdiscs in user space (the ``l4slab-emu``
binary), real Linux TCP in network namespaces (iperf3), ``ss -tin`` sampled once per bin,
everything merged into the run schema of ``l4slab run``.

Order of a run (docs/emulator.md):

1. resolve the scenario as ``l4slab run`` does; preflight (:mod:`.preflight`);
2. start ``l4slab-emu run --config scenario.json --out WORK --ready-file WORK/ready.json``
   in its own session; wait (≤ 30 s) for the ready file (namespaces, addresses, ``t0``);
3. in each receiver namespace ``iperf3 -s -1 -J`` (one test, then exit); in each sender
   namespace, at ``t0 + start + jitter``, ``iperf3 -c ADDR -C CC -t T -i BIN -J``; the jitter
   is drawn from the scenario's seed (as the engine's ``start_jitter_ns``);
4. a sampler thread runs ``ss -tine`` in each sender namespace at every bin end;
5. every subprocess has a deadline and is killed (its whole process group) at it, on an
   error and on Ctrl-C/SIGTERM; the binary is then stopped (SIGTERM, then SIGKILL) and
   ``l4slab-emu cleanup --prefix P`` removes anything a dead owner left;
6. the binary's ``emu_results.json`` (bottleneck series, sojourn, qdisc stats, per-flow
   bottleneck counters) and the tools' numbers become the raw results of a
   :class:`EmuRunResult`; a run whose ``emu_meta.json`` says ``kept_up: false`` is refused,
   unless the caller opted in with ``accept_late`` (counts only: see :func:`emulate`).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from ..errors import EngineError
from ..results import BackendRunResult
from ..scenario import Scenario, coerce_scenario
from . import commands as cmdflows
from .parse import Iperf3Result, SsSocket, ToolOutputError, parse_iperf3, parse_ss
from .preflight import EmulationRefused, binary_argv, check_config, check_host, find_iperf3

__all__ = ["emulate", "EmuRunResult", "EmulationRefused", "HostTooSlow", "DEFAULT_PREFIX", "merge"]

#: Namespace prefix of the binary (protocol default ``l4se``; ``$L4SLAB_EMU_PREFIX`` replaces
#: it, e.g. so a test suite can assert that it left none of its own behind).
DEFAULT_PREFIX = "l4se"
#: How long the binary may take to build its namespaces and write the ready file.
READY_TIMEOUT_S = 30.0
#: How long after the end of the traffic a command may run before it is killed (its
#: process group): the emulator forwards for 2 s more, the rest is for writing its output.
COMMAND_GRACE_S = 5.0
#: The emulator forwards this long after the traffic ends (the binary's `emu::TAIL_NS`).
TAIL_S = 2.0
#: How long a command flow's sender waits for its receiver to bind the port.
BIND_WAIT_S = 3.0
#: iperf3's smallest reporting interval (iperf3 3.12 ``src/iperf_api.c``: ``MIN_INTERVAL`` 0.1 s).
IPERF3_MIN_INTERVAL_S = 0.1


class HostTooSlow(EngineError):
    """The emulator did not keep up (``kept_up: false``): the run is not written (exit 1)."""


@dataclass
class EmuRunResult(BackendRunResult):
    """An emulated run: a :class:`~l4slab.results.RunResult` whose summary also says
    ``backend = "emulate"`` and carries the emulator's own error (``emulator``); its
    directory also holds ``emu_meta.json`` and the command flows' outputs."""

    #: Command flows' own outputs (``{out_dir}`` and the logs): flow id -> relative path -> bytes,
    #: written to ``commands/flow-ID/`` in the run directory.
    command_outputs: dict[int, dict[str, bytes]] = field(default_factory=dict)

    backend: ClassVar[str] = "emulate"
    block: ClassVar[str] = "emulator"
    meta_file: ClassVar[str] = "emu_meta.json"

    def backend_block(self) -> dict[str, Any]:
        return emulator_summary(self.meta)

    def write_extra(self, directory: Path) -> None:
        for fid, files in self.command_outputs.items():
            base = directory / "commands" / f"flow-{fid}"
            for rel, data in files.items():
                target = base / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)


def _us(block: Mapping[str, Any] | None, key: str) -> float | None:
    """``block[key]`` (ns, as ``emu_meta.json`` writes times) in µs; None if absent."""
    value = (block or {}).get(key)
    return None if not isinstance(value, (int, float)) or isinstance(value, bool) else float(value) / 1e3


def emulator_summary(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The summary's ``emulator`` block: departure error in µs, CPU headroom, kept_up."""
    error = meta.get("departure_error_ns")
    busy = meta.get("cpu_busy_fraction")
    arrival = meta.get("arrival_late_ns") or {}
    if not arrival.get("stamped"):
        arrival = {}  # no packet had a stamp (`L4SLAB_EMU_READ_STAMPS`): nothing measured

    return {
        "departure_error_p50_us": _us(error, "p50"),
        "departure_error_p99_us": _us(error, "p99"),
        "departure_error_max_us": _us(error, "max"),
        "cpu_busy_fraction": busy,
        "cpu_headroom": None if busy is None else 1.0 - float(busy),
        "packets_forwarded": meta.get("packets_forwarded"),
        "kept_up": meta.get("kept_up"),
        # How late the loop read packets after their TUN's tap stamped them (µs), and how
        # many packets had no stamp: arrivals enter the links at the kernel's stamp, so
        # this is no error of the emulated path (docs/emulator.md, arrival stamps).
        "arrival_late_p50_us": _us(arrival, "p50"),
        "arrival_late_p99_us": _us(arrival, "p99"),
        "arrival_late_max_us": _us(arrival, "max"),
        "arrivals_unstamped": arrival.get("unstamped"),
        # Set only when a run that did not keep up was kept on the caller's opt-in
        # (`accept_late`): the one-line reason, so nobody reads its timing unwarned.
        "accepted_late": meta.get("accepted_late"),
        "departures_late": meta.get("departures_late"),
        # Host stalls (runs of departures later than the bound) and the sum of their
        # worst lateness: how long the emulated link stood still.
        "stalls": meta.get("stalls"),
        "stalled_ms": None if meta.get("stalled_ns") is None else float(meta["stalled_ns"]) / 1e6,
        "late_bound_us": None if meta.get("late_bound_ns") is None else float(meta["late_bound_ns"]) / 1e3,
        # The bottleneck's own view of each flow (any protocol) and of each qdisc class,
        # up to the end of the traffic (docs/emulator.md).
        "flows": meta.get("flows"),
        "classes": meta.get("classes"),
        "realtime": meta.get("realtime"),
        "kernel": meta.get("kernel"),
        # The senders' response time, ACK written -> next data segment read (µs): the
        # sending host's own latency plus the loop's read latency (docs/emulator.md).
        **{f"sender_response_{q}_us": _us(meta.get("sender_response_ns"), q) for q in ("p50", "p90", "p99")},
        # Per flow, ms the sender was limited by the receiver's window / its send buffer
        # (ss: tcpi_rwnd_limited, tcpi_sndbuf_limited); the engine has neither by default.
        "rwnd_limited_ms": (meta.get("limited_ms") or {}).get("rwnd"),
        "sndbuf_limited_ms": (meta.get("limited_ms") or {}).get("sndbuf"),
        # When each flow's first bulk data segment left its sender, s after t0 (iperf3's
        # control exchange comes first): what `compare` aligns the simulated starts to.
        "flow_data_start_s": [
            None if not isinstance(v, (int, float)) or isinstance(v, bool) else float(v) / 1e9
            for v in meta.get("flow_data_start_ns") or []
        ],
        # Per command flow run by l4slab-udp-prague, its measured host: each end's wake-up
        # latency and the sender's timer lateness {p50, p90, p99, max} µs (`compare --host measured`).
        "program_hosts": meta.get("program_hosts"),
    }


def _limited_ms(value: str | None) -> float | None:
    """``124ms(30.7%)`` (ss's ``rwnd_limited:``/``sndbuf_limited:``) -> 124.0."""
    if not value:
        return None
    head = value.partition("ms")[0]
    try:
        return float(head)
    except ValueError:
        return None


def limited_ms(
    ss_samples: Mapping[int, list[tuple[int, list[SsSocket]]]],
    clients: Mapping[int, Iperf3Result],
    n_flows: int,
) -> dict[str, list[float | None]]:
    """Per flow, how long its sender was limited by the receiver's advertised window and by
    its own send buffer, ms: ``tcpi_rwnd_limited`` and ``tcpi_sndbuf_limited`` of the last
    ``ss`` sample of the data connection (cumulative counters, ``tcp.c:tcp_get_info``,
    ``tcp_chrono_start``). The engine's receiver advertises no window limit (unless
    ``rwnd_bytes``), so time here is a mechanism the simulated run does not have."""
    out: dict[str, list[float | None]] = {"rwnd": [None] * n_flows, "sndbuf": [None] * n_flows}
    for fid in range(n_flows):
        client = clients.get(fid)
        port = client.local_port if client is not None else None
        for _, socks in sorted(ss_samples.get(fid, []), key=lambda item: item[0]):
            sock = _data_socket(socks, port)
            if sock is None:
                continue
            for key in ("rwnd", "sndbuf"):
                value = _limited_ms(sock.fields.get(f"{key}_limited"))
                if value is not None:
                    out[key][fid] = max(value, out[key][fid] or 0.0)
                elif out[key][fid] is None:
                    out[key][fid] = 0.0
    return out


# --- merging -------------------------------------------------------------------------------


def _bins(raw: Mapping[str, Any], config: Mapping[str, Any]) -> int:
    times = raw.get("time_s")
    if times:
        return len(times)
    return max(1, math.ceil(config["duration_ns"] / config["bin_ns"]))


def _spread(intervals: list[tuple[float, float, int]], offset_s: float, bin_s: float, n_bins: int) -> np.ndarray:
    """Bytes per bin from (start_s, end_s, bytes) intervals shifted by ``offset_s``,
    each interval's bytes split over the bins it overlaps in proportion."""
    out = np.zeros(n_bins)
    for start, end, nbytes in intervals:
        start, end = start + offset_s, end + offset_s
        if end <= start:
            continue
        first, last = int(start // bin_s), int(end // bin_s)
        for k in range(max(first, 0), min(last, n_bins - 1) + 1):
            overlap = min(end, (k + 1) * bin_s) - max(start, k * bin_s)
            if overlap > 0:
                out[k] += nbytes * overlap / (end - start)
    return out


def _data_socket(samples: list[SsSocket], port: int | None) -> SsSocket | None:
    """The iperf3 data connection among a sample's sockets: by local port when known, else
    the socket with most bytes acked (the control connection carries a few hundred bytes)."""
    if not samples:
        return None
    if port is not None:
        for sock in samples:
            if sock.local_port == port:
                return sock
        return None
    return max(samples, key=lambda s: s.bytes_acked)


def _as_list(value: Any) -> Any:
    """The engine hands its series over as numpy arrays (:mod:`l4slab.engine`): as lists in JSON."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def merge(
    raw: Mapping[str, Any],
    config: Mapping[str, Any],
    *,
    clients: Mapping[int, Iperf3Result],
    servers: Mapping[int, Iperf3Result | None],
    launched_s: Mapping[int, float],
    ss_samples: Mapping[int, list[tuple[int, list[SsSocket]]]],
    commands: Mapping[int, str] | None = None,
    flow_view: list[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The binary's results with each TCP flow's sender-side numbers from the real stack.

    Per flow ``i`` (``launched_s[i]``: the client's start, s after ``t0``):

    * ``goodput_mbps``: payload bytes the receiver got inside the window, from the server's
      per-interval counts (else iperf3's ``sum_received``), over the window as the engine
      divides (``trace/recorder.rs:flow_summary``);
    * ``mean_srtt_ms``: mean of the per-interval ``tcpi_rtt`` iperf3 read in the window
      (one per bin, the engine's "sampled once per bin"); else the ``ss`` samples' mean;
    * ``retransmits`` (iperf3), ``final_cwnd`` and ``ecn_mode`` (``ss``);
    * series: ``goodput_mbps`` per bin, and from ``ss`` ``srtt_ms``, ``cwnd``,
      ``pacing_rate_mbps``, ``delivery_rate_mbps`` (end of bin) and ``retransmits`` per bin.

    A command flow (``commands``: flow id → the program's name) keeps the bottleneck's
    numbers (payload that left the bottleneck as goodput, drops, marks, CE) and is labelled
    ``kind = "command"``, ``cc`` = the program; no endpoint tool reports its sRTT or cwnd
    (null). Its ``ecn_mode`` (a TCP negotiation) is null and ``ecn_codepoint`` is the
    codepoint most of its packets were sent with, from the bottleneck's view (``flow_view``).
    """
    merged = json.loads(json.dumps(raw, default=_as_list))  # a deep copy of plain JSON
    bin_s = config["bin_ns"] / 1e9
    n_bins = _bins(merged, config)
    merged.setdefault("time_s", [k * bin_s for k in range(n_bins)])
    warmup_s = config.get("warmup_ns", 0) / 1e9
    duration_s = config["duration_ns"] / 1e9
    window_s = duration_s - warmup_s
    first_bin = int(round(warmup_s / bin_s))
    flows = merged.setdefault("flows", [])
    series_list = merged.setdefault("flow_series", [])
    while len(series_list) < len(flows):
        series_list.append({})
    views = {int(v["flow"]): v for v in (flow_view or []) if isinstance(v, Mapping) and "flow" in v}
    for index, flow in enumerate(flows):
        fid = flow.get("id", index)
        view = views.get(fid)
        if fid in (commands or {}):
            # Not a TCP negotiation: the codepoint the flow sent is `ecn_codepoint` of the
            # bottleneck's view (`view`), labelled from what was seen.
            flow["ecn_mode"] = None
            flow["ecn_codepoint"] = None if view is None else view.get("ecn_codepoint")
            flow["kind"] = "command"
            flow["cc"] = commands[fid]
            if fid in launched_s:
                flow["start_s"] = launched_s[fid]
            continue
        client = clients.get(fid)
        if client is None:
            continue
        series = series_list[index]
        offset = launched_s.get(fid, 0.0)
        flow["start_s"] = offset
        server = servers.get(fid)
        received = server.intervals if server is not None and server.intervals else []
        per_bin = _spread([(a, b, n) for a, b, n, _, _ in received], offset, bin_s, n_bins)
        if received:
            flow["goodput_mbps"] = float(per_bin[first_bin:].sum()) * 8 / window_s / 1e6
        else:
            flow["goodput_mbps"] = client.bytes_received * 8 / window_s / 1e6
        series["goodput_mbps"] = list(per_bin * 8 / bin_s / 1e6)
        rtts = [rtt for a, b, _, rtt, _ in client.intervals if b + offset > warmup_s and math.isfinite(rtt)]
        samples = sorted(ss_samples.get(fid, []), key=lambda item: item[0])
        chosen = [(k, _data_socket(socks, client.local_port)) for k, socks in samples]
        chosen = [(k, s) for k, s in chosen if s is not None and 0 <= k < n_bins]
        ss_rtts = [s.srtt_ms for k, s in chosen if k >= first_bin and math.isfinite(s.srtt_ms)]
        if rtts:
            mean_srtt = float(np.mean(rtts))
        elif ss_rtts:
            mean_srtt = float(np.mean(ss_rtts))
        else:
            mean_srtt = math.nan
        flow["mean_srtt_ms"] = mean_srtt
        flow["mean_rtt_ms"] = client.mean_rtt_ms
        base = flow.get("base_rtt_ms")
        if base is None:
            base = _base_rtt_ms(config, fid)
            flow["base_rtt_ms"] = base
        flow["queuing_delay_ms"] = mean_srtt - base if base is not None else math.nan
        flow["retransmits"] = client.retransmits
        # Counters of the sender the tools do not report: unknown, not zero.
        for name in ("rto_count", "tlp_count", "recoveries", "mean_pacing_rate_mbps"):
            if name in flow:
                flow[name] = None
        flow["bytes_delivered"] = client.bytes_received
        flow["cc"] = client.cc or flow.get("cc")
        flow["kind"] = "tcp"
        if chosen:
            flow["final_cwnd"] = int(chosen[-1][1].cwnd) if math.isfinite(chosen[-1][1].cwnd) else 0
            flow["ecn_mode"] = "rfc3168" if any(s.ecn for _, s in chosen) else "off"
        elif flow.get("marks"):
            flow["ecn_mode"] = "rfc3168"  # CE needs ECT, which needs negotiated ECN
        else:
            flow["ecn_mode"] = None  # not sampled: unknown
        columns = {
            "srtt_ms": lambda s: s.srtt_ms,
            "cwnd": lambda s: s.cwnd,
            "pacing_rate_mbps": lambda s: s.pacing_rate_bps / 1e6,
            "delivery_rate_mbps": lambda s: s.delivery_rate_bps / 1e6,
        }
        for name, get in columns.items():
            values = [math.nan] * n_bins
            for k, sock in chosen:
                values[k] = get(sock)
            series[name] = values
        retrans = [0] * n_bins
        previous = 0
        for k, sock in chosen:
            retrans[k] = max(0, sock.retrans_total - previous)
            previous = max(previous, sock.retrans_total)
        series["retransmits"] = retrans
        throughput = flow.get("throughput_mbps")
        if throughput:
            flow["goodput_efficiency"] = flow["goodput_mbps"] / throughput
    goodputs = [f.get("goodput_mbps") for f in flows if f.get("goodput_mbps") is not None]
    goodputs = [g for g in goodputs if math.isfinite(g)]
    if goodputs and sum(g * g for g in goodputs) > 0:
        merged["jain_index"] = sum(goodputs) ** 2 / (len(goodputs) * sum(g * g for g in goodputs))
    for name, default in (("seed", config.get("seed", 0)), ("duration_s", duration_s), ("warmup_s", warmup_s)):
        merged.setdefault(name, default)
    merged.setdefault("bin_s", bin_s)
    merged.setdefault("jain_index", math.nan)
    return merged


def _base_rtt_ms(config: Mapping[str, Any], fid: int) -> float | None:
    flows = config.get("flows") or []
    if 0 <= fid < len(flows):
        return flows[fid].get("rtt_ns", 0) / 1e6
    return None


# --- the run ---------------------------------------------------------------------------------


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen
    out: Path
    deadline: float


def _spawn(args: list[str], out: Path, name: str, deadline: float, restricted: bool = False) -> _Proc:
    """Start ``args`` in its own session (killed with its group); ``restricted``: a user's
    command, which may not take a real-time priority (:func:`.commands.drop_realtime`)."""
    with open(out, "wb") as handle:
        try:
            popen = subprocess.Popen(
                args,
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=cmdflows.drop_realtime if restricted else None,
            )
        except OSError as err:
            raise EngineError(f"{name}: cannot start {args[0]}: {err.strerror}") from None
    return _Proc(name, popen, out, deadline)


def _program_hosts(outputs: Mapping[int, Mapping[str, bytes]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per command flow (by index, as a string), each latency l4slab-udp-prague measured
    (``sender_wake``, ``receiver_wake``, ``sender_timer``) as P50/P90/P99/max µs, from the
    quantiles it wrote (:func:`.compare.measured_hosts`)."""
    from .hosts import measured_hosts, quantile

    hosts: dict[str, dict[str, dict[str, float]]] = {}
    for flow, measured in measured_hosts(outputs).items():
        for knob, q in measured.items():
            if knob.endswith("_tail"):
                continue
            hosts.setdefault(str(flow), {})[knob] = {f"p{round(p * 100)}": quantile(q, p) for p in (0.5, 0.9, 0.99)}
            hosts[str(flow)][knob]["max"] = q[-1]
    return hosts


def _check_commands(procs: list[_Proc], overstayed: set[str], say: Any) -> None:
    """A command flow's program that exited by itself with a non-zero status (it could not
    start, or failed, or died of a signal other than the run's own SIGTERM/SIGKILL at its end)
    fails the run with one line: what the bottleneck saw of it is not the flow the scenario
    describes. Senders are judged first (a receiver often fails because its sender did). One
    that had to be stopped at its deadline is said."""
    commands = [p for p in procs if p.name.startswith("command ")]
    for proc in sorted(commands, key=lambda p: p.name.split()[1] != "sender"):
        role, flow = proc.name.split()[1:3]
        where = f"flows[{flow}].command.{role}"
        if proc.name in overstayed:
            say(f"{where}: still running at its deadline; stopped (its own output may be missing)")
            continue
        code = proc.popen.returncode
        if code and -code not in (signal.SIGTERM, signal.SIGKILL):
            lines = proc.out.read_text(errors="replace").strip().splitlines() if proc.out.exists() else []
            last = f": {lines[-1].strip()[:200]}" if lines else ""
            raise EngineError(f"{where}: exited with status {code}{last}")


def _program_name(template: str) -> str:
    """The label of a command flow: its sender program's file name."""
    words = shlex.split(template)
    return Path(words[0]).name if words else "command"


def _wait_port(namespace: str, port: int, timeout_s: float, *, udp: bool) -> bool:
    """Whether a socket got bound to ``port`` in ``namespace`` within ``timeout_s``: a TCP
    listener, or with ``udp`` a UDP socket too (``ss -l``, polled every 20 ms)."""
    flags = "-Hlntu" if udp else "-Hltn"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, "ss", flags, f"sport = :{port}"],
            capture_output=True,
            text=True,
            timeout=2.0,
            check=False,
        )
        if done.stdout.strip():
            return True
        time.sleep(0.02)
    return False


def _wait_bound(namespace: str, port: int, timeout_s: float = 3.0) -> None:
    """Until a socket is bound to ``port`` (UDP or a TCP listener) in ``namespace``, at most
    ``timeout_s``: a receiver that is not yet bound would make its kernel discard the first
    packets the bottleneck counted as delivered. A receiver on another port: wait, go on."""
    _wait_port(namespace, port, timeout_s, udp=True)


def _kill(proc: subprocess.Popen, grace_s: float = 2.0) -> None:
    """SIGTERM the process group, then SIGKILL after ``grace_s``; always reaps."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _jitters(config: Mapping[str, Any]) -> list[float]:
    """Each flow's start offset in [0, start_jitter] s, drawn from the scenario's seed (the
    emulated run's counterpart of the engine's ``Stream::StartJitter``; not the same numbers)."""
    jitter_s = config.get("start_jitter_ns", 0) / 1e9
    rng = np.random.default_rng([int(config.get("seed", 0)), 0x656D75])
    return [float(rng.uniform(0.0, jitter_s)) if jitter_s > 0 else 0.0 for _ in config.get("flows") or []]


class _Sampler(threading.Thread):
    """``ss -tine`` in each sender namespace (``-e``: iproute2 6.1 prints the negotiated
    options ``ts sack ecn`` only with it) at every bin end (bin k ends at t0 + (k+1)·bin);
    a tick that comes late is taken at once, ticks that were missed entirely are skipped."""

    def __init__(self, t0: float, bin_s: float, n_bins: int, targets: Mapping[int, tuple[str, str]]):
        super().__init__(name="l4slab-ss-sampler", daemon=True)
        self.t0, self.bin_s, self.n_bins, self.targets = t0, max(bin_s, 0.01), n_bins, targets
        self.stop_event = threading.Event()
        self.samples: dict[int, list[tuple[int, list[SsSocket]]]] = {fid: [] for fid in targets}

    def run(self) -> None:
        k = 0
        while k < self.n_bins and not self.stop_event.is_set():
            due = self.t0 + (k + 1) * self.bin_s
            if self.stop_event.wait(max(0.0, due - time.time())):
                return
            for fid, (namespace, peer) in self.targets.items():
                try:
                    done = subprocess.run(
                        ["ip", "netns", "exec", namespace, "ss", "-tine", "dst", peer],
                        capture_output=True,
                        text=True,
                        timeout=2.0,
                        check=False,
                    )
                except (OSError, subprocess.TimeoutExpired):
                    continue
                if done.returncode == 0:
                    self.samples[fid].append((k, parse_ss(done.stdout)))
            k = max(k + 1, int((time.time() - self.t0) / self.bin_s))


def _wait_ready(binary: subprocess.Popen, ready: Path, stderr_path: Path, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready.exists():
            try:
                return json.loads(ready.read_text())
            except ValueError:
                pass  # written atomically by the protocol; a partial read retries
        code = binary.poll()
        if code is not None:
            _raise_binary(code, stderr_path, "before it was ready")
        time.sleep(0.02)
    raise EngineError(f"l4slab-emu: no ready file after {timeout_s:g} s ({ready})")


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def _raise_binary(code: int, stderr_path: Path, when: str) -> None:
    line = _last_line(stderr_path) or f"exit status {code}"
    line = line.removeprefix("l4slab-emu: ").removeprefix("error: ")
    if code == 2:
        raise EmulationRefused(f"l4slab-emu: {line}")
    raise EngineError(f"l4slab-emu failed {when}: {line}")


def _wait_listening(namespace: str, port: int, timeout_s: float = 3.0) -> None:
    if not _wait_port(namespace, port, timeout_s, udp=False):
        raise EngineError(f"iperf3 server in {namespace}: not listening on port {port} after {timeout_s:g} s")


def emulate(
    scenario: Any,
    *,
    seed: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    prefix: str | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    log: Callable[[str], None] | None = None,
    accept_late: bool = False,
) -> EmuRunResult:
    """Run ``scenario`` (a path, TOML string, dict or :class:`Scenario`) through the
    emulator with real kernel TCP; return an :class:`EmuRunResult`.

    ``accept_late``: keep a run that did not keep up instead of raising
    :class:`HostTooSlow`, for what a host stall does not change: the counts (packets,
    bytes, codepoints, CE, drops per flow and class at the bottleneck and in the
    programs). Its ``emu_meta.json`` and summary still say ``kept_up: false``, and
    ``accepted_late`` holds the reason line (also passed to ``log``); its timing
    (sojourn, sRTT, rates over time) is not a measurement.

    Raises :class:`EmulationRefused` (one line, exit 2) before anything is created when the
    host or the scenario cannot be emulated, :class:`HostTooSlow` when the emulator reports
    it did not keep up, :class:`~l4slab.errors.EngineError` for a run-time failure."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        raise EmulationRefused(f"seed: {seed!r} is not an integer in 0..2^64-1")
    validated: Scenario = coerce_scenario(scenario, dict(overrides or {}) or None)
    if seed is not None:
        validated = validated.model_copy(update={"seed": seed})
    config = validated.resolve()
    prefix = prefix or os.environ.get("L4SLAB_EMU_PREFIX") or DEFAULT_PREFIX
    commands = cmdflows.command_flows(validated)
    iperf_flows = [
        i for i, flow in enumerate(config["flows"]) if flow.get("kind") == "tcp" and i not in commands
    ]
    check_host(need_iperf3=bool(iperf_flows))
    binary_cmd = binary_argv()
    iperf3 = str(find_iperf3()) if iperf_flows else "iperf3"
    check_config(config, commands=commands)
    say = log or (lambda _message: None)
    # What a dead run left (its emulator, namespaces with their processes, work directories).
    cmdflows.cleanup(binary_cmd, prefix)

    own_work = work_dir is None
    work = cmdflows.work_dir_for() if own_work else Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    config_path = work / "scenario.json"
    config_path.write_text(json.dumps(config))
    ready_path = work / "ready.json"
    ready_path.unlink(missing_ok=True)
    out_dir = work / "out"
    out_dir.mkdir(exist_ok=True)
    stderr_path = work / "l4slab-emu.stderr"

    duration_s = config["duration_ns"] / 1e9
    bin_s = config["bin_ns"] / 1e9
    n_bins = max(1, math.ceil(config["duration_ns"] / config["bin_ns"]))
    jitters = _jitters(config)
    procs: list[_Proc] = []
    sampler: _Sampler | None = None
    binary: subprocess.Popen | None = None
    previous_term = None
    started = time.monotonic()

    def on_term(_signum, _frame):  # SIGTERM ends the run like Ctrl-C: everything is cleaned
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        previous_term = signal.signal(signal.SIGTERM, on_term)
    try:
        with open(stderr_path, "wb") as err_handle:
            binary = subprocess.Popen(
                [
                    *binary_cmd,
                    "run",
                    "--config",
                    str(config_path),
                    "--out",
                    str(out_dir),
                    "--ready-file",
                    str(ready_path),
                    "--prefix",
                    prefix,
                    *(["--command-flows", ",".join(str(i) for i in sorted(commands))] if commands else []),
                ],
                stdout=subprocess.DEVNULL,
                stderr=err_handle,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        ready = _wait_ready(binary, ready_path, stderr_path, READY_TIMEOUT_S)
        t0 = ready["t0_unix_ns"] / 1e9
        endpoints = {int(entry["flow"]): entry for entry in ready.get("flows", [])}
        tcp_flows = iperf_flows
        missing = [i for i in [*tcp_flows, *commands] if i not in endpoints]
        if missing:
            raise EngineError(f"l4slab-emu: ready file has no namespaces for flows {missing}")
        say(f"emulator ready: {len(endpoints)} flow namespace pairs, t0 = {t0:.3f}")

        # Servers first (one test each), listening before any client starts.
        hard_end = t0 + duration_s + 25.0
        for i in tcp_flows:
            ep = endpoints[i]
            args = ["ip", "netns", "exec", ep["receiver_ns"], iperf3, "-s", "-1", "-J"]
            args += ["-B", ep["receiver_addr"], "-p", str(ep.get("port", 5201))]
            args += ["-i", f"{max(bin_s, IPERF3_MIN_INTERVAL_S):g}"]
            procs.append(_spawn(args, work / f"server-{i}.json", f"server {i}", hard_end))
        for i in tcp_flows:
            _wait_listening(endpoints[i]["receiver_ns"], int(endpoints[i].get("port", 5201)))
        # Command flows' receivers, each in its receiver namespace, before any sender.
        command_fields: dict[int, dict[str, Any]] = {}
        for i in sorted(commands):
            ep, flow = endpoints[i], config["flows"][i]
            start_s = flow.get("start_ns", 0) / 1e9 + jitters[i]
            stop_s = min(duration_s, (flow.get("stop_ns") or config["duration_ns"]) / 1e9)
            flow_dir = work / "commands" / f"flow-{i}"
            (flow_dir / "out").mkdir(parents=True, exist_ok=True)
            command_fields[i] = {
                "sender_addr": ep["sender_addr"],
                "receiver_addr": ep["receiver_addr"],
                "port": int(ep.get("port", 5201)),
                "duration": f"{max(stop_s - start_s, 0.0):g}",
                "out_dir": str(flow_dir / "out"),
                "flow": i,
            }
            if commands[i].receiver:
                until_end = t0 + duration_s + TAIL_S - time.time()
                args = cmdflows.command_words(
                    commands[i].receiver, {**command_fields[i], "until_end": f"{max(until_end, 0.0):.3f}"}
                )
                procs.append(
                    _spawn(
                        ["ip", "netns", "exec", ep["receiver_ns"], *args],
                        flow_dir / "receiver.log",
                        f"command receiver {i}",
                        # the senders may start up to BIND_WAIT_S late (waiting for it)
                        t0 + duration_s + COMMAND_GRACE_S + BIND_WAIT_S,
                        restricted=True,
                    )
                )
        for i in sorted(commands):
            if commands[i].receiver:
                _wait_bound(endpoints[i]["receiver_ns"], int(endpoints[i].get("port", 5201)), BIND_WAIT_S)

        sampler = _Sampler(
            t0, bin_s, n_bins, {i: (endpoints[i]["sender_ns"], endpoints[i]["receiver_addr"]) for i in tcp_flows}
        )
        sampler.start()

        launched: dict[int, float] = {}
        schedule = sorted(
            [*tcp_flows, *commands], key=lambda i: config["flows"][i].get("start_ns", 0) / 1e9 + jitters[i]
        )
        for i in schedule:
            flow, ep = config["flows"][i], endpoints[i]
            start_s = flow.get("start_ns", 0) / 1e9 + jitters[i]
            stop_s = min(duration_s, (flow.get("stop_ns") or config["duration_ns"]) / 1e9)
            if stop_s <= start_s:
                continue
            delay = t0 + start_s - time.time()
            if delay > 0:
                time.sleep(delay)
            launched[i] = time.time() - t0
            if i in commands:
                until_end = t0 + duration_s + TAIL_S - time.time()
                args = cmdflows.command_words(
                    commands[i].sender, {**command_fields[i], "until_end": f"{max(until_end, 0.0):.3f}"}
                )
                flow_dir = work / "commands" / f"flow-{i}"
                procs.append(
                    _spawn(
                        ["ip", "netns", "exec", ep["sender_ns"], *args],
                        flow_dir / "sender.log",
                        f"command sender {i}",
                        max(t0 + duration_s, time.time() + stop_s - start_s) + COMMAND_GRACE_S,
                        restricted=True,
                    )
                )
                say(f"flow {i}: command {args[0]} started at {launched[i]:.3f} s")
                continue
            args = ["ip", "netns", "exec", ep["sender_ns"], iperf3, "-c", ep["receiver_addr"]]
            args += ["-B", ep["sender_addr"], "-p", str(ep.get("port", 5201)), "-C", flow["cc"], "-J"]
            args += ["-i", f"{max(bin_s, IPERF3_MIN_INTERVAL_S):g}"]
            if flow.get("bytes"):
                args += ["-n", str(int(flow["bytes"]))]
            else:
                # iperf3 takes whole seconds (src/iperf_api.c: `-t` with atoi).
                args += ["-t", str(max(1, round(stop_s - start_s)))]
            procs.append(_spawn(args, work / f"client-{i}.json", f"client {i}", t0 + duration_s + 15.0))
            say(f"flow {i}: iperf3 -C {flow['cc']} started at {launched[i]:.3f} s")

        # Wait for the tools, each to its deadline.
        overstayed: set[str] = set()
        for proc in procs:
            remaining = proc.deadline - time.time()
            try:
                proc.popen.wait(timeout=max(0.1, remaining))
            except subprocess.TimeoutExpired:
                _kill(proc.popen)
                overstayed.add(proc.name)
        _check_commands(procs, overstayed, say)
        sampler.stop_event.set()
        sampler.join(timeout=5.0)
        try:
            binary.wait(timeout=max(1.0, t0 + duration_s + 30.0 - time.time()))
        except subprocess.TimeoutExpired:
            _kill(binary, grace_s=5.0)
        code = binary.returncode
        meta_path = out_dir / "emu_meta.json"
        if code == 1 and meta_path.exists():
            try:
                early_meta = json.loads(meta_path.read_text())
            except ValueError:
                early_meta = {}
            if early_meta.get("kept_up") is False and not accept_late:
                _refuse_slow(early_meta)
        if code != 0 and not (code == 1 and accept_late and meta_path.exists()):
            _raise_binary(code, stderr_path, "during the run")

        clients: dict[int, Iperf3Result] = {}
        servers: dict[int, Iperf3Result | None] = {}
        for i in [i for i in launched if i not in commands]:
            text = (work / f"client-{i}.json").read_text(errors="replace")
            try:
                clients[i] = parse_iperf3(text, where=f"flows[{i}] iperf3 client")
            except ToolOutputError as err:
                raise EngineError(str(err)) from None
            try:
                servers[i] = parse_iperf3((work / f"server-{i}.json").read_text(errors="replace"))
            except (ToolOutputError, OSError):
                servers[i] = None
        try:
            raw = json.loads((out_dir / "emu_results.json").read_text())
            meta = json.loads((out_dir / "emu_meta.json").read_text())
        except (OSError, ValueError) as err:
            raise EngineError(f"l4slab-emu: results missing or unreadable in {out_dir}: {err}") from None
        if not meta.get("kept_up", False):
            if not accept_late:
                _refuse_slow(meta)
            meta["accepted_late"] = _slow_line(meta) + "; kept on request (accept_late): counts only"
            say(meta["accepted_late"])
        merged = merge(
            raw,
            config,
            clients=clients,
            servers=servers,
            launched_s=launched,
            ss_samples=sampler.samples,
            commands={i: _program_name(commands[i].sender) for i in commands},
            flow_view=meta.get("flows"),
        )
        outputs = {i: cmdflows.collect_outputs(work / "commands" / f"flow-{i}") for i in commands}
        meta["program_hosts"] = _program_hosts(outputs) or None
        meta["limited_ms"] = limited_ms(sampler.samples, clients, len(config.get("flows") or []))
        return EmuRunResult(
            scenario=validated,
            config=config,
            raw=merged,
            wall_s=time.monotonic() - started,
            engine_version=f"l4slab-emu ({meta.get('kernel', '?')})",
            meta=meta,
            command_outputs=outputs,
        )
    finally:
        if sampler is not None:
            sampler.stop_event.set()
        for proc in procs:
            _kill(proc.popen)
        if binary is not None:
            _kill(binary, grace_s=5.0)
            try:
                subprocess.run(
                    [*binary_cmd, "cleanup", "--prefix", prefix],
                    capture_output=True,
                    timeout=15.0,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired):
                pass
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        if own_work and not os.environ.get("L4SLAB_EMU_KEEP_WORK"):
            shutil.rmtree(work, ignore_errors=True)


def _slow_line(meta: Mapping[str, Any]) -> str:
    block = emulator_summary(meta)
    return (
        "emulate: the host did not keep up (departure error P99 "
        f"{_fmt(block['departure_error_p99_us'])} µs, max {_fmt(block['departure_error_max_us'])} µs, "
        f"{meta.get('departures_late', '?')} of {meta.get('packets_forwarded', '?')} departures later than "
        f"{_fmt(block['late_bound_us'])} µs in {meta.get('stalls', '?')} stalls totalling "
        f"{_fmt(block['stalled_ms'], 1)} ms, CPU busy {_fmt(block['cpu_busy_fraction'], 2)}; "
        f"{meta.get('kept_up_rule', 'the emulator bound')})"
    )


def _refuse_slow(meta: Mapping[str, Any]) -> None:
    raise HostTooSlow(
        _slow_line(meta) + "; the run is not written: free CPU, lower the rate or shorten the run "
        "(--accept-late keeps it for its counts)"
    )


def _fmt(value: float | None, digits: int = 0) -> str:
    return "?" if value is None else f"{value:.{digits}f}"


def check_supported(scenario: Any) -> None:
    """Preflight only (no run): host, binary and scenario; raises :class:`EmulationRefused`."""
    validated = coerce_scenario(scenario)
    config = validated.resolve()
    commands = cmdflows.command_flows(validated)
    check_host(need_iperf3=any(f.get("kind") == "tcp" and i not in commands for i, f in enumerate(config["flows"])))
    binary_argv()
    check_config(config, commands=commands)
