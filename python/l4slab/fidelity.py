"""The fidelity suite: l4slab against measurements of real Linux, as a built-in study.

The study ``fidelity`` (``l4slab/studies/fidelity``) holds one panel per testbed
configuration, configured as its testbed ran it; its ``fidelity_published.csv`` holds what
each testbed reported: per case, panel and cell, a quantity, the real value and the allowed
deviation (absolute ``tol`` or relative ``rel``; neither = a reference, shown, not judged).
:func:`verdicts` measures each quantity from the study's catalog (:data:`QUANTITIES`) and
judges it; the study's report section (:func:`section`) prints them, and
``l4slab fidelity [--cases NAME,NAME] [--quick]`` plans, runs and reports the panels the
cases need (:func:`run`). docs/fidelity.md explains each case's mechanism and its current
agreement. Nothing here feeds back into the engine.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

__all__ = [
    "QUANTITIES", "QUICK_WINDOW_S", "Published", "cases", "delay_l_time_average", "load_published", "quick_overrides", "run", "section", "verdicts",
]  # fmt: skip

STUDY = "fidelity"
#: ``--quick``: every panel's measured window (after its warm-up) at most this long: a smoke
#: test, not the judged numbers.
QUICK_WINDOW_S = 20
#: The overloaded DualQ testbed's Prague flows kept 1.38 Mbit/s each; a flow below a tenth
#: of that counts as starved.
STARVED_MBPS = 0.138


@dataclass(frozen=True)
class Published:
    """One published quantity: the case that judges it, the study panel and cell
    (``{catalog column: value}``) that measure it, the real value (NaN: none published)
    and the allowed deviation (absolute ``tol`` or relative ``rel``; both None = reference)."""

    case: str
    panel: str
    cell: dict[str, str]
    quantity: str
    unit: str
    real: float
    tol: float | None
    rel: float | None
    source: str

    def judge(self, sim: float) -> bool | None:
        if self.tol is None and self.rel is None:
            return None
        if sim is None or not math.isfinite(sim) or not math.isfinite(self.real):
            return False
        allowed = self.tol if self.tol is not None else abs(self.real) * (self.rel or 0.0)
        return abs(sim - self.real) <= allowed + 1e-12

    @property
    def tolerance(self) -> str:
        if self.tol is not None:
            return f"±{self.tol:g}{self.unit and ' ' + self.unit}"
        return f"±{self.rel * 100:g} %" if self.rel is not None else "reference"


def quick_overrides(panels: list[str] | None = None) -> dict[str, str]:
    """``PANEL:duration`` overrides that keep each panel's warm-up and measure at most
    :data:`QUICK_WINDOW_S` after it."""
    from . import units
    from .scenario import read_toml_file
    from .study import registry

    data, _ = read_toml_file(registry.study_file(STUDY), "study")
    out = {}
    for name, panel in data["panels"].items():
        if panels is not None and name not in panels:
            continue
        settings = {**data["base"], **panel.get("set", {})}
        warmup = units.time_ns(settings.get("warmup", "0s")) / 1e9
        duration = units.time_ns(settings["duration"]) / 1e9
        out[f"{name}:duration"] = f"{min(duration, warmup + QUICK_WINDOW_S):g}s"
    return out


def published_file() -> Path:
    from .study import registry

    return registry.study_dir(STUDY) / "fidelity_published.csv"


def load_published(path: str | os.PathLike[str] | None = None) -> list[Published]:
    """The published quantities (default: the study's own file). A mistake is one line
    naming the file, the line and the column."""
    from .errors import ScenarioError

    path = Path(path) if path is not None else published_file()
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)]
    lines = [(n, line) for n, line in lines if line.strip() and not line.startswith("#")]
    header = next(csv.reader([lines[0][1]])) if lines else []
    need = ["case", "panel", "cell", "quantity", "unit", "real", "tol", "rel", "source"]
    if header != need:
        raise ScenarioError(f"{path.name}: header {','.join(header)!r}; expected {','.join(need)}")
    out = []
    for n, line in lines[1:]:
        row = dict(zip(need, next(csv.reader([line]))))

        def number(column: str, empty: float | None, row=row, n=n) -> float | None:
            text = (row.get(column) or "").strip()
            if not text:
                return empty
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not math.isfinite(value) or (column != "real" and value < 0):
                raise ScenarioError(f"{path.name} line {n}, column {column!r}: {text[:40]!r} is not a number ≥ 0")
            return value

        cell = {}
        for part in filter(None, (row.get("cell") or "").split(";")):
            key, sep, value = part.partition("=")
            if not sep:
                raise ScenarioError(f"{path.name} line {n}, column 'cell': {part[:40]!r} is not column=value")
            cell[key.strip()] = value.strip()
        if row.get("quantity") not in QUANTITIES:
            raise ScenarioError(
                f"{path.name} line {n}, column 'quantity': {row.get('quantity', '')[:40]!r} is not one of "
                f"{', '.join(QUANTITIES)}"
            )
        real = number("real", math.nan)
        out.append(
            Published(row["case"], row["panel"], cell, row["quantity"], row["unit"], real,
                      number("tol", None), number("rel", None), row["source"])  # fmt: skip
        )
    return out


def cases(published: list[Published] | None = None) -> list[str]:
    """The case names, in the published file's order."""
    return list(dict.fromkeys(p.case for p in (published if published is not None else load_published())))


def delay_l_time_average(trace, start_s: float, end_s: float) -> float:
    """The time average over [start_s, end_s] of ``now - l_head_ts`` (0 while the L queue is
    empty), ms: what ``tc -s qdisc`` reports as ``delay_l``
    (sch_dualpi2.c:dualpi2_dump_stats -> get_queue_delays) when sampled at random times.
    From a run's per-packet sojourn trace (``trace_sojourn = true``, ``RunResult.sojourn``):
    packet i heads the L queue from max(its enqueue, the previous L dequeue) to its own
    dequeue, its age growing from there. The study store keeps no per-packet trace, so the
    suite shows this quantity as a reference; docs/fidelity-dualq.md measures it with this."""
    import numpy as np

    if trace is None or not len(trace):
        return math.nan
    l_class = trace[trace["class"].astype(str).isin(["1", "L"])].sort_values("time_s", kind="stable")
    left = l_class["time_s"].to_numpy(dtype=float)
    entered = left - l_class["sojourn_ms"].to_numpy(dtype=float) / 1e3
    heads = np.maximum(entered, np.concatenate([[-math.inf], left[:-1]]))
    heads = np.maximum(heads, start_s)  # only the part of each head interval inside the window counts
    inside = left > start_s
    area = ((left - entered) ** 2 - (heads - entered) ** 2) / 2
    return float(area[inside].sum() / max(end_s - start_s, 1e-9) * 1e3)


# --- quantities, from the study's catalog tables of one run ---------------------------


def _flow(run, position: int, column: str) -> float:
    flows = run.flows.sort_values("id")
    return float(flows.iloc[position][column]) if len(flows) > position else math.nan


def _l_class(column: str) -> Callable[[Any], float]:
    def measure(run) -> float:
        rows = run.classes[run.classes["class"].astype(str).isin(["L", "1"])]
        return float(rows.iloc[0][column]) if len(rows) else math.nan

    return measure


def _queuing_delay(run) -> float:
    return _flow(run, 0, "mean_srtt_ms") - _flow(run, 0, "base_rtt_ms")


def _prague_flows(run):
    return run.flows[run.flows["cc"].astype(str).str.startswith("prague")]["goodput_mbps"].astype(float)


def _max_mark_prob(run) -> float:
    series = run.series("bottleneck_series")
    return float(series["mark_prob"].max(skipna=True)) if len(series) else math.nan


def _not_stored(_run) -> float:
    """A statistic the study store does not keep (it keeps per class mean, p50, p90, p99,
    p99.9, max): shown as a reference without a simulated value."""
    return math.nan


#: Every quantity a published row may name: what it measures in one run's catalog rows.
QUANTITIES: dict[str, Callable[[Any], float]] = {
    "L sojourn mean": _l_class("mean_ms"),
    "L sojourn median": _l_class("p50_ms"),
    "L sojourn P99": _l_class("p99_ms"),
    "L sojourn P99.9": _l_class("p999_ms"),
    "L sojourn max": _l_class("max_ms"),
    "L sojourn P25": _not_stored,
    "L sojourn P75": _not_stored,
    "L sojourn P99.99": _not_stored,
    "L delay_l (tc time average)": _not_stored,
    "CE marks": lambda r: 100.0 * _flow(r, 0, "ce_packets") / max(1.0, _flow(r, 0, "packets_sent")),
    "utilisation": lambda r: 100.0 * float(r.bottleneck.iloc[0]["utilisation"]),
    "Prague goodput": lambda r: _flow(r, 0, "goodput_mbps"),
    "CUBIC goodput": lambda r: _flow(r, 1, "goodput_mbps"),
    "Prague queuing delay": _queuing_delay,
    "Prague goodput per flow": lambda r: float(_prague_flows(r).mean()),
    "Prague flows starved": lambda r: float((_prague_flows(r) < STARVED_MBPS).sum()),
    "retransmissions": lambda r: _flow(r, 0, "retransmits"),
    "DualPI2 drops": lambda r: _flow(r, 0, "drops"),
    "mean payload": lambda r: _flow(r, 0, "mean_payload_bytes"),
    "max mark_prob": _max_mark_prob,
    "max flow marks/packet": lambda r: float(
        (r.flows["marks"].astype(float) / r.flows["packets_sent"].astype(float).clip(lower=1)).max()
    ),
}


@dataclass
class _Run:
    """One run's catalog rows."""

    flows: Any
    bottleneck: Any
    classes: Any
    series: Callable[[str], Any]


def verdicts(data, published: list[Published] | None = None, case_names=None):
    """One row per published quantity whose panel has finished runs in ``data``
    (:func:`l4slab.study.load` of a fidelity study directory): case, quantity, unit, real,
    simulated (mean over the cell's runs), tolerance, agrees (True/False, None for a
    reference), source, panel, cell."""
    import pandas as pd

    published = published if published is not None else load_published()
    runs = data.runs
    done = runs[(runs["status"] == "done") & runs.get("in_plan", True)]
    rows = []
    for p in published:
        if case_names is not None and p.case not in case_names:
            continue
        chosen = done[done["panel"].astype(str) == p.panel] if "panel" in done else done.iloc[0:0]
        for column, value in p.cell.items():
            if column not in chosen:
                chosen = chosen.iloc[0:0]
                break
            chosen = chosen[chosen[column].astype(str) == value]
        if chosen.empty:
            continue
        values = []
        for rid in chosen["run_id"]:
            run = _Run(
                data.flows[data.flows["run_id"] == rid],
                data.bottleneck[data.bottleneck["run_id"] == rid],
                data.classes[data.classes["run_id"] == rid],
                lambda table, rid=rid: data.series(table, [rid]),
            )
            values.append(QUANTITIES[p.quantity](run))
        finite = [v for v in values if math.isfinite(v)]
        sim = sum(finite) / len(finite) if finite else math.nan
        rows.append(
            {
                "case": p.case,
                "cell": ";".join(f"{k}={v}" for k, v in p.cell.items()),
                "quantity": p.quantity,
                "unit": p.unit,
                "real": p.real,
                "simulated": sim,
                "tolerance": p.tolerance,
                "agrees": p.judge(sim),
                "source": p.source,
                "panel": p.panel,
            }
        )
    return pd.DataFrame(rows, columns=["case", "cell", "quantity", "unit", "real", "simulated", "tolerance",
                                       "agrees", "source", "panel"])  # fmt: skip


def section(data, report_dir) -> list[str]:
    """The fidelity report section: each published quantity beside the simulated one."""
    from .analysis.html import md_text

    table = verdicts(data)
    if table.empty:
        return ["## Fidelity", "", "No panel with a published quantity has finished runs yet.", ""]
    table.to_csv(Path(report_dir) / "fidelity.csv", index=False)
    judged = table["agrees"].dropna()
    lines = [
        "## Fidelity",
        "",
        f"{int(judged.sum())} of {len(judged)} judged quantities agree with the testbeds "
        "(real: `fidelity_published.csv` of the study; all rows in `fidelity.csv`).",
        "",
        "| case | cell | quantity | real | simulated | tolerance | agrees |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        real = "–" if not math.isfinite(row.real) else f"{row.real:g}"
        sim = "not stored" if not math.isfinite(row.simulated) else f"{row.simulated:.4g}"
        mark = {True: "yes", False: "**NO**", None: "–"}[row.agrees]
        unit = f" {row.unit}" if row.unit else ""
        lines.append(
            f"| {md_text(row.case)} | {md_text(row.cell) or '–'} | {md_text(row.quantity)}{md_text(unit)} | {real} "
            f"| {sim} | {md_text(row.tolerance)} | {mark} |"
        )
    return lines + [""]


def run(
    case_names: set[str] | None = None,
    *,
    quick: bool = False,
    out: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: bool = False,
    jobs: int | None = None,
):
    """Plan and run the fidelity study's panels that ``case_names`` need (all when None)
    into ``out`` (default ``results/fidelity``, ``results/fidelity-quick`` with ``quick``)
    and return (the verdict table, the study directory); ``l4slab study report DIR`` writes
    the full report with the same verdicts."""
    from . import study
    from .errors import ScenarioError

    published = load_published()
    known = cases(published)
    if case_names is not None:
        unknown = sorted(set(case_names) - set(known))
        if not case_names or unknown:
            shown = unknown[0][:40] if unknown else ""
            raise ScenarioError(f"--cases: no case {shown!r}; cases are {', '.join(known)}")
    panels = list(dict.fromkeys(p.panel for p in published if case_names is None or p.case in case_names))
    settings = {**(quick_overrides(panels) if quick else {}), **(overrides or {})}
    out = Path(out) if out is not None else Path("results") / ("fidelity-quick" if quick else "fidelity")
    outcome = study.run(STUDY, out=out, panels=panels, overrides=settings or None, progress=progress, jobs=jobs)
    if outcome.failed:
        first = next(iter(outcome.errors.values()), "unknown error")
        raise ScenarioError(f"{out}: {outcome.failed} fidelity run(s) failed, e.g. {first}")
    return verdicts(study.load(out), published, case_names), out
