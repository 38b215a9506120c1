"""Report sections of s2-many-flows (S2 §5.2, Figures 6 and 9): 10/15/20 Prague flows on a
10 Mbit/s DualPI2 bottleneck at one base RTT of 5-80 ms, per segment-sizing scheme.

Figure 6: packet size (mean, with the SD over flows) per scheme against the base RTT, one
panel per flow count; Figure 9: throughput CV (sigma/mu of each flow's throughput over 50 ms
bins, averaged over the flows, median over the runs). S2's reading: more flows give smaller
packets; the pacing-rate schemes keep packet sizes more consistent across RTTs than the
default (which follows RTT); retransmissions are negligible. Figure 8, inter-packet gaps:
the study's runs keep no per-packet times, so the section re-runs trial 0 of the 10- and
20-flow points at one RTT (40 ms if planned) for ``GAP_RUN_S`` with the bottleneck's sojourn
trace and takes each flow's gaps (``analysis.paper_metrics.flow_gaps``): between its
departures from the bottleneck and between its arrivals there (the sender's spacing). S2's
reading: at 10 flows all schemes give similar gaps; at 20 the default behaves like the fixed
MSS and the pacing-rate schemes give smaller gaps through smaller packets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.paper_metrics import flow_gaps
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


#: Length of the companion runs that trace per-packet times for Figure 8 (warm-up as planned).
GAP_RUN_S = 20.0


def gap_runs(data, rtt: str = "40ms", counts=(10, 20)) -> pd.DataFrame:
    """Figure 8's data: per (flow count, scheme) at ``rtt`` (else the largest RTT planned), trial
    0's engine config re-run for ``GAP_RUN_S`` with ``trace_sojourn``; each flow's gaps after the
    warm-up, at the bottleneck's output (``where = departure``) and input (``arrival``)."""
    from l4slab import engine
    from l4slab.results import RunResult
    from l4slab.scenario import scenario_from_dict
    from l4slab.study import store

    plan = store.load_plan(Path(data.directory))
    if not plan:
        return pd.DataFrame()
    points = [p for p in plan["points"] if p["factors"].get(COUNT) in counts]
    planned = {p["factors"].get(RTT) for p in points}
    if rtt not in planned:
        by_ms = sorted((float(str(r).rstrip("ms")), r) for r in planned if str(r).endswith("ms"))
        if not by_ms:
            return pd.DataFrame()
        rtt = by_ms[-1][1]
    seeds = {r["point"]: r["seed"] for r in plan["runs"] if r["trial"] == 0}
    frames = []
    for k, point in enumerate(plan["points"]):
        if point not in points or point["factors"].get(RTT) != rtt or k not in seeds:
            continue
        config = dict(point["config"], seed=seeds[k], trace_sojourn=True)
        config["duration_ns"] = int(config.get("warmup_ns", 0) + GAP_RUN_S * 1e9)
        raw, _ = engine.simulate(config)
        scenario = scenario_from_dict({**point["scenario"], "seed": config["seed"]})
        trace = RunResult(scenario=scenario, config=config, raw=raw, wall_s=0.0, engine_version="").sojourn
        if trace is None or trace.empty:
            continue
        trace = trace[trace["time_s"] >= config.get("warmup_ns", 0) / 1e9]
        scheme = scheme_of(point["factors"].get(PARAMS))
        for where, at in (("departure", "bottleneck"), ("arrival", "arrival")):
            gaps = flow_gaps(trace, at=at)
            frames.append(gaps.assign(flows=int(point["factors"][COUNT]), scheme=scheme, where=where, rtt=rtt))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def gaps_section(data, out: Path) -> list[str]:
    gaps = gap_runs(data)
    if gaps.empty:
        return []
    rtt = gaps["rtt"].iloc[0]
    summary = (
        gaps.groupby(["flows", "scheme", "where"], sort=False)["gap_ms"]
        .agg(median="median", p90=lambda g: float(np.percentile(g, 90)), mean="mean")
        .reset_index()
    )
    summary["label"] = summary["flows"].astype(str) + " flows"
    dep = summary[summary["where"] == "departure"]
    schemes = [s for s in SCHEMES if s in set(dep["scheme"])]
    dep = dep.assign(low=dep["median"], high=dep["p90"])
    fig = points_figure(dep, x="scheme", y="median", low="low", high="high", panel="label", series="where",
                        order=schemes, ylabel="inter-packet gap (ms): median to P90", xlabel="scheme")  # fmt: skip
    figures.save(fig, out / "many_flows_gaps")
    table = summary.pivot_table(index=["flows", "where"], columns="scheme", values="median").reindex(columns=schemes)
    return [
        f"## Inter-packet gaps (S2 Figure 8), {rtt}, one {GAP_RUN_S:.0f}-s run per point", "",
        "![inter-packet gaps](many_flows_gaps.png)", "",
        "Median gap between a flow's consecutive packets (ms), at the bottleneck's output (departure) "
        "and input (arrival: the sender's spacing):", "",
        markdown_table(table.reset_index().round(2)), "",
    ]  # fmt: skip


SECTIONS = (many_flows_section, gaps_section)
