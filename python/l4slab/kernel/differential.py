"""The engine against the kernel: one study run on both backends, compared point by point.

``l4slab study run kernel-differential --out DIR`` simulates every point into ``DIR``;
``... --backend kernel`` runs the same points on the real kernel into ``DIR/kernel`` (same
plan, so the same point numbers). :func:`compare` joins the two catalogs' ``summaries``
tables on (point, scope, flow, metric) and gives each row a verdict, the kernel's trials
being the reference:

* per-flow goodput (Mbit/s): ``|engine − kernel| ≤ max(3 Mbit/s, 2 × SD_kernel)``;
* per-flow mean sRTT and queuing delay, the bottleneck's mean sojourn and each qdisc
  class's (DualPI2's C and L queues; scope ``class``, flow = the class): within 15 % of
  the kernel's mean or 0.5 ms, whichever is larger (a sub-millisecond L4S queue is
  compared in absolute terms: the kernel's own sRTT has a 1 ms-order host floor, see
  docs/kernel.md), or 2 × SD_kernel;
* drops, marks and retransmissions (whole summary window): within 20 % or 2 × SD_kernel
  (both zero is within; a count on one side only is outside);
* utilisation: within 0.03 or 2 × SD_kernel.

Tolerances are those of the emulator's differential comparison (``emulate/compare.py``)
where it has them. Verdicts are data: the comparison always completes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ScenarioError

__all__ = ["METRICS", "compare", "table_markdown", "agreement"]

#: (scope, metric) -> (kind, absolute floor, relative tolerance)
METRICS: dict[tuple[str, str], tuple[str, float, float]] = {
    ("flow", "goodput_mbps"): ("abs", 3.0, 0.0),
    ("flow", "mean_srtt_ms"): ("rel", 0.5, 0.15),
    ("flow", "queuing_delay_ms"): ("rel", 0.5, 0.15),
    ("flow", "retransmits"): ("count", 0.0, 0.20),
    ("flow", "ce_packets"): ("count", 0.0, 0.20),
    ("bottleneck", "sojourn_mean_ms"): ("rel", 0.5, 0.15),
    ("class", "sojourn_mean_ms"): ("rel", 0.5, 0.15),
    ("bottleneck", "utilisation"): ("abs", 0.03, 0.0),
    ("bottleneck", "drops"): ("count", 0.0, 0.20),
    ("bottleneck", "marks"): ("count", 0.0, 0.20),
}
SD_FACTOR = 2.0
WITHIN, OUTSIDE, MISSING = "within", "outside", "missing"


@dataclass(frozen=True)
class Verdict:
    tolerance: float
    verdict: str


def judge(kind: str, floor: float, rel: float, engine: float, kernel: float, kernel_sd: float) -> Verdict:
    """One row's verdict (module docstring)."""
    if not (math.isfinite(engine) and math.isfinite(kernel)):
        return Verdict(math.nan, MISSING)
    sd = kernel_sd if math.isfinite(kernel_sd) else 0.0
    if kind == "abs":
        tol = max(floor, SD_FACTOR * sd)
    elif kind == "rel":
        tol = max(floor, rel * abs(kernel), SD_FACTOR * sd)
    else:  # counts
        if engine == 0 and kernel == 0:
            return Verdict(0.0, WITHIN)
        if (engine == 0) != (kernel == 0):
            return Verdict(0.0, OUTSIDE)
        tol = max(rel * abs(kernel), SD_FACTOR * sd)
    return Verdict(tol, WITHIN if abs(engine - kernel) <= tol else OUTSIDE)


def _summaries(directory: Path) -> pd.DataFrame:
    """The catalog's ``summaries`` plus one ``class`` row per (point, qdisc class): the mean
    over trials of each class's mean sojourn (classes that carried packets)."""
    from ..study import catalog

    data = catalog.load(directory)
    frame = data.summaries.copy()
    classes = data.classes
    if len(classes) and {"point", "class", "mean_ms", "count"} <= set(classes.columns):
        used = classes[classes["count"] > 0]
        stats = used.groupby(["point", "class"])["mean_ms"].agg(["mean", "std", "count"]).reset_index()
        extra = pd.DataFrame(
            {
                "point": stats["point"],
                "scope": "class",
                "flow": stats["class"].astype(str),
                "metric": "sojourn_mean_ms",
                "mean": stats["mean"],
                "std": stats["std"],
                "n": stats["count"],
            }
        )
        factors = frame.drop_duplicates("point")[["point", *[c for c in frame.columns if c not in _NON_FACTOR]]]
        extra = extra.merge(factors, on="point", how="left")
        frame = pd.concat([frame, extra], ignore_index=True)
    return frame


_NON_FACTOR = {"point", "scope", "flow", "label", "cc", "metric", "n", "mean", "std", "ci95_low", "ci95_high", "ci95_half"}


