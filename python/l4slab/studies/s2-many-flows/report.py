"""Report sections of s2-many-flows (S2 §5.2, Figures 6 and 9): 10/15/20 Prague flows on a
10 Mbit/s DualPI2 bottleneck at one base RTT of 5-80 ms, per segment-sizing scheme.

Figure 6: packet size (mean, with the SD over flows) per scheme against the base RTT, one
panel per flow count; Figure 9: throughput CV (sigma/mu of each flow's throughput over 50 ms
bins, averaged over the flows, median over the runs). S2's reading: more flows give smaller
packets; the pacing-rate schemes keep packet sizes more consistent across RTTs than the
default (which follows RTT); retransmissions are negligible. Inter-packet gaps (Figure 8) need
per-packet times: run a point with ``trace_sojourn = true`` and use
``analysis.paper_metrics.inter_packet_gaps`` on its sojourn trace.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.seed_studies import points_figure, segment_scheme
from l4slab.study.markdown import markdown_table

COUNT, RTT, PARAMS = "flows_0_count", "flows_0_rtt", "flows_0_cc_params"
RTTS = ("5ms", "10ms", "20ms", "40ms", "80ms")
SCHEMES = ("default", "fixed", "linear", "exponential", "logarithmic")


#: The scheme named by a ``cc_params`` value (kept under its old name for callers).
scheme_of = segment_scheme


def packet_sizes(flows: pd.DataFrame) -> pd.DataFrame:
    """Per flow count, RTT and scheme: mean payload (bytes) over flows and trials, the SD of
    the per-flow means, the mean within-flow SD, and retransmissions per 1000 packets."""
    frame = flows.assign(scheme=flows[PARAMS].map(scheme_of))
    grouped = frame.groupby([COUNT, RTT, "scheme"], sort=False)
    out = grouped.agg(
        payload=("mean_payload_bytes", "mean"),
        payload_sd_flows=("mean_payload_bytes", "std"),
        payload_sd=("payload_sd_bytes", "mean"),
        retransmits=("retransmits", "sum"),
        packets=("packets_sent", "sum"),
        srtt_ms=("mean_srtt_ms", "mean"),
    ).reset_index()
    out["retx_per_1000"] = 1000.0 * out["retransmits"] / out["packets"].where(out["packets"] > 0)
    out["low"] = out["payload"] - out["payload_sd"]
    out["high"] = out["payload"] + out["payload_sd"]
    return out


def throughput_cv(data, skip_s: float = 10.0) -> pd.DataFrame:
    """S2's throughput CV: per flow, sigma/mu of its throughput in the series bins (the
    study's bins are 50 ms) after ``skip_s`` (the study's warm-up) and before the last,
    partial bin, averaged over the run's flows; then the median over trials per flow count,
    RTT and scheme."""
    runs = data.runs[data.runs["status"] == "done"]
    if runs.empty:
        return pd.DataFrame()
    series = data.series("flow_series", runs["run_id"].tolist())
    rows = []
    for rid, run in series.groupby("run_id", sort=False):
        end = float(run["time_s"].max())
        kept = run[(run["time_s"] >= skip_s) & (run["time_s"] < end)]
        run = kept if not kept.empty else run
        per_flow = run.groupby("flow")["throughput_mbps"].agg(["mean", "std"])
        cv = (per_flow["std"] / per_flow["mean"].where(per_flow["mean"] > 0)).mean()
        rows.append({"run_id": rid, "cv": float(cv)})
    cvs = pd.DataFrame(rows).merge(runs[["run_id", COUNT, RTT, PARAMS]], on="run_id")
    cvs["scheme"] = cvs[PARAMS].map(scheme_of)
    return cvs.groupby([COUNT, RTT, "scheme"], sort=False)["cv"].median().reset_index()


def many_flows_section(data, out: Path) -> list[str]:
    flows = data.flows
    if flows.empty or COUNT not in flows.columns:
        return []
    sizes = packet_sizes(flows)
    order = [r for r in RTTS if r in set(sizes[RTT])]
    sizes["flows"] = sizes[COUNT].astype(int).astype(str) + " flows"
    lines = ["## Many Prague flows: packet sizes and throughput stability (S2 Figures 6 and 9)", ""]
    fig = points_figure(sizes, x=RTT, y="payload", low="low", high="high", panel="flows", series="scheme",
                        order=order, ylabel="payload per packet (B), ±SD", xlabel="base RTT")  # fmt: skip
    figures.save(fig, out / "many_flows_packet_size")
    lines += ["![packet size](many_flows_packet_size.png)", ""]
    cv = throughput_cv(data)
    if not cv.empty:
        cv["flows"] = cv[COUNT].astype(int).astype(str) + " flows"
        fig = points_figure(cv, x=RTT, y="cv", panel="flows", series="scheme", order=order,
                            ylabel="throughput CV (50 ms bins)", xlabel="base RTT")  # fmt: skip
        figures.save(fig, out / "many_flows_cv")
        lines += ["![throughput CV](many_flows_cv.png)", ""]
    table = sizes.pivot_table(index=[COUNT, "scheme"], columns=RTT, values="payload").reindex(columns=order)
    lines += ["Mean payload per packet (bytes):", "", markdown_table(table.reset_index().round(0)), ""]
    retx = sizes["retx_per_1000"].replace([np.inf], np.nan)
    lines += [
        f"Retransmissions: {retx.max():.2f} per 1000 packets at most (S2: negligible); mean sRTT "
        f"{sizes['srtt_ms'].min():.1f}–{sizes['srtt_ms'].max():.1f} ms.",
        "",
    ]
    return lines


SECTIONS = (many_flows_section,)
