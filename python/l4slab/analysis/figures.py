"""Figures of the studies (matplotlib, Agg; no pyplot state).

Every plotting function returns a :class:`matplotlib.figure.Figure`; :func:`save` writes it
as ``<stem>.png`` and ``<stem>.svg``, each through a temporary file renamed into place.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence, Union

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from ..io import atomic_write
from .metrics import ccdf, ccdf_from_histogram, mean_ci, t_quantile
from .published import BUFFERS_BDP, QUEUE_ORDER, normalise_buffer

__all__ = [
    "save",
    "pam_heatmap",
    "flow_bars",
    "ccdf_plot",
    "time_series",
    "cell_text",
    "cc_colours",
    "interval",
    "factor_lines",
    "quantile_ccdf_grid",
    "QUEUE_COLOURS",
    "natural_order",
]

#: One colour per congestion control, the same in every figure of a report and across reports
#: (Okabe–Ito, readable by the colour-blind): the L4S CCs in blues, CUBIC vermillion, Reno
#: green (CUBIC's partner in the demo), BBR orange.
CC_COLOURS = {
    "prague": "#0072B2",
    "dctcp": "#56B4E9",
    "cubic": "#D55E00",
    "reno": "#009E73",
    "bbr": "#E69F00",
    "bbr2": "#CC79A7",
    "bbr3": "#882255",
    "udp": "#777777",
}
#: Colours for congestion controls not in :data:`CC_COLOURS`, given out in name order.
_SPARE_COLOURS = ("#332288", "#117733", "#999933", "#AA4499", "#44AA99", "#661100", "#6699CC", "#888855")
#: A qdisc's sub-queues (DualPI2's L and C; "all" for a single queue): not CC colours.
QUEUE_COLOURS = {"L": "#1F9E89", "C": "#6A3D9A", "all": "#444444"}
#: SVG id prefixes the report's rendering test reads (tests/python/test_report_figures.py):
#: ``l4slab-cc-<cc>-<n>`` on every artist coloured by a CC, ``l4slab-interval-<n>`` on every
#: interval of a non-negative quantity, ``l4slab-zero-<n>`` on the line at y = 0 of its axes.
GID_CC, GID_INTERVAL, GID_ZERO = "l4slab-cc-", "l4slab-interval-", "l4slab-zero-"
_gid_counter = iter(range(1, 1 << 62))


def _gid(prefix: str, name: str = "") -> str:
    slug = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
    return f"{prefix}{slug}{'-' if slug else ''}{next(_gid_counter)}"


def cc_colours(ccs: Iterable[object]) -> dict[str, str]:
    """CC name → colour: :data:`CC_COLOURS` for the known ones (case-insensitive), the others
    from a spare palette in name order. Build it once from every CC of a report and pass it to
    every figure, so a CC has one colour throughout."""
    names = list(dict.fromkeys(str(c) for c in ccs))
    out = {n: CC_COLOURS[n.lower()] for n in names if n.lower() in CC_COLOURS}
    spare = [c for c in _SPARE_COLOURS if c not in out.values()] or list(_SPARE_COLOURS)
    for k, name in enumerate(sorted(n for n in names if n not in out)):
        out[name] = spare[k % len(spare)]
    return out


def interval(
    values: Iterable[float],
    *,
    lower: float | None = None,
    upper: float | None = None,
    min_trials: int = 5,
    confidence: float = 0.95,
) -> tuple[float, float, float, int]:
    """``(mean, low, high, n)`` of trials: with at least ``min_trials`` the Student-t interval
    clipped to ``[lower, upper]`` (the quantity's range: ``lower=0`` for rates and delays);
    with fewer the trials' min–max (a t-interval from 2–4 samples is wider than the physical
    range), which lies inside the range by construction. NaNs are left out."""
    x = np.asarray(list(values), dtype=np.float64)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(x.mean())
    if n >= max(min_trials, 2):
        stats = mean_ci(x, confidence)
        low, high = stats.mean - stats.half, stats.mean + stats.half
    else:
        low, high = float(x.min()), float(x.max())
    if lower is not None:
        low, high = max(low, lower), max(high, lower)
    if upper is not None:
        low, high = min(low, upper), min(high, upper)
    return mean, low, high, n


def _facet_axes(fig: Figure, n: int, ncols: int, **kwargs) -> list:
    """``n`` axes in rows of ``ncols`` (wrapped), the unused cells of the grid left out."""
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    grid = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
    axes = list(grid.ravel())
    for ax in axes[n:]:
        ax.remove()
    return axes[:n]


def _zero_line(ax) -> None:
    """The y = 0 line of an axes whose quantity is non-negative (the rendering test checks that
    no interval reaches below it)."""
    ax.axhline(0.0, color="0.35", linewidth=0.6, zorder=1.5, gid=_gid(GID_ZERO))


def _number_label(value: object) -> str:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    return f"{number:g}"


def factor_lines(
    frame: pd.DataFrame,
    *,
    facet: str,
    x: str,
    value: str,
    line: str,
    x_order: Sequence[object],
    facet_order: Sequence[object] | None = None,
    line_order: Sequence[object] | None = None,
    colours: Mapping[str, str] | None = None,
    cc_of: Mapping[object, str] | None = None,
    x_labels: Sequence[str] | None = None,
    lower: float | None = 0.0,
    min_trials: int = 5,
    ncols: int = 3,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    reference: float | None = None,
    reference_label: str | None = None,
) -> Figure:
    """The PAM figures' layout: one panel per ``facet`` value (e.g. the queue, in
    ``facet_order``, wrapped into rows of ``ncols``), ``x`` in ``x_order`` (the factor's order,
    labelled by ``x_labels``, e.g. the buffer as a number of BDPs), one line per ``line`` value
    (e.g. the flow), the mean over the rows (trials) of each point with its :func:`interval`
    (clipped at ``lower``). A line's colour is its CC's: ``colours[cc_of[line]]``.
    ``reference``: a dashed horizontal line (e.g. the fair share)."""
    facets = list(facet_order) if facet_order is not None else natural_order(frame[facet])
    facets = [f for f in facets if (frame[facet] == f).any()]
    lines = list(line_order) if line_order is not None else natural_order(frame[line])
    lines = [v for v in lines if (frame[line] == v).any()]
    positions = {v: k for k, v in enumerate(x_order)}
    labels = list(x_labels) if x_labels is not None else [_number_label(v) for v in x_order]
    ncols = max(1, min(ncols, len(facets) or 1))
    width = min(1.0 + 0.55 * len(positions), 4.2)
    fig = Figure(
        figsize=(0.6 + width * ncols, 0.9 + 2.5 * math.ceil(max(len(facets), 1) / ncols)), layout="constrained"
    )
    axes = _facet_axes(fig, max(len(facets), 1), ncols, sharey=True)
    colours = dict(colours or {})
    spread = 0.18 / max(len(lines), 1)  # keep coincident points of several lines apart
    handles: dict[str, object] = {}
    for ax, name in zip(axes, facets, strict=False):
        part = frame[frame[facet] == name]
        if lower is not None:
            _zero_line(ax)
        for k, key in enumerate(lines):
            rows = part[part[line] == key]
            stats = []
            for xv, cell in rows.groupby(x, sort=False):
                if xv not in positions:
                    continue
                mean, low, high, n = interval(cell[value], lower=lower, min_trials=min_trials)
                if n:
                    stats.append((positions[xv], mean, low, high))
            if not stats:
                continue
            stats.sort()
            pos = np.array([s[0] for s in stats], dtype=np.float64) + (k - (len(lines) - 1) / 2) * spread
            mean = np.array([s[1] for s in stats])
            err = np.array([[s[1] - s[2] for s in stats], [s[3] - s[1] for s in stats]])
            cc = str(cc_of.get(key, key)) if cc_of is not None else str(key)
            colour = colours.get(cc)
            container = ax.errorbar(
                pos, mean, yerr=np.clip(err, 0.0, None), color=colour, marker="os^Dv<>p"[k % 8], markersize=4,
                linewidth=1.2, capsize=2.5, label=mpl_label(key),
            )  # fmt: skip
            container.lines[0].set_gid(_gid(GID_CC, cc))
            for bars in container.lines[2]:
                bars.set_gid(_gid(GID_INTERVAL if lower is not None else "l4slab-err-", cc))
            handles.setdefault(mpl_label(key), container)
        if reference is not None:
            ax.axhline(reference, color="black", linestyle="--", linewidth=0.8)
        # A long queue (a qdisc's whole tc line) is wrapped to its panel's width.
        ax.set_title(wrap_label(mpl_label(name), max(8, int(width * 72 / (9 * 0.62)))), fontsize=9)
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.grid(True, axis="y", alpha=0.3)
    if lower is not None:  # after every panel is drawn: the shared top fits them all
        axes[0].set_ylim(bottom=lower, top=max(ax.dataLim.y1 for ax in axes) * 1.05 if facets else None)
    for ax in axes[-ncols:]:
        ax.set_xlabel(xlabel or x)
    for ax in axes[::ncols]:
        ax.set_ylabel(ylabel or value)
    legend_handles = list(handles.values())
    legend_labels = list(handles)
    if reference is not None and reference_label:
        from matplotlib.lines import Line2D

        legend_handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.8))
        legend_labels.append(reference_label)
    if legend_handles:
        fig.legend(legend_handles, legend_labels, loc="outside lower center", ncols=min(len(legend_labels), 5),
                   fontsize=8, frameon=False)  # fmt: skip
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def mpl_label(value: object) -> str:
    """A category as matplotlib text: a number without trailing zeros, ``$`` escaped."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).replace("$", r"\$")


