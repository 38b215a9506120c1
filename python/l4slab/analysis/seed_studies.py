"""The seed studies' figures and statements, from a study's catalog tables.

Shared by the built-in studies' ``report.py`` (dualq-multiflow, dualq-mixed-rtt,
dualq-overload, s2-many-flows, s2-fairness, ecn-threshold) and their tests: each function
takes the catalog's DataFrames (:class:`l4slab.study.catalog.StudyData` ``flows``,
``bottleneck``, ``classes``, one row per flow / run / sub-queue with the study's factor
columns) and returns a frame or a figure; none runs a simulation.

* :func:`aqm_label` names a qdisc as the papers do (DualPI2, PIE, FQ-CoDel, FIFO+ECN);
* :func:`with_fair_rate` adds each flow's rate normalised by the fair rate (DualQ paper App. B:
  link capacity / number of competing flows);
* :func:`type_rates` the per-type mean (and min/max over flows) of a run, :func:`rate_ratio`
  the A:B per-flow rate ratio (App. B's rate balance);
* :func:`class_delays` DualPI2's L and C (or a single queue's) sojourn per run;
* :func:`points_figure` a grid of panels of points (one panel per value of a column, one
  series per value of another), the seed papers' usual figure shape.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = [
    "segment_scheme",
    "aqm_label",
    "with_fair_rate",
    "type_rates",
    "rate_ratio",
    "class_delays",
    "points_figure",
    "AQM_ORDER",
]

#: The order the seed papers show the AQMs in.
AQM_ORDER = ("DualPI2", "PIE", "FQ-CoDel", "FIFO+ECN", "FIFO")


def segment_scheme(params: object) -> str:
    """S2's segment-sizing scheme named by a Prague ``cc_params`` factor value (JSON text or
    a table): its ``segment_sizing.scheme``, ``default`` when absent."""
    import json

    value = params
    if isinstance(params, str):
        try:
            value = json.loads(params)
        except ValueError:
            return params
    if isinstance(value, dict):
        return str((value.get("segment_sizing") or {}).get("scheme", "default"))
    return str(params)


def aqm_label(qdisc: object) -> str:
    """``"dualpi2 limit ..."`` → ``"DualPI2"``; fq with ``orphan_mask 0`` (one queue) is
    the PAM authors' FIFO+ECN (FIFO without ``ce_threshold``)."""
    text = str(qdisc).strip()
    kind = text.split()[0] if text else ""
    if kind == "fq" and "orphan_mask 0" in text:
        return "FIFO+ECN" if "ce_threshold" in text else "FIFO"
    return {"dualpi2": "DualPI2", "pie": "PIE", "fq_codel": "FQ-CoDel", "fq": "FQ"}.get(kind, kind or "?")


def _aqm_column(frame: pd.DataFrame) -> pd.Series:
    if "bottleneck_qdisc" in frame:
        return frame["bottleneck_qdisc"].map(aqm_label)
    return pd.Series(["?"] * len(frame), index=frame.index)


def with_fair_rate(flows: pd.DataFrame, bottleneck: pd.DataFrame, value: str = "throughput_mbps") -> pd.DataFrame:
    """``flows`` with ``aqm``, ``n_flows`` (flows of the run), ``capacity_mbps`` (the
    bottleneck's rate), ``fair_mbps`` and ``normalised`` = value / fair rate. The DualQ paper's App.
    B normalises by the link capacity over the number of competing flows; the rate is
    measured at the bottleneck (``throughput_mbps``, as the paper's AQM-server capture)."""
    frame = flows.copy()
    frame["aqm"] = _aqm_column(frame)
    frame["n_flows"] = frame.groupby("run_id")["id"].transform("count")
    capacity = bottleneck.set_index("run_id")["rate_mbps"] if "rate_mbps" in bottleneck else None
    frame["capacity_mbps"] = frame["run_id"].map(capacity) if capacity is not None else np.nan
    frame["fair_mbps"] = frame["capacity_mbps"] / frame["n_flows"]
    frame["normalised"] = frame[value] / frame["fair_mbps"]
    return frame


def type_rates(flows: pd.DataFrame, keys: Sequence[str], by: str = "label", value: str = "normalised") -> pd.DataFrame:
    """Per run and flow type (``by``): mean, min and max of ``value`` over that type's flows;
    then the mean over trials per ``keys`` + type (min/max: the extremes over trials)."""
    per_run = (
        flows.groupby(["run_id", *keys, by], sort=False, dropna=False)[value].agg(["mean", "min", "max"]).reset_index()
    )
    return (
        per_run.groupby([*keys, by], sort=False, dropna=False)
        .agg(mean=("mean", "mean"), min=("min", "min"), max=("max", "max"), runs=("run_id", "nunique"))
        .reset_index()
    )


