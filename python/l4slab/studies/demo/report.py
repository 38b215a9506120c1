"""Report sections of the demo study: how the buffer size shapes CUBIC vs Reno.

Adds the congestion windows of every run over time and the bottleneck's sojourn
statistics per buffer size to the generic study report.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from l4slab.analysis import figures
from l4slab.study.report import factor_order

BUFFER_FACTOR = "bottleneck_buffer"


def cwnd_section(data, out: Path) -> list[str]:
    """Each flow's congestion window at the end of each bin, one line per flow and buffer."""
    done = data.runs[data.runs["status"] == "done"]
    if done.empty:
        return []
    labels = data.flows[["run_id", "id", "label"]].rename(columns={"id": "flow"})
    series = data.series("flow_series", done["run_id"].tolist()).merge(labels, on=["run_id", "flow"])
    series = series.merge(done[["run_id", BUFFER_FACTOR]], on="run_id")
    series["flow at buffer"] = series["label"] + " @ " + series[BUFFER_FACTOR].astype(str)
    buffers = factor_order(data, BUFFER_FACTOR)
    flows = data.flows.drop_duplicates("label")
    order = [f"{label} @ {b}" for label in flows["label"] for b in buffers]
    cc_of = {f"{label} @ {b}": cc for label, cc in zip(flows["label"], flows["cc"], strict=True) for b in buffers}
    fig = figures.time_series(series, value="cwnd", group="flow at buffer", ylabel="cwnd (packets)", title="cwnd",
                              colours=figures.cc_colours(data.flows["cc"]), cc_of=cc_of, group_order=order)  # fmt: skip
    figures.save(fig, out / "cwnd")
    return ["## Congestion windows", "", "![cwnd](cwnd.png)", ""]


def sojourn_section(data, out: Path) -> list[str]:
    """Mean, median and 99th percentile of the bottleneck sojourn per buffer size."""
    stats = {"mean": "sojourn_mean_ms", "p50": "sojourn_p50_ms", "p99": "sojourn_p99_ms"}
    bottleneck = data.bottleneck
    if bottleneck.empty or not set(stats.values()) <= set(bottleneck.columns):
        return []
    columns = bottleneck[[BUFFER_FACTOR]]
    per_stat = [columns.assign(stat=name, sojourn_ms=bottleneck[col]) for name, col in stats.items()]
    bars = pd.concat(per_stat, ignore_index=True)
    fig = figures.flow_bars(
        bars, x=BUFFER_FACTOR, value="sojourn_ms", hue="stat", ylabel="bottleneck sojourn (ms)", title="Sojourn",
        order=factor_order(data, BUFFER_FACTOR),
    )
    figures.save(fig, out / "sojourn")
    return ["## Bottleneck sojourn per buffer", "", "![sojourn](sojourn.png)", ""]


SECTIONS = (cwnd_section, sojourn_section)