def compare(study_dir: str | Path, kernel_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per (point, scope, flow, metric) of :data:`METRICS` present in both studies:
    the factors, ``engine``/``engine_n``, ``kernel``/``kernel_sd``/``kernel_n``,
    ``difference``, ``tolerance`` and ``verdict``."""
    study_dir = Path(study_dir)
    kernel_dir = study_dir / "kernel" if kernel_dir is None else Path(kernel_dir)
    for d, what in ((study_dir, "the engine's study directory"), (kernel_dir, "the kernel backend's study directory")):
        if not (d / "plan.json").exists():
            raise ScenarioError(f"{d}: not a study directory ({what}: run `l4slab study run ... --out` first)")
    sim, ker = _summaries(study_dir), _summaries(kernel_dir)
    keys = ["point", "scope", "flow", "metric"]
    wanted = pd.DataFrame([{"scope": s, "metric": m} for s, m in METRICS])
    sim = sim.merge(wanted, on=["scope", "metric"])
    ker = ker.merge(wanted, on=["scope", "metric"])
    factor_cols = [c for c in sim.columns if c not in _NON_FACTOR]
    sim = sim.rename(columns={"mean": "engine", "std": "engine_sd", "n": "engine_n"})
    ker = ker[[*keys, "mean", "std", "n"]].rename(columns={"mean": "kernel", "std": "kernel_sd", "n": "kernel_n"})
    sim["flow"] = sim["flow"].map(_flow_key)
    ker["flow"] = ker["flow"].map(_flow_key)
    rows = sim.merge(ker, on=keys, how="left")
    out = []
    for rec in rows.to_dict("records"):
        kind, floor, rel = METRICS[(rec["scope"], rec["metric"])]
        v = judge(kind, floor, rel, _f(rec.get("engine")), _f(rec.get("kernel")), _f(rec.get("kernel_sd")))
        rec["difference"] = _f(rec.get("engine")) - _f(rec.get("kernel"))
        rec["tolerance"] = v.tolerance
        rec["verdict"] = v.verdict
        out.append(rec)
    columns = ["point", *factor_cols, "scope", "flow", "label", "cc", "metric", "engine", "engine_n", "kernel",
               "kernel_sd", "kernel_n", "difference", "tolerance", "verdict"]  # fmt: skip
    frame = pd.DataFrame(out)
    return frame[[c for c in columns if c in frame.columns]].sort_values(["point", "scope", "flow", "metric"])


def _flow_key(value: Any) -> str:
    """Flows by index, classes by name, the bottleneck as ''."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _f(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def agreement(frame: pd.DataFrame, by: str = "panel") -> pd.DataFrame:
    """Share of rows within tolerance per ``by`` value and metric (missing rows left out)."""
    judged = frame[frame["verdict"] != MISSING]
    if by not in judged.columns:
        judged = judged.assign(**{by: "all"})
    grouped = judged.groupby([by, "metric"])["verdict"]
    table = grouped.apply(lambda v: f"{(v == WITHIN).sum()}/{len(v)}").unstack("metric").fillna("")
    return table


def table_markdown(frame: pd.DataFrame, *, by: str = "panel") -> str:
    """The fidelity table: agreement per panel and metric, then every row outside."""
    lines = ["### Agreement (rows within tolerance / rows compared)", ""]
    agree = agreement(frame, by)
    header = [by, *agree.columns]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for name, row in agree.iterrows():
        lines.append("| " + " | ".join([str(name), *[str(row[c]) for c in agree.columns]]) + " |")
    judged = frame[frame["verdict"] != MISSING]
    total = len(judged)
    within = int((judged["verdict"] == WITHIN).sum())
    lines += ["", f"All: {within}/{total} rows within tolerance.", ""]
    outside = frame[frame["verdict"] == OUTSIDE]
    if len(outside):
        factor_cols = [c for c in frame.columns if c not in _NON_FACTOR and c not in
                       {"engine", "engine_n", "engine_sd", "kernel", "kernel_sd", "kernel_n", "difference", "tolerance",
                        "verdict"}]  # fmt: skip
        lines += ["### Outside tolerance", ""]
        header = [*factor_cols, "flow", "metric", "engine", "kernel (± SD)", "tolerance"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for rec in outside.to_dict("records"):
            cells = [str(rec.get(c) if rec.get(c) is not None and rec.get(c) == rec.get(c) else "–") for c in factor_cols]
            label, key = rec.get("label"), rec.get("flow")
            flow = label if isinstance(label, str) and label else key if isinstance(key, str) and key else "–"
            cells += [flow, rec["metric"], f"{rec['engine']:.3g}", f"{rec['kernel']:.3g} ± {_f(rec['kernel_sd']):.2g}",
                      f"{rec['tolerance']:.2g}"]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
