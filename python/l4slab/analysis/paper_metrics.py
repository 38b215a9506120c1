"""Metrics as the seed papers define them, computed from a run's tables.

* The DualQ paper (De Schepper et al., "Dual Queue Coupled AQM", Appendix B): the warm-up
  ``T_w = 5 + rate·rtt/100`` s, statistics of 1-s samples (mean, P1, P25, P99), rate
  per flow normalised by the fair rate, window ``W = r·(qd_avg + R)``, rate and window
  balance ratios; completion efficiency of web requests (§IV-F, Figure 9, 11) in log-3
  size bins.
* S2 (Zeynali et al., "Small Packets, Big Difference"): packet-size mean and SD,
  packets and ACKs per RTT, inter-packet gaps, the coefficient of variation of
  throughput over 50 ms bins, normalised goodput, Jain's index
  (:func:`l4slab.analysis.metrics.jain_index`).

Every function takes plain arrays or the DataFrames of :class:`l4slab.RunResult`
(``flows``, ``flow_series``, ``bottleneck_series``, ``requests``) and returns numbers
or frames; none runs a simulation.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

__all__ = [
    "warmup_s",
    "sample_stats",
    "fair_rate",
    "normalised_rate",
    "window_bytes",
    "balance_ratio",
    "packet_size_stats",
    "per_rtt",
    "inter_packet_gaps",
    "flow_gaps",
    "throughput_cv",
    "normalised_goodput",
    "efficiency_bins",
    "timeout_stripes",
    "connection_ordinals",
    "delay_attribution",
]


def warmup_s(rate_mbps: float, rtt_ms: float) -> float:
    """The DualQ paper's App. B: ``T_w = 5 + rate·rtt/100`` seconds before measuring long flows.

    The paper gives no units; with the link rate in Mbit/s and the RTT in ms (the units
    of its grid: 4–200 Mbit/s, 5–100 ms) the wait runs from 5.2 s to 205 s of its 250 s
    runs, growing with the BDP as slow start and CUBIC's convergence do."""
    if rate_mbps < 0 or rtt_ms < 0:
        raise ValueError(f"warmup_s: rate {rate_mbps} Mbit/s and rtt {rtt_ms} ms must be ≥ 0")
    return 5.0 + rate_mbps * rtt_ms / 100.0


def sample_stats(samples: Iterable[float], percentiles: Iterable[float] = (1, 25, 99)) -> dict[str, float]:
    """Mean and percentiles of 1-s samples (NaN ignored): Appendix B's ``mean``, ``p1``,
    ``p25``, ``p99`` of utilisation and mark/drop probability."""
    values = np.asarray(list(samples), dtype=float)
    values = values[np.isfinite(values)]
    out = {"mean": float(values.mean()) if values.size else float("nan")}
    for p in percentiles:
        out[f"p{p:g}"] = float(np.percentile(values, p)) if values.size else float("nan")
    return out


def fair_rate(capacity: float, n_flows: int) -> float:
    """App. B: "the total link capacity divided by the total number of competing flows"."""
    if n_flows <= 0:
        raise ValueError(f"fair_rate: n_flows {n_flows} must be ≥ 1")
    return capacity / n_flows


def normalised_rate(rate: float | np.ndarray, capacity: float, n_flows: int) -> float | np.ndarray:
    """A flow's rate divided by the fair rate (1 = its fair share)."""
    return np.asarray(rate, dtype=float) / fair_rate(capacity, n_flows)


def window_bytes(rate_bps: float | np.ndarray, qdelay_s: float | np.ndarray, base_rtt_s: float) -> np.ndarray:
    """App. B's window estimate at the AQM: ``W = r·(qd_avg + R)``, r in bytes/s."""
    return np.asarray(rate_bps, dtype=float) / 8.0 * (np.asarray(qdelay_s, dtype=float) + base_rtt_s)


def balance_ratio(ecn_capable: Iterable[float], classic: Iterable[float]) -> float:
    """App. B: average rate (or window) per flow of the ECN-capable CC divided by that
    of the Classic CC over the whole experiment."""
    a, b = np.asarray(list(ecn_capable), dtype=float), np.asarray(list(classic), dtype=float)
    if a.size == 0 or b.size == 0:
        return float("nan")
    return float(a.mean() / b.mean()) if b.mean() != 0 else float("inf")


def packet_size_stats(payload_bytes: Iterable[float]) -> tuple[float, float]:
    """S2: mean and standard deviation of the data packets' payload sizes."""
    values = np.asarray(list(payload_bytes), dtype=float)
    return float(values.mean()), float(values.std())


