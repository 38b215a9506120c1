"""A run directory's figures, flent-style (``l4slab plot RUN_DIR``).

flent's standard plots of a bulk-flow test are goodput, congestion window and RTT per flow
over time, queue delay, and the delay's CCDF; l4slab adds the bottleneck's marks and drops
(its AQM's decisions) and the sojourn per qdisc queue (DualPI2's C and L). Every figure is
written as PNG and/or SVG into ``RUN_DIR/plots/`` and embedded inline in one self-contained
``RUN_DIR/run.html`` with the run's summary table. Flows are named by their label (with
``#id`` where several share one); DualPI2's queues by the names the summary uses (C, L).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..errors import ScenarioError
from ..io import write_text
from .figures import ccdf_plot, save
from .html import html_page, markdown_to_html, md_text, mpl_text

__all__ = ["RunData", "load_run", "run_figures", "plot_run", "FIGURES"]

#: The figures of a run, in page order: file stem → caption.
FIGURES = {
    "goodput": "Goodput per flow",
    "cwnd": "Congestion window per flow",
    "srtt": "Smoothed RTT per flow",
    "sojourn": "Sojourn time per qdisc queue",
    "marks_drops": "CE marks and drops at the bottleneck",
    "ccdf": "Sojourn time CCDF per qdisc queue",
}


@dataclass
class RunData:
    """A run directory's tables (docs/outputs.md)."""

    directory: Path
    summary: dict
    flows: pd.DataFrame
    flow_series: pd.DataFrame
    bottleneck_series: pd.DataFrame
    sojourn: pd.DataFrame | None

    @property
    def flow_names(self) -> dict[int, str]:
        """Flow id → its label, ``label #id`` where several flows share that label."""
        labels = {int(f["id"]): str(f.get("label") or f.get("cc")) for f in self.summary["flows"]}
        counts = pd.Series(list(labels.values())).value_counts()
        return {i: (name if counts[name] == 1 else f"{name} #{i}") for i, name in labels.items()}

    @property
    def class_names(self) -> list[str]:
        return [c["class"] for c in self.summary["bottleneck"].get("sojourn_by_class") or []]


