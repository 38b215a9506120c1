"""Published tables (PAM 2025 and any other one-vs-one study) and their comparison with
simulated cells.

**The published-table format** (``l4slab study report DIR --published FILE.csv``): a CSV file,
UTF-8, lines starting with ``#`` are comments, a header row, then one row per cell:

==================  ========================================================================
``panel``           the panel's name, as the study's ``[panels.NAME]`` (a study without
                    panels is one panel named after the study)
``queue``           the queue label (``@pam2025.queues``: fifo, pie, codel, fifo_ecn, ...)
``buffer_bdp``      buffer in BDPs (``2`` or ``2bdp``), > 0
``rtt_ms``          base RTT of the cell, ms, > 0
``l4s_mbps``        the L4S flows' total goodput, Mbit/s (10^6), ≥ 0
``other_mbps``      the other (classic) flows' total goodput, Mbit/s, ≥ 0
``l4s_qdelay_ms``   optional (may be empty): L4S queuing delay (mean sRTT − base RTT), ms
``other_qdelay_ms`` optional (may be empty): the other flows' queuing delay, ms
==================  ========================================================================

Columns may come in any order; no other column is allowed, and a (panel, queue, buffer,
RTT) cell appears once. :func:`read_published` reports the first mistake as one line naming
the file, the row (file line) and the column. The two Prague-vs-CUBIC heatmaps of the PAM
2025 paper (panels ``prague-cubic`` and ``prague-cubic-ecn``, 2 × 9 × 5 = 90 rows) ship in
this format as ``l4slab/studies/pam2025/pam2025_published.csv`` (:data:`PAM2025_FILE`;
``--published pam2025`` names it).

:func:`compare_published` joins simulated and published cells on (panel, queue, buffer,
RTT) and gives per cell the differences (sim − pub), the harm labels (PAM: the L4S share of
the 100 Mbit/s capacity, harmed < 20 %, harmful > 80 %), and per panel and overall: harm-label
agreement, the fraction of cells within 3 Mbit/s (both the L4S and the other throughput
within 3 Mbit/s of the published value) and the mean absolute throughput error (the mean
of |Δ L4S| and |Δ other| per cell, averaged over cells).

:func:`load_published` keeps the older view of the two PAM panels (``classic`` = "cubic" |
"cubic_ecn", ``classic_mbps``, ...) that the ``pam2025-prague-cubic`` report uses.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from ..errors import ScenarioError
from ..io import atomic_write, write_text
from .metrics import PAM_CAPACITY_MBPS, flow_class, harm_labels, srtt_queue_delay

__all__ = [
    "QUEUE_ORDER",
    "BUFFERS_BDP",
    "CLASSICS",
    "VALUE_COLUMNS",
    "KEYS",
    "load_published",
    "published_cell",
    "normalise_buffer",
    "add_pam_harm",
    "Comparison",
    "compare",
    "PAM2025_FILE",
    "PUBLISHED_COLUMNS",
    "PUBLISHED_KEYS",
    "read_published",
    "simulated_cells",
    "PublishedComparison",
    "compare_published",
    "comparison_figure",
    "published_section",
    "WITHIN_MBPS",
]

#: Queue types in the paper's row order.
QUEUE_ORDER = ("fifo", "pie", "codel", "fifo_ecn", "codel_ecn", "fq", "fq_codel", "fq_codel_l4s", "dualpi2")
#: Buffer sizes (× BDP) in the paper's column order.
BUFFERS_BDP = (0.5, 1.0, 2.0, 4.0, 8.0)
#: Classic flows of the two published tables.
CLASSICS = ("cubic", "cubic_ecn")
#: Value columns of a cell.
VALUE_COLUMNS = ("l4s_mbps", "classic_mbps", "l4s_qdelay_ms", "classic_qdelay_ms")
#: Columns that identify a cell.
KEYS = ("queue", "buffer_bdp", "classic")

#: The published cells, in the built-in PAM study's folder (l4slab/studies/<name>/).
_DATA_FILE = ("studies", "pam2025", "pam2025_published.csv")
#: The PAM 2025 panels' classic flow in the older two-table view.
_LEGACY_CLASSIC = {"prague-cubic": "cubic", "prague-cubic-ecn": "cubic_ecn"}


def normalise_buffer(value: object) -> float:
    """A buffer size as a float number of BDPs: ``2``, ``"2"``, ``"2bdp"``, ``"0.5BDP"`` → 2.0 / 0.5."""
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(bdp)?\s*", value, flags=re.IGNORECASE)
        if not match:
            raise ValueError(f"buffer {value!r} is not a number of BDPs (e.g. 2 or '2bdp')")
        return float(match.group(1))
    return float(value)  # type: ignore[arg-type]


def add_pam_harm(cells: pd.DataFrame, capacity_mbps: float = PAM_CAPACITY_MBPS) -> pd.DataFrame:
    """A copy of a cells table with ``l4s_share`` (= l4s_mbps / capacity) and ``harm`` (PAM's
    labels: harmed < 20 %, harmful > 80 % of the capacity, two flows so fair = 50 %)."""
    out = cells.copy()
    out["l4s_share"] = out["l4s_mbps"].astype(np.float64) / capacity_mbps
    out["harm"] = harm_labels(out["l4s_share"], 0.5).to_numpy()
    return out


@lru_cache(maxsize=1)
def _read() -> pd.DataFrame:
    table = read_published(PAM2025_FILE)
    frame = pd.DataFrame(
        {
            "queue": table["queue"],
            "buffer_bdp": table["buffer_bdp"],
            "l4s_cc": "prague",
            "classic": table["panel"].map(_LEGACY_CLASSIC),
            "l4s_mbps": table["l4s_mbps"],
            "classic_mbps": table["other_mbps"],
            "l4s_qdelay_ms": table["l4s_qdelay_ms"],
            "classic_qdelay_ms": table["other_qdelay_ms"],
        }
    )
    return add_pam_harm(frame)


def load_published() -> pd.DataFrame:
    """The 90 published cells with ``l4s_share`` and ``harm`` (a fresh copy on each call)."""
    return _read().copy()


def published_cell(queue: str, buffer_bdp: float | str, classic: str = "cubic") -> pd.Series:
    """One published cell, e.g. ``published_cell("fifo_ecn", 2, "cubic_ecn")``."""
    frame = _read()
    buffer = normalise_buffer(buffer_bdp)
    hit = frame[(frame["queue"] == queue) & (frame["buffer_bdp"] == buffer) & (frame["classic"] == classic)]
    if hit.empty:
        raise KeyError(f"no published cell ({queue!r}, {buffer_bdp!r}, {classic!r})")
    return hit.iloc[0].copy()


@dataclass
class Comparison:
    """Result of :func:`compare`: the side-by-side ``table`` and the ``summary`` numbers."""

    table: pd.DataFrame
    summary: dict[str, float] = field(default_factory=dict)


def _side(frame: pd.DataFrame, keys: list[str], suffix: str, capacity_mbps: float) -> pd.DataFrame:
    out = frame.copy()
    if "buffer_bdp" in keys:
        out["buffer_bdp"] = out["buffer_bdp"].map(normalise_buffer)
    out = add_pam_harm(out, capacity_mbps)
    cols = [c for c in (*VALUE_COLUMNS, "l4s_share", "harm") if c in out]
    return out[[*keys, *cols]].rename(columns={c: f"{c}_{suffix}" for c in cols})


def _summary(table: pd.DataFrame) -> dict[str, float]:
    agree = table["harm_agree"].dropna()
    summary: dict[str, float] = {
        "cells": float(len(table)),
        "harm_agreement": float(agree.mean()) if len(agree) else math.nan,
        "tput_mae_mbps": float(table["tput_abs_err_mbps"].mean()),
    }
    for name in VALUE_COLUMNS:
        summary[f"{name}_mae"] = float(table[f"{name}_diff"].abs().mean())
        summary[f"{name}_bias"] = float(table[f"{name}_diff"].mean())
    return summary


def compare(
    simulated: pd.DataFrame,
    published: pd.DataFrame | None = None,
    *,
    keys: Sequence[str] = KEYS,
    capacity_mbps: float = PAM_CAPACITY_MBPS,
) -> Comparison:
    """Side-by-side comparison of simulated and published cells (inner join on ``keys``).

    ``simulated`` has the ``keys`` and some of :data:`VALUE_COLUMNS` (e.g. the output of
    :func:`l4slab.analysis.metrics.pam_cells`); buffers may be numbers or ``"2bdp"``.
    Table columns per value ``v``: ``v_sim``, ``v_pub``, ``v_diff`` (sim − pub); plus
    ``tput_abs_err_mbps`` (mean of |Δ l4s_mbps| and |Δ classic_mbps|), ``harm_sim``,
    ``harm_pub`` and ``harm_agree``. Summary: ``cells``, ``harm_agreement`` (fraction of
    cells whose labels agree), ``tput_mae_mbps``, and ``<v>_mae`` / ``<v>_bias`` per value."""
    keys = list(keys)
    published = load_published() if published is None else published
    table = _side(simulated, keys, "sim", capacity_mbps).merge(
        _side(published, keys, "pub", capacity_mbps), on=keys, how="inner"
    )
    for name in VALUE_COLUMNS:
        for suffix in ("sim", "pub"):
            if f"{name}_{suffix}" not in table:
                table[f"{name}_{suffix}"] = np.nan
        table[f"{name}_diff"] = table[f"{name}_sim"] - table[f"{name}_pub"]
    table["tput_abs_err_mbps"] = (table["l4s_mbps_diff"].abs() + table["classic_mbps_diff"].abs()) / 2.0
    both = table["harm_sim"].notna() & table["harm_pub"].notna()
    agree = (table["harm_sim"] == table["harm_pub"]).astype("boolean")
    table["harm_agree"] = agree.mask(~both)
    order = [*keys, *[f"{v}_{s}" for v in VALUE_COLUMNS for s in ("sim", "pub", "diff")]]
    order += ["tput_abs_err_mbps", "l4s_share_sim", "l4s_share_pub", "harm_sim", "harm_pub", "harm_agree"]
    table = table[order].sort_values(keys, key=_sort_key).reset_index(drop=True)
    return Comparison(table=table, summary=_summary(table))


def _sort_key(column: pd.Series) -> pd.Series:
    """Sort queues in the paper's order, everything else naturally."""
    if column.name == "queue":
        rank = {name: i for i, name in enumerate(QUEUE_ORDER)}
        return column.map(lambda q: rank.get(q, len(rank)))
    return column