def per_rtt(count: float, duration_s: float, rtt_s: float) -> float:
    """S2: packets (or ACKs) per RTT: ``count / duration · rtt``."""
    if duration_s <= 0:
        raise ValueError(f"per_rtt: duration {duration_s} s must be > 0")
    return count / duration_s * rtt_s


def inter_packet_gaps(times_s: Iterable[float]) -> np.ndarray:
    """S2: gaps between consecutive packets of one flow (times sorted first), s."""
    t = np.sort(np.asarray(list(times_s), dtype=float))
    return np.diff(t)


def flow_gaps(trace: pd.DataFrame, at: str = "bottleneck") -> pd.DataFrame:
    """S2 §5.2 (Figure 8): per-flow inter-packet gaps from the bottleneck's sojourn trace
    (``time_s`` at dequeue, ``flow``, ``sojourn_ms``; ``trace_sojourn = true``), one row per
    gap: ``flow``, ``gap_ms``. ``at="bottleneck"``: gaps between a flow's consecutive
    departures from the bottleneck (what the receiver sees); ``at="arrival"``: between its
    arrivals at the bottleneck (dequeue time minus sojourn: the sender's spacing after its
    access link). Gaps are taken within a flow only, never across flows."""
    if at not in ("bottleneck", "arrival"):
        raise ValueError(f"flow_gaps: at must be 'bottleneck' or 'arrival', not {at!r}")
    if trace is None or len(trace) == 0:
        return pd.DataFrame({"flow": pd.Series(dtype=int), "gap_ms": pd.Series(dtype=float)})
    t = trace["time_s"].to_numpy(dtype=float) * 1000.0
    if at == "arrival":
        t = t - trace["sojourn_ms"].to_numpy(dtype=float)
    frame = pd.DataFrame({"flow": trace["flow"].to_numpy(), "t_ms": t}).sort_values(["flow", "t_ms"], kind="stable")
    gap = frame.groupby("flow", sort=False)["t_ms"].diff()
    out = frame.assign(gap_ms=gap).dropna(subset=["gap_ms"])
    return out[["flow", "gap_ms"]].reset_index(drop=True)


def throughput_cv(times_s: Iterable[float], bytes_: Iterable[float], bin_s: float = 0.05) -> float:
    """S2: coefficient of variation (SD/mean) of throughput in ``bin_s`` bins (50 ms),
    from per-packet times and sizes (e.g. the sojourn trace), bins from the first
    packet's bin to the last's, empty bins counting as 0."""
    t = np.asarray(list(times_s), dtype=float)
    b = np.asarray(list(bytes_), dtype=float)
    if t.size == 0:
        return float("nan")
    index = np.floor(t / bin_s).astype(np.int64)
    index -= index.min()
    per_bin = np.bincount(index, weights=b)
    mean = per_bin.mean()
    return float(per_bin.std() / mean) if mean > 0 else float("nan")


def normalised_goodput(goodput_mbps: float | np.ndarray, capacity_mbps: float) -> float | np.ndarray:
    """S2: goodput as a fraction of the bottleneck capacity."""
    return np.asarray(goodput_mbps, dtype=float) / capacity_mbps


def efficiency_bins(requests: pd.DataFrame, base: float = 3.0, by: str | None = "cc") -> pd.DataFrame:
    """The DualQ paper's §IV-F (Figure 9 right, Figure 11 top): completion efficiency of the
    completed requests in log-``base`` size bins, with its mean, P1 and P99 per bin
    (and per ``by`` group). ``size_lo``/``size_hi`` are each bin's bounds in bytes."""
    done = requests[requests["fct_s"].notna()].copy()
    if done.empty:
        return pd.DataFrame(columns=["size_lo", "size_hi", "count", "mean", "p1", "p99"])
    done["bin"] = np.floor(np.log(done["size_bytes"].astype(float)) / np.log(base)).astype(int)
    keys = [by, "bin"] if by else ["bin"]
    rows = []
    for key, group in done.groupby(keys):
        key = key if isinstance(key, tuple) else (key,)
        e = group["efficiency"].to_numpy(dtype=float)
        k = key[-1]
        row = dict(zip(keys[:-1], key[:-1], strict=True))
        row.update(
            size_lo=base**k,
            size_hi=base ** (k + 1),
            count=len(e),
            mean=float(e.mean()),
            p1=float(np.percentile(e, 1)),
            p99=float(np.percentile(e, 99)),
        )
        rows.append(row)
    return pd.DataFrame(rows)


