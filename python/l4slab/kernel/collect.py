"""The guest's outputs → the engine's raw results dict (``crates/l4slab-core/src/results.rs``).

The guest (:mod:`.testbed`) leaves in its run directory the probe's JSON Lines
(``probe-<k>.jsonl``: tcp_info of every socket of the flows' namespaces and the qdisc and
class statistics of the bottleneck, one record per socket / qdisc per tick, tick ``j`` at
``t0 + j * bin``), ``nstat`` of each sender namespace at the end and the tc text before and
after. :func:`collect` turns them into the dict :class:`~l4slab.results.RunResult` wraps,
so the summary, the Parquet series, plots and reports read a kernel run as an engine run.

What each field is measured from (a quantity the kernel does not expose is ``None``/NaN,
never estimated from the engine):

* a flow's connection is the socket to its port in the sender's namespace (the only one:
  the testbed's sender and receiver are ``l4slab-flow``, guest/flow.c) and its peer in the
  receiver's;
* ``goodput_mbps``: the receiver's ``tcpi_bytes_received`` (in-order payload) between the
  ticks at ``warmup`` and at ``duration``, over that window; per bin, between two ticks;
* ``throughput_mbps`` (L2 bytes of the flow leaving the bottleneck): the sender's
  ``tcpi_bytes_acked`` plus ``tcpi_delivered`` segments times ``1514 - snd_mss`` bytes of
  headers, i.e. what reached the receiver, counted at full-frame overhead per segment;
* ``mean_srtt_ms``: the sender's ``tcpi_rtt`` at each tick in the window (once per bin,
  as the engine samples); ``srtt_ms``, ``cwnd`` (``tcpi_snd_cwnd``) and
  ``pacing_rate_mbps`` per bin at the bin's closing tick; ``rtt_ms`` (the mean of the
  per-ACK samples) and ``mean_rtt_ms``: not exposed, NaN;
* ``retransmits`` ``tcpi_total_retrans``; ``rto_count`` ``tcpi_total_rto``; ``tlp_count``
  and ``recoveries`` from the sender namespace's ``nstat`` (``TcpExtTCPLossProbes``,
  ``TcpExtTCPSackRecovery`` + ``TcpExtTCPRenoRecovery``: tcp_input.c:tcp_enter_recovery;
  the namespace holds the flow's two connections, the control one carries no bulk data);
* ``packets_sent`` ``tcpi_data_segs_out``; ``acks_sent`` the receiver's ``tcpi_segs_out``;
  ``acks_per_packet`` its ``segs_out / data_segs_in``; ``mean_payload_bytes``
  ``bytes_sent / data_segs_out``;
* ``marks`` and ``ce_packets``: CE-marked packets the receiver got (``tcpi_received_ce``),
  ``ce_bytes`` their payload (``tcpi_received_ce_bytes``): the only CE marker on the path is
  the bottleneck; ``drops`` per flow: not exposed (the qdisc counts drops, not whose), None;
* ``ecn_mode``: the sender's ``tcpi_ecn_mode`` (0 off, 1 rfc3168, 2 accecn);
* ``final_cwnd``: ``tcpi_snd_cwnd`` at the last tick; ``alpha``: DCTCP-layout cc_info
  ``dctcp_alpha / 1024`` when the module reports one; BBR: ``bw_est_mbps``, ``min_rtt_ms``,
  ``pacing_gain`` from ``tcp_bbr_info`` (``cc_mode``, ``inflight_hi/lo``: not exported);
* ``fct_s`` (``bytes`` flows): from the SYN to the last byte's ACK back at the sender, as
  ``l4slab-flow send`` measures it (its connect to the receiver's FIN, sent when the
  receiver has read everything); the receiver's EOF, stamped by ``l4slab-probe --once`` on
  the probe's clock the moment ``l4slab-flow recv`` read to the end, gives the final
  counters of both sockets (the connection is gone by the next tick);
* bottleneck ``utilisation``: the child qdisc's byte counter (``qdisc_pkt_len``, L2) over
  ``rate x window``; ``drops``/``marks``/``arrivals`` from its counters (marks:
  ``ecn_mark`` (+ ``ce_mark``) of the xstats; arrivals: sent + dropped + backlog change, or
  dualpi2's ``packets_in_c + packets_in_l``);
* **sojourn is time-sampled**, not measured per packet: at every tick, dualpi2's
  ``delay_c`` and ``delay_l`` (the head packet's queueing time) for classes C and L; pie's
  ``delay``; every other qdisc ``backlog x 8 / rate`` (the wait of a packet arriving at that
  tick behind the whole backlog). The distribution gives each bin's packets (arrivals,
  per class for dualpi2) the sample at the bin's closing tick, so ``count`` is packets and
  the percentiles are over packets at bin resolution; the series' ``sojourn_ms`` (and
  ``sojourn_c_ms``/``sojourn_l_ms``, NaN in a bin where that queue received nothing) is the
  closing tick's sample;
* ``qdisc``: the ``tc -s`` counters at the last tick (whole run), ``maxq_packets``
  from dualpi2's or pie's ``maxq`` (others: not exposed, None), ``extra``: the kind's
  xstats under the engine's names (times in ms, probabilities as fractions);
* ``packets``: the data connections' segments: ``sent`` = sender + receiver ``segs_out``,
  ``delivered`` = their ``segs_in``, ``dropped`` = bottleneck drops, ``in_flight`` = the
  rest; ``data`` = ``data_segs_out`` of the senders, ``acks`` = the receivers' segs_out;
  ``events``: None.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import EngineError
from .testbed import MAX_MSS, FlowPlan, Testbed

__all__ = ["ProbeRun", "read_probes", "collect", "CollectError"]

#: Ethernet (14) + IPv4 (20) + TCP (20) bytes around a segment's payload and options:
#: an MTU-sized frame is 1514 B on the veth; payload is ``tcpi_snd_mss``.
FRAME_BYTES = 1514


def _ecn_mode(value: Any) -> str | None:
    """``tcpi_ecn_mode`` by the engine's names (its ``EcnMode`` is in the kernel's order:
    0 off, 1 rfc3168, 2 accecn); 3 is the kernel's ``pending`` (negotiation unfinished)."""
    if value is None:
        return None
    from .. import schema

    names = schema.ecn_modes()
    mode = int(value)
    return names[mode] if 0 <= mode < len(names) else "pending" if mode == len(names) else None


