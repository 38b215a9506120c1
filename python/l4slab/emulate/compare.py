"""Simulated vs emulated: the same scenario through the engine (N seeds) and through the
emulator with real kernel TCP (N trials), one row per metric with the verdict "within
spread" or "outside".

Tolerances, the emulated trials being the reference:

* per-flow throughput (goodput, Mbit/s): ``|sim − emu| ≤ max(3 Mbit/s, 2 × SD_emu)``;
* mean sojourn at the bottleneck and per-flow mean sRTT: within 15 % of the emulated mean;
* drops and marks at the bottleneck (whole run): within 20 % of the emulated mean (both
  zero is within; a count on one side only is outside).

Verdicts are data: the comparison always completes; what falls outside is reported, not
raised.

A trial in which the host stalled the emulator (``kept_up: false``) is refused, unless the
caller opts in (``accept_late``, ``--accept-late``): it is then kept for the rows a stall
does not invalidate (goodput, drops, marks: counts over the run, every packet still
counted), while the timing rows (:data:`TIMING_METRICS`: sojourn, sRTT) read
:data:`NOT_KEPT_UP` instead of a verdict.

Start alignment: an iperf3 test sends its first bulk data 3–5 RTTs after the client is
launched (the control connection's handshake, the cookie, the parameter exchange and the
data connection's handshake come first, iperf3 ``iperf_api.c``), while the engine's flow
sends its SYN at its start. So by default the emulated trials run first, the emulator
reports when each flow's first bulk data segment left its sender
(``emu_meta.json`` ``flow_data_start_ns``), and each simulated seed starts each TCP flow
one base RTT (its own handshake) before the matching trial's data start, without the
start jitter: both backends' data then start within the same few ms, and slow start,
the first marks and the phase of the sawtooth line up in the summary window.

The programs' host (``host = "measured"``, ``--host measured``): a ``udp_prague`` command flow
run by ``l4slab-udp-prague`` writes its host's latency distributions (``wake_us`` quantiles,
each end; the sender's ``timer_late_us``); simulated seed ``i`` then runs that flow with trial
``i``'s measured quantiles as ``sender_wake_latency``/``receiver_wake_latency``/
``sender_timer_latency`` (a refused trial's seed, and an accepted trial's that the emulator
did not keep up with, whose measurement holds a stall of the whole VM, takes
the kept trials' pooled distribution, :func:`pooled_quantiles`), so the model of the
algorithm is set against the program on the same host. The default, ``"ideal"``, simulates
an ideal host.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .hosts import HOST_KEYS, measured_hosts, pooled_quantiles

__all__ = [
    "Row",
    "verdicts",
    "compare",
    "aligned_config",
    "THROUGHPUT_FLOOR_MBPS",
    "RELATIVE_TOLERANCE",
]

#: Throughput within max(3 Mbit/s, 2 × the emulated trials' SD).
THROUGHPUT_FLOOR_MBPS = 3.0
THROUGHPUT_SD_FACTOR = 2.0
#: Sojourn/sRTT within 15 %, drop and mark counts within 20 %.
RELATIVE_TOLERANCE = {"mean_sojourn_ms": 0.15, "mean_srtt_ms": 0.15, "drops": 0.20, "marks": 0.20}

WITHIN = "within spread"
OUTSIDE = "outside"
#: The verdict of a timing row when an accepted trial did not keep up.
NOT_KEPT_UP = "refused: not kept up"
#: Rows whose values a host stall distorts (delays, not counts).
TIMING_METRICS = frozenset({"mean_srtt_ms", "mean_sojourn_ms"})


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


def _metrics(summary: Mapping[str, Any], commands: frozenset[int] = frozenset()) -> dict[tuple[str, int | None], float]:
    """Per TCP flow and per command flow (``commands``: ids; on the simulated side the flow
    is its named counterpart, of whatever kind) goodput and sRTT; the bottleneck's."""
    out: dict[tuple[str, int | None], float] = {}
    for flow in summary.get("flows") or []:
        if flow.get("kind", "tcp") != "tcp" and int(flow.get("id", -1)) not in commands:
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
    # A command flow (the user's programs, emulated) against the simulated flow its scenario
    # entry names (its kind and fields): compared like a TCP flow, by goodput.
    commands = frozenset(int(f["id"]) for s in emu for f in s.get("flows") or [] if f.get("kind") == "command")
    late = any((s.get("emulator") or {}).get("kept_up") is False for s in emu)
    sim_metrics = [_metrics(s, commands) for s in sim]
    emu_metrics = [_metrics(s, commands) for s in emu]
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
        elif late and metric in TIMING_METRICS:
            verdict = NOT_KEPT_UP
        elif metric in ("drops", "marks") and emu_mean == 0 and sim_value == 0:
            verdict = WITHIN
        else:
            verdict = WITHIN if abs(sim_value - emu_mean) <= tolerance else OUTSIDE
        rows.append(Row(metric, flow, sim_value, emu_mean, emu_sd, n, tolerance, verdict))
    return rows


