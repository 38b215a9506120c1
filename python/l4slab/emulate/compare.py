"""Simulated vs emulated: the same scenario through the engine (N seeds) and through the
emulator with real kernel TCP (N trials), one row per metric with the verdict "within
spread" or "outside".

Tolerances (issue 15's acceptance), the emulated trials being the reference:

* per-flow throughput (goodput, Mbit/s): ``|sim − emu| ≤ max(3 Mbit/s, 2 × SD_emu)``;
* mean sojourn at the bottleneck and per-flow mean sRTT: within 15 % of the emulated mean;
* drops and marks at the bottleneck (whole run): within 20 % of the emulated mean (both
  zero is within; a count on one side only is outside).

Verdicts are data: the comparison always completes; what falls outside is reported, not
raised.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = ["Row", "verdicts", "compare", "THROUGHPUT_FLOOR_MBPS", "RELATIVE_TOLERANCE"]

#: Issue 15: throughput within max(3 Mbit/s, 2 × the emulated trials' SD).
THROUGHPUT_FLOOR_MBPS = 3.0
THROUGHPUT_SD_FACTOR = 2.0
#: Issue 15: sojourn/sRTT within 15 %, drop and mark counts within 20 %.
RELATIVE_TOLERANCE = {"mean_sojourn_ms": 0.15, "mean_srtt_ms": 0.15, "drops": 0.20, "marks": 0.20}

WITHIN = "within spread"
OUTSIDE = "outside"


@dataclass(frozen=True)
class Row:
    metric: str
    flow: int | None
    sim: float
    emu_mean: float
    emu_sd: float
    trials: int
    tolerance: float
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "flow": self.flow,
            "sim": _clean(self.sim),
            "emu_mean": _clean(self.emu_mean),
            "emu_sd": _clean(self.emu_sd),
            "trials": self.trials,
            "tolerance": _clean(self.tolerance),
            "verdict": self.verdict,
        }


def _clean(value: float) -> float | None:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _mean_sd(values: Sequence[float]) -> tuple[float, float, int]:
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not finite:
        return math.nan, math.nan, 0
    sd = statistics.stdev(finite) if len(finite) > 1 else 0.0
    return statistics.fmean(finite), sd, len(finite)


def _metrics(summary: Mapping[str, Any]) -> dict[tuple[str, int | None], float]:
    out: dict[tuple[str, int | None], float] = {}
    for flow in summary.get("flows") or []:
        if flow.get("kind", "tcp") != "tcp":
            continue
        fid = int(flow["id"])
        out[("throughput_mbps", fid)] = _num(flow.get("goodput_mbps"))
        out[("mean_srtt_ms", fid)] = _num(flow.get("mean_srtt_ms"))
    bottleneck = summary.get("bottleneck") or {}
    out[("mean_sojourn_ms", None)] = _num((bottleneck.get("sojourn_ms") or {}).get("mean"))
    qdisc = bottleneck.get("qdisc") or {}
    out[("drops", None)] = _num(qdisc.get("drops", bottleneck.get("drops")))
    out[("marks", None)] = _num(qdisc.get("marks", bottleneck.get("marks")))
    return out


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def verdicts(sim: Sequence[Mapping[str, Any]], emu: Sequence[Mapping[str, Any]]) -> list[Row]:
    """One :class:`Row` per metric from the simulated runs' and the emulated trials'
    ``summary.json`` dicts. The simulated value is the mean over its seeds."""
    sim_metrics = [_metrics(s) for s in sim]
    emu_metrics = [_metrics(s) for s in emu]
    keys: list[tuple[str, int | None]] = []
    for table in [*sim_metrics, *emu_metrics]:
        for key in table:
            if key not in keys:
                keys.append(key)
    order = {"throughput_mbps": 0, "mean_srtt_ms": 1, "mean_sojourn_ms": 2, "drops": 3, "marks": 4}
    keys.sort(key=lambda k: (order.get(k[0], 9), -1 if k[1] is None else k[1]))
    rows = []
    for key in keys:
        metric, flow = key
        sim_value, _, _ = _mean_sd([m.get(key, math.nan) for m in sim_metrics])
        emu_mean, emu_sd, n = _mean_sd([m.get(key, math.nan) for m in emu_metrics])
        if metric == "throughput_mbps":
            tolerance = max(THROUGHPUT_FLOOR_MBPS, THROUGHPUT_SD_FACTOR * (emu_sd if math.isfinite(emu_sd) else 0.0))
        else:
            tolerance = RELATIVE_TOLERANCE[metric] * abs(emu_mean) if math.isfinite(emu_mean) else math.nan
        if not (math.isfinite(sim_value) and math.isfinite(emu_mean)):
            verdict = "no data"
        elif metric in ("drops", "marks") and emu_mean == 0 and sim_value == 0:
            verdict = WITHIN
        else:
            verdict = WITHIN if abs(sim_value - emu_mean) <= tolerance else OUTSIDE
        rows.append(Row(metric, flow, sim_value, emu_mean, emu_sd, n, tolerance, verdict))
    return rows


def compare(
    scenario: Any,
    *,
    trials: int = 5,
    overrides: Mapping[str, Any] | None = None,
    prefix: str | None = None,
    keep: Callable[[str, int, Any], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[list[Row], list[dict[str, Any]], list[dict[str, Any]]]:
    """Simulate ``trials`` seeds (the scenario's seed, +1, …) and emulate ``trials`` trials
    with the same seeds; return (rows, simulated summaries, emulated summaries).
    ``keep(backend, index, result)`` sees each result (e.g. to write its run directory).
    Emulated trials run one after another (they use real time)."""
    from ..runner import run
    from ..scenario import coerce_scenario
    from .run import HostTooSlow, emulate

    validated = coerce_scenario(scenario, dict(overrides or {}) or None)
    base_seed = int(validated.seed)
    say = log or (lambda _message: None)
    from .preflight import check_config, check_host, find_binary

    # Refuse before the simulations run when the emulated half cannot.
    check_host()
    find_binary()
    check_config(validated.resolve())
    sim_summaries, emu_summaries = [], []
    for index in range(trials):
        result = run(validated, seed=base_seed + index)
        sim_summaries.append(result.summary)
        if keep:
            keep("sim", index, result)
    refused: list[str] = []
    for index in range(trials):
        say(f"emulated trial {index + 1}/{trials}")
        try:
            result = emulate(validated, seed=base_seed + index, prefix=prefix)
        except HostTooSlow as err:
            # The emulator's own error was too large: this trial is no measurement. The
            # others still are; the count of refused trials is reported with the table.
            refused.append(str(err))
            say(f"emulated trial {index + 1}/{trials} refused: {err}")
            continue
        emu_summaries.append(result.summary)
        if keep:
            keep("emulate", index, result)
    if not emu_summaries:
        raise HostTooSlow(f"compare: every emulated trial was refused; the last: {refused[-1]}")
    return verdicts(sim_summaries, emu_summaries), sim_summaries, emu_summaries