def load_run(directory: str | os.PathLike[str]) -> RunData:
    """Read a run directory written by ``l4slab run --out`` or :meth:`RunResult.write`;
    raises :class:`ScenarioError` naming what is missing."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ScenarioError(f"RUN_DIR: {directory} is not a directory; expected the --out of `l4slab run`")
    summary_path = directory / "summary.json"
    if not summary_path.is_file():
        raise ScenarioError(f"RUN_DIR: {directory} has no summary.json; expected a complete run directory")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        tables = {
            name: pd.read_parquet(directory / f"{name}.parquet")
            for name in ("flows", "flow_series", "bottleneck_series")
        }
        trace = directory / "sojourn.parquet"
        sojourn = pd.read_parquet(trace) if trace.is_file() else None
    except (OSError, ValueError) as err:
        raise ScenarioError(f"RUN_DIR: {directory}: {' '.join(str(err).split())}") from None
    data = RunData(directory, summary, tables["flows"], tables["flow_series"], tables["bottleneck_series"], sojourn)
    if sojourn is not None and len(sojourn) and pd.api.types.is_integer_dtype(sojourn["class"]):
        names = data.class_names  # traces written before the class names were stored
        if names and sojourn["class"].between(0, len(names) - 1).all():
            sojourn["class"] = np.asarray(names, dtype=object)[sojourn["class"].to_numpy()]
    return data


def _per_flow(data: RunData, value: str, ylabel: str, title: str) -> Figure:
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    names = data.flow_names
    for flow, part in data.flow_series.groupby("flow", sort=True):
        ax.plot(part["time_s"], part[value], linewidth=1.0, label=mpl_text(names.get(int(flow), flow)))
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(mpl_text(title))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, title="flow")
    return fig


def _sojourn(data: RunData, title: str) -> Figure:
    """The bottleneck's mean sojourn per bin, and per queue from the packet trace when there is one."""
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    series = data.bottleneck_series
    ax.plot(series["time_s"], series["sojourn_ms"], linewidth=1.0, color="black", label="all packets (bin mean)")
    trace = data.sojourn
    if trace is not None and len(trace) and trace["class"].nunique() > 1:
        bin_s = float(data.summary.get("bin_s") or 0.1)
        binned = trace.assign(time_s=np.floor(trace["time_s"] / bin_s) * bin_s)
        for name, part in binned.groupby("class", sort=True):
            mean = part.groupby("time_s")["sojourn_ms"].mean()
            ax.plot(mean.index, mean.to_numpy(), linewidth=1.0, label=f"queue {mpl_text(name)} (bin mean)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("sojourn time (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title(mpl_text(title))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _marks_drops(data: RunData, title: str) -> Figure:
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    series = data.bottleneck_series
    bin_s = float(data.summary.get("bin_s") or 0.1)
    for column, label in (("marks", "CE marks"), ("drops", "drops")):
        if column in series:
            ax.plot(series["time_s"], series[column] / bin_s, linewidth=1.0, label=label)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("packets per second")
    ax.set_ylim(bottom=0)
    ax.set_title(mpl_text(title))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _ccdf(data: RunData, title: str) -> Figure:
    trace = data.sojourn
    if trace is not None and len(trace):
        samples = {f"queue {mpl_text(name)}": part["sojourn_ms"] for name, part in trace.groupby("class", sort=True)}
        return ccdf_plot(samples, xlabel="sojourn time (ms)", title=mpl_text(title + " (every packet)"))
    values = data.bottleneck_series["sojourn_ms"].dropna()
    return ccdf_plot(
        {"bins' mean sojourn": values}, xlabel="sojourn time (ms)", title=mpl_text(title + " (per-bin means)")
    )


def run_figures(data: RunData) -> dict[str, Figure]:
    """The run's figures by :data:`FIGURES` stem."""
    name = str(data.summary.get("scenario", data.directory.name))
    return {
        "goodput": _per_flow(data, "goodput_mbps", "goodput (Mbit/s)", f"{name}: goodput"),
        "cwnd": _per_flow(data, "cwnd", "cwnd (packets)", f"{name}: congestion window"),
        "srtt": _per_flow(data, "srtt_ms", "sRTT (ms)", f"{name}: smoothed RTT"),
        "sojourn": _sojourn(data, f"{name}: bottleneck sojourn"),
        "marks_drops": _marks_drops(data, f"{name}: marks and drops"),
        "ccdf": _ccdf(data, f"{name}: sojourn CCDF"),
    }


def _summary_markdown(data: RunData) -> list[str]:
    s = data.summary
    b = s["bottleneck"]
    names = data.flow_names
    lines = [
        f"{s.get('duration_s', 0):g} s simulated, seed {s.get('seed')}, summary window from "
        f"{s.get('warmup_s', 0):g} s; bottleneck `htb {b.get('rate_mbps', 0):g}Mbit` + "
        f"`{str(b.get('qdisc_config', '')).replace('`', '')}`.",
        "",
        "| flow | cc | base RTT (ms) | goodput (Mbit/s) | mean sRTT (ms) | queuing delay (ms) | retransmits |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in s["flows"]:
        cells = [md_text(names.get(int(f["id"]), f["id"])), md_text(f.get("cc"))]
        for key, digits in (("base_rtt_ms", 1), ("goodput_mbps", 2), ("mean_srtt_ms", 2), ("queuing_delay_ms", 2)):
            value = f.get(key)
            cells.append("–" if value is None else f"{value:.{digits}f}")
        cells.append(str(f.get("retransmits", "–")))
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "| queue | packets | sojourn mean (ms) | p50 (ms) | p99 (ms) | max (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for c in b.get("sojourn_by_class") or []:
        q = c.get("sojourn_ms") or {}
        row = [md_text(c["class"]), str(q.get("count", 0))]
        row += ["–" if q.get(k) is None else f"{q[k]:.2f}" for k in ("mean", "p50", "p99", "max")]
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def plot_run(
    directory: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    formats: Sequence[str] = ("png", "svg"),
) -> tuple[list[Path], Path]:
    """Draw a run directory's figures into ``out`` (default ``RUN_DIR/plots``) and write
    ``RUN_DIR/run.html``; returns (figure files, the HTML page)."""
    data = load_run(directory)
    target = Path(out) if out is not None else data.directory / "plots"
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    figures = run_figures(data)
    html_formats = tuple(dict.fromkeys([*formats, "svg"]))  # the page embeds SVG
    for stem, fig in figures.items():
        paths = save(fig, target / stem, formats=html_formats)
        written += [p for p in paths if p.suffix.lstrip(".") in formats]
    name = str(data.summary.get("scenario", data.directory.name))
    body = _summary_markdown(data)
    for stem, caption in FIGURES.items():
        body += [f"## {caption}", "", f"![{caption}]({stem}.png)", ""]
    page = html_page(f"{name}: run {data.directory.name}", markdown_to_html("\n".join(body), target))
    html_path = write_text(data.directory / "run.html", page)
    if "svg" not in formats:
        for stem in figures:
            (target / f"{stem}.svg").unlink(missing_ok=True)
    return written, Path(html_path)
