"""Report sections of ecn-threshold (the PAM 2025 authors' FIFO+ECN illustration; the DualQ paper
Figure 2 makes the same point): one long flow over 100 Mbit/s, 25 ms, in one FIFO queue with
a CE threshold.

A Classic (CUBIC) flow reduces its window by 30 % (CUBIC's beta 0.7, tcp_cubic.c) at most
once per RTT on marks: with the threshold at 20 ms its sawtooth stays above zero queue and the link stays full,
at 1 ms the sawtooth's troughs empty the queue and the link (under-utilisation); without ECN it
fills the 2 BDP buffer. A Scalable flow (Prague) reduces by half the marked fraction per RTT
and keeps a 1 ms threshold at full utilisation. Figures: utilisation and queue delay (mean,
P99) per case, and each case's goodput and queue delay over time.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.seed_studies import points_figure
from l4slab.study.markdown import markdown_table

QDISC, CC, ECN = "bottleneck_qdisc", "flows_0_cc", "flows_0_ecn"


def case_name(qdisc: object, cc: object, ecn: object) -> str:
    """The case's name: "CUBIC, no ECN", "ECN-CUBIC, CE at 20ms", "Prague, CE at 1ms"."""
    text = str(qdisc).split()
    threshold = text[text.index("ce_threshold") + 1] if "ce_threshold" in text else None
    if str(cc) == "prague":
        name = "Prague"
    else:
        name = "CUBIC" if str(ecn) in ("off", "0", "2") else "ECN-CUBIC"
    if name == "CUBIC":
        return "CUBIC, no ECN"
    return f"{name}, CE at {threshold}" if threshold else name


def cases(data) -> pd.DataFrame:
    """One row per case: utilisation, sojourn mean/P99 (ms), goodput (Mbit/s), CE-marked and
    dropped packets, averaged over trials."""
    bottleneck = data.bottleneck.copy()
    bottleneck["case"] = [
        case_name(q, c, e) for q, c, e in zip(bottleneck[QDISC], bottleneck[CC], bottleneck[ECN], strict=True)
    ]
    goodput = data.flows.groupby("run_id")["goodput_mbps"].sum()
    bottleneck["goodput_mbps"] = bottleneck["run_id"].map(goodput)
    columns = ["utilisation", "sojourn_mean_ms", "sojourn_p99_ms", "goodput_mbps", "marks", "drops"]
    columns = [c for c in columns if c in bottleneck]
    return bottleneck.groupby("case", sort=False)[columns].mean().reset_index()


ORDER = ("CUBIC, no ECN", "ECN-CUBIC, CE at 20ms", "ECN-CUBIC, CE at 1ms", "Prague, CE at 1ms")


def threshold_section(data, out: Path) -> list[str]:
    if data.bottleneck.empty or QDISC not in data.bottleneck.columns:
        return []
    frame = cases(data)
    order = [c for c in ORDER if c in set(frame["case"])] + [c for c in frame["case"] if c not in ORDER]
    lines = ["## A Classic and a Scalable flow against one ECN threshold", ""]
    long = frame.melt(id_vars="case", value_vars=["sojourn_mean_ms", "sojourn_p99_ms"], var_name="statistic",
                      value_name="ms")  # fmt: skip
    long["statistic"] = long["statistic"].map({"sojourn_mean_ms": "mean", "sojourn_p99_ms": "P99"})
    fig = points_figure(frame, x="case", y="utilisation", order=order, ylabel="link utilisation", hlines=(1.0,),
                        title="100 Mbit/s, 25 ms, FIFO+ECN (2 BDP)")  # fmt: skip
    figures.save(fig, out / "threshold_utilisation")
    fig = points_figure(long, x="case", y="ms", series="statistic", order=order, ylabel="queue delay (ms)", logy=True,
                        hlines=(1.0, 20.0))  # fmt: skip
    figures.save(fig, out / "threshold_delay")
    lines += ["![utilisation](threshold_utilisation.png)", "", "![queue delay](threshold_delay.png)", ""]
    runs = data.runs[data.runs["status"] == "done"]
    first = runs.drop_duplicates("point")
    series = data.series("bottleneck_series", first["run_id"].tolist())
    if not series.empty:
        names = {r.run_id: case_name(r.bottleneck_qdisc, r.flows_0_cc, r.flows_0_ecn) for r in first.itertuples()}
        series["case"] = series["run_id"].map(names)
        fig = figures.time_series(series, value="utilisation", group="case", ylabel="utilisation (per bin)",
                                  title="first trial of each case", lower=0.0)  # fmt: skip
        figures.save(fig, out / "threshold_utilisation_series")
        lines += ["![utilisation over time](threshold_utilisation_series.png)", ""]
    table = frame.set_index("case").reindex(order).reset_index()
    lines += ["Per case (mean over trials):", "", markdown_table(table.round(3)), ""]
    return lines


SECTIONS = (threshold_section,)
