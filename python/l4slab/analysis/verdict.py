""" "Adopt L4S here?": a verdict per bottleneck type and L4S congestion control.

For a study shaped like PAM 2025 (a queue factor, a buffer factor and runs with both an L4S
flow and a classic flow), the question of the paper's title — "To adopt or not to adopt
L4S-compatible congestion control?" (Sarpkaya, Fund, Panwar, PAM 2025) — is answered per
queue type and L4S CC, across every buffer size and every other factor (e.g. the classic
flow's ECN):

* ✔ where, in every cell, the L4S flows are **neither harmed nor harmful** (the harm labels
  of the paper, §4: the L4S group's throughput share against its fair share, harmed below
  0.4×, harmful above 1.6×, :func:`l4slab.analysis.metrics.harm_label`) **and get low
  latency**: a mean queuing delay (sRTT − base RTT) of at most :data:`LOW_LATENCY_MS`;
* ✘ otherwise, with the reason and the cell where it fails (worst first).

"With the trials' confidence": a cell whose 95 % confidence interval of the share (or of
the delay) straddles a threshold is *uncertain* at that confidence; the verdict says how
many cells are, so a ✔ or ✘ resting on them reads as tentative.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .html import md_text
from .metrics import HARMED_FACTOR, HARMFUL_FACTOR, flow_class, harm_label, mean_ci

__all__ = ["LOW_LATENCY_MS", "is_pam_shaped", "adopt_verdict", "verdict_section"]

#: "Low latency" for the L4S flow: mean queuing delay at most this. 5 ms is the target of the
#: PAM 2025 study's AQM queues (`pie`/`codel`/`fq_codel`/`dualpi2 target 5ms`,
#: fatihsarpkaya/L4S-PAM2025), i.e. what a classic AQM already gives a classic flow;
#: an L4S flow above it gains no latency from L4S.
LOW_LATENCY_MS = 5.0


def _find(factors: list[str], paths: dict[str, str], *names: str) -> str | None:
    for column in factors:
        last = paths.get(column, column).split(".")[-1]
        if last in names:
            return column
    return None


def is_pam_shaped(flows: pd.DataFrame, factors: list[str], paths: dict[str, str]) -> bool:
    """A queue factor (``bottleneck.qdisc``), a buffer factor (``bottleneck.buffer``) and
    runs holding both L4S and classic flows."""
    if _find(factors, paths, "qdisc") is None or _find(factors, paths, "buffer") is None:
        return False
    classes = flow_class(flows)
    per_run = classes.groupby(flows["run_id"]).agg(lambda s: {"l4s", "classic"} <= set(s))
    return bool(per_run.any())


def adopt_verdict(
    flows: pd.DataFrame,
    factors: list[str],
    paths: dict[str, str] | None = None,
    *,
    low_latency_ms: float = LOW_LATENCY_MS,
) -> pd.DataFrame:
    """One row per (queue, L4S CC): ``queue``, ``l4s_cc``, ``adopt`` (bool), ``reason``,
    ``cells``, ``uncertain`` (cells whose 95 % CI straddles a threshold), ``trials`` (min n).

    ``flows`` is a study's flows table with ``run_id``, ``cc``, ``goodput_mbps``,
    ``mean_srtt_ms``, ``base_rtt_ms``, ``rate_mbps`` and the factor columns."""
    paths = paths or {c: c for c in factors}
    queue = _find(factors, paths, "qdisc")
    if queue is None:
        raise ValueError("adopt_verdict: the study has no bottleneck.qdisc factor")
    frame = flows.assign(_class=flow_class(flows), _qd=flows["mean_srtt_ms"] - flows["base_rtt_ms"])
    n_flows = frame.groupby("run_id")["run_id"].transform("size")
    frame = frame.assign(_n=n_flows)
    l4s = frame[frame["_class"] == "l4s"]
    others = [f for f in factors if f != queue]
    rows = []
    for (queue_value, cc), part in l4s.groupby([queue, "cc"], sort=True):
        per_run = part.groupby(["run_id", *others], sort=True, dropna=False).agg(
            mbps=("goodput_mbps", "sum"), qd=("_qd", "mean"), k=("goodput_mbps", "size"),
            n=("_n", "first"), rate=("rate_mbps", "first"),
        )  # fmt: skip
        per_run = per_run.reset_index()
        per_run["share"] = per_run["mbps"] / per_run["rate"]
        per_run["fair"] = per_run["k"] / per_run["n"]
        problems, uncertain, cells, trials = [], 0, 0, math.inf
        for key, cell in per_run.groupby(others, sort=True, dropna=False) if others else [((), per_run)]:
            cells += 1
            trials = min(trials, len(cell))
            where = ", ".join(
                f"{paths.get(f, f).split('.')[-1]}={v}"
                for f, v in zip(others, key if isinstance(key, tuple) else (key,), strict=True)
            )
            share = mean_ci(cell["share"].to_numpy(dtype=np.float64))
            delay = mean_ci(cell["qd"].to_numpy(dtype=np.float64))
            fair = float(cell["fair"].mean())
            label = harm_label(share.mean, fair)
            bounds = (HARMED_FACTOR * fair, HARMFUL_FACTOR * fair)
            half = 0.0 if math.isnan(share.half) else share.half
            dhalf = 0.0 if math.isnan(delay.half) else delay.half
            if any(share.mean - half < b < share.mean + half for b in bounds) or (
                delay.mean - dhalf < low_latency_ms < delay.mean + dhalf
            ):
                uncertain += 1
            spread = f"L4S share {100 * share.mean:.0f} ± {100 * half:.0f} % vs fair {100 * fair:.0f} %"
            if label == "harmful":
                problems.append((share.mean / fair, f"harmful to classic flows at {where}: {spread}"))
            elif label == "harmed":
                problems.append((fair / max(share.mean, 1e-9), f"harmed at {where}: {spread}"))
            if delay.mean > low_latency_ms:
                text = f"L4S queuing delay {delay.mean:.1f} ± {dhalf:.1f} ms > {low_latency_ms:g} ms"
                problems.append((delay.mean / low_latency_ms, f"no low latency at {where}: {text}"))
        problems.sort(key=lambda p: -p[0])
        reason = (
            f"neither harmed nor harmful and ≤ {low_latency_ms:g} ms queuing delay in all {cells} cells"
            if not problems
            else "; ".join(text for _, text in problems[:2])
            + (f" (+{len(problems) - 2} more)" if len(problems) > 2 else "")
        )
        rows.append(
            {
                "queue": queue_value,
                "l4s_cc": cc,
                "adopt": not problems,
                "reason": reason,
                "cells": cells,
                "uncertain": uncertain,
                "trials": 0 if trials == math.inf else int(trials),
            }
        )
    return pd.DataFrame(rows, columns=["queue", "l4s_cc", "adopt", "reason", "cells", "uncertain", "trials"])


def verdict_section(flows: pd.DataFrame, factors: list[str], paths: dict[str, str]) -> list[str]:
    """The report's "Adopt L4S here?" section (Markdown lines), empty unless PAM-shaped."""
    if not is_pam_shaped(flows, factors, paths):
        return []
    table = adopt_verdict(flows, factors, paths)
    lines = [
        "## Adopt L4S here?",
        "",
        f"Per bottleneck queue and L4S congestion control, across every buffer and other factor: ✔ where the "
        f"L4S flows are neither harmed (share < {HARMED_FACTOR:g}× fair) nor harmful (> {HARMFUL_FACTOR:g}× fair) "
        f"and see at most {LOW_LATENCY_MS:g} ms mean queuing delay, ✘ otherwise with the worst cells. "
        "Confidence: cells whose 95 % CI over trials straddles a threshold are counted as uncertain.",
        "",
        "| queue | L4S CC | adopt? | reason | confidence |",
        "|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        mark = "✔" if row.adopt else "✘"
        confidence = (
            f"{row.cells - row.uncertain} of {row.cells} cells clear at 95 % (n ≥ {row.trials} trials)"
            if row.trials > 1
            else f"1 trial per cell: no confidence interval ({row.cells} cells)"
        )
        lines.append(
            f"| {md_text(row.queue)} | {md_text(row.l4s_cc)} | {mark} | {md_text(row.reason)} | {confidence} |"
        )
    return lines + [""]
