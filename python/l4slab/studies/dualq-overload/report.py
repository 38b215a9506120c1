"""Report sections of dualq-overload (DualQ paper §IV-G, Figure 12): 5 Prague + 5 CUBIC flows
and one unresponsive UDP flow at 50-200 % of a 100 Mbit/s DualPI2 link, the UDP flow in the L
queue (ECT(1)) or the C queue (Not-ECT).

Figure 12's rows, against the UDP's nominal rate, for each UDP class: the rate share per
flow type, the queue delay (mean, P99) of both queues, and the mark and drop probabilities.
The paper's reading: targeting the L queue hardly increases the UDP's share; below 100 % the
UDP's class does not matter to the responsive flows; at >= 100 % in the L queue the L delay
rises to about the Classic target (15 ms): overload makes DualPI2 one Classic queue.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.metrics import probability
from l4slab.analysis.seed_studies import points_figure
from l4slab.study.markdown import markdown_table

RATE, ECN = "flows_2_rate", "flows_2_ecn"
RATES = ("50%", "70%", "100%", "140%", "200%")
CLASS_NAME = {"ect1": "UDP ECT(1) (L queue)", "not-ect": "UDP Not-ECT (C queue)"}


def shares(data) -> pd.DataFrame:
    """Per UDP class and rate: each type's share of the link (sum over its flows) and rate per
    flow, averaged over trials."""
    flows = data.flows
    run = flows.groupby(["run_id", ECN, RATE, "label"])["throughput_mbps"].agg(["sum", "mean"]).reset_index()
    run = run.merge(data.bottleneck[["run_id", "rate_mbps"]], on="run_id")
    run["share"] = run["sum"] / run["rate_mbps"]
    run["per_flow_share"] = run["mean"] / run["rate_mbps"]
    out = run.groupby([ECN, RATE, "label"], sort=False)[["share", "per_flow_share"]].mean().reset_index()
    out["udp"] = out[ECN].map(CLASS_NAME).fillna(out[ECN])
    return out


def delays(data) -> pd.DataFrame:
    """Per UDP class, rate and queue (L, C): mean and P99 sojourn, averaged over trials."""
    frame = data.classes.groupby([ECN, RATE, "class"], sort=False)[["mean_ms", "p99_ms"]].mean().reset_index()
    frame["udp"] = frame[ECN].map(CLASS_NAME).fillna(frame[ECN])
    return frame


def overload_section(data, out: Path) -> list[str]:
    if data.flows.empty or RATE not in data.flows.columns:
        return []
    share = shares(data)
    order = [r for r in RATES if r in set(share[RATE])]
    panels = [CLASS_NAME[c] for c in ("ect1", "not-ect") if CLASS_NAME[c] in set(share["udp"])]
    lines = ["## Unresponsive UDP and overload (DualQ paper Figure 12)", ""]
    fig = points_figure(share, x=RATE, y="per_flow_share", panel="udp", series="label", order=order, panels=panels,
                        ylabel="rate per flow / link rate", xlabel="UDP rate (% of link)", logy=True)  # fmt: skip
    figures.save(fig, out / "overload_shares")
    lines += ["![rate per flow](overload_shares.png)", ""]
    delay = delays(data)
    for column, label in (("mean_ms", "mean"), ("p99_ms", "P99")):
        fig = points_figure(delay, x=RATE, y=column, panel="udp", series="class", order=order, panels=panels,
                            ylabel=f"queue delay {label} (ms)", xlabel="UDP rate (% of link)",
                            hlines=(15.0,))  # fmt: skip
        figures.save(fig, out / f"overload_delay_{label.lower()}")
        lines += [f"![queue delay {label}](overload_delay_{label.lower()}.png)", ""]
    bottleneck = data.bottleneck.copy()
    if "packets_sent" in bottleneck:
        arrivals = bottleneck["packets_delivered"] + bottleneck["drops"]
        bottleneck["mark_prob"] = probability(bottleneck["marks"], arrivals)
        bottleneck["drop_prob"] = probability(bottleneck["drops"], arrivals)
        probs = bottleneck.groupby([ECN, RATE], sort=False)[["mark_prob", "drop_prob"]].mean().reset_index()
        probs = probs.melt(id_vars=[ECN, RATE], var_name="signal", value_name="probability")
        probs["udp"] = probs[ECN].map(CLASS_NAME).fillna(probs[ECN])
        fig = points_figure(probs, x=RATE, y="probability", panel="udp", series="signal", order=order, panels=panels,
                            ylabel="probability (all packets)", xlabel="UDP rate (% of link)")  # fmt: skip
        figures.save(fig, out / "overload_probabilities")
        lines += ["![mark and drop probability](overload_probabilities.png)", ""]
    table = share.pivot_table(index=RATE, columns=["label", ECN], values="share").reindex(order)
    table.columns = [f"{label} {ecn} share" for label, ecn in table.columns]
    lines += ["Share of the link per flow type:", "", markdown_table(table.reset_index().round(3)), ""]
    return lines


SECTIONS = (overload_section,)
