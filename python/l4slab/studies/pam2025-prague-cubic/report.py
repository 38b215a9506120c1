"""Report sections of the PAM 2025 study (``[study] report = "pam2025-prague-cubic"``).

The paper's heatmap tables, simulated and published side by side, and the comparison:
differences per cell, harm-label agreement and the mean absolute throughput error. The
study's factors are ``bottleneck.qdisc`` (``@pam2025.queues`` labels),
``bottleneck.buffer`` (``Nbdp``) and the classic flow's ``flows.1.ecn``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from l4slab.analysis import figures, metrics
from l4slab.analysis.published import QUEUE_ORDER, compare, load_published
from l4slab.io import write_text
from l4slab.study.markdown import markdown_table


def pam_cells_from_study(flows: pd.DataFrame) -> pd.DataFrame:
    """The PAM table cells (mean and CI over trials) from a PAM-shaped study's flows."""
    frame = flows.assign(
        queue=flows["bottleneck_qdisc"].astype(str),
        buffer_bdp=flows["bottleneck_buffer"].map(lambda b: float(str(b).removesuffix("bdp"))),
        classic=flows["flows_1_ecn"].map(lambda e: "cubic_ecn" if str(e) in ("1", "classic") else "cubic"),
    )
    return metrics.pam_cells(frame, ("queue", "buffer_bdp", "classic"))


def pam_section(data, out: Path) -> list[str]:
    """Heatmaps (simulated and published) and the cell-by-cell comparison."""
    cells = pam_cells_from_study(data.flows)
    published = load_published()
    lines = ["## PAM 2025 reproduction", ""]
    for classic, title in (("cubic", "CUBIC without ECN"), ("cubic_ecn", "CUBIC with classic ECN")):
        sim = cells[cells["classic"] == classic]
        if sim.empty:
            continue
        for name, panel in (("simulated", sim), ("published", published[published["classic"] == classic])):
            fig = figures.pam_heatmap(panel, title=f"Prague (CUBIC) Mbit/s, {title}: {name}", delays=True)
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
    lines += [markdown_table(rows), ""]
    write_text(out / "pam_comparison.csv", table.to_csv(index=False))
    return lines


SECTIONS = (pam_section,)
