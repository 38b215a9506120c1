"""Report sections of dualq-basic (DualQ paper §IV-C, Figure 6): one long flow per CC with equal
base RTTs, 4-200 Mbit/s x 5-100 ms, on DualPI2 (Prague + CUBIC), PIE and FQ-CoDel (ECN-CUBIC
+ CUBIC).

Figure 6's rows against the base RTT, one line per link rate, one panel per AQM: queue delay
mean and P99 of each queue (linear, and the L queue on a log scale), utilisation, the A:B
rate and window ratios (App. B: W = r·(queue delay + base RTT)), and the mark/drop
probability. The paper's reading: DualPI2's L-queue mean is about one packet's serialisation
time and its P99 2-3 packets'; CUBIC's C queue stays near the 15 ms target; the Prague:CUBIC
rate ratio stays within 0.85-2.5 except at the smallest BDP (4 Mbit/s, 5 ms).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.metrics import probability
from l4slab.analysis.paper_metrics import window_bytes
from l4slab.analysis.seed_studies import AQM_ORDER, aqm_label, points_figure
from l4slab.study.markdown import markdown_table

RATE, RTT = "bottleneck_rate", "flows_0_rtt"
RTTS = ("5ms", "10ms", "20ms", "50ms", "100ms")
#: A full-size frame on the wire (1514 B): one packet's serialisation time is 8·1514/rate.
FRAME_BITS = 1514 * 8


def grid(data) -> pd.DataFrame:
    """One row per run: AQM, rate, RTT, the sojourn of A's and B's queues (mean, P99), the
    serialisation time of one packet, utilisation, rate and window ratios, and the mark and
    drop probabilities of all packets."""
    flows, bottleneck, classes = data.flows, data.bottleneck, data.classes.set_index(["run_id", "class"])
    rows = []
    for rid, run in flows.groupby("run_id", sort=False):
        a, b = run[run["label"] == "A"], run[run["label"] == "B"]
        if a.empty or b.empty:
            continue
        fa, fb = a.iloc[0], b.iloc[0]
        neck = bottleneck[bottleneck["run_id"] == rid].iloc[0]
        aqm = aqm_label(fa["bottleneck_qdisc"])
        qa, qb = ("L", "C") if aqm == "DualPI2" else ("all", "all")

        def stat(queue, column, rid=rid):
            key = (rid, queue)
            return float(classes.loc[key, column]) if key in classes.index else np.nan

        row = {"run_id": rid, "aqm": aqm, "rate": str(fa[RATE]), "rtt": str(fa[RTT]),
               "rate_mbps": float(neck["rate_mbps"]), "utilisation": float(neck["utilisation"])}  # fmt: skip
        row.update(a_mean_ms=stat(qa, "mean_ms"), a_p99_ms=stat(qa, "p99_ms"), b_mean_ms=stat(qb, "mean_ms"),
                   b_p99_ms=stat(qb, "p99_ms"))  # fmt: skip
        row["packet_ms"] = FRAME_BITS / (row["rate_mbps"] * 1e6) * 1e3
        row["rate_ratio"] = float(fa["throughput_mbps"] / fb["throughput_mbps"])
        wa = window_bytes(fa["throughput_mbps"] * 1e6, row["a_mean_ms"] / 1e3, fa["base_rtt_ms"] / 1e3)
        wb = window_bytes(fb["throughput_mbps"] * 1e6, row["b_mean_ms"] / 1e3, fb["base_rtt_ms"] / 1e3)
        row["window_ratio"] = float(wa / wb)
        arrivals = float(neck["packets_delivered"]) + float(neck["drops"])
        row["mark_prob"] = float(probability(neck["marks"], arrivals))
        row["drop_prob"] = float(probability(neck["drops"], arrivals))
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    numeric = [c for c in frame.columns if c not in ("run_id", "aqm", "rate", "rtt")]
    return frame.groupby(["aqm", "rate", "rtt"], sort=False)[numeric].mean().reset_index()


def basic_section(data, out: Path) -> list[str]:
    if data.flows.empty or RATE not in data.flows.columns:
        return []
    frame = grid(data)
    if frame.empty:
        return []
    frame["link"] = frame["rate"].astype(str)
    frame = frame.sort_values("rate_mbps")
    order = [r for r in RTTS if r in set(frame["rtt"])]
    panels = [a for a in AQM_ORDER if a in set(frame["aqm"])]
    lines = ["## Basic grid (DualQ paper Figure 6)", ""]
    plots = (
        ("a_mean_ms", "A's queue: mean delay (ms)", True, ()),
        ("a_p99_ms", "A's queue: P99 delay (ms)", True, ()),
        ("b_mean_ms", "B's queue: mean delay (ms)", False, (15.0,)),
        ("utilisation", "utilisation", False, (1.0,)),
        ("rate_ratio", "rate ratio A:B", True, (0.85, 2.5)),
        ("window_ratio", "window ratio A:B", True, (1.0,)),
        ("mark_prob", "mark probability", True, ()),
        ("drop_prob", "drop probability", True, ()),
    )
    for column, label, logy, hlines in plots:
        part = frame.dropna(subset=[column])
        if logy:
            part = part[part[column] > 0]
        if part.empty:
            continue
        fig = points_figure(part, x="rtt", y=column, panel="aqm", series="link", order=order, panels=panels,
                            ylabel=label, xlabel="base RTT", logy=logy, hlines=hlines)  # fmt: skip
        figures.save(fig, out / f"basic_{column}")
        lines += [f"![{label}](basic_{column}.png)", ""]
    l4s = frame[frame["aqm"] == "DualPI2"].copy()
    if not l4s.empty:
        l4s["mean in packets"] = l4s["a_mean_ms"] / l4s["packet_ms"]
        l4s["P99 in packets"] = l4s["a_p99_ms"] / l4s["packet_ms"]
        table = l4s.pivot_table(index="link", columns="rtt", values=["mean in packets", "P99 in packets"])
        table = table.reindex(columns=order, level=1)
        table.columns = [f"{stat} {rtt}" for stat, rtt in table.columns]
        lines += [
            "DualPI2's L queue in packets' serialisation times (paper: mean about 1, P99 2-3):",
            "",
            markdown_table(table.reset_index().round(2)),
            "",
        ]
        ratio = frame[frame["aqm"] == "DualPI2"].pivot_table(index="link", columns="rtt", values="rate_ratio")
        lines += [
            "Prague:CUBIC rate ratio (paper: 0.85-2.5 except the smallest BDP):",
            "",
            markdown_table(ratio.reindex(columns=order).reset_index().round(2)),
            "",
        ]
    return lines


SECTIONS = (basic_section,)
