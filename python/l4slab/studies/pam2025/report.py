"""Report sections of the `pam2025` study (``l4slab study report DIR``).

* one paper-style heatmap per one-vs-one panel (L4S Mbit/s (other), queuing delays);
* the comparison with the shipped published panels (``prague-cubic``, ``prague-cubic-ecn``;
  :mod:`l4slab.analysis.published`), whenever the study ran them — ``--published FILE``
  compares with any other table;
* the multi-flow mixes: each kind's share of the 100 Mbit/s link and its harm label against
  the kind's fair share n / N (PAM's 20 % / 80 % rule generalised: harmed < 0.4 × fair,
  harmful > 1.6 × fair).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
from l4slab.analysis import figures, metrics
from l4slab.analysis.published import PAM2025_FILE, published_section, simulated_cells
from l4slab.study.markdown import markdown_table


def _mix_runs(runs: pd.DataFrame) -> pd.Series:
    """Which runs belong to a multi-flow mix (their flow counts are set; "–" or NaN: not)."""
    if "flows_0_count" not in runs:
        return pd.Series(False, index=runs.index)
    return runs["flows_0_count"].map(lambda v: not (pd.isna(v) or v == "–"))


def panels_section(data, out: Path) -> list[str]:
    """A heatmap per one-vs-one panel (simulated, mean over trials)."""
    runs = data.runs
    mix = _mix_runs(runs)
    if "panel" not in runs or mix.all():
        return []
    one = SimpleNamespace(runs=runs[~mix], flows=data.flows)
    cells = simulated_cells(one, "pam2025")
    lines = ["## PAM 2025 panels (simulated)", ""]
    for panel, group in cells.groupby("panel", sort=False):
        frame = group.rename(columns={"other_mbps": "classic_mbps", "other_qdelay_ms": "classic_qdelay_ms"})
        fig = figures.pam_heatmap(frame, title=f"{panel}: L4S (other) Mbit/s", delays=True)
        stem = f"pam2025_{panel}"
        figures.save(fig, out / stem)
        lines += [f"### {panel}", "", f"![{panel}]({stem}.png)", ""]
    return lines


def published_pam_section(data, out: Path) -> list[str]:
    """Simulated beside the shipped published panels (only if the study ran one of them and
    the report was not given ``--published``, whose section comes first)."""
    if getattr(data, "published", None) is not None:
        return []
    if "panel" not in data.runs or not {"prague-cubic", "prague-cubic-ecn"} & set(data.runs["panel"]):
        return []
    return published_section(data, out, PAM2025_FILE, "pam2025")


def mix_section(data, out: Path) -> list[str]:
    """Shares per kind in the multi-flow mixes (mean ± 95 % CI over trials)."""
    runs = data.runs
    mix = _mix_runs(runs)
    if not mix.any():
        return []
    runs = (
        runs[mix]
        .astype({"flows_0_count": float, "flows_1_count": float})
        .astype({"flows_0_count": int, "flows_1_count": int})
    )
    if "status" in runs:
        runs = runs[runs["status"] == "done"]
    columns = ["run_id", "panel", "bottleneck_qdisc", "flows_0_count", "flows_1_count"]
    flows = data.flows.drop(columns=[c for c in columns[1:] if c in data.flows])
    flows = flows.merge(runs[columns], on="run_id")
    if flows.empty:
        return []
    flows = flows.assign(kind=metrics.flow_class(flows).to_numpy())
    per = flows.groupby(["panel", "bottleneck_qdisc", "flows_0_count", "flows_1_count", "run_id", "kind"]).agg(
        mbps=("goodput_mbps", "sum"), n=("goodput_mbps", "size")
    )
    per = per.reset_index()
    per["share"] = per["mbps"] / metrics.PAM_CAPACITY_MBPS
    per["fair"] = per["n"] / (per["flows_0_count"] + per["flows_1_count"])
    keys = ["panel", "bottleneck_qdisc", "flows_0_count", "flows_1_count", "kind"]
    agg = metrics.aggregate(per, keys, columns=["share", "fair"])
    table = pd.DataFrame(
        {
            "panel": agg["panel"],
            "queue": agg["bottleneck_qdisc"],
            "mix (L4S v classic)": [
                f"{int(a)}v{int(b)}" for a, b in zip(agg["flows_0_count"], agg["flows_1_count"], strict=True)
            ],
            "kind": agg["kind"],
            "share of link": [
                f"{100 * m:.1f} ± {100 * h:.1f} %" for m, h in zip(agg["share"], agg["share_ci"], strict=True)
            ],
            "fair": [f"{100 * f:.0f} %" for f in agg["fair"]],
            "harm": metrics.harm_labels(agg["share"], agg["fair"]).to_numpy(),
        }
    )
    return ["## Multi-flow mixes: share per kind", "", markdown_table(table), ""]


SECTIONS = (published_pam_section, panels_section, mix_section)
