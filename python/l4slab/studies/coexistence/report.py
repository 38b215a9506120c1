"""Report sections of coexistence (coexistence paper, Freitas et al., Figures 2-5 and 8).

The paper's figures, per case: each server's throughput and RTT as per-second series, the
mean over the 30 repetitions with a 95 % confidence band (Student t), and the queue delay;
then box plots per server of all per-second samples of all repetitions (Figure 8). Beside
them, the numbers the paper's text states for each 10-s phase (throughput per server,
RTT), with the simulated phase means. The queue-delay series are per queue, as the paper
draws them: DualPI2's L and C queues from the engine's per-bin per-queue mean sojourn
(``bottleneck_series`` columns ``sojourn_l_ms``/``sojourn_c_ms``), FQ-CoDel's as one queue.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from l4slab.analysis import figures
from l4slab.analysis.html import md_text
from l4slab.analysis.metrics import mean_ci
from l4slab.study.markdown import markdown_table

#: Case of a run, from its flows' sorted labels joined by "," (the study's zip names them).
CASES = {
    "cubic,prague": "Baseline: 1 Prague + 1 CUBIC, DualPI2",
    "cubic1,cubic2,cubic3,cubic4": "FQ-CoDel, 4 CUBIC",
    "cubic3,cubic4,prague1,prague2": "DualPI2, 2 Prague then 2 CUBIC",
    "prague1,prague2,prague3,prague4": "DualPI2, 4 Prague",
}
#: The coexistence paper's stated numbers (§4, 10 Mbit/s, 30 ms): (case, phase, label, quantity) → value;
#: phase k = the k-th 10-s interval (the baseline: 0-30 s, phase 0).
PUBLISHED = {
    ("Baseline: 1 Prague + 1 CUBIC, DualPI2", 0, "prague", "throughput"): 2.5,
    ("Baseline: 1 Prague + 1 CUBIC, DualPI2", 0, "cubic", "throughput"): 7.5,
    ("FQ-CoDel, 4 CUBIC", 0, "cubic1", "throughput"): 9.8,
    ("FQ-CoDel, 4 CUBIC", 1, "cubic1", "throughput"): 4.9,
    ("FQ-CoDel, 4 CUBIC", 1, "cubic2", "throughput"): 4.9,
    ("FQ-CoDel, 4 CUBIC", 0, "cubic1", "rtt"): 34.0,
    ("FQ-CoDel, 4 CUBIC", 1, "cubic1", "rtt"): 38.0,
    ("FQ-CoDel, 4 CUBIC", 3, "cubic1", "rtt"): 43.0,
    ("DualPI2, 2 Prague then 2 CUBIC", 0, "prague1", "throughput"): 9.5,
    ("DualPI2, 2 Prague then 2 CUBIC", 1, "prague1", "throughput"): 4.7,
    ("DualPI2, 2 Prague then 2 CUBIC", 1, "prague2", "throughput"): 4.7,
    ("DualPI2, 2 Prague then 2 CUBIC", 2, "cubic3", "throughput"): 6.0,
    ("DualPI2, 2 Prague then 2 CUBIC", 2, "prague1", "throughput"): 2.0,
    ("DualPI2, 2 Prague then 2 CUBIC", 3, "cubic3", "throughput"): 3.2,
    ("DualPI2, 2 Prague then 2 CUBIC", 3, "cubic4", "throughput"): 3.2,
    ("DualPI2, 2 Prague then 2 CUBIC", 3, "prague1", "throughput"): 1.5,
    ("DualPI2, 2 Prague then 2 CUBIC", 0, "prague1", "rtt"): 32.0,
    ("DualPI2, 2 Prague then 2 CUBIC", 1, "prague1", "rtt"): 33.0,
    ("DualPI2, 4 Prague", 0, "prague1", "throughput"): 9.5,
    ("DualPI2, 4 Prague", 3, "prague1", "throughput"): 2.3,
    ("DualPI2, 4 Prague", 0, "prague1", "rtt"): 32.5,
    ("DualPI2, 4 Prague", 3, "prague1", "rtt"): 35.5,
}
#: The baseline's runs are plotted and summarised over the paper's 30 s.
BASELINE_END_S = 30.0


def run_cases(flows: pd.DataFrame) -> pd.Series:
    """run_id → case name (from the sorted labels of its flows)."""
    labels = flows.groupby("run_id")["label"].agg(lambda s: ",".join(sorted(map(str, s))))
    return labels.map(lambda key: CASES.get(key, key))


def per_second(data) -> pd.DataFrame:
    """Every flow's per-second samples of every run: run_id, trial, case, label, second,
    throughput (Mbit/s, at the bottleneck), goodput and sRTT (ms) means over the second's
    bins; only the seconds in which the flow has started (and the baseline's first 30 s)."""
    runs = data.runs[data.runs["status"] == "done"]
    if runs.empty:
        return pd.DataFrame()
    series = data.series("flow_series", runs["run_id"].tolist())
    flows = data.flows[["run_id", "id", "label", "start_s"]].rename(columns={"id": "flow"})
    frame = series.merge(flows, on=["run_id", "flow"])
    frame["case"] = frame["run_id"].map(run_cases(data.flows))
    frame["trial"] = frame["run_id"].map(runs.set_index("run_id")["trial"])
    frame["second"] = np.floor(frame["time_s"] + 1e-9).astype(int)
    frame = frame[frame["time_s"] >= frame["start_s"].fillna(0.0).round(0)]
    baseline = frame["case"].str.startswith("Baseline")
    frame = frame[~baseline | (frame["time_s"] < BASELINE_END_S)]
    keys = ["run_id", "trial", "case", "label", "second"]
    return frame.groupby(keys, sort=False)[["throughput_mbps", "goodput_mbps", "srtt_ms"]].mean().reset_index()


def queue_per_second(data) -> pd.DataFrame:
    """Per run and second, the mean queue delay in long form (``queue``, ``sojourn_ms``): one
    row per DualPI2 queue (L, C) from the engine's per-bin per-queue means
    (``sojourn_l_ms``/``sojourn_c_ms``), the whole bottleneck (``all``) for a single queue
    (FQ-CoDel). A second's value is the mean of its bins that dequeued from that queue."""
    runs = data.runs[data.runs["status"] == "done"]
    series = data.series("bottleneck_series", runs["run_id"].tolist())
    if series.empty:
        return series
    series["case"] = series["run_id"].map(run_cases(data.flows))
    series["second"] = np.floor(series["time_s"] + 1e-9).astype(int)
    queues = {"L": "sojourn_l_ms", "C": "sojourn_c_ms"}
    parts = []
    for name, column in queues.items():
        if column in series:
            part = series[series[column].notna()]
            parts.append(part.assign(queue=name, sojourn_ms=part[column]))
    # Runs without per-queue values (a single-queue qdisc) keep the bottleneck's mean.
    split = set(pd.concat(parts)["run_id"]) if parts else set()
    parts.append(series[~series["run_id"].isin(split)].assign(queue="all"))
    long = pd.concat(parts, ignore_index=True)
    keys = ["run_id", "case", "queue", "second"]
    return long.groupby(keys, sort=False)["sojourn_ms"].mean().reset_index()


def phase_table(samples: pd.DataFrame) -> pd.DataFrame:
    """Mean (95 % CI over repetitions) of each server's throughput and RTT per 10-s phase,
    skipping each phase's first 2 s (the newcomer's slow start), beside the paper's numbers."""
    frame = samples.copy()
    baseline = frame["case"].str.startswith("Baseline")
    frame["phase"] = np.where(baseline, 0, frame["second"] // 10)
    frame = frame[baseline | (frame["second"] % 10 >= 2)]
    per_run = frame.groupby(["case", "phase", "label", "run_id"])[["throughput_mbps", "srtt_ms"]].mean()
    rows = []
    for (case, phase, label), group in per_run.groupby(level=[0, 1, 2]):
        row = {"case": case, "phase": f"{10 * phase}-{10 * phase + 10} s" if phase or not case.startswith(
            "Baseline") else "0-30 s", "server": label}  # fmt: skip
        for column, name in (("throughput_mbps", "throughput"), ("srtt_ms", "rtt")):
            stats = mean_ci(group[column].to_numpy(dtype=float))
            row[f"{name} (sim)"] = f"{stats.mean:.2f} ± {stats.half:.2f}" if group.shape[0] > 1 else f"{stats.mean:.2f}"
            row[f"_{name}"] = stats.mean
            published = PUBLISHED.get((case, int(phase), label, name))
            row[f"{name} (paper)"] = "" if published is None else f"{published:g}"
        rows.append(row)
    table = pd.DataFrame(rows)
    order = {case: k for k, case in enumerate(CASES.values())}
    table["_order"] = table["case"].map(order)
    return table.sort_values(["_order", "phase", "server"], kind="stable").drop(columns="_order")


def series_section(data, out: Path) -> list[str]:
    """Figures 2-5: per-second throughput and RTT per server, mean and 95 % band over the
    repetitions; the bottleneck's queue delay; Figure 8's box plots; the phase table."""
    if data.flows.empty or "label" not in data.flows:
        return []
    samples = per_second(data)
    if samples.empty:
        return []
    queue = queue_per_second(data)
    lines = ["## Coexistence in a full-L4S bottleneck (coexistence paper Figures 2-5 and 8)", ""]
    n = samples.groupby("case")["run_id"].nunique()
    colours = figures.cc_colours(data.flows["cc"])  # one colour per CC in every figure
    label_cc = dict(zip(data.flows["label"].astype(str), data.flows["cc"].astype(str), strict=False))
    for k, case in enumerate(c for c in CASES.values() if c in set(samples["case"])):
        part = samples[samples["case"] == case]
        lines += [f"### {md_text(case)} ({n[case]} repetitions)", ""]
        for value, label, stem in (
            ("throughput_mbps", "throughput (Mbit/s)", "throughput"),
            ("srtt_ms", "RTT (ms)", "rtt"),
        ):
            fig = figures.time_series(part, value=value, time="second", group="label", trial="trial", ylabel=label,
                                      title=f"{case}: mean, 95 % band", legend_title="server", lower=0.0,
                                      colours=colours, cc_of=label_cc)  # fmt: skip
            figures.save(fig, out / f"coexistence_{k}_{stem}")
            lines += [f"![{label}](coexistence_{k}_{stem}.png)", ""]
        if not queue.empty:
            q = queue[queue["case"] == case].assign(trial=lambda f: f["run_id"])
            fig = figures.time_series(q, value="sojourn_ms", time="second", group="queue", trial="trial",
                                      ylabel="queue delay (ms)", title=f"{case}: queue delay, mean, 95 % band",
                                      legend_title="queue", lower=0.0, colours=figures.QUEUE_COLOURS)  # fmt: skip
            figures.save(fig, out / f"coexistence_{k}_queue")
            lines += [f"![queue delay](coexistence_{k}_queue.png)", ""]
    fig = _boxes(samples)
    figures.save(fig, out / "coexistence_boxes")
    lines += [
        "### Per-server box plots of all per-second samples (Figure 8)",
        "",
        "![boxes](coexistence_boxes.png)",
        "",
    ]
    table = phase_table(samples)
    shown = table[[c for c in table.columns if not c.startswith("_")]]
    lines += [
        "Per 10-s phase (first 2 s of each phase left out), mean ± 95 % CI over the repetitions; the paper's "
        "numbers are those its text states:",
        "",
        markdown_table(shown),
        "",
    ]
    return lines


def _boxes(samples: pd.DataFrame):
    from matplotlib.figure import Figure

    cases = [c for c in CASES.values() if c in set(samples["case"])]
    fig = Figure(figsize=(3.2 * len(cases), 6.0), layout="constrained")
    axes = fig.subplots(2, len(cases), squeeze=False)
    for j, case in enumerate(cases):
        part = samples[samples["case"] == case]
        labels = sorted(set(part["label"]))
        for i, (value, name) in enumerate((("throughput_mbps", "throughput (Mbit/s)"), ("srtt_ms", "RTT (ms)"))):
            ax = axes[i][j]
            ax.boxplot([part.loc[part["label"] == s, value].dropna().to_numpy() for s in labels], showfliers=True,
                       flierprops={"markersize": 2})  # fmt: skip
            ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, fontsize=8)
            ax.set_ylabel(name)
            if i == 0:
                ax.set_title(case, fontsize=9)
    return fig


SECTIONS = (series_section,)
