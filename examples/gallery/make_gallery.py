"""Run every scenario of the gallery and draw its figure: ``python examples/gallery/make_gallery.py``.

Writes ``examples/gallery/figures/<scenario>.png`` (goodput and sRTT per flow, sojourn per
qdisc queue; small PNGs, committed) and ``examples/gallery/README.md`` with each scenario's
measured numbers, so the page never claims what the engine did not produce.
``--check`` runs the scenarios again and exits 1, naming the scenarios, when the page's
numbers are not what the engine gives now (``tests/python/test_gallery.py`` runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import l4slab
import numpy as np
from l4slab.analysis.html import md_text, mpl_text
from matplotlib.figure import Figure

HERE = Path(__file__).resolve().parent

#: Gallery order, with the one-line point of each scenario.
SCENARIOS = {
    "fifo-bufferbloat": "a deep tail-drop FIFO only adds delay",
    "codel-pie": "CoDel holds the same load's queue near its 5 ms target",
    "fq-codel-fairness": "FQ-CoDel shares nearly equally between a 10 ms and an 80 ms flow",
    "dualpi2-coupling": "DualPI2: Prague in L at sub-ms sojourn, CUBIC in C, coupled rates",
    "prague-vs-cubic-fifo": "Prague against CUBIC in a FIFO without ECN (the PAM FIFO row)",
    "udp-overload": "an unresponsive ECT(1) flow at 120 % against DualPI2",
    "staggered-starts": "three CUBIC flows joining at 0, 3 and 6 s over fq_codel",
}


def figure(result, title: str) -> Figure:
    summary = result.summary
    names = {f["id"]: f.get("label") or f["cc"] for f in summary["flows"]}
    counts = {n: list(names.values()).count(n) for n in names.values()}
    names = {i: (n if counts[n] == 1 else f"{n} #{i}") for i, n in names.items()}
    fig = Figure(figsize=(10.5, 2.6), layout="constrained")
    axes = fig.subplots(1, 3)
    series = result.flow_series
    for flow, part in series.groupby("flow", sort=True):
        axes[0].plot(part["time_s"], part["goodput_mbps"], linewidth=0.9, label=mpl_text(names[int(flow)]))
        axes[1].plot(part["time_s"], part["srtt_ms"], linewidth=0.9)
    axes[0].set_ylabel("goodput (Mbit/s)")
    axes[1].set_ylabel("sRTT (ms)")
    axes[0].legend(fontsize=7)
    trace = result.sojourn
    bottleneck = result.bottleneck_series
    if trace is not None and len(trace):
        bin_s = summary["bin_s"]
        binned = trace.assign(time_s=np.floor(trace["time_s"] / bin_s) * bin_s)
        for name, part in binned.groupby("class", sort=True):
            mean = part.groupby("time_s")["sojourn_ms"].mean()
            axes[2].plot(mean.index, mean.to_numpy(), linewidth=0.9, label=f"queue {name}")
        axes[2].legend(fontsize=7)
    else:
        axes[2].plot(bottleneck["time_s"], bottleneck["sojourn_ms"], linewidth=0.9, color="black")
    axes[2].set_ylabel("sojourn (ms)")
    for ax in axes:
        ax.set_xlabel("time (s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    fig.suptitle(mpl_text(title), fontsize=10)
    return fig


HEADER = [
    "# Example gallery",
    "",
    "Each scenario runs in about a second: `l4slab run examples/gallery/NAME.toml --out results/NAME`,",
    "then `l4slab plot results/NAME` for its full set of figures and `run.html`. The figures and numbers",
    "below come from `python examples/gallery/make_gallery.py` (goodput and sRTT per flow, sojourn per",
    "qdisc queue); `python examples/gallery/make_gallery.py --check` says whether they are still what the",
    "engine gives. A study with its report is `make demo` (docs/tutorial.md).",
    "",
]


def section(name: str, point: str, summary: dict) -> list[str]:
    """The page's section of one scenario: its settings and measured numbers."""
    b = summary["bottleneck"]
    flows = ", ".join(
        f"{md_text(f.get('label') or f['cc'])} {f['goodput_mbps']:.1f} Mbit/s"
        + ("" if f.get("mean_srtt_ms") is None else f" at sRTT {f['mean_srtt_ms']:.1f} ms")
        for f in summary["flows"]
    )
    queues = ", ".join(
        f"{c['class']} {c['sojourn_ms'].get('mean', float('nan')):.2f} ms" for c in b["sojourn_by_class"]
    )
    return [
        f"## {name}: {point}",
        "",
        f"`examples/gallery/{name}.toml` — `htb {b['rate_mbps']:g}Mbit` + `{b['qdisc_config']}`. "
        f"Measured ({summary['duration_s']:g} s, seed {summary['seed']}): {flows}; mean sojourn per queue: "
        f"{queues}; drops {b['drops']}, CE marks {b['marks']}.",
        "",
        f"![{name}](figures/{name}.png)",
        "",
    ]


def check() -> int:
    """Exit status 1, naming the scenarios, if the stored page's sections differ from a new run's."""
    stored = (HERE / "README.md").read_text(encoding="utf-8").split("\n## ")
    stored_sections = {part.split(":", 1)[0]: "## " + part for part in stored[1:]}
    stale = []
    for name, point in SCENARIOS.items():
        fresh = "\n".join(section(name, point, l4slab.run(HERE / f"{name}.toml").summary)).rstrip("\n")
        if stored_sections.get(name, "").rstrip("\n") != fresh:
            stale.append(name)
    if stale:
        print(f"stale gallery: {', '.join(stale)} (run python examples/gallery/make_gallery.py)", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        return check()
    (HERE / "figures").mkdir(exist_ok=True)
    lines = list(HEADER)
    for name, point in SCENARIOS.items():
        result = l4slab.run(HERE / f"{name}.toml")
        summary = result.summary
        fig = figure(result, f"{summary['scenario']}: {point}")
        fig.savefig(HERE / "figures" / f"{name}.png", dpi=72)
        lines += section(name, point, summary)
        print(lines[-4], file=sys.stderr)
    (HERE / "README.md").write_text("\n".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