def _log_ticks(ax, values: Sequence[float], most: int = 3) -> None:
    """At most ``most`` x ticks on a log axis at 1-2-5 values inside the data's range, labelled
    as plain numbers; no minor labels (matplotlib labels minor ticks of a narrow log range,
    and those collide)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    data = [v for v in values if v > 0 and math.isfinite(v)]
    if not data:
        return
    low, high = min(data), max(data)
    candidates = [m * 10.0**e for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
                  for m in (1, 2, 5)]  # fmt: skip
    inside = [c for c in candidates if low <= c <= high]
    if len(inside) > most:
        step = (len(inside) - 1) / (most - 1)
        inside = [inside[round(k * step)] for k in range(most)]
    if len(inside) < 2:
        inside = sorted({float(f"{low:.2g}"), float(f"{high:.2g}")})
    ax.xaxis.set_major_locator(FixedLocator(inside))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


#: The quantiles of a sojourn summary (the engine's DelayStats) and their exceedance probability.
SOJOURN_QUANTILES = (("p50_ms", 0.5), ("p90_ms", 0.1), ("p99_ms", 0.01), ("p999_ms", 0.001))


def quantile_ccdf_grid(
    classes: pd.DataFrame,
    *,
    row: str,
    col: str,
    row_order: Sequence[object],
    col_order: Sequence[object],
    col_labels: Sequence[str] | None = None,
    col_title: str = "",
    queue: str = "class",
    title: str | None = None,
) -> Figure:
    """Per-queue sojourn CCDFs from each run's sojourn quantiles (p50, p90, p99, p99.9 and the
    maximum at 1/count): one panel per (``row``, ``col``) value (e.g. qdisc × buffer), one line
    per sub-queue (DualPI2's L and C apart, in :data:`QUEUE_COLOURS`), each quantile the median
    over the trials. A log–log CCDF P(sojourn > x) (the DualQ paper draws queue delay on a log
    scale too), exact at the drawn quantiles (the engine's HdrHistogram, 0.1 %), straight
    between them."""
    rows = [r for r in row_order if (classes[row] == r).any()]
    cols = [c for c in col_order if (classes[col] == c).any()]
    labels = dict(zip(col_order, col_labels or [_number_label(c) for c in col_order], strict=True))
    fig = Figure(figsize=(0.8 + 2.3 * max(len(cols), 1), 0.9 + 1.9 * max(len(rows), 1)), layout="constrained")
    grid = fig.subplots(max(len(rows), 1), max(len(cols), 1), squeeze=False, sharey=True)
    present: dict[str, object] = {}
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            ax = grid[i][j]
            cell = classes[(classes[row] == r) & (classes[col] == c)]
            drawn = False
            for name in sorted(set(cell[queue].astype(str)), key=lambda q: (q not in QUEUE_COLOURS, q)):
                part = cell[cell[queue].astype(str) == name]
                xs, ps = [], []
                for column, p in SOJOURN_QUANTILES:
                    if column in part and part[column].notna().any():
                        xs.append(float(part[column].median()))
                        ps.append(p)
                if "max_ms" in part and "count" in part and part["count"].notna().any():
                    count = float(part["count"].median())
                    if count > 1:
                        xs.append(float(part["max_ms"].median()))
                        ps.append(1.0 / count)
                keep = [k for k, v in enumerate(xs) if v > 0]  # log axis: a zero sojourn cannot be drawn
                xs, ps = [xs[k] for k in keep], [ps[k] for k in keep]
                if not xs:
                    continue
                (line,) = ax.plot(xs, ps, color=QUEUE_COLOURS.get(name), marker="o", markersize=3, linewidth=1.2,
                                  label=f"queue {mpl_label(name)}")  # fmt: skip
                present.setdefault(f"queue {mpl_label(name)}", line)
                drawn = True
            if not drawn:
                ax.set_visible(False)
                continue
            ax.set_yscale("log")
            ax.set_xscale("log")  # L's sub-millisecond and C's tens of ms in one panel
            _log_ticks(ax, [x for ln in ax.get_lines() for x in ln.get_xdata()])
            ax.grid(True, which="major", alpha=0.3)
            if i == 0:
                ax.set_title(f"{col_title}{labels.get(c, c)}", fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{wrap_label(mpl_label(r), 26)}\nP(sojourn > x)", fontsize=8)
            if i == len(rows) - 1:
                ax.set_xlabel("sojourn (ms)", fontsize=8)
            ax.tick_params(labelsize=7)
    if present:
        fig.legend(list(present.values()), list(present), loc="outside lower center", ncols=len(present),
                   fontsize=8, frameon=False)  # fmt: skip
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


#: Samples for :func:`ccdf_plot`: raw values, or a histogram as ``(edges, counts)``.
Samples = Union[Sequence[float], np.ndarray, pd.Series, tuple]


def save(
    fig: Figure, path_stem: str | os.PathLike[str], formats: Sequence[str] = ("png", "svg"), dpi: int = 150
) -> list[Path]:
    """Write ``fig`` to ``<path_stem>.<fmt>`` for each format, atomically (temp + rename); SVG
    with its text as ``<text>`` elements."""
    import matplotlib

    stem = Path(path_stem)
    written = []
    engine = fig.get_layout_engine()

    def draw(tmp: Path, fmt: str) -> None:
        # SVG keeps its text as text (searchable, selectable, and measurable in a browser:
        # the report's rendering test reads every label's box), with stable ids.
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "l4slab"}):
            fig.savefig(tmp, format=fmt, dpi=dpi)

    try:
        for k, fmt in enumerate(formats):
            target = stem.with_name(f"{stem.name}.{fmt}")
            written.append(atomic_write(target, lambda tmp, fmt=fmt: draw(tmp, fmt)))
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


def _bar_stats(frame: pd.DataFrame, keys: list[str], value: str, ci: str | None, lower: float | None) -> pd.DataFrame:
    """Mean and interval (low, high) per ``keys``: from raw trials (:func:`interval`) if keys
    repeat, else from the half-widths in ``ci`` (clipped at ``lower``)."""
    if frame.duplicated(keys).any():
        rows = []
        for key, group in frame.groupby(keys, sort=False):
            mean, low, high, _ = interval(group[value], lower=lower)
            rows.append({**dict(zip(keys, key, strict=True)), "mean": mean, "low": low, "high": high})
        return pd.DataFrame(rows)
    half = frame[ci].to_numpy(dtype=np.float64) if ci and ci in frame else np.full(len(frame), np.nan)
    mean = frame[value].to_numpy(dtype=np.float64)
    low, high = mean - np.nan_to_num(half), mean + np.nan_to_num(half)
    if lower is not None:
        low, high = np.maximum(low, lower), np.maximum(high, lower)
    return frame[keys].assign(mean=mean, low=low, high=high)


def natural_order(values: Iterable[object]) -> list:
    """The distinct ``values`` in a deterministic order when no factor order is given: a
    pandas Categorical's own order, else numbers by value and text with its numbers read as
    numbers (``0.5bdp < 1bdp < 2bdp < 10bdp``), never the order rows happen to arrive in."""
    import re

    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        present = set(values.dropna())
        return [v for v in values.cat.categories if v in present]

    def key(value: object) -> tuple:
        if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            return (0, float(value), ())
        parts = re.split(r"(\d+(?:\.\d+)?)", str(value))
        return (1, 0.0, tuple((0, float(p), "") if k % 2 else (1, 0.0, p) for k, p in enumerate(parts) if p))

    return sorted(dict.fromkeys(values), key=key)


def wrap_label(text: object, width: int = 16) -> str:
    """A category label broken into lines of at most ``width`` characters (at `` · ``, ``=`` or
    spaces where it can), so that many categories stay readable side by side."""
    import textwrap

    parts = str(text).split(" · ")
    lines = []
    for part in parts:
        lines += textwrap.wrap(part, width=width, break_long_words=True, break_on_hyphens=False) or [""]
    return "\n".join(lines)


def fit_tick_labels(fig: Figure, ax, *, max_width_in: float = 40.0) -> None:
    """Widen ``fig`` until no two x tick labels of ``ax`` overlap (measured after a layout);
    where that would pass ``max_width_in`` inches, turn them vertical on one line each (one
    line height apart) and widen from there."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    rotated = False
    for _ in range(8):
        fig.draw_without_rendering()
        renderer = canvas.get_renderer()
        ticks = [t for t in ax.get_xticklabels() if t.get_text()]
        boxes = sorted((t.get_window_extent(renderer) for t in ticks), key=lambda b: b.x0)
        worst = max((a.x1 + 2.0 - b.x0) for a, b in zip(boxes, boxes[1:], strict=False)) if len(boxes) > 1 else 0.0
        if worst <= 0:
            return
        spacing = (boxes[-1].x0 - boxes[0].x0) / max(len(boxes) - 1, 1)
        width = fig.get_figwidth() * (spacing + worst) / max(spacing, 1e-6) * 1.05
        if width > max_width_in and not rotated:
            rotated = True
            ax.set_xticks(ax.get_xticks(), [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()])
            ax.tick_params(axis="x", labelrotation=90)
            continue
        fig.set_figwidth(width)


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
    order: Sequence[object] | None = None,
    hue_order: Sequence[object] | None = None,
    colours: Mapping[str, str] | None = None,
    cc_of: Mapping[object, str] | None = None,
    lower: float | None = 0.0,
    wrap: int = 16,
) -> Figure:
    """Bars of ``value`` per ``x`` (flow or group), optionally side by side per ``hue``, with
    error bars and a dashed fair-share line.

    ``frame`` is either raw (several rows, i.e. trials, per bar: the mean and its
    :func:`interval`, a t-interval from 5 trials on, else the trials' min–max) or already
    aggregated (one row per bar, half-widths in ``ci``, default ``<value>_ci``). Intervals are
    clipped at ``lower`` (0: no goodput below zero; None for signed quantities).

    Categories come in ``order`` (a factor's order; default: :func:`natural_order`), hues in
    ``hue_order``; a hue's colour is ``colours[cc_of[hue]]`` (its CC's, :func:`cc_colours`).
    Labels are wrapped at ``wrap`` characters and the figure widened until none overlap.
    The fair share is ``fair_mbps``, or ``capacity_mbps`` / number of bars per hue group."""
    keys = [x] if hue is None else [hue, x]
    stats = _bar_stats(frame, keys, value, ci or f"{value}_ci", lower)
    hues = [None] if hue is None else list(hue_order if hue_order is not None else natural_order(frame[hue]))
    labels = list(order if order is not None else natural_order(frame[x]))
    labels = [v for v in labels if (stats[x] == v).any()] or labels
    fig = Figure(figsize=(max(4.0, 0.6 * len(labels) * len(hues) + 2.0), 3.6), layout="constrained")
    ax = fig.add_subplot()
    if lower is not None:
        _zero_line(ax)
    width = 0.8 / len(hues)
    for k, name in enumerate(hues):
        part = stats if name is None else stats[stats[hue] == name]
        part = part.set_index(x).reindex(labels)
        pos = np.arange(len(labels)) - 0.4 + width * (k + 0.5)
        mean = part["mean"].to_numpy(dtype=np.float64)
        err = np.vstack([mean - part["low"].to_numpy(dtype=np.float64), part["high"].to_numpy(dtype=np.float64) - mean])
        err = np.clip(np.nan_to_num(err, nan=0.0), 0.0, None)
        cc = None if name is None else str(cc_of.get(name, name) if cc_of is not None else name)
        colour = (colours or {}).get(cc) if cc is not None else None
        bars = ax.bar(pos, mean, width, yerr=err, capsize=3, color=colour, label=None if name is None else str(name))
        if cc is not None and colours:
            for patch in bars.patches:
                patch.set_gid(_gid(GID_CC, cc))
        if bars.errorbar is not None:
            for coll in bars.errorbar.lines[2]:
                coll.set_gid(_gid(GID_INTERVAL if lower is not None else "l4slab-err-"))
    if fair_mbps is None and capacity_mbps is not None and labels:
        fair_mbps = capacity_mbps / len(labels)
    if fair_mbps is not None:
        ax.axhline(fair_mbps, color="black", linestyle="--", linewidth=1, label="fair share")
    ax.set_xticks(range(len(labels)), [wrap_label(label, wrap) for label in labels])
    ax.set_xlim(-0.6, len(labels) - 0.4)
    if lower is not None:
        ax.set_ylim(bottom=lower)
    ax.set_ylabel(ylabel or value)
    if hue is not None or fair_mbps is not None:
        ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    fit_tick_labels(fig, ax)
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
    colours: Mapping[str, str] | None = None,
    cc_of: Mapping[object, str] | None = None,
    group_order: Sequence[object] | None = None,
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
    ``legend_title`` (default: the column name). A group's colour is ``colours[cc_of[group]]``
    (its CC's, :func:`cc_colours`), or ``colours[group]`` without ``cc_of``; several groups of
    one CC are told apart by the line style. ``group_order``: the legend's order."""
    stats = _band(series, time, group, value, confidence)
    n_trials = series[trial].nunique() if trial is not None and trial in series else None
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    if lower is not None:
        _zero_line(ax)
    parts = [(None, stats)] if group is None else list(stats.groupby(group, sort=True))
    if group_order is not None:
        rank = {v: k for k, v in enumerate(group_order)}
        parts.sort(key=lambda p: rank.get(p[0], len(rank)))
    seen: dict[str, int] = {}
    for name, part in parts:
        key = None if name is None else (str(cc_of.get(name, name)) if cc_of is not None else str(name))
        colour = (colours or {}).get(key) if key is not None else None
        style = ("-", "--", ":", "-.")[seen.get(key, 0) % 4] if colour is not None else "-"
        if colour is not None:
            seen[key] = seen.get(key, 0) + 1
        line = ax.plot(part[time], part["mean"], label=None if name is None else str(name), linewidth=1.2,
                       color=colour, linestyle=style)[0]  # fmt: skip
        if colour is not None and cc_of is not None:
            line.set_gid(_gid(GID_CC, key))
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
        band = ax.fill_between(part[time], low, high, color=line.get_color(), alpha=0.25, linewidth=0)
        band.set_gid(_gid(GID_INTERVAL if lower is not None else "l4slab-band-"))
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
