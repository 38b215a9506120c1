"""Published PAM 2025 results (Prague vs CUBIC) and their comparison with simulated cells.

The two Prague-vs-CUBIC heatmaps of the PAM 2025 paper ("CUBIC without ECN", "CUBIC with classic
ECN") are shipped in the PAM study's folder,
``l4slab/studies/pam2025-prague-cubic/pam2025_published.csv``, one row per cell (2 × 9 × 5 =
90 rows): ``queue``, ``buffer_bdp``, ``l4s_cc`` ("prague"), ``classic`` ("cubic" |
"cubic_ecn"), ``l4s_mbps``, ``classic_mbps``, ``l4s_qdelay_ms``, ``classic_qdelay_ms``
(means over 10 trials; queuing delay = mean sRTT − base RTT).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Sequence

import numpy as np
import pandas as pd

from .metrics import PAM_CAPACITY_MBPS, harm_labels

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
_DATA_FILE = ("studies", "pam2025-prague-cubic", "pam2025_published.csv")


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
    with resources.files("l4slab").joinpath(*_DATA_FILE).open("r", encoding="utf-8") as handle:
        frame = pd.read_csv(handle, comment="#", dtype={"queue": str, "l4s_cc": str, "classic": str})
    frame["buffer_bdp"] = frame["buffer_bdp"].astype(np.float64)
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
