"""Report sections of s2-syn-flood (S2 §5.3): how the flood's codepoint decides Prague's share.

Bars of the Prague flow's and the flood's bottleneck throughput per flood rate, side by
side for ECT(1) (L queue) and ECT(0) (C queue), then Prague's mean payload per segment:
S2 reports the flood squeezing Prague and its segments shrinking as ECT(1), and Prague
keeping most of the link with full-size segments as ECT(0).
"""

from __future__ import annotations

from pathlib import Path

from l4slab.analysis import figures

RATE, ECN = "sources_0_rate", "sources_0_ecn"


def shares_section(data, out: Path) -> list[str]:
    """Throughput of Prague and of the flood per flood rate and codepoint."""
    flows = data.flows
    if flows.empty or RATE not in flows.columns:
        return []
    frame = flows.assign(who=flows["kind"].map({"tcp": "prague", "synflood": "flood"}).fillna(flows["kind"]))
    frame["case"] = frame[ECN].astype(str) + " " + frame[RATE].astype(str)
    fig = figures.flow_bars(
        frame,
        x="case",
        value="throughput_mbps",
        hue="who",
        ylabel="bottleneck throughput (Mbit/s)",
        title="Prague vs SYN flood (10 Mbit/s DualPI2)",
    )
    figures.save(fig, out / "syn_flood_shares")
    prague = frame[frame["who"] == "prague"]
    fig = figures.flow_bars(
        prague, x="case", value="mean_payload_bytes", ylabel="Prague mean payload (B)", title="Prague segment size"
    )
    figures.save(fig, out / "syn_flood_segments")
    return [
        "## Prague against a SYN flood",
        "",
        "![shares](syn_flood_shares.png)",
        "",
        "![segments](syn_flood_segments.png)",
        "",
        "S2 reports that DualPI2 protects Prague from an ECT(0) flood. DualPI2 CE-marks the flood's "
        "ECN-capable SYNs in the C queue instead of dropping them (drop only for Not-ECT packets or on "
        "overload, when the classic probability exceeds 25 %), so below the link rate the flood keeps its "
        "rate and Prague gets the residual, as with ECT(1) (DualQ paper §III-D). Here the flood is shed only "
        "by tail drops at the 200-packet limit the two queues share (54-byte SYNs fill it): that is what "
        "leaves Prague a few Mbit/s; with a limit of 10 000 packets Prague gets the residual (~1 Mbit/s at "
        "9 Mbit/s of flood).",
        "",
    ]


SECTIONS = (shares_section,)
