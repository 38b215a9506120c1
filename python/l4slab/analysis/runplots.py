"""A run directory's figures, flent-style (``l4slab plot RUN_DIR``).

flent's standard plots of a bulk-flow test are goodput, congestion window and RTT per flow
over time, queue delay, and the delay's CCDF; l4slab adds the bottleneck's marks and drops
(its AQM's decisions) and the sojourn per qdisc queue (DualPI2's C and L). Every figure is
written as PNG and/or SVG into ``RUN_DIR/plots/`` and embedded inline in one self-contained
``RUN_DIR/run.html`` with the run's summary table. Flows are named by their label (with
``#id`` where several share one); DualPI2's queues by the names the summary uses (C, L),
each its own line (never one line mixing them). A flow's colour is its CC's
(:func:`l4slab.analysis.figures.cc_colours`).

A run is a run directory (``l4slab run --out``) or any run of a study (its file
``STUDY_DIR/runs/<id>.parquet``, or ``STUDY_DIR/runs/<id prefix>``). Several runs are drawn
over each other as flent's ``-i a -i b`` does: one line per run and flow (the run's name
first, a line style per run) in the same figures, written to ``--out`` with ``overlay.html``.
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
from ..io import check_regular, read_input, write_text
from .figures import GID_CC, QUEUE_COLOURS, _gid, cc_colours, ccdf_plot, save
from .html import html_page, markdown_to_html, md_text, mpl_text

__all__ = ["RunData", "load_run", "load_study_run", "run_figures", "plot_run", "plot_runs", "FIGURES"]

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
    #: The run's name in legends of an overlay (the directory's name, or study/point/trial).
    name: str = ""

    @property
    def flow_names(self) -> dict[int, str]:
        """Flow id → its label, ``label #id`` where several flows share that label."""
        labels = {int(f["id"]): str(f.get("label") or f.get("cc")) for f in self.summary["flows"]}
        counts = pd.Series(list(labels.values())).value_counts()
        return {i: (name if counts[name] == 1 else f"{name} #{i}") for i, name in labels.items()}

    @property
    def class_names(self) -> list[str]:
        return [c["class"] for c in self.summary["bottleneck"].get("sojourn_by_class") or []]


def _study_run_file(path: Path) -> Path | None:
    from ..study import runfile

    return runfile.resolve(path)


def load_study_run(path: str | os.PathLike[str]) -> RunData:
    """One run of a study, from its verified run file (:mod:`l4slab.study.runfile`), named by
    the study, point and trial; raises :class:`ScenarioError` in one line."""
    from ..study import runfile

    run = runfile.load(path)
    return RunData(run["study_dir"], run["summary"], run["flows"], run["flow_series"], run["bottleneck_series"],
                   None, name=run["name"])  # fmt: skip


def load_run(directory: str | os.PathLike[str]) -> RunData:
    """Read a run directory written by ``l4slab run --out`` or :meth:`RunResult.write`, or a
    study's run (:func:`load_study_run`); raises :class:`ScenarioError` naming what is missing."""
    directory = Path(directory)
    study_file = _study_run_file(directory)
    if study_file is not None:
        return load_study_run(study_file)
    if not directory.is_dir():
        raise ScenarioError(f"RUN_DIR: {directory} is not a directory; expected the --out of `l4slab run`")
    summary_path = directory / "summary.json"
    if not summary_path.is_file():
        raise ScenarioError(f"RUN_DIR: {directory} has no summary.json; expected a complete run directory")
    try:
        summary = json.loads(read_input(summary_path, "summary file"))
        tables = {
            name: pd.read_parquet(check_regular(directory / f"{name}.parquet"))
            for name in ("flows", "flow_series", "bottleneck_series")
        }
        trace = directory / "sojourn.parquet"
        sojourn = pd.read_parquet(check_regular(trace)) if trace.exists() else None
    except (OSError, ValueError) as err:
        raise ScenarioError(f"RUN_DIR: {directory}: {' '.join(str(err).split())}") from None
    data = RunData(directory, summary, tables["flows"], tables["flow_series"], tables["bottleneck_series"], sojourn,
                   name=directory.name)  # fmt: skip
    if sojourn is not None and len(sojourn) and pd.api.types.is_integer_dtype(sojourn["class"]):
        names = data.class_names  # traces written before the class names were stored
        if names and sojourn["class"].between(0, len(names) - 1).all():
            sojourn["class"] = np.asarray(names, dtype=object)[sojourn["class"].to_numpy()]
    return data


_STYLES = ("-", "--", ":", "-.")


def _colours(runs: Sequence[RunData]) -> dict[str, str]:
    return cc_colours(str(f.get("cc")) for data in runs for f in data.summary["flows"])