# --- the published-table format -------------------------------------------------------------------

#: The shipped PAM 2025 panels (``--published pam2025``).
PAM2025_FILE = str(resources.files("l4slab").joinpath(*_DATA_FILE))
#: Columns of a published table (the two delays are optional).
PUBLISHED_COLUMNS = (
    "panel", "queue", "buffer_bdp", "rtt_ms", "l4s_mbps", "other_mbps", "l4s_qdelay_ms", "other_qdelay_ms",
)  # fmt: skip
_OPTIONAL = ("l4s_qdelay_ms", "other_qdelay_ms")
#: Columns that identify a cell of a published table.
PUBLISHED_KEYS = ("panel", "queue", "buffer_bdp", "rtt_ms")
#: "Within" tolerance of the comparison, Mbit/s.
WITHIN_MBPS = 3.0
_VALUES = ("l4s_mbps", "other_mbps", "l4s_qdelay_ms", "other_qdelay_ms")


def _number(where: str, column: str, text: str, *, positive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        allowed = "a number > 0" if positive else "a number ≥ 0"
        raise ScenarioError(f"{where}, column {column!r}: {text!r} is not {allowed}")
    return value


def read_published(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read and check a published table (format in the module docstring); ``"pam2025"``
    names the shipped PAM 2025 panels. Columns :data:`PUBLISHED_COLUMNS` (NaN for an
    empty optional delay). Any mistake is one :class:`~l4slab.errors.ScenarioError` line."""
    path = PAM2025_FILE if str(path) == "pam2025" else os.fspath(path)
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise ScenarioError(f"--published: cannot read {path}: {getattr(err, 'strerror', None) or err}") from None
    lines = [
        (n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        raise ScenarioError(f"{path}: no header row; expected {','.join(PUBLISHED_COLUMNS)}")
    reader = csv.reader(io.StringIO("\n".join(line for _, line in lines)))
    rows = list(reader)
    header = [h.strip() for h in rows[0]]
    where0 = f"{path} line {lines[0][0]}"
    for name in header:
        if name not in PUBLISHED_COLUMNS:
            raise ScenarioError(f"{where0}: unknown column {name!r}; columns: {', '.join(PUBLISHED_COLUMNS)}")
    if len(set(header)) != len(header):
        raise ScenarioError(f"{where0}: a column is named twice in {header}")
    for name in PUBLISHED_COLUMNS:
        if name not in header and name not in _OPTIONAL:
            raise ScenarioError(f"{where0}: missing column {name!r}; required: {', '.join(PUBLISHED_COLUMNS[:6])}")
    records = []
    seen: dict[tuple, int] = {}
    for (line_no, _), row in zip(lines[1:], rows[1:], strict=True):
        where = f"{path} line {line_no}"
        if len(row) != len(header):
            raise ScenarioError(f"{where}: {len(row)} fields where the header has {len(header)}")
        cell = dict(zip(header, (v.strip() for v in row), strict=True))
        record: dict[str, object] = {}
        for name in ("panel", "queue"):
            if not cell[name]:
                raise ScenarioError(f"{where}, column {name!r}: empty; expected a name, e.g. prague-cubic / fifo")
            record[name] = cell[name]
        try:
            record["buffer_bdp"] = normalise_buffer(cell["buffer_bdp"])
        except ValueError:
            record["buffer_bdp"] = math.nan
        if not (isinstance(record["buffer_bdp"], float) and record["buffer_bdp"] > 0):
            raise ScenarioError(f"{where}, column 'buffer_bdp': {cell['buffer_bdp']!r} is not a buffer > 0 in BDPs")
        record["rtt_ms"] = _number(where, "rtt_ms", cell["rtt_ms"], positive=True)
        for name in _VALUES:
            raw = cell.get(name, "")
            if name in _OPTIONAL and raw == "":
                record[name] = math.nan
            else:
                record[name] = _number(where, name, raw, positive=False)
        key = tuple(record[k] for k in PUBLISHED_KEYS)
        if key in seen:
            raise ScenarioError(f"{where}: the cell {key} is already on line {seen[key]}")
        seen[key] = line_no
        records.append(record)
    if not records:
        raise ScenarioError(f"{path}: no rows after the header")
    return pd.DataFrame.from_records(records, columns=list(PUBLISHED_COLUMNS))


# --- simulated cells of a study -------------------------------------------------------------------


def simulated_cells(data, study_name: str | None = None) -> pd.DataFrame:
    """The (panel, queue, buffer, RTT) cells of a finished study (``l4slab.study.load(DIR)``),
    in the published-table columns: per run the L4S and the other flows' total goodput and
    mean queuing delay, averaged over the trials. The panel is the study's ``panel`` column
    (else ``study_name``), the queue its ``bottleneck_qdisc`` label, the buffer its
    ``bottleneck_buffer`` (× BDP), the RTT the L4S flows' base RTT."""
    runs, flows = data.runs, data.flows
    if "status" in runs:
        runs = runs[runs["status"] == "done"]
    needed = ("bottleneck_qdisc", "bottleneck_buffer")
    for name in needed:
        if name not in runs:
            raise ScenarioError(f"--published: the study has no {name.replace('_', '.', 1)!r} factor to match cells on")
    keys = runs[["run_id", *needed, *(["panel"] if "panel" in runs else [])]].copy()
    if "panel" not in keys:
        keys["panel"] = study_name or "study"
    frame = flows.drop(columns=[c for c in keys.columns if c != "run_id" and c in flows]).merge(
        keys, on="run_id", how="inner"
    )
    if frame.empty:
        return pd.DataFrame(columns=list(PUBLISHED_COLUMNS))
    frame = frame.assign(_class=flow_class(frame).to_numpy(), _qd=srtt_queue_delay(frame).to_numpy())
    rtt = frame[frame["_class"] == "l4s"].groupby("run_id")["base_rtt_ms"].median().round(3)
    per = (
        frame.groupby(["panel", "bottleneck_qdisc", "bottleneck_buffer", "run_id", "_class"])
        .agg(mbps=("goodput_mbps", "sum"), qdelay=("_qd", "mean"))
        .unstack("_class")
    )
    per.columns = [f"{cls}_{metric}" for metric, cls in per.columns]
    per = per.reset_index()
    out = pd.DataFrame(
        {
            "panel": per["panel"].astype(str),
            "queue": per["bottleneck_qdisc"].astype(str),
            "buffer_bdp": per["bottleneck_buffer"].map(normalise_buffer),
            "rtt_ms": per["run_id"].map(rtt),
            "l4s_mbps": per.get("l4s_mbps", np.nan),
            "other_mbps": per.get("classic_mbps", np.nan),
            "l4s_qdelay_ms": per.get("l4s_qdelay", np.nan),
            "other_qdelay_ms": per.get("classic_qdelay", np.nan),
        }
    )
    return out.groupby(list(PUBLISHED_KEYS), as_index=False, sort=False)[list(_VALUES)].mean()


# --- comparison -----------------------------------------------------------------------------------


@dataclass
class PublishedComparison:
    """Result of :func:`compare_published`: ``table`` (one row per matched cell),
    ``panels`` (one row per panel) and ``overall`` (the same numbers over every cell)."""

    table: pd.DataFrame
    panels: pd.DataFrame
    overall: dict[str, float]


def _scores(table: pd.DataFrame) -> dict[str, float]:
    agree = table["harm_agree"].dropna()
    return {
        "cells": float(len(table)),
        "harm_agreement": float(agree.astype(float).mean()) if len(agree) else math.nan,
        "within_3mbps": float(table["within"].mean()) if len(table) else math.nan,
        "tput_mae_mbps": float(table["tput_abs_err_mbps"].mean()) if len(table) else math.nan,
        "l4s_mae_mbps": float(table["l4s_mbps_diff"].abs().mean()) if len(table) else math.nan,
        "l4s_qdelay_mae_ms": float(table["l4s_qdelay_ms_diff"].abs().mean()) if len(table) else math.nan,
    }


def compare_published(
    simulated: pd.DataFrame,
    published: pd.DataFrame,
    *,
    capacity_mbps: float = PAM_CAPACITY_MBPS,
    within_mbps: float = WITHIN_MBPS,
) -> PublishedComparison:
    """Simulated beside published, joined on :data:`PUBLISHED_KEYS` (RTT to 0.01 ms).
    Per cell: ``<v>_sim``, ``<v>_pub``, ``<v>_diff`` (sim − pub) for each value,
    ``tput_abs_err_mbps`` (mean of |Δ l4s_mbps| and |Δ other_mbps|), ``within`` (both
    within ``within_mbps``), ``harm_sim`` / ``harm_pub`` (L4S share of ``capacity_mbps``:
    harmed < 20 %, harmful > 80 %, PAM's labels for two flows) and ``harm_agree``."""
    keys = list(PUBLISHED_KEYS)

    def side(frame: pd.DataFrame, suffix: str) -> pd.DataFrame:
        out = frame[[*keys, *[v for v in _VALUES if v in frame]]].copy()
        out["buffer_bdp"] = out["buffer_bdp"].map(normalise_buffer).astype(np.float64)
        out["rtt_ms"] = out["rtt_ms"].astype(np.float64).round(2)
        out["harm"] = harm_labels(out["l4s_mbps"].astype(np.float64) / capacity_mbps, 0.5).to_numpy()
        return out.rename(columns={c: f"{c}_{suffix}" for c in out.columns if c not in keys})

    table = side(simulated, "sim").merge(side(published, "pub"), on=keys, how="inner")
    for name in _VALUES:
        for suffix in ("sim", "pub"):
            if f"{name}_{suffix}" not in table:
                table[f"{name}_{suffix}"] = np.nan
        table[f"{name}_diff"] = table[f"{name}_sim"] - table[f"{name}_pub"]
    l4s_err = table["l4s_mbps_diff"].abs()
    other_err = table["other_mbps_diff"].abs()
    table["tput_abs_err_mbps"] = (l4s_err + other_err) / 2.0
    table["within"] = (l4s_err <= within_mbps) & (other_err <= within_mbps)
    both = table["harm_sim"].notna() & table["harm_pub"].notna()
    table["harm_agree"] = (table["harm_sim"] == table["harm_pub"]).astype("boolean").mask(~both)
    table = table.sort_values(keys, key=_sort_key).reset_index(drop=True)
    panels = pd.DataFrame(
        [{"panel": panel, **_scores(group)} for panel, group in table.groupby("panel", sort=False)],
        columns=["panel", "cells", "harm_agreement", "within_3mbps", "tput_mae_mbps", "l4s_mae_mbps",
                 "l4s_qdelay_mae_ms"],
    )  # fmt: skip
    return PublishedComparison(table=table, panels=panels, overall=_scores(table))


# --- figures and the report section ---------------------------------------------------------------


def _grid(cells: pd.DataFrame, column: str, queues: list[str], buffers: list[float]) -> np.ndarray:
    table = cells.pivot_table(index="queue", columns="buffer_bdp", values=column, aggfunc="mean")
    return table.reindex(index=queues, columns=buffers).to_numpy(dtype=np.float64)


def comparison_figure(table: pd.DataFrame, panel: str, *, capacity_mbps: float = PAM_CAPACITY_MBPS) -> Figure:
    """Paper-style heatmaps of one panel of a :func:`compare_published` table: simulated |
    published | difference (L4S Mbit/s, text ``"L4S (other)"``; the difference panel shows
    sim − pub of both, coloured by the L4S difference)."""
    cells = table[table["panel"] == panel]
    present = set(cells["queue"])
    queues = [q for q in QUEUE_ORDER if q in present] + sorted(present - set(QUEUE_ORDER))
    buffers = sorted(set(cells["buffer_bdp"]))
    fig = Figure(figsize=(3 * (1.3 * len(buffers) + 1.2), 0.5 * len(queues) + 1.6), layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    fair = TwoSlopeNorm(vmin=0.0, vcenter=capacity_mbps / 2.0, vmax=capacity_mbps)
    diff = TwoSlopeNorm(vmin=-capacity_mbps / 2.0, vcenter=0.0, vmax=capacity_mbps / 2.0)
    for ax, suffix, norm, title in (
        (axes[0], "sim", fair, "simulated"),
        (axes[1], "pub", fair, "published"),
        (axes[2], "diff", diff, "difference (sim − pub)"),
    ):
        l4s = _grid(cells, f"l4s_mbps_{suffix}", queues, buffers)
        other = _grid(cells, f"other_mbps_{suffix}", queues, buffers)
        image = ax.imshow(np.ma.masked_invalid(l4s), cmap="RdBu", norm=norm, aspect="auto")
        for (i, j), level in np.ndenumerate(l4s):
            if math.isnan(level):
                continue
            sign = "+" if suffix == "diff" else ""
            ax.text(j, i, f"{level:{sign}.1f} ({other[i, j]:{sign}.1f})", ha="center", va="center", fontsize=7,
                    color="white" if abs(norm(level) - 0.5) > 0.3 else "black")  # fmt: skip
        ax.set_xticks(range(len(buffers)), [f"{b:g}" for b in buffers])
        ax.set_yticks(range(len(queues)), queues)
        ax.set_xlabel("buffer (× BDP)")
        ax.set_title(f"{panel}: {title}", fontsize=9)
        if suffix != "pub":
            fig.colorbar(image, ax=ax, label="L4S Mbit/s" if suffix == "sim" else "Δ L4S Mbit/s")
    axes[0].set_ylabel("queue")
    return fig


def _fmt(value: float, pattern: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, pattern)


def published_section(data, out, published: str | os.PathLike[str], study_name: str | None = None) -> list[str]:
    """The report section of ``--published``: per panel the heatmaps (simulated | published
    | difference, ``published_<panel>.png``) and, per panel and overall, the harm-label
    agreement, the fraction within 3 Mbit/s and the MAE; the cell table goes to
    ``published_comparison.csv``. Markdown lines; figures written into ``out``."""
    table = read_published(published)
    result = compare_published(simulated_cells(data, study_name), table)
    name = os.path.basename(str(published))
    lines = [f"## Comparison with the published table ({name})", ""]
    if result.table.empty:
        panels = ", ".join(sorted(set(table["panel"])))
        return [*lines, f"No simulated cell matches a published one (published panels: {panels}).", ""]
    o = result.overall
    lines += [
        f"Cells compared: {int(o['cells'])} of {len(table)} published. Overall: harm-label agreement "
        f"**{_fmt(o['harm_agreement'], '.0%')}**, within {WITHIN_MBPS:g} Mbit/s **{_fmt(o['within_3mbps'], '.0%')}**, "
        f"mean absolute throughput error **{_fmt(o['tput_mae_mbps'], '.1f')} Mbit/s**.",
        "",
        "| panel | cells | harm agreement | within 3 Mbit/s | MAE (Mbit/s) | L4S MAE | L4S delay MAE (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result.panels.itertuples(index=False):
        lines.append(
            f"| {row.panel} | {int(row.cells)} | {_fmt(row.harm_agreement, '.0%')} | {_fmt(row.within_3mbps, '.0%')} "
            f"| {_fmt(row.tput_mae_mbps, '.1f')} | {_fmt(row.l4s_mae_mbps, '.1f')} "
            f"| {_fmt(row.l4s_qdelay_mae_ms, '.2f')} |"
        )
    lines.append("")
    for panel in result.panels["panel"]:
        stem = f"published_{re.sub(r'[^0-9A-Za-z_.-]', '_', str(panel))}"
        fig = comparison_figure(result.table, panel)
        for fmt in ("png", "svg"):  # each through a temporary file renamed into place
            atomic_write(out / f"{stem}.{fmt}", lambda tmp, fmt=fmt, fig=fig: fig.savefig(tmp, format=fmt, dpi=150))
        cells = result.table[result.table["panel"] == panel]
        lines += [f"### {panel}", "", f"![{panel}]({stem}.png)", ""]
        lines += ["| queue | buffer | L4S sim (pub) | other sim (pub) | L4S delay sim (pub) | harm sim / pub |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for c in cells.itertuples(index=False):
            mark = "" if c.harm_agree is pd.NA or bool(c.harm_agree) else " **≠**"
            lines.append(
                f"| {c.queue} | {c.buffer_bdp:g} | {c.l4s_mbps_sim:.1f} ({c.l4s_mbps_pub:.1f}) "
                f"| {c.other_mbps_sim:.1f} ({c.other_mbps_pub:.1f}) "
                f"| {_fmt(c.l4s_qdelay_ms_sim, '.2f')} ({_fmt(c.l4s_qdelay_ms_pub, '.2f')}) "
                f"| {c.harm_sim} / {c.harm_pub}{mark} |"
            )
        lines.append("")
    write_text(out / "published_comparison.csv", result.table.to_csv(index=False))
    return lines