def rate_ratio(
    flows: pd.DataFrame,
    keys: Sequence[str],
    a: str = "A",
    b: str = "B",
    by: str = "label",
    value: str = "throughput_mbps",
) -> pd.DataFrame:
    """The DualQ paper's rate balance (App. B): the mean rate per flow of type ``a`` over that of
    type ``b``, per run, then averaged over trials per ``keys`` (column ``ratio``)."""
    means = flows.groupby(["run_id", *keys, by], dropna=False)[value].mean().unstack(by)
    if a not in means or b not in means:
        return pd.DataFrame(columns=[*keys, "ratio"])
    ratio = (means[a] / means[b]).rename("ratio").reset_index()
    return ratio.groupby(list(keys), dropna=False, sort=False)["ratio"].mean().reset_index()


def class_delays(classes: pd.DataFrame) -> pd.DataFrame:
    """Per run and sub-queue (``class``: DualPI2's L and C, ``all`` for one queue): sojourn
    mean and P99 in ms, with ``aqm``."""
    frame = classes.copy()
    frame["aqm"] = _aqm_column(frame)
    return frame


def points_figure(
    frame: pd.DataFrame,
    *,
    x: str,
    y: str,
    panel: str | None = None,
    series: str | None = None,
    low: str | None = None,
    high: str | None = None,
    order: Sequence[object] | None = None,
    panels: Sequence[object] | None = None,
    ylabel: str | None = None,
    xlabel: str | None = None,
    title: str | None = None,
    logy: bool = False,
    hlines: Sequence[float] = (),
    published: pd.DataFrame | None = None,
) -> Figure:
    """One panel per value of ``panel``, points of ``y`` against categorical ``x`` (in
    ``order``) joined per ``series``, with error bars from ``low``/``high`` when given, dashed
    horizontal reference lines ``hlines`` and, if ``published`` (same columns) is given, the
    published points as hollow black markers beside the simulated ones."""
    panel_values = list(panels) if panels is not None else (list(dict.fromkeys(frame[panel])) if panel else [None])
    panel_values = [p for p in panel_values if panel is None or (frame[panel] == p).any()] or [None]
    xs = list(order) if order is not None else list(dict.fromkeys(frame[x]))
    fig = Figure(figsize=(max(4.0, 0.45 * len(xs) + 1.5) * len(panel_values), 3.6), layout="constrained")
    axes = fig.subplots(1, len(panel_values), squeeze=False, sharey=True)[0]
    position = {value: i for i, value in enumerate(xs)}
    # One colour per series value across all panels.
    colours = {v: f"C{i}" for i, v in enumerate(dict.fromkeys(frame[series]))} if series is not None else {}
    for ax, name in zip(axes, panel_values, strict=True):
        part = frame if panel is None or name is None else frame[frame[panel] == name]
        groups = [(None, part)] if series is None else [(v, part[part[series] == v]) for v in colours]
        groups = [(label, group) for label, group in groups if not group.empty]
        for k, (label, group) in enumerate(groups):
            group = group[group[x].isin(position)]
            group = group.assign(_pos=group[x].map(position)).sort_values("_pos")
            shift = (k - (len(groups) - 1) / 2) * 0.08
            pos = group["_pos"].to_numpy(dtype=float) + shift
            values = group[y].to_numpy(dtype=float)
            yerr = None
            if low and high and low in group and high in group:
                below = values - group[low].to_numpy(dtype=float)
                yerr = np.vstack([below, group[high].to_numpy(dtype=float) - values])
                yerr = np.clip(np.nan_to_num(yerr), 0, None)
            ax.errorbar(pos, values, yerr=yerr, marker="o", markersize=4, capsize=2, linewidth=1,
                        color=colours.get(label, "C0"), label=None if label is None else str(label))  # fmt: skip
        if published is not None and not published.empty:
            pub = published if panel is None or name is None else published[published[panel] == name]
            pub = pub[pub[x].isin(position)]
            if not pub.empty:
                ax.scatter(pub[x].map(position), pub[y], facecolors="none", edgecolors="black", s=40,
                           label="published", zorder=3)  # fmt: skip
        for level in hlines:
            ax.axhline(level, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xticks(range(len(xs)), [str(v) for v in xs], rotation=45 if len(xs) > 6 else 0, fontsize=8)
        if logy:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        if name is not None:
            ax.set_title(str(name), fontsize=10)
        if xlabel:
            ax.set_xlabel(xlabel)
        if series is not None or published is not None:
            ax.legend(fontsize=7)
    axes[0].set_ylabel(ylabel or y)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
