"""``l4slab demo``: a small study run in parallel, with a Markdown report and figures.

CUBIC competes with Reno over a 100 Mbit/s ``bfifo`` bottleneck with a 10 ms base
RTT, the buffer swept over 0.5, 1, 2 and 4 BDP (the PAM 2025 study's sizing rule).
Each run writes its own output directory; ``report.md`` collects a table and PNG
figures (per-flow goodput and cwnd over time, bottleneck sojourn statistics).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .output import write_text
from .runner import engine, package_version, run

__all__ = ["DEMO_BUFFERS", "demo_scenarios", "run_demo"]

DEMO_BUFFERS = ("0.5bdp", "1bdp", "2bdp", "4bdp")
DEMO_RATE = "100Mbit"
DEMO_RTT = "10ms"


def demo_scenarios(duration: str = "20s", seed: int = 1) -> list[dict[str, Any]]:
    """One scenario dict per buffer size: one CUBIC and one Reno flow sharing a bfifo."""
    return [
        {
            "name": f"cubic-vs-reno_bfifo-{buffer}",
            "duration": duration,
            "seed": seed,
            "bottleneck": {"rate": DEMO_RATE, "qdisc": "bfifo", "buffer": buffer},
            "flows": [
                {"cc": "cubic", "rtt": DEMO_RTT, "label": "cubic"},
                {"cc": "reno", "rtt": DEMO_RTT, "label": "reno"},
            ],
        }
        for buffer in DEMO_BUFFERS
    ]


@dataclass
class DemoRun:
    """What one worker sends back for the report."""

    name: str
    buffer: str
    directory: Path
    summary: dict[str, Any]
    flow_series: pd.DataFrame
    wall_s: float


def _run_case(scenario: dict[str, Any], out_dir: str) -> DemoRun:
    """Worker: run one scenario and write its outputs (top level, so it pickles)."""
    result = run(scenario)
    directory = result.write(Path(out_dir) / scenario["name"])
    return DemoRun(
        name=scenario["name"],
        buffer=scenario["bottleneck"]["buffer"],
        directory=directory,
        summary=result.summary,
        flow_series=result.flow_series,
        wall_s=result.wall_s,
    )


def run_demo(out_dir: str | os.PathLike[str], *, duration: str = "20s", jobs: int | None = None, console=None) -> Path:
    """Run the demo study into ``out_dir``; return the path of report.md."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    engine()  # fail fast, before starting workers, if the engine is not built
    scenarios = demo_scenarios(duration)
    # Validate everything in this process: a bad scenario is one clear error, not a worker traceback.
    from .scenario import scenario_from_dict

    for scenario in scenarios:
        scenario_from_dict(scenario).resolve()

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    workers = max(1, min(jobs or os.cpu_count() or 1, len(scenarios)))
    finished: dict[str, DemoRun] = {}
    with Progress(
        TextColumn("[bold]demo[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("", total=len(scenarios))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_run_case, scenario, str(out)) for scenario in scenarios]
            for future in as_completed(futures):
                outcome = future.result()
                finished[outcome.name] = outcome
                progress.update(task, advance=1, description=outcome.name)
    runs = [finished[s["name"]] for s in scenarios]
    return write_report(runs, out, duration=duration)


# --- report ----------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _plot_series(runs: list[DemoRun], column: str, ylabel: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 2.2 * len(runs)), sharex=True, squeeze=False)
    for axis, demo_run in zip(axes[:, 0], runs, strict=True):
        labels = {f["id"]: f.get("label", f["cc"]) for f in demo_run.summary["flows"]}
        for flow_id, rows in demo_run.flow_series.groupby("flow"):
            axis.plot(rows["time_s"], rows[column], label=labels.get(flow_id, str(flow_id)), linewidth=1)
        axis.set_title(f"bfifo {demo_run.buffer}", fontsize=9, loc="left")
        axis.set_ylabel(ylabel)
        axis.grid(True, alpha=0.3)
        axis.legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)


def _plot_sojourn(runs: list[DemoRun], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = ("mean", "p50", "p99")
    width = 0.8 / len(stats)
    fig, axis = plt.subplots(figsize=(7, 3.5))
    for offset, stat in enumerate(stats):
        values = [r.summary["bottleneck"]["sojourn_ms"].get(stat) or 0.0 for r in runs]
        positions = [i + (offset - (len(stats) - 1) / 2) * width for i in range(len(runs))]
        axis.bar(positions, values, width=width, label=stat)
    axis.set_xticks(range(len(runs)), [f"bfifo {r.buffer}" for r in runs])
    axis.set_ylabel("bottleneck sojourn (ms)")
    axis.grid(True, axis="y", alpha=0.3)
    axis.legend()
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)


def _save_figure(path: Path, draw) -> None:
    """Draw into a temporary file next to ``path`` and move it into place atomically."""
    from .output import atomic_write

    atomic_write(path, draw)


def write_report(runs: list[DemoRun], out: Path, *, duration: str) -> Path:
    """Figures plus report.md with one table of flows and one of the bottleneck."""
    _save_figure(out / "goodput.png", lambda p: _plot_series(runs, "goodput_mbps", "goodput (Mb/s)", p))
    _save_figure(out / "cwnd.png", lambda p: _plot_series(runs, "cwnd", "cwnd (packets)", p))
    _save_figure(out / "sojourn.png", lambda p: _plot_sojourn(runs, p))

    lines = [
        "# l4slab demo: CUBIC vs Reno over a bfifo bottleneck",
        "",
        f"One CUBIC and one Reno flow share an HTB-shaped {DEMO_RATE} bottleneck with a {DEMO_RTT} base RTT; "
        f"the child qdisc is `bfifo` sized at {', '.join(DEMO_BUFFERS)} (BDP = {DEMO_RATE} × {DEMO_RTT}). "
        f"Each run lasts {duration}; the whole run is the measurement window.",
        "",
        f"l4slab {package_version()}, engine {runs[0].summary['engine_version'] if runs else '?'}.",
        "",
        "## Flows",
        "",
        "| run | qdisc | flow | goodput (Mb/s) | mean srtt (ms) | queuing delay (ms) | retransmits |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for demo_run in runs:
        qdisc = demo_run.summary["bottleneck"]["qdisc_config"]
        for flow in demo_run.summary["flows"]:
            lines.append(
                f"| [{demo_run.name}]({demo_run.name}/) | `{qdisc}` | {flow.get('label', flow['cc'])} "
                f"| {_fmt(flow['goodput_mbps'], 2)} | {_fmt(flow['mean_srtt_ms'])} "
                f"| {_fmt(flow['queuing_delay_ms'])} | {flow['retransmits']} |"
            )
    lines += [
        "",
        "## Bottleneck",
        "",
        "| run | utilisation | sojourn mean / p50 / p99 (ms) | drops | Jain index | engine wall (s) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for demo_run in runs:
        bottleneck = demo_run.summary["bottleneck"]
        sojourn = bottleneck["sojourn_ms"]
        lines.append(
            f"| {demo_run.name} | {_fmt(bottleneck['utilisation'], 3)} "
            f"| {_fmt(sojourn.get('mean'))} / {_fmt(sojourn.get('p50'))} / {_fmt(sojourn.get('p99'))} "
            f"| {bottleneck['drops']} | {_fmt(demo_run.summary['jain_index'], 3)} | {_fmt(demo_run.wall_s, 3)} |"
        )
    lines += [
        "",
        "## Figures",
        "",
        "Per-flow goodput (100 ms bins):",
        "",
        "![goodput](goodput.png)",
        "",
        "Per-flow congestion window at the end of each bin:",
        "",
        "![cwnd](cwnd.png)",
        "",
        "Bottleneck sojourn time:",
        "",
        "![sojourn](sojourn.png)",
        "",
        "Each run's directory holds `summary.json`, `scenario.json` and Parquet series (see docs/outputs.md).",
        "",
    ]
    return write_text(out / "report.md", "\n".join(lines))