def timeout_stripes(requests: pd.DataFrame, by: str | None = "cc") -> pd.DataFrame:
    """The FCT scatter's horizontal stripes (DualQ paper §IV-F): the share of completed
    requests that waited for a SYN timeout (≥ 1 handshake retransmission: the 1 s
    stripe) and of those whose FCT exceeds the ideal by 0.2–0.9 s without one (the
    tail-loss RTO stripe, ≈ 0.3 s = the 200 ms minimum RTO plus the RTT)."""
    done = requests[requests["fct_s"].notna()].copy()
    # The no-loss floor of a request is 2 RTTs (handshake, request/response) plus the
    # transfer; ideal_fct_s holds 1 RTT + the transfer.
    extra = done["fct_s"] - (done["ideal_fct_s"] + done["base_rtt_s"])
    done["syn_stripe"] = done["syn_retransmits"] > 0
    done["tail_stripe"] = (~done["syn_stripe"]) & (extra > 0.2) & (extra < 0.9)
    keys = [by] if by else []
    if keys:
        return done.groupby(keys)[["syn_stripe", "tail_stripe"]].mean().reset_index()
    return done[["syn_stripe", "tail_stripe"]].mean().to_frame().T


def connection_ordinals(sojourn: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """The sojourn trace with each web connection's packets numbered in departure order.

    ``sojourn`` is a run's per-packet trace (``time_s``, ``flow``, ``class``,
    ``sojourn_ms``; ``trace_sojourn = true``), ``requests`` its request table. Web
    connections reuse flow slots, so a packet belongs to the request of its slot that
    started last before the packet left (``request`` and ``cc`` added; NaN for the long
    flows, whose slots no request uses; ``request`` is ``source·2^32 + id``). ``ordinal``
    counts the connection's packets at the bottleneck from 0: the server's SYN-ACK is 0 and the initial window 1-10 with
    Linux's ``TCP_INIT_CWND`` (``include/net/tcp.h``), sent unpaced because
    ``tcp_update_skb_after_send`` (``net/ipv4/tcp_output.c``) advances ``tcp_wstamp_ns``
    only once ``data_segs_out >= 10``."""
    trace = sojourn.sort_values("time_s", kind="stable").reset_index(drop=True)
    starts = requests[["flow", "start_s", "source", "id", "cc"]].rename(columns={"start_s": "_start"})
    # A request is (source, id): each source numbers its own from 0.
    starts["request"] = starts["source"].astype(np.int64) * (1 << 32) + starts["id"].astype(np.int64)
    starts = starts.drop(columns=["source", "id"]).sort_values("_start", kind="stable")
    web_slots = set(starts["flow"].unique())
    is_web = trace["flow"].isin(web_slots)
    web = pd.merge_asof(trace[is_web], starts, left_on="time_s", right_on="_start", by="flow", direction="backward")
    web["ordinal"] = web.groupby("request", dropna=False).cumcount()
    other = trace[~is_web].assign(request=np.nan, cc=None, ordinal=np.nan)
    cols = list(trace.columns) + ["request", "cc", "ordinal"]
    return pd.concat([web[cols], other[cols]], ignore_index=True).sort_values("time_s", kind="stable")


def delay_attribution(
    sojourn: pd.DataFrame, requests: pd.DataFrame, queue: str = "L", threshold_ms: float = 1.0, flight: int = 10
) -> dict[str, float]:
    """Which packets make a queue's delay tail (DualQ paper §IV-F: under high web load the L
    queue's P99 below 1 ms). Of the packets of ``queue`` whose sojourn exceeds
    ``threshold_ms``: the share from long flows, from the first ``flight`` + 1 packets of a
    web connection (SYN-ACK and the unpaced initial window) and from its later, paced
    packets (slow start); with the queue's P99 and the share of its packets above the
    threshold."""
    trace = connection_ordinals(sojourn, requests)
    q = trace[trace["class"] == queue]
    high = q[q["sojourn_ms"] > threshold_ms]
    n = len(high)
    web = high["ordinal"].notna()
    first = web & (high["ordinal"] <= flight)
    share = (lambda mask: float(mask.sum()) / n) if n else (lambda mask: float("nan"))
    return {
        "packets": float(len(q)),
        "p99_ms": float(np.percentile(q["sojourn_ms"], 99)) if len(q) else float("nan"),
        "above": float(n) / len(q) if len(q) else float("nan"),
        "long_flows": share(~web),
        "first_flight": share(first),
        "later": share(web & ~first),
        "first_flight_of_all": float((q["ordinal"] <= flight).mean()) if len(q) else float("nan"),
    }
