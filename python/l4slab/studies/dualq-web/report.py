"""Report sections of dualq-web (DualQ paper §IV-F, Figures 9-11): the long flows plus web
traffic per CC at 120 Mbit/s, 10 ms, under low and high load, on DualPI2, PIE and FQ-CoDel.

* Figure 10: the complementary CDF of queue delay (log scale) per AQM and queue under high
  load, drawn from each run's sojourn percentiles (P50, P90, P99, P99.9, max: the engine keeps
  per-queue percentiles, not every packet, in a study's store);
* Figure 11 (top): completion efficiency (ideal FCT / FCT; ideal = one handshake RTT + the
  size at the link rate) in log-3 size bins, mean with the P1-P99 range, per CC and AQM;
* Figure 9 (left): the FCT scatter of the high-load DualPI2 run, with the 1 s (SYN timeout)
  and ~0.3 s (tail-loss RTO) stripes counted per CC.

The per-request records come from the study's run files (``StudyData.requests``). The
paper's statements: the L queue's P99 stays below 1 ms under high load and an order of
magnitude below PIE and FQ-CoDel at the higher percentiles; short (< 50 kB) Prague responses
complete more efficiently than short CUBIC ones; CUBIC's scatter shows both stripes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.paper_metrics import efficiency_bins, timeout_stripes
from l4slab.analysis.seed_studies import AQM_ORDER, aqm_label, points_figure
from l4slab.study.markdown import markdown_table
from matplotlib.figure import Figure

LOAD = "sources_0_rate"
#: The classes table's percentiles: column → P(delay > value).
PERCENTILES = {"p50_ms": 0.5, "p90_ms": 0.1, "p99_ms": 0.01, "p999_ms": 0.001, "max_ms": None}
#: Why the high-load L P99 exceeds the paper's 1 ms (tests/python/test_study_seed_statements.py
#: pins it with the sojourn trace; analysis.paper_metrics.delay_attribution computes it).
WHY_L_P99 = (
    "Why the L queue's P99 exceeds 1 ms here: the tail is made by the Prague web connections' first "
    "flights. Linux does not pace a connection's first 10 segments (net/ipv4/tcp_output.c: "
    "tcp_update_skb_after_send advances tcp_wstamp_ns only once data_segs_out >= 10; the engine does the "
    "same), so each response's initial window enters the L queue back to back: 10 packets are 1 ms at 120 "
    "Mbit/s, and at 300 new Prague connections per second first flights overlap. In `l4slab run "
    "examples/web/dualq-high-web.toml` with `trace_sojourn = true` (seeds 1-3, 10 s), the SYN-ACK and "
    "initial-window packets are 25-28 % of the L queue's packets but 47-50 % of those above 1 ms; the "
    "long Prague flow's own packets queued behind them are 23-30 %, later (paced, slow-start) web packets "
    "the rest. Without the Prague web traffic the L queue's P99 is 0.19 ms (2 packets); at half the web "
    "load (the paper's rate read as both pairs together) it is 1.09 ms, at low load 0.63 ms. The paper does "
    "not say how its web servers sent their first flight; the simulation follows Linux, so it is the one "
    "to trust for an initial window of 10 unpaced segments."
)
#: The DualQ paper's §IV-F: short responses are those below 50 kB.
SHORT_BYTES = 50_000


def _load_name(value: object) -> str:
    text = str(value)
    return "high" if text.startswith("10/") else ("low" if text.startswith("1/") else text)


def ccdf_points(classes: pd.DataFrame) -> pd.DataFrame:
    """Per run and queue: (delay, P(delay > x)) from the sojourn percentiles; the max's
    probability is 1/count (one packet above it none)."""
    rows = []
    for data in classes.to_dict("records"):
        for column, tail in PERCENTILES.items():
            value = data.get(column)
            if value is None or pd.isna(value):
                continue
            p = tail if tail is not None else 1.0 / max(1.0, float(data.get("count") or 1))
            rows.append({"run_id": data["run_id"], "class": data["class"], "delay_ms": float(value), "tail": p})
    return pd.DataFrame(rows)


def delay_section(data, out: Path) -> list[str]:
    """Figure 10: queue delay CCDF per AQM and queue, high load (and low, dashed)."""
    classes = data.classes
    if classes.empty or LOAD not in classes.columns:
        return []
    classes = classes.assign(aqm=classes["bottleneck_qdisc"].map(aqm_label), load=classes[LOAD].map(_load_name))
    points = ccdf_points(classes).merge(classes[["run_id", "class", "aqm", "load"]], on=["run_id", "class"])
    fig = Figure(figsize=(6.0, 4.0), layout="constrained")
    ax = fig.add_subplot()
    for k, ((aqm, queue), part) in enumerate(points.groupby(["aqm", "class"], sort=True)):
        for load, style in (("high", "-"), ("low", ":")):
            one = part[part["load"] == load].sort_values("delay_ms")
            if one.empty:
                continue
            name = f"{aqm} {queue}" if queue != "all" else aqm
            ax.plot(one["delay_ms"], one["tail"], style, marker="o", markersize=3, color=f"C{k}",
                    label=f"{name}, {load} load")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlabel("queue delay (ms)")
    ax.set_ylabel("P(delay > x)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("120 Mbit/s, 10 ms: queue delay CCDF (from P50/P90/P99/P99.9/max)", fontsize=9)
    figures.save(fig, out / "web_delay_ccdf")
    table = classes.pivot_table(index=["aqm", "class"], columns="load", values=["mean_ms", "p99_ms", "p999_ms"])
    table.columns = [f"{stat} {load}" for stat, load in table.columns]
    lines = ["## Web traffic: queue delay (DualQ paper Figure 10)", "", "![queue delay CCDF](web_delay_ccdf.png)", ""]
    lines += ["Per queue (ms):", "", markdown_table(table.reset_index().round(3)), ""]
    high_l = classes[(classes["class"] == "L") & (classes["load"] == "high")]
    if not high_l.empty:
        others = classes[(classes["aqm"] != "DualPI2") & (classes["load"] == "high")]
        ratio = others["p99_ms"].min() / high_l["p99_ms"].max() if not others.empty else np.nan
        lines += [
            f"High load: L queue P99 {high_l['p99_ms'].max():.2f} ms (paper: below 1 ms); the lowest P99 of PIE and "
            f"FQ-CoDel is {ratio:.1f}× that (paper: an order of magnitude).",
            "",
        ]
        if high_l["p99_ms"].max() > 1.0:
            lines += [WHY_L_P99, ""]
    return lines


def efficiency_section(data, out: Path) -> list[str]:
    """Figure 11 (top) and Figure 9: completion efficiency per size bin, FCT scatter, stripes."""
    requests = data.requests()
    if requests.empty:
        return [
            "## Web traffic: completion efficiency",
            "",
            "No request table in this study's run files (runs written before request tables were stored: "
            "re-run them into a new directory).",
            "",
        ]
    requests = requests.assign(aqm=requests["bottleneck_qdisc"].map(aqm_label), load=requests[LOAD].map(_load_name))
    # Source 0 is flow type A's web traffic (Prague, or ECN-CUBIC on PIE and FQ-CoDel), source 1
    # B's (CUBIC): name them so, whatever a request negotiated (a lost ECN SYN falls back).
    requests["cc"] = [
        ("Prague" if str(cc).startswith("prague") else "ECN-CUBIC")
        if src == 0
        else str(cc).upper()
        if cc == "cubic"
        else str(cc)
        for src, cc in zip(requests["source"], requests["cc"], strict=True)
    ]
    lines = ["## Web traffic: flow completion (DualQ paper Figures 9 and 11)", ""]
    bins = []
    for (aqm, load), part in requests.groupby(["aqm", "load"], sort=False):
        frame = efficiency_bins(part)
        frame["aqm"], frame["load"] = aqm, load
        bins.append(frame)
    bins = pd.concat(bins, ignore_index=True)
    bins["size"] = bins["size_lo"].map(lambda b: f"{b / 1000:.3g}k")
    bins["panel"] = bins["aqm"] + ", " + bins["load"] + " load"
    order = [f"{b / 1000:.3g}k" for b in sorted(set(bins["size_lo"]))]
    panels = [f"{a}, {load} load" for load in ("high", "low") for a in AQM_ORDER]
    fig = points_figure(bins, x="size", y="mean", low="p1", high="p99", panel="panel", series="cc", order=order,
                        panels=panels, ylabel="completion efficiency (mean, P1-P99)", xlabel="size bin (from, bytes)",
                        hlines=(1.0,))  # fmt: skip
    figures.save(fig, out / "web_efficiency")
    lines += ["![completion efficiency](web_efficiency.png)", ""]
    scatter = requests[(requests["aqm"] == "DualPI2") & (requests["load"] == "high") & requests["fct_s"].notna()]
    if scatter.empty:
        scatter = requests[requests["fct_s"].notna()]
    fig = Figure(figsize=(6.0, 4.0), layout="constrained")
    ax = fig.add_subplot()
    for k, (cc, part) in enumerate(scatter.groupby("cc", sort=True)):
        ax.scatter(part["size_bytes"], part["fct_s"], s=2, alpha=0.4, color=f"C{k}", label=str(cc))
    ideal = scatter.sort_values("size_bytes")
    ax.plot(ideal["size_bytes"], ideal["ideal_fct_s"], color="green", linewidth=1, label="ideal")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("response size (B)")
    ax.set_ylabel("flow completion time (s)")
    ax.legend(fontsize=7, markerscale=4)
    ax.set_title("FCT scatter, DualPI2, high load", fontsize=9)
    figures.save(fig, out / "web_fct_scatter")
    lines += ["![FCT scatter](web_fct_scatter.png)", ""]
    short = requests[(requests["size_bytes"] < SHORT_BYTES) & requests["fct_s"].notna()]
    summary = short.groupby(["aqm", "load", "cc"], sort=False)["efficiency"].agg(
        mean="mean", p1=lambda e: float(np.percentile(e, 1)), count="count").reset_index()  # fmt: skip
    stripes = pd.concat(
        [timeout_stripes(part).assign(aqm=aqm, load=load) for (aqm, load), part in requests.groupby(["aqm", "load"])]
    )
    summary = summary.merge(stripes, on=["aqm", "load", "cc"], how="left")
    lines += [
        f"Short responses (< {SHORT_BYTES // 1000} kB): completion efficiency (mean, P1) and the share of all "
        "completed requests in the 1 s SYN-timeout and ~0.3 s tail-RTO stripes:",
        "",
        markdown_table(summary.round(3)),
        "",
    ]
    return lines


SECTIONS = (delay_section, efficiency_section)
