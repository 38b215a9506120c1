"""Figures of the studies (matplotlib, Agg; no pyplot state).

Every plotting function returns a :class:`matplotlib.figure.Figure`; :func:`save` writes it
as ``<stem>.png`` and ``<stem>.svg``, each through a temporary file renamed into place.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Mapping, Sequence, Union

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from ..io import atomic_write
from .metrics import ccdf, ccdf_from_histogram, mean_ci, t_quantile
from .published import BUFFERS_BDP, QUEUE_ORDER, normalise_buffer

__all__ = ["save", "pam_heatmap", "flow_bars", "ccdf_plot", "time_series", "cell_text"]

#: Samples for :func:`ccdf_plot`: raw values, or a histogram as ``(edges, counts)``.
Samples = Union[Sequence[float], np.ndarray, pd.Series, tuple]


def save(
    fig: Figure, path_stem: str | os.PathLike[str], formats: Sequence[str] = ("png", "svg"), dpi: int = 150
) -> list[Path]:
    """Write ``fig`` to ``<path_stem>.<fmt>`` for each format, atomically (temp + rename)."""
    stem = Path(path_stem)
    written = []
    engine = fig.get_layout_engine()
    try:
        for k, fmt in enumerate(formats):
            target = stem.with_name(f"{stem.name}.{fmt}")
            written.append(atomic_write(target, lambda tmp, fmt=fmt: fig.savefig(tmp, format=fmt, dpi=dpi)))
            if k == 0 and engine is not None:
                # The first draw placed the axes (constrained layout); the other formats
                # reuse that placement instead of solving it again (the solve re-measures every
                # tick label and is about a third of a draw). The layout is in figure
                # fractions, so PNG and SVG show the same figure.
                fig.set_layout_engine("none")
    finally:
        if engine is not None and fig.get_layout_engine() is not engine:
            fig.set_layout_engine(engine)
    return written


# --- PAM heatmap table --------------------------------------------------------------------------


def cell_text(l4s: float, other: float, l4s_delay: float | None = None, other_delay: float | None = None) -> str:
    """``"90.3 (4.6)"``, with a second line ``"4.7/9.4 ms"`` when delays are given; ``"–"`` if missing."""
    if l4s is None or math.isnan(l4s):
        return "–"
    text = f"{l4s:.1f} ({other:.1f})"
    if l4s_delay is not None and other_delay is not None:
        text += f"\n{l4s_delay:.1f}/{other_delay:.1f} ms"
    return text


def _grid(cells: pd.DataFrame, column: str, queues: Sequence[str], buffers: Sequence[float]) -> np.ndarray:
    if column not in cells:
        return np.full((len(queues), len(buffers)), np.nan)
    table = cells.pivot(index="queue", columns="_buffer", values=column)
    return table.reindex(index=list(queues), columns=list(buffers)).to_numpy(dtype=np.float64)


def _heatmap_axes(queues: Sequence[str], buffers: Sequence[float]) -> tuple[Figure, object]:
    fig = Figure(figsize=(1.6 * len(buffers) + 2.6, 0.55 * len(queues) + 1.4), layout="constrained")
    ax = fig.add_subplot()
    ax.set_xticks(range(len(buffers)), [f"{b:g}" for b in buffers])
    ax.set_yticks(range(len(queues)), list(queues))
    ax.set_xlabel("buffer (× BDP)")
    ax.set_ylabel("queue")
    return fig, ax


def pam_heatmap(
    cells: pd.DataFrame,
    *,
    value: str = "l4s_mbps",
    other: str = "classic_mbps",
    classic: str | None = None,
    queues: Sequence[str] | None = None,
    buffers: Sequence[float] | None = None,
    delays: bool = False,
    capacity_mbps: float = 100.0,
    cmap: str = "RdBu",
    title: str | None = None,
) -> Figure:
    """The PAM results table as a heatmap: rows = queues (paper order), columns = buffers,
    text ``"L4S (other)"`` (Mbit/s, one decimal; with ``delays`` a second line
    ``l4s_qdelay_ms/classic_qdelay_ms``), colour = ``value`` on a diverging map centred on
    the fair share (capacity / 2) with a colorbar. ``classic`` selects one published table."""
    cells = cells if classic is None else cells[cells["classic"] == classic]
    cells = cells.assign(_buffer=cells["buffer_bdp"].map(normalise_buffer))
    if cells.duplicated(["queue", "_buffer"]).any():
        raise ValueError("pam_heatmap: several rows per (queue, buffer); select one table with classic=...")
    present = set(cells["queue"])
    queues = list(queues or [q for q in QUEUE_ORDER if q in present] + sorted(present - set(QUEUE_ORDER)))
    buffers = list(buffers or sorted(set(cells["_buffer"]) | set(BUFFERS_BDP)))
    grids = {name: _grid(cells, name, queues, buffers) for name in (value, other, "l4s_qdelay_ms", "classic_qdelay_ms")}
    fig, ax = _heatmap_axes(queues, buffers)
    norm = TwoSlopeNorm(vmin=0.0, vcenter=capacity_mbps / 2.0, vmax=capacity_mbps)
    image = ax.imshow(np.ma.masked_invalid(grids[value]), cmap=cmap, norm=norm, aspect="auto")
    fig.colorbar(image, ax=ax, label=f"{value} (Mbit/s)")
    for (i, j), level in np.ndenumerate(grids[value]):
        extra = (grids["l4s_qdelay_ms"][i, j], grids["classic_qdelay_ms"][i, j]) if delays else (None, None)
        dark = not math.isnan(level) and abs(norm(level) - 0.5) > 0.3
        ax.text(j, i, cell_text(level, grids[other][i, j], *extra), ha="center", va="center",
                fontsize=8, color="white" if dark else "black")  # fmt: skip
    if title:
        ax.set_title(title)
    return fig


# --- bars ---------------------------------------------------------------------------------------


def _bar_stats(frame: pd.DataFrame, keys: list[str], value: str, ci: str | None) -> pd.DataFrame:
    """Mean and CI half-width per ``keys``: from raw trials if keys repeat, else from ``ci``."""
    if frame.duplicated(keys).any():
        rows = []
        for key, group in frame.groupby(keys, sort=False):
            stats = mean_ci(group[value].to_numpy(dtype=np.float64))
            rows.append({**dict(zip(keys, key, strict=True)), "mean": stats.mean, "half": stats.half})
        return pd.DataFrame(rows)
    half = frame[ci] if ci and ci in frame else np.nan
    return frame[keys].assign(mean=frame[value].to_numpy(), half=half)


def flow_bars(
    frame: pd.DataFrame,
    *,
    x: str = "label",
    value: str = "goodput_mbps",
    ci: str | None = None,
    hue: str | None = None,
    fair_mbps: float | None = None,
    capacity_mbps: float | None = None,
    ylabel: str | None = None,
    title: str | None = None,
) -> Figure:
    """Bars of ``value`` per ``x`` (flow or group), optionally side by side per ``hue``, with
    95 % CI error bars and a dashed fair-share line.

    ``frame`` is either raw (several rows, i.e. trials, per bar: mean and CI computed here)
    or already aggregated (one row per bar, half-widths in ``ci``, default ``<value>_ci``).
    The fair share is ``fair_mbps``, or ``capacity_mbps`` / number of bars per hue group."""
    keys = [x] if hue is None else [hue, x]
    stats = _bar_stats(frame, keys, value, ci or f"{value}_ci")
    hues = [None] if hue is None else list(dict.fromkeys(stats[hue]))
    labels = list(dict.fromkeys(stats[x]))
    fig = Figure(figsize=(max(4.0, 0.6 * len(labels) * len(hues) + 2.0), 3.6), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(hues)
    for k, name in enumerate(hues):
        part = stats if name is None else stats[stats[hue] == name]
        part = part.set_index(x).reindex(labels)
        pos = np.arange(len(labels)) - 0.4 + width * (k + 0.5)
        yerr = np.nan_to_num(part["half"].to_numpy(dtype=np.float64), nan=0.0)
        ax.bar(pos, part["mean"], width, yerr=yerr, capsize=3, label=None if name is None else str(name))
    if fair_mbps is None and capacity_mbps is not None and labels:
        fair_mbps = capacity_mbps / len(labels)
    if fair_mbps is not None:
        ax.axhline(fair_mbps, color="black", linestyle="--", linewidth=1, label="fair share")
    ax.set_xticks(range(len(labels)), [str(label) for label in labels])
    ax.set_ylabel(ylabel or value)
    if hue is not None or fair_mbps is not None:
        ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return fig


# --- CCDF ---------------------------------------------------------------------------------------


def _ccdf_points(samples: Samples) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(samples, tuple) and len(samples) == 2:
        x, p = ccdf_from_histogram(*samples)
    else:
        x, p = ccdf(samples)
    keep = p > 0  # log axis: P = 0 cannot be drawn
    return x[keep], p[keep]


def ccdf_plot(
    data: Mapping[str, Samples] | pd.DataFrame,
    *,
    by: str | None = None,
    value: str = "sojourn_ms",
    xlabel: str = "queue delay (ms)",
    logx: bool = False,
    title: str | None = None,
) -> Figure:
    """Log-scale CCDF P(X > x) of queue delay for several runs/classes.

    ``data`` maps a legend label to raw samples or to a histogram ``(edges, counts)``; or it
    is a sojourn trace (``sojourn.parquet``) split by the column ``by`` (e.g. ``"class"``)."""
    if isinstance(data, pd.DataFrame):
        data = {"all": data[value]} if by is None else {str(k): g[value] for k, g in data.groupby(by, sort=True)}
    fig = Figure(figsize=(5.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    for label, samples in data.items():
        x, p = _ccdf_points(samples)
        ax.step(x, p, where="post", label=str(label))
    ax.set_yscale("log")
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("P(delay > x)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return fig


# --- time series --------------------------------------------------------------------------------


def _band(series: pd.DataFrame, time: str, group: str | None, value: str, confidence: float) -> pd.DataFrame:
    keys = [time] if group is None else [group, time]
    stats = series.groupby(keys, sort=True)[value].agg(["mean", "std", "count"]).reset_index()
    quantiles = {n: t_quantile(0.5 + confidence / 2.0, n - 1) for n in set(stats["count"]) if n > 1}
    factor = stats["count"].map(lambda n: quantiles.get(n, math.nan)).astype(np.float64)
    stats["half"] = factor * stats["std"] / np.sqrt(stats["count"].astype(np.float64))
    return stats


def time_series(
    series: pd.DataFrame,
    *,
    value: str = "goodput_mbps",
    time: str = "time_s",
    group: str | None = "flow",
    confidence: float = 0.95,
    ylabel: str | None = None,
    title: str | None = None,
    legend_title: str | None = None,
    trial: str | None = None,
    min_trials_for_band: int = 2,
    lower: float | None = None,
    upper: float | None = None,
) -> Figure:
    """``value`` over time, one line per ``group`` (e.g. flow, label or class; None for one
    line), the mean across trials with a shaded ``confidence`` band (Student t).

    ``series`` holds the bins of several trials of one point stacked (long format, e.g.
    ``flow_series`` or ``bottleneck_series`` with a run/trial column): rows sharing
    ``(group, time)`` are the trials. Use ``srtt_ms`` for RTT, ``sojourn_ms`` /
    ``backlog_packets`` (group=None) for the queue.

    With a ``trial`` column and fewer than ``min_trials_for_band`` trials, each trial is drawn
    as a thin line under the mean instead of a band (a t-interval from 2–4 samples says little
    and can cross physical bounds). The band is clipped to ``[lower, upper]`` (e.g. ``lower=0``
    for rates, delays and windows). The legend shows the ``group`` values (flow labels) under
    ``legend_title`` (default: the column name)."""
    stats = _band(series, time, group, value, confidence)
    n_trials = series[trial].nunique() if trial is not None and trial in series else None
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    parts = [(None, stats)] if group is None else list(stats.groupby(group, sort=True))
    for name, part in parts:
        line = ax.plot(part[time], part["mean"], label=None if name is None else str(name), linewidth=1.2)[0]
        if n_trials is not None and n_trials < min_trials_for_band:
            if n_trials == 1:
                continue  # the one trial is the mean line itself: its thin twin would lie under it
            raw = series if group is None else series[series[group] == name]
            for _, one in raw.groupby(trial, sort=True):
                ax.plot(one[time], one[value], color=line.get_color(), linewidth=0.6, alpha=0.35)
            continue
        low, high = part["mean"] - part["half"], part["mean"] + part["half"]
        if lower is not None or upper is not None:
            low, high = low.clip(lower=lower, upper=upper), high.clip(lower=lower, upper=upper)
        ax.fill_between(part[time], low, high, color=line.get_color(), alpha=0.25, linewidth=0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel or value)
    if lower is not None:
        ax.set_ylim(bottom=lower)
    if group is not None:
        ax.legend(fontsize=8, title=legend_title or group)
    if title:
        ax.set_title(title)
    return fig


def cc_mode_timeline(
    series: pd.DataFrame,
    *,
    time: str = "time_s",
    group: str | None = "flow",
    mode: str = "cc_mode",
    title: str | None = None,
) -> Figure:
    """The congestion control's mode over time (e.g. BBR's STARTUP / DRAIN / PROBE_BW /
    PROBE_RTT), one step line per ``group``. Modes are categories, not averaged: where
    several trials share ``(group, time)`` the first trial's mode is drawn. Bins without
    a mode (``""``) are left out."""
    frame = series[series[mode].astype(str) != ""] if mode in series else series.iloc[0:0]
    frame = frame.drop_duplicates([time] if group is None else [group, time], keep="first")
    levels = sorted(set(frame[mode].astype(str)))
    index = {name: i for i, name in enumerate(levels)}
    fig = Figure(figsize=(6.4, 0.9 + 0.45 * max(len(levels), 2)), layout="constrained")
    ax = fig.add_subplot()
    parts = [(None, frame)] if group is None else list(frame.groupby(group, sort=True))
    for k, (name, part) in enumerate(parts):
        part = part.sort_values(time)
        offset = 0.12 * (k - (len(parts) - 1) / 2)  # keep coincident lines apart
        ys = part[mode].astype(str).map(index).to_numpy(dtype=np.float64) + offset
        ax.step(part[time], ys, where="post", linewidth=1.2, label=None if name is None else str(name))
    ax.set_yticks(range(len(levels)), levels)
    ax.set_xlabel("time (s)")
    if group is not None and parts:
        ax.legend(fontsize=8, title=group)
    if title:
        ax.set_title(title)
    return fig