#: tc's scale of dualpi2's and pie's probabilities (include/uapi/linux/pkt_sched.h users:
#: iproute2 q_dualpi2.c prints prob / UINT32_MAX, q_pie.c prob / UINT64_MAX).
DUALPI2_PROB_SCALE = float(2**32 - 1)
PIE_PROB_SCALE = float(2**64 - 1)


class CollectError(EngineError):
    """The guest's outputs are missing or inconsistent (one line)."""


@dataclass
class ProbeRun:
    """The probes' records, by tick."""

    start_ns: int
    interval_ns: int
    ticks_planned: int
    #: tick → t_ns (the probes tick together; the first probe's times)
    tick_t: dict[int, int] = field(default_factory=dict)
    #: (ns, tick) → tcp records
    tcp: dict[tuple[str, int], list[dict]] = field(default_factory=dict)
    #: (ns, dev, tick) → qdisc/class records
    tc: dict[tuple[str, str, int], list[dict]] = field(default_factory=dict)
    skipped: int = 0
    errors: int = 0
    dropped: int = 0
    end_ns: int | None = None
    error_records: list[dict] = field(default_factory=list)


def read_probes(paths: Iterable[Path]) -> ProbeRun:
    """Read the probes' JSON Lines (an incomplete last line, from a killed guest, is skipped)."""
    run: ProbeRun | None = None
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except OSError as err:
            raise CollectError(f"kernel run: probe output {path.name} is missing ({err.strerror})") from None
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            kind = rec.get("kind")
            if kind == "start":
                if run is None:
                    run = ProbeRun(int(rec["t_ns"]), int(rec["interval_ns"]), int(rec.get("ticks_planned", 0)))
                continue
            if run is None:
                continue
            if kind == "end":
                run.skipped = max(run.skipped, int(rec.get("skipped", 0)))
                run.errors += int(rec.get("errors", 0))
                run.dropped += int(rec.get("dropped", 0))
                end = int(rec.get("t_ns", 0))
                run.end_ns = end if run.end_ns is None else max(run.end_ns, end)
                continue
            if kind == "error":
                if len(run.error_records) < 20:
                    run.error_records.append(rec)
                continue
            tick = rec.get("tick")
            if tick is None:
                continue
            tick = int(tick)
            run.tick_t.setdefault(tick, int(rec.get("t_ns", run.start_ns + tick * run.interval_ns)))
            if kind == "tcp":
                run.tcp.setdefault((rec["ns"], tick), []).append(rec)
            elif kind in ("qdisc", "class"):
                run.tc.setdefault((rec["ns"], rec["dev"], tick), []).append(rec)
    if run is None:
        raise CollectError("kernel run: the probe wrote no start record (did l4slab-probe run?)")
    return run


# --- flows ---------------------------------------------------------------------------------------


