"""``l4slab study report DIR``: figures and a Markdown summary of a finished study.

Every study gets the generic report: per-point tables (mean ± 95 % CI over trials of each
flow's goodput, share and queuing delay, and of the bottleneck's utilisation and
sojourn), a bar chart per flow label and time series of the first points. The built-in
study named by the plan's ``report`` (``[study] report``, by default the study itself
when it is built in) adds its own sections after the header (:mod:`.registry`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..analysis import figures, metrics
from ..analysis.published import published_section
from ..io import write_text
from . import registry, store
from .catalog import load
from .markdown import markdown_table, mean_ci

__all__ = ["report"]


def _factor_columns(runs: pd.DataFrame) -> list[str]:
    fixed = {"run_id", "point", "trial", "seed", "status", "wall_s", "error", "in_plan"}
    return [c for c in runs.columns if c not in fixed]


def _label(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _fill_factors(frame: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    frame = frame.copy()
    for column in factors:
        if column in frame and frame[column].isna().any():
            frame[column] = [("–" if pd.isna(v) else _label(v)) for v in frame[column]]
    return frame


def report(directory: str | os.PathLike[str], published: str | os.PathLike[str] | None = None) -> Path:
    """Write ``DIR/report/report.md`` with its figures; returns the Markdown path.
    ``published``: a published table (:mod:`l4slab.analysis.published`) put beside the
    simulated cells of every panel it covers."""
    directory = Path(directory)
    data = load(directory)
    out = directory / "report"
    out.mkdir(exist_ok=True)
    factors = _factor_columns(data.runs)
    # A study with panels leaves a panel's missing factors empty: show them as "–" so that
    # grouping keeps those rows.
    for name in ("runs", "flows", "bottleneck"):
        setattr(data, name, _fill_factors(getattr(data, name), factors))
    runs, flows, bottleneck = data.runs, data.flows, data.bottleneck
    done = runs[runs["status"] == "done"] if "status" in runs else runs
    lines = [
        f"# Study report: {directory.name}",
        "",
        f"{len(done)} of {len(runs)} runs done; factors: {', '.join(factors) or '(none)'}.",
        "",
    ]
    plan = store.load_plan(directory) or {}
    if published is not None:
        lines += published_section(data, out, published, plan.get("study"))
    data.published = published  # a built-in section may skip its own comparison then
    for section in registry.report_sections(plan.get("report")):
        lines += section(data, out)

    # Per point and flow label: goodput, share of the link and harm label (share vs the
    # fair share 1/N; harmed < 0.4·fair, harmful > 1.6·fair), queuing delay (mean sRTT −
    # base RTT), mean ± 95 % CI over trials.
    flows = flows.assign(queuing_delay_ms=metrics.srtt_queue_delay(flows))
    if "rate_mbps" in bottleneck:
        flows = flows.merge(bottleneck[["run_id", "rate_mbps"]], on="run_id", how="left")
        flows = metrics.add_harm(flows, capacity_mbps="rate_mbps")
    else:
        flows = metrics.add_harm(flows)
    keys = [*factors, "label"]
    cols = ["goodput_mbps", "share", "fair_share", "queuing_delay_ms", "retransmits"]
    agg = metrics.aggregate(flows, keys, columns=cols)
    table = agg[keys].copy()
    table["share of link"] = [
        mean_ci(100 * m, 100 * h) + " %" for m, h in zip(agg["share"], agg["share_ci"], strict=True)
    ]
    table["harm"] = metrics.harm_labels(agg["share"], agg["fair_share"]).values
    table["goodput (Mbit/s)"] = [
        mean_ci(m, h) for m, h in zip(agg["goodput_mbps"], agg["goodput_mbps_ci"], strict=True)
    ]
    table["queuing delay (ms)"] = [
        mean_ci(m, h) for m, h in zip(agg["queuing_delay_ms"], agg["queuing_delay_ms_ci"], strict=True)
    ]
    table["retransmits"] = [mean_ci(m, h, 0) for m, h in zip(agg["retransmits"], agg["retransmits_ci"], strict=True)]
    table["n"] = agg["n"]
    lines += ["## Flows (mean ± 95 % CI over trials)", "", markdown_table(table), ""]

    bcols = [
        c
        for c in ("utilisation", "jain_index", "sojourn_mean_ms", "sojourn_p99_ms", "drops", "marks")
        if c in bottleneck
    ]
    if factors and bcols:
        bagg = metrics.aggregate(bottleneck, factors, columns=bcols)
        btable = bagg[factors].copy()
        for c in bcols:
            btable[c] = [
                mean_ci(m, h, 3 if c in ("utilisation", "jain_index") else 1)
                for m, h in zip(bagg[c], bagg[f"{c}_ci"], strict=True)
            ]
        lines += ["## Bottleneck (mean ± 95 % CI over trials)", "", markdown_table(btable), ""]

    if factors:
        point = agg.assign(point=agg[factors].astype(str).agg(" ".join, axis=1))
        fig = figures.flow_bars(
            point, x="point", value="goodput_mbps", ci="goodput_mbps_ci", hue="label", title="Goodput per point"
        )
        figures.save(fig, out / "goodput")
        lines += ["## Goodput per point", "", "![goodput](goodput.png)", ""]
    lines += _time_series_section(data, factors, out)
    path = out / "report.md"
    write_text(path, "\n".join(lines) + "\n")
    return path


#: Points shown with time series (the first ones of the plan; the rest are in the tables).
MAX_SERIES_POINTS = 4


def _time_series_section(data, factors: list[str], out: Path) -> list[str]:
    """Goodput, sRTT and bottleneck queue over time for the first points: the mean across
    trials with a 95 % confidence band."""
    runs = data.runs[data.runs["status"] == "done"] if "status" in data.runs else data.runs
    if runs.empty:
        return []
    lines = ["## Time series (mean and 95 % CI over trials)", ""]
    labels = data.flows[["run_id", "id", "label"]].rename(columns={"id": "flow"})
    for n, (point, group) in enumerate(runs.groupby("point", sort=True)):
        if n >= MAX_SERIES_POINTS:
            break
        name = " ".join(str(group[f].iloc[0]) for f in factors) or f"point {point}"
        ids = group["run_id"].tolist()
        fs = data.series("flow_series", ids).merge(labels, on=["run_id", "flow"], how="left")
        bs = data.series("bottleneck_series", ids)
        stem = f"series_point{point}"
        row = []
        for value, ylabel, frame, grp in (
            ("goodput_mbps", "goodput (Mbit/s)", fs, "label"),
            ("srtt_ms", "sRTT (ms)", fs, "label"),
            ("sojourn_ms", "bottleneck sojourn (ms)", bs, None),
        ):
            fig = figures.time_series(frame, value=value, group=grp, ylabel=ylabel, title=name)
            figures.save(fig, out / f"{stem}_{value}")
            row.append(f"![{value}]({stem}_{value}.png)")
        lines += [f"### {name}", "", " ".join(row), ""]
    return lines