def _prefix(data: RunData, runs: Sequence[RunData]) -> str:
    return f"{data.name}: " if len(runs) > 1 else ""


def _per_flow(runs: Sequence[RunData], value: str, ylabel: str, title: str) -> Figure:
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    colours = _colours(runs)
    for k, data in enumerate(runs):
        names = data.flow_names
        ccs = {int(f["id"]): str(f.get("cc")) for f in data.summary["flows"]}
        seen: dict[str, int] = {}
        for flow, part in data.flow_series.groupby("flow", sort=True):
            cc = ccs.get(int(flow), "")
            # One run: flows of one CC told apart by style; several: the style is the run's.
            style = _STYLES[k % 4] if len(runs) > 1 else _STYLES[seen.get(cc, 0) % 4]
            seen[cc] = seen.get(cc, 0) + 1
            label = mpl_text(_prefix(data, runs) + str(names.get(int(flow), flow)))
            (line,) = ax.plot(part["time_s"], part[value], linewidth=1.0, color=colours.get(cc), linestyle=style,
                              label=label)  # fmt: skip
            line.set_gid(_gid(GID_CC, cc))
    _finish_time_axes(ax, ylabel, title, legend_title="flow")
    return fig


def _finish_time_axes(ax, ylabel: str, title: str, legend_title: str | None = None) -> None:
    """The common frame of the per-bin time plots: time on x, ``ylabel`` from 0, the
    title, a light grid and the legend."""
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(mpl_text(title))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, title=legend_title)


def _queue_columns(data: RunData) -> dict[str, str]:
    """Sub-queue name → its per-bin mean sojourn column (DualPI2's ``sojourn_c_ms``, ``sojourn_l_ms``)."""
    from ..results import class_sojourn_column

    series = data.bottleneck_series
    columns = {name: class_sojourn_column(name) for name in data.class_names}
    return {n: c for n, c in columns.items() if c in series and series[c].notna().any()}


def _sojourn(runs: Sequence[RunData], title: str) -> Figure:
    """The sojourn per bin of each of the qdisc's queues (DualPI2's L and C apart), from the
    bottleneck series; the per-packet trace where a run has one and the series lacks them;
    the bottleneck's mean for a single-queue qdisc."""
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    for k, data in enumerate(runs):
        style = _STYLES[k % 4]
        prefix = _prefix(data, runs)
        series = data.bottleneck_series
        queues = _queue_columns(data)
        trace = data.sojourn
        if len(queues) > 1:
            for name, column in queues.items():
                ax.plot(series["time_s"], series[column], linewidth=1.0, linestyle=style,
                        color=QUEUE_COLOURS.get(name), label=f"{mpl_text(prefix)}queue {mpl_text(name)}")  # fmt: skip
        elif trace is not None and len(trace) and trace["class"].nunique() > 1:
            bin_s = float(data.summary.get("bin_s") or 0.1)
            binned = trace.assign(time_s=np.floor(trace["time_s"] / bin_s) * bin_s)
            for name, part in binned.groupby("class", sort=True):
                mean = part.groupby("time_s")["sojourn_ms"].mean()
                ax.plot(mean.index, mean.to_numpy(), linewidth=1.0, linestyle=style,
                        color=QUEUE_COLOURS.get(str(name)), label=f"{mpl_text(prefix)}queue {mpl_text(name)}")  # fmt: skip
        else:
            ax.plot(series["time_s"], series["sojourn_ms"], linewidth=1.0, linestyle=style,
                    color=QUEUE_COLOURS["all"], label=f"{mpl_text(prefix)}queue all")  # fmt: skip
    _finish_time_axes(ax, "sojourn time, bin mean (ms)", title)
    return fig


def _marks_drops(runs: Sequence[RunData], title: str) -> Figure:
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    for k, data in enumerate(runs):
        series = data.bottleneck_series
        bin_s = float(data.summary.get("bin_s") or 0.1)
        for column, label, colour in (("marks", "CE marks", "#0072B2"), ("drops", "drops", "#D55E00")):
            if column in series:
                ax.plot(series["time_s"], series[column] / bin_s, linewidth=1.0, linestyle=_STYLES[k % 4],
                        color=colour, label=mpl_text(_prefix(data, runs)) + label)  # fmt: skip
    _finish_time_axes(ax, "packets per second", title)
    return fig