def _info(rec: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (rec or {}).get("info") or {}


@dataclass
class _FlowSamples:
    plan: FlowPlan
    #: tick → sender / receiver data-socket record
    sender: dict[int, dict] = field(default_factory=dict)
    receiver: dict[int, dict] = field(default_factory=dict)
    sport: int | None = None
    #: a sized flow's receiver EOF, ns after t0
    eof_ns: int | None = None


def _eof(run_dir: Path, plan: FlowPlan) -> tuple[int | None, dict | None, dict | None]:
    """A sized flow's end: the receiver's EOF (monotonic ns, the probe's clock) and both
    data sockets' last records, sampled by ``l4slab-probe --once`` right after the receiver
    read to EOF (its socket then waits in LAST_ACK, the sender's in FIN_WAIT)."""
    path = run_dir / f"eof-{plan.id}.jsonl"
    if plan.bytes is None or not path.exists():
        return None, None, None
    t_eof = sender = receiver = None
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("kind") == "start":
            t_eof = int(rec["t_ns"])
        elif rec.get("kind") == "tcp":
            if rec.get("ns") == plan.receiver_ns and int(rec.get("sport", -1)) == plan.port:
                receiver = rec
            elif rec.get("ns") == plan.sender_ns and int(rec.get("dport", -1)) == plan.port:
                sender = rec
    return t_eof, sender, receiver


def _flow_samples(probe: ProbeRun, plan: FlowPlan, ticks: list[int], run_dir: Path | None = None) -> _FlowSamples:
    out = _FlowSamples(plan)
    best: dict[int, int] = {}  # sender sport → most bytes_sent seen
    for tick in ticks:
        for rec in probe.tcp.get((plan.sender_ns, tick), []):
            if int(rec.get("dport", -1)) != plan.port:
                continue
            sport = int(rec["sport"])
            best[sport] = max(best.get(sport, 0), int(_info(rec).get("bytes_sent", 0) or 0))
    if not best:
        return out
    out.sport = max(best, key=lambda s: best[s])
    for tick in ticks:
        for rec in probe.tcp.get((plan.sender_ns, tick), []):
            if int(rec.get("sport", -1)) == out.sport and int(rec.get("dport", -1)) == plan.port:
                out.sender[tick] = rec
        for rec in probe.tcp.get((plan.receiver_ns, tick), []):
            if int(rec.get("sport", -1)) == plan.port and int(rec.get("dport", -1)) == out.sport:
                out.receiver[tick] = rec
    t_eof, sender, receiver = _eof(run_dir, plan) if run_dir is not None else (None, None, None)
    if t_eof is not None:
        # the final counters hold from the first tick at or after the end of the transfer
        out.eof_ns = t_eof - probe.start_ns
        first = next((t for t in ticks if probe.tick_t.get(t, probe.start_ns + t * probe.interval_ns) >= t_eof), None)
        if first is not None:
            if sender is not None and int(sender.get("sport", -1)) == out.sport and first not in out.sender:
                out.sender[first] = sender
            if receiver is not None and int(receiver.get("dport", -1)) == out.sport and first not in out.receiver:
                out.receiver[first] = receiver
    return out


#: States in which a counter of sequence space includes a FIN (include/net/tcp_states.h):
#: the peer's FIN received (CLOSE_WAIT, LAST_ACK, CLOSING) counts in ``bytes_received``, our
#: FIN acknowledged (FIN_WAIT2) in ``bytes_acked``; one byte each, not payload.
_FIN_STATES = {"bytes_received": {8, 9, 11}, "bytes_acked": {5}}


def _cumulative(samples: Mapping[int, dict], key: str, ticks: list[int]) -> np.ndarray:
    """A cumulative tcp_info counter at every tick: 0 before the socket exists, held after
    it is gone (a closed connection's counters stop); a FIN's sequence number is not payload."""
    out = np.zeros(len(ticks))
    last = 0.0
    fin_states = _FIN_STATES.get(key, set())
    for index, tick in enumerate(ticks):
        rec = samples.get(tick)
        if rec is not None:
            value = _info(rec).get(key)
            if value is not None:
                last = float(value) - (1.0 if int(rec.get("state", 0) or 0) in fin_states else 0.0)
        out[index] = last
    return out


def _state(samples: Mapping[int, dict], key: str, ticks: list[int], scale: float = 1.0) -> np.ndarray:
    out = np.full(len(ticks), np.nan)
    for index, tick in enumerate(ticks):
        value = _info(samples.get(tick)).get(key)
        if value is not None:
            out[index] = float(value) * scale
    return out


def _cc_state(samples: Mapping[int, dict], ticks: list[int], attr: str, key: str, scale: float) -> np.ndarray:
    out = np.full(len(ticks), np.nan)
    for index, tick in enumerate(ticks):
        cc_info = (samples.get(tick) or {}).get("cc_info") or {}
        if cc_info.get("attr") == attr and cc_info.get(key) is not None:
            out[index] = float(cc_info[key]) * scale
    return out


def _data_start_ns(flow: _FlowSamples, probe: ProbeRun) -> int | None:
    """When the data connection's first data was queued, ns after t0: the first tick that
    saw it, less the sender's chrono (busy + rwnd-limited + sndbuf-limited time, µs; the
    chrono starts with the first queued skb, tcp_output.c:tcp_chrono_start)."""
    for tick in sorted(flow.sender):
        info = _info(flow.sender[tick])
        chrono_us = sum(int(info.get(k, 0) or 0) for k in ("busy_time", "rwnd_limited", "sndbuf_limited"))
        if int(info.get("bytes_sent", 0) or 0) == 0:
            continue
        t = probe.tick_t.get(tick, probe.start_ns + tick * probe.interval_ns)
        return int(t - probe.start_ns - chrono_us * 1000)
    return None


def _nstat(run_dir: Path, namespace: str) -> dict[str, float]:
    try:
        data = json.loads((run_dir / f"nstat-{namespace}.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in (data.get("kernel") or {}).items() if isinstance(v, (int, float))}


def _nan_list(values: np.ndarray) -> list[float | None]:
    return [None if not math.isfinite(float(v)) else float(v) for v in values]


# --- qdiscs --------------------------------------------------------------------------------------

_ENGINE_EXTRA_NAMES = {
    "dualpi2": {"packets_in_c": "pkts_in_c", "packets_in_l": "pkts_in_l"},
    "fq": {"gc_flows": "gc"},
}
#: xstats in µs → the engine's ``<name>_ms``
_US_FIELDS = {"delay_c", "delay_l", "delay", "ldelay"}


def _child(probe: ProbeRun, where: tuple[str, str], tick: int) -> dict | None:
    """The bottleneck's child qdisc (handle 10:, under htb class 1:1) at ``tick``."""
    for rec in probe.tc.get((where[0], where[1], tick), []):
        if rec.get("kind") == "qdisc" and rec.get("handle") == "10:":
            return rec
    return None


def _marks(rec: Mapping[str, Any] | None) -> float:
    x = (rec or {}).get("xstats") or {}
    return float(x.get("ecn_mark", 0) or 0) + float(x.get("ce_mark", 0) or 0)


def _extra(kind: str, xstats: Mapping[str, Any]) -> dict[str, float]:
    names = _ENGINE_EXTRA_NAMES.get(kind, {})
    out: dict[str, float] = {}
    for key, value in xstats.items():
        if key in ("type", "hex") or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if key == "prob":
            scale = DUALPI2_PROB_SCALE if kind == "dualpi2" else PIE_PROB_SCALE if kind == "pie" else 1.0
            out["prob"] = float(value) / scale
        elif key in _US_FIELDS:
            out[f"{key}_ms"] = float(value) / 1e3
        else:
            out[names.get(key, key)] = float(value)
    return dict(sorted(out.items()))


def _sojourn_stats(samples: list[tuple[float, float]]) -> dict[str, Any]:
    """count / mean / percentiles of weighted samples ``(value_ms, weight)``."""
    samples = [(v, w) for v, w in samples if math.isfinite(v) and w > 0]
    if not samples:
        return {"count": 0, "mean": None, "p50": None, "p90": None, "p99": None, "p999": None, "max": None}
    values = np.array([v for v, _ in samples])
    weights = np.array([w for _, w in samples], dtype=float)
    order = np.argsort(values)
    values, weights = values[order], weights[order]
    cum = np.cumsum(weights) / weights.sum()

    def pct(q: float) -> float:
        return float(values[min(len(values) - 1, int(np.searchsorted(cum, q, side="left")))])

    return {
        "count": int(round(weights.sum())),
        "mean": float(np.average(values, weights=weights)),
        "p50": pct(0.5),
        "p90": pct(0.9),
        "p99": pct(0.99),
        "p999": pct(0.999),
        "max": float(values[-1]),
    }


def _per_bin(cum: np.ndarray, present: list[bool], n_bins: int) -> np.ndarray:
    """A per-tick cumulative count → its Δ per bin (bin k: tick k to tick k + 1); NaN where
    either tick is missing (``present``) and for bins past the last tick."""
    out = np.full(n_bins, np.nan)
    for k in range(min(n_bins, len(present) - 1)):
        if present[k] and present[k + 1]:
            out[k] = cum[k + 1] - cum[k]
    return out


def _at_close(values: np.ndarray, n_ticks: int, n_bins: int) -> np.ndarray:
    """A per-tick state at each bin's closing tick (NaN for bins past the last tick)."""
    out = np.full(n_bins, np.nan)
    for k in range(min(n_bins, n_ticks - 1)):
        out[k] = values[k + 1]
    return out


# --- the whole run -------------------------------------------------------------------------------


def collect(testbed: Testbed, config: Mapping[str, Any], run_dir: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(raw results in the engine's schema, the kernel block's measurements)."""
    run_dir = Path(run_dir)
    for index, name in enumerate(testbed.probe_files):
        try:
            rc = (run_dir / f"probe-{index}.rc").read_text().strip()
        except OSError:
            rc = ""
        if rc not in ("", "0"):
            why = _first_line(run_dir / f"probe-{index}.err") or f"exit status {rc}"
            raise CollectError(f"kernel run: the guest's probe ({name}) failed: {why}")
    probe = read_probes(run_dir / name for name in testbed.probe_files)
    bin_ns = testbed.bin_ns
    duration_ns = testbed.duration_ns
    bin_s = bin_ns / 1e9
    n_bins = max(1, math.ceil(duration_ns / bin_ns))
    last_tick = duration_ns // bin_ns
    ticks = list(range(0, last_tick + 1))
    missing = [t for t in ticks if t not in probe.tick_t]
    warmup_ns = int(config.get("warmup_ns", 0))
    w_tick = min(last_tick - 1, max(0, int(round(warmup_ns / bin_ns)))) if last_tick > 0 else 0
    window_s = (last_tick - w_tick) * bin_s
    if window_s <= 0:
        raise CollectError(
            f"kernel run: no complete bin in the window (bin {bin_s:g} s, duration {duration_ns / 1e9:g} s)"
        )

    present = [t in probe.tick_t for t in ticks]

    def per_bin(cum: np.ndarray) -> np.ndarray:
        return _per_bin(cum, present, n_bins)

    def at_close(values: np.ndarray) -> np.ndarray:
        return _at_close(values, len(ticks), n_bins)

    flows_out: list[dict[str, Any]] = []
    series_out: list[dict[str, Any]] = []
    kernel_flows: list[dict[str, Any]] = []
    totals = {"sent": 0.0, "delivered": 0.0, "data": 0.0, "acks": 0.0}
    received_ce: np.ndarray | None = None  # every receiver's CE count, per tick
    for plan, cfg in zip(testbed.flows, config.get("flows") or [], strict=True):
        fs = _flow_samples(probe, plan, ticks, run_dir)
        if fs.sport is None:
            raise CollectError(
                f"kernel run: flows[{plan.id}] ({plan.cc}) never opened its data connection; "
                f"{_first_line(run_dir / f'client-{plan.id}.err') or 'no message'}"
            )
        rcv_bytes = _cumulative(fs.receiver, "bytes_received", ticks)
        snd_acked = _cumulative(fs.sender, "bytes_acked", ticks)
        delivered = _cumulative(fs.sender, "delivered", ticks)
        mss = _state(fs.sender, "snd_mss", ticks)
        mss_last = next((float(v) for v in mss[::-1] if math.isfinite(v)), float(MAX_MSS))
        overhead = FRAME_BYTES - mss_last
        l2 = snd_acked + delivered * overhead
        bytes_sent = _cumulative(fs.sender, "bytes_sent", ticks)
        data_segs_out = _cumulative(fs.sender, "data_segs_out", ticks)
        retrans = _cumulative(fs.sender, "total_retrans", ticks)
        ce = _cumulative(fs.receiver, "received_ce", ticks)
        received_ce = ce if received_ce is None else received_ce + ce

        goodput_bins = per_bin(rcv_bytes) * 8 / bin_s / 1e6
        throughput_bins = per_bin(l2) * 8 / bin_s / 1e6
        srtt = _state(fs.sender, "rtt", ticks, 1e-3)
        window_srtt = [v for v in srtt[w_tick + 1 : last_tick + 1] if math.isfinite(v)]
        mean_srtt = float(np.mean(window_srtt)) if window_srtt else math.nan
        base_rtt_ms = float(cfg["rtt_ns"]) / 1e6
        goodput = (rcv_bytes[last_tick] - rcv_bytes[w_tick]) * 8 / window_s / 1e6
        throughput = (l2[last_tick] - l2[w_tick]) * 8 / window_s / 1e6
        last_snd = _info(fs.sender[max(fs.sender)]) if fs.sender else {}
        last_rcv = _info(fs.receiver[max(fs.receiver)]) if fs.receiver else {}
        nstat = _nstat(run_dir, plan.sender_ns)
        segs_out_s, segs_in_s = float(last_snd.get("segs_out", 0) or 0), float(last_snd.get("segs_in", 0) or 0)
        segs_out_r, segs_in_r = float(last_rcv.get("segs_out", 0) or 0), float(last_rcv.get("segs_in", 0) or 0)
        totals["sent"] += segs_out_s + segs_out_r
        totals["delivered"] += segs_in_s + segs_in_r
        totals["data"] += float(last_snd.get("data_segs_out", 0) or 0)
        totals["acks"] += segs_out_r
        data_segs_in_r = float(last_rcv.get("data_segs_in", 0) or 0)
        data_start = _data_start_ns(fs, probe)
        sent_rec = _flow_record(run_dir / f"send-{plan.id}.json")
        ecn_mode = _ecn_mode(last_snd.get("ecn_mode"))
        flow = {
            "id": plan.id,
            "start_s": plan.launch_ns / 1e9,
            "kind": "tcp",
            # The CC the sender's socket ran, as the engine reports it: Prague without an
            # AccECN peer is "prague-reno" on both backends.
            "cc": "prague-reno"
            if cfg.get("cc") == "prague" and fs.sender and fs.sender[max(fs.sender)].get("cc") == "prague-reno"
            else cfg.get("cc"),
            "base_rtt_ms": base_rtt_ms,
            "goodput_mbps": float(goodput),
            "throughput_mbps": float(throughput),
            "mean_srtt_ms": mean_srtt,
            "queuing_delay_ms": mean_srtt - base_rtt_ms if math.isfinite(mean_srtt) else None,
            "mean_rtt_ms": None,
            "retransmits": int(retrans[-1]),
            "rto_count": int(last_snd.get("total_rto", 0) or 0) if last_snd else None,
            "tlp_count": int(nstat["TcpExtTCPLossProbes"]) if "TcpExtTCPLossProbes" in nstat else None,
            "recoveries": (
                int(nstat.get("TcpExtTCPSackRecovery", 0) + nstat.get("TcpExtTCPRenoRecovery", 0)) if nstat else None
            ),
            "bytes_delivered": int(rcv_bytes[-1]),
            "packets_sent": int(data_segs_out[-1]),
            "drops": None,
            "marks": int(ce[-1]),
            "acks_sent": int(segs_out_r),
            "fct_s": _fct_s(fs, plan, sent_rec),
            "final_cwnd": int(last_snd.get("snd_cwnd", 0) or 0),
            "ecn_mode": ecn_mode,
            "ce_packets": int(ce[-1]),
            "ce_bytes": int(last_rcv.get("received_ce_bytes", 0) or 0),
            "mean_payload_bytes": float(bytes_sent[-1] / data_segs_out[-1]) if data_segs_out[-1] > 0 else None,
            "payload_sd_bytes": None,
            "mean_pacing_rate_mbps": None,
            "acks_per_packet": float(segs_out_r / data_segs_in_r) if data_segs_in_r > 0 else None,
            "goodput_efficiency": float(goodput / throughput) if throughput > 0 else None,
        }
        flows_out.append(flow)
        with np.errstate(divide="ignore", invalid="ignore"):
            payload = per_bin(bytes_sent) / per_bin(data_segs_out)
        series: dict[str, Any] = {
            "goodput_mbps": _nan_list(goodput_bins),
            "throughput_mbps": _nan_list(throughput_bins),
            "srtt_ms": _nan_list(at_close(srtt)),
            "rtt_ms": [None] * n_bins,
            "cwnd": _nan_list(at_close(_state(fs.sender, "snd_cwnd", ticks))),
            "alpha": _nan_list(at_close(_cc_state(fs.sender, ticks, "dctcp", "alpha", 1 / 1024))),
            "pacing_rate_mbps": _nan_list(at_close(_state(fs.sender, "pacing_rate", ticks, 8e-6))),
            "payload_bytes": _nan_list(np.where(np.isfinite(payload), payload, np.nan)),
            "ce_packets": [None if not math.isfinite(v) else int(v) for v in per_bin(ce)],
            "retransmits": [None if not math.isfinite(v) else int(v) for v in per_bin(retrans)],
            "drops": [None] * n_bins,
            "marks": [None if not math.isfinite(v) else int(v) for v in per_bin(ce)],
        }
        if any((rec.get("cc_info") or {}).get("attr") == "bbr" for rec in fs.sender.values()):
            series["bw_est_mbps"] = _nan_list(at_close(_cc_state(fs.sender, ticks, "bbr", "bw", 8e-6)))
            series["min_rtt_ms"] = _nan_list(at_close(_cc_state(fs.sender, ticks, "bbr", "min_rtt", 1e-3)))
            series["pacing_gain"] = _nan_list(at_close(_cc_state(fs.sender, ticks, "bbr", "pacing_gain", 1 / 256)))
            series["cc_mode"] = [""] * n_bins
        series_out.append(series)
        kernel_flows.append(
            {
                "id": plan.id,
                "module": plan.cc,
                "sender_cc": (fs.sender[max(fs.sender)].get("cc") if fs.sender else None),
                "receiver_cc": (fs.receiver[max(fs.receiver)].get("cc") if fs.receiver else None),
                "receiver_cc_expected": plan.receiver_cc,
                "data_start_s": None if data_start is None else data_start / 1e9,
                # l4slab-flow send's own account (guest/flow.c): its connect on the probe's
                # clock (the planned launch is launch_s) and how it ended
                "connect_s": _since(sent_rec.get("connect_ns"), probe.start_ns),
                "sender_end": sent_rec.get("end"),
                "rwnd_limited_ms": float(last_snd.get("rwnd_limited", 0) or 0) / 1e3 if last_snd else None,
                "sndbuf_limited_ms": float(last_snd.get("sndbuf_limited", 0) or 0) / 1e3 if last_snd else None,
                "accecn_opt_seen": last_snd.get("accecn_opt_seen"),
                "accecn_fail_mode": last_snd.get("accecn_fail_mode"),
                "receiver_ecn_mode": (
                    _ecn_mode(last_rcv.get("ecn_mode"))
                ),
                "delivered_ce": last_snd.get("delivered_ce"),
                "delivered_e1_bytes": last_snd.get("delivered_e1_bytes"),
                "delivered_e0_bytes": last_snd.get("delivered_e0_bytes"),
                "delivered_ce_bytes": last_snd.get("delivered_ce_bytes"),
                "received_e1_bytes": last_rcv.get("received_e1_bytes"),
                "received_e0_bytes": last_rcv.get("received_e0_bytes"),
                "bytes_retrans": last_snd.get("bytes_retrans"),
                "dsack_dups": last_snd.get("dsack_dups"),
            }
        )
        for k, (module_seen, expected) in enumerate(
            ((kernel_flows[-1]["sender_cc"], plan.cc), (kernel_flows[-1]["receiver_cc"], plan.receiver_cc))
        ):
            # Prague without an AccECN peer switches the socket to its Reno ops ("prague-reno",
            # tcp_l4slab_prague.c, as L4STeam's tcp_prague.c:prague_init): Linux's behaviour.
            fallback = {"prague": "prague-reno", "prague_pam": "prague-reno"}.get(expected)
            if module_seen is not None and module_seen not in (expected, fallback):
                side = "sender" if k == 0 else "receiver"
                raise CollectError(
                    f"kernel run: flows[{plan.id}]'s {side} socket ran {module_seen}, not {expected} "
                    "(the namespace's default congestion control was not applied)"
                )

    bottleneck, bottleneck_series, dropped = _bottleneck(
        probe, testbed.bottleneck, config["bottleneck"], ticks, w_tick, last_tick, n_bins, bin_s, window_s,
        received_ce=received_ce,
    )
    in_flight = totals["sent"] - totals["delivered"] - dropped
    goodputs = [f["goodput_mbps"] for f in flows_out if f.get("goodput_mbps") is not None]
    square = sum(g * g for g in goodputs)
    raw = {
        "duration_s": duration_ns / 1e9,
        "warmup_s": warmup_ns / 1e9,
        "bin_s": bin_s,
        "seed": int(config.get("seed", 0)),
        "flows": flows_out,
        "bottleneck": bottleneck,
        "packets": {
            "sent": int(totals["sent"]),
            "delivered": int(totals["delivered"]),
            "dropped": int(dropped),
            "in_flight": int(in_flight),
            "data": int(totals["data"]),
            "acks": int(totals["acks"]),
        },
        "events": None,
        "time_s": [k * bin_s for k in range(n_bins)],
        "flow_series": series_out,
        "bottleneck_series": bottleneck_series,
        "sojourn_trace": None,
        "jain_index": (sum(goodputs) ** 2 / (len(goodputs) * square)) if square > 0 else math.nan,
    }
    measured = {
        "probe_ticks": len(probe.tick_t),
        "probe_ticks_planned": probe.ticks_planned,
        "probe_ticks_skipped": probe.skipped + len(missing),
        "probe_errors": probe.errors,
        "probe_records_dropped": probe.dropped,
        "probe_error_samples": probe.error_records[:5],
        "virtual_duration_s": None if probe.end_ns is None else (probe.end_ns - probe.start_ns) / 1e9,
        # the guest's CLOCK_MONOTONIC at t0: the router's uptime, which CoDel's clock reads
        # (include/net/codel.h:codel_get_time; the scenario's `uptime`, if it sets one)
        "t0_uptime_ns": probe.start_ns,
        "flows": kernel_flows,
        # When each flow's data began, for `compare`'s alignment (l4slab.emulate.compare):
        # the SYN leaves at the launch, the data one base RTT later.
        "flow_data_start_ns": [
            int(p.launch_ns) + int(c["rtt_ns"]) for p, c in zip(testbed.flows, config["flows"], strict=True)
        ],
        "softnet_dropped": _softnet_dropped(run_dir),
    }
    if testbed.capture is not None:
        from .capture import read_capture

        capture = read_capture(run_dir, testbed.capture)
        raw["capture"] = {"packets": capture.packets, "missed": capture.missed}
        raw["files"] = {"capture.pcapng": capture.pcapng}
    if testbed.reverse_bottleneck is not None:
        reverse, _series, _dropped = _bottleneck(
            probe,
            testbed.reverse_bottleneck,
            config["reverse_bottleneck"],
            ticks,
            w_tick,
            last_tick,
            n_bins,
            bin_s,
            window_s,
        )
        measured["reverse_bottleneck"] = reverse
    return raw, measured


def _flow_record(path: Path) -> dict[str, Any]:
    """The JSON line ``l4slab-flow`` wrote at its end ({} if none: a killed or failed one)."""
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
        record = json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _since(t_ns: Any, start_ns: int) -> float | None:
    return None if not isinstance(t_ns, int) or isinstance(t_ns, bool) else (t_ns - start_ns) / 1e9


def _fct_s(fs: _FlowSamples, plan: FlowPlan, sent: Mapping[str, Any] | None = None) -> float | None:
    """A sized flow's completion: from its SYN to the last byte's ACK back at the sender.
    Measured by the sender (``l4slab-flow send``: its connect to the receiver's FIN, which
    the receiver sends when it has read everything); else the receiver's EOF plus the ACK
    path's delay, from the launch."""
    if plan.bytes is None:
        return None
    sent = sent or {}
    connect, close = sent.get("connect_ns"), sent.get("peer_close_ns")
    if sent.get("end") == "done" and isinstance(connect, int) and isinstance(close, int):
        return max(0.0, (close - connect) / 1e9)
    if fs.eof_ns is None:
        return None
    return max(0.0, (fs.eof_ns + plan.rev_delay_ns - plan.launch_ns) / 1e9)


def _softnet_dropped(run_dir: Path) -> int | None:
    try:
        lines = (run_dir / "softnet.txt").read_text().split("\n")
    except OSError:
        return None
    total = 0
    for line in lines:
        parts = line.split()
        if len(parts) > 1:
            total += int(parts[1], 16)
    return total


def _first_line(path: Path) -> str:
    try:
        for line in path.read_text(errors="replace").splitlines():
            if line.strip():
                return line.strip()[:200]
    except OSError:
        pass
    return ""


def _bottleneck(probe, where, link, ticks, w_tick, last_tick, n_bins, bin_s, window_s, received_ce=None):
    recs = [_child(probe, where, t) for t in ticks]
    if not any(recs):
        raise CollectError(f"kernel run: the probe has no statistics of the qdisc on {where[0]}:{where[1]}")
    kind = next(r for r in recs if r)["type"]
    rate_bps = float(link["rate_bps"])

    def counter(key: str, source=None) -> np.ndarray:
        out = np.zeros(len(ticks))
        last = 0.0
        for i, rec in enumerate(recs):
            if rec is not None:
                value = source(rec) if source else rec.get(key)
                if value is not None:
                    last = float(value)
            out[i] = last
        return out

    def state(get) -> np.ndarray:
        return np.array([np.nan if r is None or get(r) is None else float(get(r)) for r in recs])

    xs = lambda key: lambda r: (r.get("xstats") or {}).get(key)  # noqa: E731
    sent_bytes = counter("bytes")
    sent_packets = counter("packets")
    drops = counter("drops")
    marks = counter(None, _marks)
    if kind == "fq" and received_ce is not None:
        # sch_fq.c:fq_dequeue counts ce_mark for every packet over ce_threshold, ECN-capable
        # or not (INET_ECN_set_ce's result is not checked): not the packets it marked. The
        # marks are what the receivers got as CE (the bottleneck is the path's only marker).
        marks = np.asarray(received_ce, dtype=float)
    backlog_bytes = state(lambda r: r.get("backlog"))
    backlog_packets = state(lambda r: r.get("qlen"))
    if kind == "dualpi2":
        in_c, in_l = counter(None, xs("packets_in_c")), counter(None, xs("packets_in_l"))
        arrivals = in_c + in_l
    else:
        arrivals = sent_packets + drops + np.nan_to_num(backlog_packets)

    present = [r is not None for r in recs]

    def per_bin(cum: np.ndarray) -> np.ndarray:
        return _per_bin(cum, present, n_bins)

    def at_close(values: np.ndarray) -> np.ndarray:
        return _at_close(values, len(ticks), n_bins)

    backlog_ms = backlog_bytes * 8 / rate_bps * 1e3
    classes: list[tuple[str, list[tuple[float, float]]]] = []
    per_tick_sojourn = np.full(len(ticks), np.nan)
    class_series: list[list[float | None]] = []
    window = range(w_tick + 1, last_tick + 1)
    d_arrivals = np.concatenate([[0.0], np.diff(arrivals)])
    if kind == "dualpi2":
        delay_c = state(xs("delay_c")) / 1e3
        delay_l = state(xs("delay_l")) / 1e3
        d_c = np.concatenate([[0.0], np.diff(in_c)])
        d_l = np.concatenate([[0.0], np.diff(in_l)])
        c_samples = [(delay_c[i], d_c[i]) for i in window if d_c[i] > 0]
        l_samples = [(delay_l[i], d_l[i]) for i in window if d_l[i] > 0]
        classes = [("C", c_samples), ("L", l_samples)]
        for i in range(len(ticks)):
            total = d_c[i] + d_l[i]
            if total > 0 and math.isfinite(delay_c[i]) and math.isfinite(delay_l[i]):
                per_tick_sojourn[i] = (delay_c[i] * d_c[i] + delay_l[i] * d_l[i]) / total
        overall = [(float(delay_c[i]), float(d_c[i])) for i in window if d_c[i] > 0] + [
            (float(delay_l[i]), float(d_l[i])) for i in window if d_l[i] > 0
        ]
        c_close = at_close(np.where(d_c > 0, delay_c, np.nan))
        l_close = at_close(np.where(d_l > 0, delay_l, np.nan))
        class_series = [_nan_list(c_close), _nan_list(l_close)]
    else:
        if kind == "pie":
            per_tick_sojourn = state(xs("delay")) / 1e3
        else:
            per_tick_sojourn = backlog_ms
        overall = [(float(per_tick_sojourn[i]), float(d_arrivals[i])) for i in window]
        classes = [("all", overall)]
    final = next((r for r in reversed(recs) if r is not None), {})
    xstats = final.get("xstats") or {}
    maxq = xstats.get("maxq") if kind in ("dualpi2", "pie") else None
    bottleneck = {
        "utilisation": float((sent_bytes[last_tick] - sent_bytes[w_tick]) * 8 / (rate_bps * window_s)),
        "sojourn_ms": _sojourn_stats(overall),
        "drops": int(drops[last_tick] - drops[w_tick]),
        "marks": int(marks[last_tick] - marks[w_tick]),
        "sojourn_by_class": [{"class": name, "sojourn_ms": _sojourn_stats(s)} for name, s in classes],
        "qdisc": {
            "kind": kind,
            "sent_bytes": int(final.get("bytes", 0) or 0),
            "sent_packets": int(final.get("packets", 0) or 0),
            "drops": int(final.get("drops", 0) or 0),
            "overlimits": int(final.get("overlimits", 0) or 0),
            "requeues": int(final.get("requeues", 0) or 0),
            "marks": int(marks[last_tick]) if kind == "fq" and math.isfinite(marks[last_tick]) else int(_marks(final)),
            "backlog_bytes": int(final.get("backlog", 0) or 0),
            "backlog_packets": int(final.get("qlen", 0) or 0),
            "maxq_packets": None if maxq is None else int(maxq),
            "extra": _extra(kind, xstats),
        },
    }
    series: dict[str, Any] = {
        "utilisation": _nan_list(per_bin(sent_bytes) * 8 / (rate_bps * bin_s)),
        "sojourn_ms": _nan_list(at_close(per_tick_sojourn)),
        "backlog_bytes": [None if not math.isfinite(v) else int(v) for v in at_close(backlog_bytes)],
        "backlog_packets": [None if not math.isfinite(v) else int(v) for v in at_close(backlog_packets)],
        "drops": [None if not math.isfinite(v) else int(v) for v in per_bin(drops)],
        "marks": [None if not math.isfinite(v) else int(v) for v in per_bin(marks)],
        "arrivals": [None if not math.isfinite(v) else int(v) for v in per_bin(arrivals)],
    }
    if class_series:
        series["sojourn_class_ms"] = class_series
    return bottleneck, series, float(drops[last_tick])
