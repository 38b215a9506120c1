""" "Adopt L4S here?": a verdict per bottleneck type and L4S congestion control.

For a study shaped like PAM 2025 (a queue factor, a buffer factor and runs with both an L4S
flow and a classic flow), the question of the paper's title — "To adopt or not to adopt
L4S-compatible congestion control?" (Sarpkaya, Fund, Panwar, PAM 2025) — is answered per
queue type and L4S CC, across every buffer size and every other factor (e.g. the classic
flow's ECN):

* **incomplete** while any run of that queue's points is not done (every point needs all
  its trials: a verdict from 1 of 5 trials, or from some buffers only, is no verdict);
* ✘ where some cell *clearly* fails: the L4S flows are **harmed or harmful** (the harm
  labels of the paper, §4: the L4S group's throughput share against its fair share, harmed
  below 0.4×, harmful above 1.6×, :func:`l4slab.analysis.metrics.harm_label`) or get **no
  low latency** (mean queuing delay, sRTT − base RTT, above :data:`LOW_LATENCY_MS`), with the
  95 % confidence interval over trials wholly on the failing side of the threshold;
* **uncertain** where no cell clearly fails but some cell's 95 % interval straddles a
  threshold, or has a single trial (no interval), or the runs are transient-dominated
  (:func:`transient_runs`): ✔ is never shown beside an unclear cell;
* ✔ where every cell is clearly neither harmed nor harmful and clearly low-latency.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .html import md_text
from .metrics import HARMED_FACTOR, HARMFUL_FACTOR, flow_class, harm_label, mean_ci

__all__ = [
    "LOW_LATENCY_MS",
    "MIN_WINDOW_S",
    "find_factor",
    "is_pam_shaped",
    "transient_runs",
    "adopt_verdict",
    "verdict_section",
]

#: "Low latency" for the L4S flow: mean queuing delay at most this. 5 ms is the target of the
#: PAM 2025 study's AQM queues (`pie`/`codel`/`fq_codel`/`dualpi2 target 5ms`,
#: fatihsarpkaya/L4S-PAM2025), i.e. what a classic AQM already gives a classic flow;
#: an L4S flow above it gains no latency from L4S.
LOW_LATENCY_MS = 5.0

#: A summary window shorter than this is transient-dominated. A CUBIC epoch after a
#: reduction lasts K = ∛(W_max·β/C) (RFC 9438 §4.2, C = 0.4, β = 0.3 of the window lost):
#: with the 100 Mbit/s × 10 ms path of the PAM-style studies at 1–4 BDP (W_max ≈ 170–420
#: segments) K ≈ 5–7 s, so a window under 10 s averages over slow start and the first epoch
#: or two rather than the flows' steady state. Without a warm-up the window also holds slow
#: start itself (PAM 2025 does average over its 60 s with slow start; its runs are long).
MIN_WINDOW_S = 10.0


def find_factor(factors: list[str], paths: dict[str, str], *names: str) -> str | None:
    for column in factors:
        last = paths.get(column, column).split(".")[-1]
        if last in names:
            return column
    return None


def is_pam_shaped(flows: pd.DataFrame, factors: list[str], paths: dict[str, str]) -> bool:
    """A queue factor (``bottleneck.qdisc``), a buffer factor (``bottleneck.buffer``) and
    runs holding both L4S and classic flows."""
    if find_factor(factors, paths, "qdisc") is None or find_factor(factors, paths, "buffer") is None:
        return False
    classes = flow_class(flows)
    per_run = classes.groupby(flows["run_id"]).agg(lambda s: {"l4s", "classic"} <= set(s))
    return bool(per_run.any())


def transient_runs(plan: dict[str, Any] | None) -> dict[int, str]:
    """Point index → why its runs are transient-dominated (summary window under
    :data:`MIN_WINDOW_S`, i.e. ``duration − warmup``; "no warm-up" said where there is none)."""
    from ..units import UnitError, time_ns

    flagged = {}
    for k, point in enumerate((plan or {}).get("points") or []):
        scenario = point.get("scenario") if isinstance(point, dict) else None
        if not isinstance(scenario, dict) or "duration" not in scenario:
            continue
        try:
            duration = time_ns(scenario["duration"]) / 1e9
            warmup = time_ns(scenario.get("warmup") or "0s") / 1e9
        except (UnitError, TypeError, ValueError):
            continue
        if duration - warmup < MIN_WINDOW_S:
            why = f"{duration - warmup:g} s summary window" + ("" if warmup > 0 else ", no warm-up")
            flagged[int(point.get("index", k))] = why
    return flagged


def _completeness(runs: pd.DataFrame | None, queue: str) -> dict[object, tuple[int, int]]:
    """Queue value → (runs done, runs planned) over the current plan's runs."""
    if runs is None or queue not in runs or "status" not in runs:
        return {}
    planned = runs[runs["in_plan"].astype(bool)] if "in_plan" in runs else runs
    done = planned["status"].eq("done")
    return {q: (int(d.sum()), int(len(d))) for q, d in done.groupby(planned[queue], sort=False)}


