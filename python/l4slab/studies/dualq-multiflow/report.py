"""Report sections of dualq-multiflow (DualQ paper §IV-D, Figure 7): rate per flow normalised
by the fair rate against the mix of A (ECN-capable) and B (Classic) flows, per AQM.

Figure 7 plots, for each mix A-B, each type's rate per flow over the fair rate (link rate /
number of flows), the first row with CUBIC as B, the second with Reno. The paper's reading:
PIE and FQ-CoDel balance almost perfectly (FQ-CoDel exactly, by its round robin); over
DualPI2 "no flow gets much below the 'fair' rate", and with many Prague and few CUBIC flows
each Prague flow "gets a little less"; Reno instead of CUBIC makes no significant difference.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.seed_studies import AQM_ORDER, class_delays, rate_ratio, type_rates, with_fair_rate
from l4slab.study.markdown import markdown_table

A_COUNT, B_COUNT, B_CC = "flows_0_count", "flows_1_count", "flows_1_cc"
#: The mixes in the order of the study file (and of Figure 7's x-axis: growing counts).
MIX_ORDER = ("1-1", "1-2", "2-1", "2-2", "1-5", "5-1", "5-5", "1-10", "10-1", "10-10")


def mix_flows(data) -> pd.DataFrame:
    """The catalog's flows with ``mix`` ("A-B" counts), ``aqm`` and ``normalised``."""
    flows = with_fair_rate(data.flows, data.bottleneck)
    flows["mix"] = flows[A_COUNT].astype(int).astype(str) + "-" + flows[B_COUNT].astype(int).astype(str)
    return flows


def normalised_section(data, out: Path) -> list[str]:
    """Figure 7: normalised rate per flow (mean, and min-max over flows and trials) per type."""
    flows = data.flows
    if flows.empty or A_COUNT not in flows.columns:
        return []
    flows = mix_flows(data)
    rates = type_rates(flows, ["aqm", B_CC, "mix"])
    rates["type"] = rates["label"].map({"A": "A (Prague / ECN-CUBIC)", "B": "B (Classic)"}).fillna(rates["label"])
    order = [m for m in MIX_ORDER if m in set(rates["mix"])]
    lines = ["## Rate per flow normalised by the fair rate (DualQ paper Figure 7)", ""]
    for cc in dict.fromkeys(rates[B_CC]):
        part = rates[rates[B_CC] == cc]
        fig = figures_points(part, order, f"40 Mbit/s, 10 ms: A vs {cc} (B)")
        stem = f"multiflow_normalised_{cc}"
        figures.save(fig, out / stem)
        lines += [f"![normalised rate, B = {cc}]({stem}.png)", ""]
    ratio = rate_ratio(flows, ["aqm", B_CC, "mix"])
    table = ratio.pivot_table(index=["aqm", B_CC], columns="mix", values="ratio").reindex(columns=order)
    table = table.reset_index().rename(columns={"aqm": "AQM", B_CC: "B"})
    table["AQM"] = pd.Categorical(table["AQM"], [a for a in AQM_ORDER if a in set(table["AQM"])])
    table = table.sort_values(["AQM", "B"])
    lines += [
        "A:B rate per flow (DualQ paper App. B rate balance; the basic grid's band over DualPI2: 0.85-2.5):",
        "",
        markdown_table(table.round(2)),
        "",
    ]
    delays = class_delays(data.classes)
    delays = delays.merge(flows[["run_id", "mix"]].drop_duplicates(), on="run_id")
    delay = delays.pivot_table(index=["aqm", "class"], columns="mix", values="mean_ms").reindex(columns=order)
    lines += ["Mean sojourn per queue (ms; DualPI2's L and C):", "", markdown_table(delay.reset_index().round(2)), ""]
    return lines


def figures_points(rates: pd.DataFrame, order: list[str], title: str):
    from l4slab.analysis.seed_studies import points_figure

    return points_figure(
        rates, x="mix", y="mean", low="min", high="max", panel="aqm", series="type", order=order,
        panels=[a for a in AQM_ORDER if a in set(rates["aqm"])], hlines=(1.0,), xlabel="flows A-B",
        ylabel="rate / fair rate", title=title,
    )  # fmt: skip


SECTIONS = (normalised_section,)