def _ccdf(runs: Sequence[RunData], title: str) -> Figure:
    samples = {}
    every_packet = all(d.sojourn is not None and len(d.sojourn) for d in runs)
    for data in runs:
        prefix = mpl_text(_prefix(data, runs))
        trace = data.sojourn
        if every_packet:
            for name, part in trace.groupby("class", sort=True):
                samples[f"{prefix}queue {mpl_text(name)}"] = part["sojourn_ms"]
            continue
        queues = _queue_columns(data)
        if len(queues) > 1:
            for name, column in queues.items():
                samples[f"{prefix}queue {mpl_text(name)} (bin means)"] = data.bottleneck_series[column].dropna()
        else:
            samples[f"{prefix}bins' mean sojourn"] = data.bottleneck_series["sojourn_ms"].dropna()
    suffix = " (every packet)" if every_packet else " (per-bin means)"
    return ccdf_plot(samples, xlabel="sojourn time (ms)", title=mpl_text(title + suffix))


def run_figures(data: RunData | Sequence[RunData]) -> dict[str, Figure]:
    """The figures of one run, or of several overlaid, by :data:`FIGURES` stem."""
    runs = [data] if isinstance(data, RunData) else list(data)
    if len(runs) == 1:
        name = str(runs[0].summary.get("scenario", runs[0].directory.name))
    else:
        name = " vs ".join(r.name for r in runs)
    return {
        "goodput": _per_flow(runs, "goodput_mbps", "goodput (Mbit/s)", f"{name}: goodput"),
        "cwnd": _per_flow(runs, "cwnd", "cwnd (packets)", f"{name}: congestion window"),
        "srtt": _per_flow(runs, "srtt_ms", "sRTT (ms)", f"{name}: smoothed RTT"),
        "sojourn": _sojourn(runs, f"{name}: sojourn per queue"),
        "marks_drops": _marks_drops(runs, f"{name}: marks and drops"),
        "ccdf": _ccdf(runs, f"{name}: sojourn CCDF"),
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


def _write_figures(figures: dict[str, Figure], target: Path, formats: Sequence[str]) -> list[Path]:
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    html_formats = tuple(dict.fromkeys([*formats, "svg"]))  # the page embeds SVG
    for stem, fig in figures.items():
        paths = save(fig, target / stem, formats=html_formats)
        written += [p for p in paths if p.suffix.lstrip(".") in formats]
    return written


def _figure_body() -> list[str]:
    body: list[str] = []
    for stem, caption in FIGURES.items():
        body += [f"## {caption}", "", f"![{caption}]({stem}.png)", ""]
    return body


def plot_run(
    directory: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    formats: Sequence[str] = ("png", "svg"),
) -> tuple[list[Path], Path]:
    """Draw a run's figures into ``out`` (default ``RUN_DIR/plots``; for a study's run
    ``STUDY_DIR/plots/<run id>``) and write ``run.html`` beside them (a run directory's in
    ``RUN_DIR``); returns (figure files, the HTML page)."""
    data = load_run(directory)
    study_run = _study_run_file(Path(directory)) is not None
    if out is not None:
        target = Path(out)
    elif study_run:
        target = data.directory / "plots" / Path(_study_run_file(Path(directory)) or "").stem
    else:
        target = data.directory / "plots"
    figures = run_figures(data)
    written = _write_figures(figures, target, formats)
    name = str(data.summary.get("scenario", data.directory.name))
    body = _summary_markdown(data) + _figure_body()
    title = f"{name}: run {data.directory.name}" if not study_run else f"{name}: {data.name}"
    page = html_page(title, markdown_to_html("\n".join(body), target))
    html_path = write_text((target if study_run else data.directory) / "run.html", page)
    if "svg" not in formats:
        for stem in figures:
            (target / f"{stem}.svg").unlink(missing_ok=True)
    return written, Path(html_path)


def plot_runs(
    runs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    formats: Sequence[str] = ("png", "svg"),
) -> tuple[list[Path], Path]:
    """Several runs overlaid (flent's ``-i a -i b``): the figures of :data:`FIGURES` with one
    line per run and flow, into ``out`` with ``out/overlay.html`` (each run's summary table,
    then the figures); returns (figure files, the HTML page)."""
    datas = [load_run(run) for run in runs]
    names = [d.name for d in datas]
    for k, data in enumerate(datas):  # legends need distinct names
        if names.count(data.name) > 1:
            data.name = f"{data.name} #{k + 1}"
    target = Path(out)
    figures = run_figures(datas)
    written = _write_figures(figures, target, formats)
    body: list[str] = []
    for data in datas:
        body += [f"## {md_text(data.name)}: {md_text(data.summary.get('scenario', ''))}", ""]
        body += _summary_markdown(data)
    body += _figure_body()
    page = html_page(f"{len(datas)} runs overlaid", markdown_to_html("\n".join(body), target))
    html_path = write_text(target / "overlay.html", page)
    if "svg" not in formats:
        for stem in figures:
            (target / f"{stem}.svg").unlink(missing_ok=True)
    return written, Path(html_path)