def adopt_verdict(
    flows: pd.DataFrame,
    factors: list[str],
    paths: dict[str, str] | None = None,
    *,
    low_latency_ms: float = LOW_LATENCY_MS,
    runs: pd.DataFrame | None = None,
    plan: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """One row per (queue, L4S CC): ``queue``, ``l4s_cc``, ``verdict`` (``"incomplete"``,
    ``"no"``, ``"uncertain"``, ``"yes"``), ``adopt`` (True only for ``"yes"``), ``reason``,
    ``cells``, ``uncertain`` (cells whose 95 % CI straddles a threshold or that have one
    trial), ``trials`` (min n), ``done``/``planned`` (runs of that queue's points) and
    ``transient`` (why the runs are transient-dominated, or "").

    ``flows`` is a study's flows table with ``run_id``, ``cc``, ``goodput_mbps``,
    ``mean_srtt_ms``, ``base_rtt_ms``, ``rate_mbps`` and the factor columns; ``runs`` (the
    catalog's runs table, with ``status`` and ``in_plan``) decides completeness, ``plan``
    (plan.json) the transient flag."""
    paths = paths or {c: c for c in factors}
    queue = find_factor(factors, paths, "qdisc")
    if queue is None:
        raise ValueError("adopt_verdict: the study has no bottleneck.qdisc factor")
    if runs is not None and "in_plan" in runs and "run_id" in runs:
        current = set(runs.loc[runs["in_plan"].astype(bool), "run_id"])
        flows = flows[flows["run_id"].isin(current)]
    complete = _completeness(runs, queue)
    transient = transient_runs(plan)
    frame = flows.assign(_class=flow_class(flows), _qd=flows["mean_srtt_ms"] - flows["base_rtt_ms"])
    n_flows = frame.groupby("run_id")["run_id"].transform("size")
    frame = frame.assign(_n=n_flows)
    if "point" not in frame:
        frame = frame.assign(point=-1)
    l4s = frame[frame["_class"] == "l4s"]
    others = [f for f in factors if f != queue]
    rows = []
    for (queue_value, cc), part in l4s.groupby([queue, "cc"], sort=True):
        per_run = part.groupby(["run_id", *others], sort=True, dropna=False).agg(
            mbps=("goodput_mbps", "sum"), qd=("_qd", "mean"), k=("goodput_mbps", "size"),
            n=("_n", "first"), rate=("rate_mbps", "first"), point=("point", "first"),
        )  # fmt: skip
        per_run = per_run.reset_index()
        per_run["share"] = per_run["mbps"] / per_run["rate"]
        per_run["fair"] = per_run["k"] / per_run["n"]
        failures, unclear, uncertain, cells, trials = [], [], 0, 0, math.inf
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
            one = len(cell) < 2
            half = math.inf if one or math.isnan(share.half) else share.half
            dhalf = math.inf if one or math.isnan(delay.half) else delay.half
            share_straddles = any(share.mean - half < b < share.mean + half for b in bounds)
            delay_straddles = delay.mean - dhalf < low_latency_ms < delay.mean + dhalf
            if share_straddles or delay_straddles:
                uncertain += 1
            spread = f"L4S share {100 * share.mean:.0f} ± {100 * min(half, 9.99):.0f} % vs fair {100 * fair:.0f} %"
            if one:
                spread = f"L4S share {100 * share.mean:.0f} % (1 trial) vs fair {100 * fair:.0f} %"
            found = []
            if label == "harmful":
                found.append((share.mean / fair, share_straddles, f"harmful to classic flows at {where}: {spread}"))
            elif label == "harmed":
                found.append((fair / max(share.mean, 1e-9), share_straddles, f"harmed at {where}: {spread}"))
            if delay.mean > low_latency_ms:
                text = (f"L4S queuing delay {delay.mean:.1f} ± {dhalf:.1f} ms > {low_latency_ms:g} ms" if not one
                        else f"L4S queuing delay {delay.mean:.1f} ms (1 trial) > {low_latency_ms:g} ms")  # fmt: skip
                found.append((delay.mean / low_latency_ms, delay_straddles, f"no low latency at {where}: {text}"))
            for severity, straddles, text in found:
                (unclear if straddles else failures).append((severity, text))
        points = set(part["point"])
        flagged = sorted({transient[p] for p in points if p in transient})
        done, planned = complete.get(queue_value, (0, 0))
        failures.sort(key=lambda p: -p[0])
        unclear.sort(key=lambda p: -p[0])

        def listed(items: list[tuple[float, str]]) -> str:
            return "; ".join(t for _, t in items[:2]) + (f" (+{len(items) - 2} more)" if len(items) > 2 else "")

        if planned and done < planned:
            verdict = "incomplete"
            reason = f"{done} of {planned} runs of this queue's points done: no verdict until every point has its trials"
        elif failures:
            verdict, reason = "no", listed(failures)
        elif uncertain or flagged:
            verdict = "uncertain"
            parts = []
            if unclear:
                parts.append("possibly " + listed(unclear))
            if uncertain:
                parts.append(f"{uncertain} of {cells} cells not clear at 95 % (an interval straddles a threshold, or 1 trial)")
            if flagged:
                parts.append(f"transient-dominated runs ({'; '.join(flagged)})")
            reason = "; ".join(parts)
        else:
            verdict = "yes"
            reason = f"neither harmed nor harmful and ≤ {low_latency_ms:g} ms queuing delay in all {cells} cells"
        rows.append(
            {
                "queue": queue_value,
                "l4s_cc": cc,
                "verdict": verdict,
                "adopt": verdict == "yes",
                "reason": reason,
                "cells": cells,
                "uncertain": uncertain,
                "trials": 0 if trials == math.inf else int(trials),
                "done": done,
                "planned": planned,
                "transient": "; ".join(flagged),
            }
        )
    if runs is not None and queue in runs:  # the study's order of queues, not the alphabet's
        rank = {q: k for k, q in enumerate(dict.fromkeys(runs.sort_values("point")[queue]))} if "point" in runs else {}
        rows.sort(key=lambda r: (rank.get(r["queue"], len(rank)), str(r["l4s_cc"])))
    columns = ["queue", "l4s_cc", "verdict", "adopt", "reason", "cells", "uncertain", "trials", "done", "planned",
               "transient"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


#: How each verdict reads in the report's table.
MARKS = {"yes": "✔", "no": "✘", "uncertain": "uncertain", "incomplete": "incomplete"}


def verdict_section(
    flows: pd.DataFrame,
    factors: list[str],
    paths: dict[str, str],
    *,
    runs: pd.DataFrame | None = None,
    plan: dict[str, Any] | None = None,
) -> list[str]:
    """The report's "Adopt L4S here?" section (Markdown lines), empty unless PAM-shaped."""
    if not is_pam_shaped(flows, factors, paths):
        return []
    table = adopt_verdict(flows, factors, paths, runs=runs, plan=plan)
    lines = [
        "## Adopt L4S here?",
        "",
        f"Per bottleneck queue and L4S congestion control, across every buffer and other factor: ✔ where in every "
        f"cell the L4S flows are clearly neither harmed (share < {HARMED_FACTOR:g}× fair) nor harmful "
        f"(> {HARMFUL_FACTOR:g}× fair) and see at most {LOW_LATENCY_MS:g} ms mean queuing delay, the 95 % "
        "interval over trials on the right side of every threshold; ✘ where some cell clearly fails, with the "
        "worst cells; **uncertain** where an interval straddles a threshold, a cell has one trial, or the runs "
        f"are transient-dominated (summary window under {MIN_WINDOW_S:g} s); **incomplete** until every point of "
        "the queue has all its trials.",
        "",
        "| queue | L4S CC | adopt? | reason | evidence |",
        "|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        evidence = f"{row.done} of {row.planned} runs done" if row.planned else "runs of the plan unknown"
        if row.verdict != "incomplete":
            evidence += (
                f"; {row.cells - row.uncertain} of {row.cells} cells clear at 95 % (n ≥ {row.trials} trials)"
                if row.trials > 1
                else f"; 1 trial per cell: no confidence interval ({row.cells} cells)"
            )
        if row.transient:
            evidence += f"; ⚠ transient-dominated: {row.transient}"
        lines.append(
            f"| {md_text(row.queue)} | {md_text(row.l4s_cc)} | {MARKS[row.verdict]} | {md_text(row.reason)} "
            f"| {md_text(evidence)} |"
        )
    return lines + [""]
