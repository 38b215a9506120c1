"""Report sections of s2-segment-sizing (S2 §5.1, Figures 2-4 and 7): one Prague flow on a
0.1-1 Mbit/s DualPI2 bottleneck at 5, 20 or 80 ms base RTT, per segment-sizing scheme.

Figure 2: payload per packet (mean ± the within-flow SD) against the link rate, one panel
per RTT; Figure 3: retransmissions per 1000 packets; Figure 4: mean sRTT; Figure 7: goodput
normalised by the link rate (Figure 5's packets and ACKs per RTT are not drawn). S2's
reading: the default rule keeps packets near the MSS at low rates, the pacing-rate-driven
schemes (linear, exponential, logarithmic) shrink them with the rate, cut retransmissions by
more than 20× and keep the RTT near the base, at the cost of header overhead (lower
normalised goodput at the lowest rates).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from l4slab import units
from l4slab.analysis import figures
from l4slab.analysis.paper_metrics import normalised_goodput
from l4slab.analysis.seed_studies import points_figure, segment_scheme
from l4slab.study.markdown import markdown_table

RATE, RTT, PARAMS = "bottleneck_rate", "flows_0_rtt", "flows_0_cc_params"


def point_table(flows: pd.DataFrame) -> pd.DataFrame:
    """Per link rate, RTT and scheme, over the trials: mean payload and within-flow SD
    (bytes), retransmissions per 1000 packets, mean sRTT (ms) and the goodput as a fraction
    of the link rate."""
    flows = flows[flows["kind"] == "tcp"] if "kind" in flows.columns else flows
    frame = flows.assign(scheme=flows[PARAMS].map(segment_scheme))
    frame["rate_mbps"] = frame[RATE].map(lambda r: units.parse_rate(str(r)) / 1e6)
    grouped = frame.groupby([RATE, RTT, "scheme"], sort=False)
    out = grouped.agg(
        rate_mbps=("rate_mbps", "first"),
        payload=("mean_payload_bytes", "mean"),
        payload_sd=("payload_sd_bytes", "mean"),
        retransmits=("retransmits", "sum"),
        packets=("packets_sent", "sum"),
        srtt_ms=("mean_srtt_ms", "mean"),
        goodput_mbps=("goodput_mbps", "mean"),
    ).reset_index()
    out["retx_per_1000"] = 1000.0 * out["retransmits"] / out["packets"].where(out["packets"] > 0)
    out["goodput_norm"] = normalised_goodput(out["goodput_mbps"], out["rate_mbps"])
    out["low"] = out["payload"] - out["payload_sd"]
    out["high"] = out["payload"] + out["payload_sd"]
    return out.sort_values(["rate_mbps", RTT, "scheme"])


def segment_sizing_section(data, out: Path) -> list[str]:
    flows = data.flows
    if flows.empty or RATE not in flows.columns or PARAMS not in flows.columns:
        return []
    table = point_table(flows)
    order = list(dict.fromkeys(table[RATE]))
    rtts = sorted(set(table[RTT]), key=lambda r: units.parse_time(str(r)))
    table["panel"] = "RTT " + table[RTT].astype(str)
    panels = [f"RTT {r}" for r in rtts]
    lines = ["## One Prague flow at 0.1-1 Mbit/s: segment sizes, retransmissions, RTT (S2 Figures 2-4, 7)", ""]
    plots = (
        ("payload", "payload per packet (B), ±SD", "s2_packet_size", "low", "high", False),
        ("retx_per_1000", "retransmissions per 1000 packets", "s2_retransmissions", None, None, False),
        ("srtt_ms", "mean sRTT (ms)", "s2_srtt", None, None, False),
        ("goodput_norm", "goodput / link rate", "s2_goodput", None, None, False),
    )
    for y, label, name, low, high, logy in plots:
        fig = points_figure(table, x=RATE, y=y, low=low, high=high, panel="panel", series="scheme", order=order,
                            panels=panels, ylabel=label, xlabel="link rate", logy=logy)  # fmt: skip
        figures.save(fig, out / name)
        lines += [f"![{label}]({name}.png)", ""]
    pivot = table.pivot_table(index=[RTT, "scheme"], columns=RATE, values="payload").reindex(columns=order)
    pivot = pivot.reindex(sorted(pivot.index, key=lambda key: (units.parse_time(str(key[0])), key[1])))
    lines += ["Mean payload per packet (bytes):", "", markdown_table(pivot.reset_index().round(0)), ""]
    retx = table.groupby("scheme")["retx_per_1000"].mean()
    if "default" in retx.index and retx.drop("default").notna().any():
        best = retx.drop(["default", "fixed"], errors="ignore")
        if not best.empty and best.min() > 0:
            lines += [
                f"Retransmissions per 1000 packets, mean over the grid: default {retx['default']:.2f}, "
                + ", ".join(f"{k} {v:.2f}" for k, v in best.items())
                + f" (default / best pacing-rate scheme = {retx['default'] / best.min():.1f}×; S2: more than 20×).",
                "",
            ]
    return lines


SECTIONS = (segment_sizing_section,)
