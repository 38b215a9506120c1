"""Report sections of s2-fairness (S2 §5.4, Figure 11): N Prague flows against N CUBIC or N
BBRv3 flows (ECN off) on a 10 Mbit/s, 20 ms DualPI2 bottleneck, both start orders.

Figure 11 (a, b): Prague's packet size per segment-sizing scheme against CUBIC and BBRv3;
(c, d): Jain's fairness index over all 2N flows' goodput. S2's reading: the fair share falls
below 1 Mbit/s so Prague's segments shrink, more against BBRv3 than against CUBIC; against
CUBIC the JFI stays close to 1; against BBRv3 at N = 10 it degrades significantly; dynamic
sizing improves the JFI over the fixed baseline; the start order has no significant effect.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.metrics import jain_index
from l4slab.analysis.seed_studies import points_figure, segment_scheme
from l4slab.study.markdown import markdown_table

OTHER, N, PRAGUE_START, PARAMS = "flows_1_cc", "flows_0_count", "flows_0_start", "flows_0_cc_params"
SCHEMES = ("fixed", "default", "linear", "exponential", "logarithmic")


#: The scheme named by a ``cc_params`` value (kept under its old name for callers).
scheme_of = segment_scheme


def _frame(flows: pd.DataFrame) -> pd.DataFrame:
    frame = flows.assign(scheme=flows[PARAMS].map(scheme_of))
    frame["order"] = frame[PRAGUE_START].astype(str).map(lambda s: "Prague first" if s in ("0s", "0") else
                                                        "other first")  # fmt: skip
    frame["case"] = "vs " + frame[OTHER].astype(str) + ", N = " + frame[N].astype(int).astype(str)
    return frame


def jain_per_run(flows: pd.DataFrame) -> pd.DataFrame:
    """One row per run: competitor, N, order, scheme and Jain's index over all 2N flows' goodput."""
    frame = _frame(flows)
    keys = ["run_id", OTHER, N, "order", "scheme", "case"]
    return frame.groupby(keys, sort=False)["goodput_mbps"].apply(lambda g: jain_index(g.to_numpy())).rename(
        "jfi").reset_index()  # fmt: skip


def prague_sizes(flows: pd.DataFrame) -> pd.DataFrame:
    """Prague's mean payload and goodput per flow, and the competitor's goodput per flow, per case and scheme."""
    frame = _frame(flows)
    prague = frame[frame["cc"] == "prague"].groupby(["case", "scheme", "order"], sort=False).agg(
        payload=("mean_payload_bytes", "mean"), prague_mbps=("goodput_mbps", "mean")).reset_index()  # fmt: skip
    other = frame[frame["cc"] != "prague"].groupby(["case", "scheme", "order"], sort=False).agg(
        other_mbps=("goodput_mbps", "mean")).reset_index()  # fmt: skip
    return prague.merge(other, on=["case", "scheme", "order"], how="left")


def fairness_section(data, out: Path) -> list[str]:
    flows = data.flows
    if flows.empty or OTHER not in flows.columns:
        return []
    jfi = jain_per_run(flows)
    stats = jfi.groupby(["case", "scheme", "order"], sort=False)["jfi"].agg(["mean", "min", "max"]).reset_index()
    order = [s for s in SCHEMES if s in set(stats["scheme"])]
    lines = ["## Prague against CUBIC and BBRv3 at sub-1 Mbit/s fair shares (S2 Figure 11)", ""]
    fig = points_figure(stats, x="scheme", y="mean", low="min", high="max", panel="case", series="order",
                        order=order, ylabel="Jain's fairness index (2N flows)", xlabel="Prague's scheme",
                        hlines=(1.0,))  # fmt: skip
    figures.save(fig, out / "fairness_jfi")
    lines += ["![Jain's index](fairness_jfi.png)", ""]
    sizes = prague_sizes(flows)
    fig = points_figure(sizes, x="scheme", y="payload", panel="case", series="order", order=order,
                        ylabel="Prague payload per packet (B)", xlabel="Prague's scheme")  # fmt: skip
    figures.save(fig, out / "fairness_packet_size")
    lines += ["![Prague packet size](fairness_packet_size.png)", ""]
    table = sizes.groupby(["case", "scheme"], sort=False)[["payload", "prague_mbps", "other_mbps"]].mean()
    table = table.join(stats.groupby(["case", "scheme"], sort=False)["mean"].mean().rename("JFI")).sort_index()
    lines += [
        "Per case and scheme (both orders averaged): Prague's payload (B), goodput per flow of each CC "
        "(Mbit/s) and Jain's index:",
        "",
        markdown_table(table.reset_index().round(3)),
        "",
    ]
    spread = jfi.pivot_table(index=["case", "scheme"], columns="order", values="jfi")
    if spread.shape[1] == 2:
        gap = (spread.iloc[:, 0] - spread.iloc[:, 1]).abs()
        lines += [f"Start order: Jain's index differs by {gap.max():.3f} at most between the two orders.", ""]
    return lines


SECTIONS = (fairness_section,)