def aligned_config(config: Mapping[str, Any], data_start_ns: Sequence[Any]) -> dict[str, Any]:
    """The resolved engine ``config`` with its flows started where an emulated trial's
    started: a TCP flow with a measured first-data time ``d`` (ns since t0) starts at
    ``max(0, d − rtt)`` (its SYN one base RTT before its first data, as the engine's
    handshake takes); flows without a measurement (UDP: the emulator starts them at their
    ``start`` with no jitter) keep their ``start``. The start jitter is off: the
    measured starts already hold the trial's own."""
    out = json.loads(json.dumps(dict(config)))
    out["start_jitter_ns"] = 0
    for index, flow in enumerate(out.get("flows") or []):
        measured = data_start_ns[index] if index < len(data_start_ns) else None
        if flow.get("kind", "tcp") != "tcp" or not isinstance(measured, (int, float)) or isinstance(measured, bool):
            continue
        if not math.isfinite(float(measured)) or measured < 0:
            continue
        flow["start_ns"] = max(0, int(measured) - int(flow.get("rtt_ns", 0)))
    return out


def _mean_starts(metas: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Per flow, the mean measured data start over the kept trials (None if none)."""
    columns: dict[int, list[float]] = {}
    width = 0
    for meta in metas:
        starts = meta.get("flow_data_start_ns") or []
        width = max(width, len(starts))
        for index, value in enumerate(starts):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                columns.setdefault(index, []).append(float(value))
    return [statistics.fmean(columns[i]) if i in columns else None for i in range(width)]


def _with_host(config: dict[str, Any], hosts: Mapping[int, Mapping[str, Sequence[float]]]) -> dict[str, Any]:
    """``config`` with each measured flow's programs waking as measured (µs → ns)."""
    flows = [dict(f) for f in config.get("flows") or []]
    for flow, measured in hosts.items():
        for knob, quantiles in measured.items():
            flows[flow].pop(f"{HOST_KEYS[knob]}_ns", None)
            flows[flow][f"{knob}_quantiles_ns"] = [round(v * 1000) for v in quantiles]
    return {**config, "flows": flows}


def compare(
    scenario: Any,
    *,
    trials: int = 5,
    align: bool = True,
    overrides: Mapping[str, Any] | None = None,
    prefix: str | None = None,
    keep: Callable[[str, int, Any], None] | None = None,
    log: Callable[[str], None] | None = None,
    backend: str = "emulate",
    accept_late: bool = False,
    host: str = "ideal",
) -> tuple[list[Row], list[dict[str, Any]], list[dict[str, Any]]]:
    """Simulate ``trials`` seeds (the scenario's seed, +1, …) and emulate ``trials`` trials
    with the same seeds; return (rows, simulated summaries, emulated summaries).
    ``keep(backend, index, result)`` sees each result (e.g. to write its run directory).
    Emulated trials run one after another (they use real time). With ``align`` (the
    default) the emulated trials run first and simulated seed ``i`` starts its flows where
    trial ``i``'s data started (:func:`aligned_config`; a refused trial's seed takes the
    kept trials' mean); without it the simulated flows start at the scenario's times.

    ``backend = "kernel"``: the reference trials run on the kernel backend
    (:func:`l4slab.kernel.run.run_kernel`, one guest per trial, seeds as above; its measured
    data starts align the simulation the same way); ``keep`` then sees them as ``"kernel"``.

    ``accept_late``: keep emulated trials that did not keep up; ``host``: ``"ideal"`` or
    ``"measured"`` (module docstring)."""
    from .. import engine
    from ..results import RunResult
    from ..runner import run
    from ..scenario import coerce_scenario
    from .run import HostTooSlow, emulate

    validated = coerce_scenario(scenario, dict(overrides or {}) or None)
    _check_host(host, backend, validated)
    base_seed = int(validated.seed)
    hosts: dict[int, dict[int, dict[str, list[float]]]] = {}
    measured: dict[int, dict[int, dict[str, list[float]]]] = {}
    say = log or (lambda _message: None)
    sim_summaries, emu_summaries = [], []
    refused: list[str] = []
    metas: dict[int, Mapping[str, Any]] = {}
    if backend == "kernel":
        from ..kernel.build import ensure_kernel
        from ..kernel.run import check_supported, run_kernel

        check_supported(validated)  # refuse before anything runs
        kernel = ensure_kernel(progress=False)
        for index in range(trials):
            say(f"kernel trial {index + 1}/{trials}")
            result = run_kernel(validated, seed=base_seed + index, kernel=kernel)
            metas[index] = result.meta
            emu_summaries.append(result.summary)
            if keep:
                keep("kernel", index, result)
    elif backend != "emulate":
        from ..errors import ScenarioError

        raise ScenarioError(f"--backend: {backend!r} is not emulate or kernel")
    else:
        from .run import check_supported as check_emulated

        # Refuse before the simulations run when the emulated half cannot.
        check_emulated(validated)
    for index in range(trials if backend == "emulate" else 0):
        say(f"emulated trial {index + 1}/{trials}")
        try:
            result = emulate(validated, seed=base_seed + index, prefix=prefix, accept_late=accept_late)
        except HostTooSlow as err:
            # The emulator's own error was too large: this trial is no measurement. The
            # others still are; the count of refused trials is reported with the table.
            refused.append(str(err))
            say(f"emulated trial {index + 1}/{trials} refused: {err}")
            continue
        if result.meta.get("accepted_late"):
            say(f"emulated trial {index + 1}/{trials} kept: {result.meta['accepted_late']}")
        metas[index] = result.meta
        measured[index] = measured_hosts(result.command_outputs)
        if result.meta.get("kept_up", False):
            # A trial the emulator did not keep up with measured a stall of the whole VM
            # (the emulator's too), not the programs' host: its seed takes the others' pool.
            hosts[index] = measured[index]
        emu_summaries.append(result.summary)
        if keep:
            keep("emulate", index, result)
    if not emu_summaries:
        raise HostTooSlow(f"compare: every emulated trial was refused; the last: {refused[-1]}")
    mean_starts = _mean_starts(list(metas.values()))
    # Pooled over the kept-up trials; over all of them if none kept up.
    pooled = _pooled_hosts(list(hosts.values()) or list(measured.values())) if host == "measured" else {}
    for index in range(trials):
        seeded = validated.model_copy(update={"seed": base_seed + index})
        if align or host == "measured":
            config = seeded.resolve()
            if align:
                config = aligned_config(config, (metas.get(index) or {}).get("flow_data_start_ns") or mean_starts)
            used = (hosts.get(index) or pooled) if host == "measured" else {}
            if used:
                config = _with_host(config, used)
            raw, wall_s = engine.simulate(config)
            result = RunResult(scenario=seeded, config=config, raw=raw, wall_s=wall_s, engine_version=engine.version())
        else:
            result, used = run(validated, seed=base_seed + index), {}
        summary = result.summary
        if used:
            # What the seed ran on: each measured end's wake-up quantiles, µs.
            summary = {**summary, "measured_host": {str(flow): dict(ends) for flow, ends in used.items()}}
        sim_summaries.append(summary)
        if keep:
            keep("sim", index, result)
    return verdicts(sim_summaries, emu_summaries), sim_summaries, emu_summaries


def _check_host(host: str, backend: str, scenario: Any) -> None:
    """``host = "measured"`` needs emulated ``udp_prague`` command flows (they measure it)."""
    from ..errors import ScenarioError

    if host not in ("ideal", "measured"):
        raise ScenarioError(f"--host: {host!r} is not ideal or measured")
    if host == "ideal":
        return
    if backend != "emulate":
        raise ScenarioError("--host: measured needs the emulate backend (its udp_prague command flows measure the host)")
    if not any(getattr(f, "kind", None) == "udp_prague" and getattr(f, "command", None) for f in scenario.flows):
        raise ScenarioError(
            "--host: measured needs a udp_prague flow with a command (l4slab-udp-prague measures its host); "
            "this scenario has none"
        )


def _pooled_hosts(per_trial: Sequence[Mapping[int, Mapping[str, Sequence[float]]]]) -> dict[int, dict[str, list[float]]]:
    """Per flow and end, the kept trials' measured distributions pooled."""
    lists: dict[tuple[int, str], list[Sequence[float]]] = {}
    for trial in per_trial:
        for flow, ends in trial.items():
            for end, quantiles in ends.items():
                lists.setdefault((flow, end), []).append(quantiles)
    pooled: dict[int, dict[str, list[float]]] = {}
    for (flow, end), values in lists.items():
        pooled.setdefault(flow, {})[end] = pooled_quantiles(values)
    return pooled
