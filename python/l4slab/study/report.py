"""``l4slab study report DIR``: figures and a Markdown summary of a finished study.

Every study gets per-point tables (mean ± 95 % CI over trials of each flow's goodput and
queuing delay, and of the bottleneck's utilisation and sojourn) and a bar chart per
flow label. A study whose factors are the PAM 2025 ones (``@pam2025.queues``,
``bottleneck.buffer``, the classic flow's ``ecn``) also gets the paper's heatmap tables,
simulated and published side by side, and the comparison: differences per cell,
harm-label agreement and the mean absolute throughput error.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..analysis import metrics
from ..analysis.published import QUEUE_ORDER, compare, load_published
from ..output import write_text
from . import load

__all__ = ["report", "pam_cells_from_study"]

_PAM_FACTORS = ("bottleneck_qdisc", "bottleneck_buffer", "flows_1_ecn")


def _fmt(mean: float, half: float, digits: int = 1) -> str:
    if pd.isna(mean):
        return "–"
    if pd.isna(half):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {half:.{digits}f}"


def _markdown_table(frame: pd.DataFrame) -> str:
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join("" if pd.isna(v) else str(v) for v in row.tolist()) + " |")
    return "\n".join(lines)


def _factor_columns(runs: pd.DataFrame) -> list[str]:
    fixed = {"run_id", "point", "trial", "seed", "status", "wall_s", "error", "in_plan"}
    return [c for c in runs.columns if c not in fixed]


def pam_cells_from_study(flows: pd.DataFrame) -> pd.DataFrame:
    """The PAM table cells (mean and CI over trials) from a PAM-shaped study's flows."""
    frame = flows.assign(
        queue=flows["bottleneck_qdisc"].astype(str),
        buffer_bdp=flows["bottleneck_buffer"].map(lambda b: float(str(b).removesuffix("bdp"))),
        classic=flows["flows_1_ecn"].map(lambda e: "cubic_ecn" if str(e) in ("1", "classic") else "cubic"),
    )
    return metrics.pam_cells(frame, ("queue", "buffer_bdp", "classic"))


def _pam_section(flows: pd.DataFrame, out: Path) -> list[str]:
    from ..analysis import figures

    cells = pam_cells_from_study(flows)
    published = load_published()
    lines = ["## PAM 2025 reproduction", ""]
    for classic, title in (("cubic", "CUBIC without ECN"), ("cubic_ecn", "CUBIC with classic ECN")):
        sim = cells[cells["classic"] == classic]
        if sim.empty:
            continue
        for name, data in (("simulated", sim), ("published", published[published["classic"] == classic])):
            fig = figures.pam_heatmap(data, title=f"Prague (CUBIC) Mbit/s, {title}: {name}", delays=True)
            figures.save(fig, out / f"pam_{classic}_{name}")
        lines += [
            f"### {title}",
            "",
            f"![simulated](pam_{classic}_simulated.png) ![published](pam_{classic}_published.png)",
            "",
        ]
    result = compare(cells)
    table = result.table
    s = result.summary
    lines += [
        f"Cells compared: {int(s['cells'])}; harm-label agreement: **{s['harm_agreement']:.0%}**; "
        f"mean absolute throughput error: **{s['tput_mae_mbps']:.1f} Mbit/s** (over both flows).",
        "",
    ]
    shown = table.assign(
        queue=pd.Categorical(table["queue"], QUEUE_ORDER, ordered=True),
    ).sort_values(["classic", "queue", "buffer_bdp"])
    rows = pd.DataFrame(
        {
            "classic": shown["classic"],
            "queue": shown["queue"].astype(str),
            "buffer (BDP)": shown["buffer_bdp"],
            "L4S sim (pub)": [
                f"{a:.1f} ({b:.1f})" for a, b in zip(shown["l4s_mbps_sim"], shown["l4s_mbps_pub"], strict=True)
            ],
            "classic sim (pub)": [
                f"{a:.1f} ({b:.1f})" for a, b in zip(shown["classic_mbps_sim"], shown["classic_mbps_pub"], strict=True)
            ],
            "L4S delay sim (pub) ms": [
                f"{a:.1f} ({b:.1f})"
                for a, b in zip(shown["l4s_qdelay_ms_sim"], shown["l4s_qdelay_ms_pub"], strict=True)
            ],
            "harm sim / pub": [f"{a} / {b}" for a, b in zip(shown["harm_sim"], shown["harm_pub"], strict=True)],
            "agree": ["yes" if a else "**no**" for a in shown["harm_agree"]],
        }
    )
    lines += [_markdown_table(rows), ""]
    write_text(out / "pam_comparison.csv", table.to_csv(index=False))
    return lines


def report(directory: str | os.PathLike[str]) -> Path:
    """Write ``DIR/report/report.md`` with its figures; returns the Markdown path."""
    from ..analysis import figures

    directory = Path(directory)
    data = load(directory)
    out = directory / "report"
    out.mkdir(exist_ok=True)
    runs, flows, bottleneck = data.runs, data.flows, data.bottleneck
    factors = _factor_columns(runs)
    done = runs[runs["status"] == "done"] if "status" in runs else runs
    lines = [
        f"# Study report: {directory.name}",
        "",
        f"{len(done)} of {len(runs)} runs done; factors: {', '.join(factors) or '(none)'}.",
        "",
    ]
    if all(f in flows.columns for f in _PAM_FACTORS) and set(flows["cc"]) >= {"prague", "cubic"}:
        lines += _pam_section(flows, out)

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
    table["share of link"] = [_fmt(100 * m, 100 * h) + " %" for m, h in zip(agg["share"], agg["share_ci"], strict=True)]
    table["harm"] = metrics.harm_labels(agg["share"], agg["fair_share"]).values
    table["goodput (Mbit/s)"] = [_fmt(m, h) for m, h in zip(agg["goodput_mbps"], agg["goodput_mbps_ci"], strict=True)]
    table["queuing delay (ms)"] = [
        _fmt(m, h) for m, h in zip(agg["queuing_delay_ms"], agg["queuing_delay_ms_ci"], strict=True)
    ]
    table["retransmits"] = [_fmt(m, h, 0) for m, h in zip(agg["retransmits"], agg["retransmits_ci"], strict=True)]
    table["n"] = agg["n"]
    lines += ["## Flows (mean ± 95 % CI over trials)", "", _markdown_table(table), ""]

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
                _fmt(m, h, 3 if c in ("utilisation", "jain_index") else 1)
                for m, h in zip(bagg[c], bagg[f"{c}_ci"], strict=True)
            ]
        lines += ["## Bottleneck (mean ± 95 % CI over trials)", "", _markdown_table(btable), ""]

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
    from ..analysis import figures

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
