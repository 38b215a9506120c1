"""Running a scenario and shaping the engine's results for pandas.

``l4slab.run(scenario)`` validates and resolves the scenario, hands the engine its
JSON config (``l4slab._core.simulate``, which releases the GIL), and wraps the
results JSON (``crates/l4slab-core/src/results.rs``) in a :class:`RunResult`:

* ``summary``: the dict written as ``summary.json`` (fixed schema, docs/outputs.md);
* ``flows``: one row per flow; ``flow_series``: long table, one row per flow and bin;
* ``bottleneck_series``: one row per bin; ``sojourn``: per-packet trace or None;
* ``raw``: the results dict as the engine returned it; ``wall_s``: engine wall time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .errors import EngineError, EngineUnavailableError, ScenarioError
from .qdisc import describe_engine_qdisc
from .scenario import Scenario, coerce_scenario

__all__ = [
    "RunResult",
    "run",
    "simulate_config",
    "flows_frame",
    "engine",
    "engine_version",
    "build_summary",
    "SUMMARY_SCHEMA",
]

#: Identifies the layout of summary.json; bumped only on incompatible changes.
SUMMARY_SCHEMA = "l4slab.summary/1"


def engine():
    """The compiled engine module ``l4slab._core``; a clear error when it is not built."""
    try:
        from . import _core
    except ImportError as err:
        raise EngineUnavailableError(
            f"the compiled engine l4slab._core is not importable ({err}); "
            "build it with `pip install .` from the repository (needs a Rust toolchain)"
        ) from None
    return _core


def engine_version() -> str:
    return engine().version()


def package_version() -> str:
    from . import __version__

    return __version__


def simulate_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], float]:
    """Run a resolved engine config; return ``(results dict, engine wall seconds)``."""
    core = engine()
    try:
        results_json, wall_s = core.simulate(json.dumps(config, allow_nan=False))
    except ValueError as err:
        raise EngineError(f"engine: {' '.join(str(err).split())}") from None
    return json.loads(results_json), wall_s


def run(scenario: Any, *, seed: int | None = None, **overrides: Any) -> "RunResult":
    """Run one scenario.

    ``scenario`` is a path, a TOML string, a dict or a :class:`Scenario`. ``seed``
    replaces the scenario's seed; ``overrides`` set other fields by path, with ``__``
    between levels: ``run("ref.toml", duration="5s", bottleneck__rate="50Mbit",
    flows__0__cc="reno")``.
    """
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ScenarioError(f"seed: {seed!r} is not an integer in 0..2^64-1")
    if isinstance(scenario, Scenario):
        validated = coerce_scenario(scenario, overrides or None)
        if seed is not None:
            validated = validated.model_copy(update={"seed": seed})
    else:
        if seed is not None:
            overrides = {**overrides, "seed": seed}
        validated = coerce_scenario(scenario, overrides or None)
    config = validated.resolve()
    raw, wall_s = simulate_config(config)
    return RunResult(scenario=validated, config=config, raw=raw, wall_s=wall_s, engine_version=engine_version())


# --- results → summary and frames ----------------------------------------------------------


def _json_safe(value: Any) -> Any:
    """NaN/inf → None recursively, so summary.json is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def build_summary(
    raw: Mapping[str, Any],
    *,
    scenario: Scenario,
    config: Mapping[str, Any],
    engine_version: str,
    l4slab_version: str,
) -> dict[str, Any]:
    """The summary.json dict (schema in docs/outputs.md)."""
    expanded = scenario.expanded_flows()
    labels = scenario.flow_labels()
    flows = []
    for flow in raw["flows"]:
        flow_id = flow["id"]
        identity = {"id": flow_id}
        if 0 <= flow_id < len(expanded):
            identity["group"] = expanded[flow_id][0]
            identity["label"] = labels[flow_id]
        flows.append({**identity, **{k: v for k, v in flow.items() if k != "id"}})
    packets = raw["packets"]
    bottleneck_config = config["bottleneck"]
    bottleneck = {
        "rate_mbps": bottleneck_config["rate_bps"] / 1e6,
        "qdisc_config": describe_engine_qdisc(bottleneck_config["qdisc"]),
        **raw["bottleneck"],
    }
    summary = {
        "schema": SUMMARY_SCHEMA,
        "scenario": scenario.name,
        "seed": raw["seed"],
        "duration_s": raw["duration_s"],
        "warmup_s": raw["warmup_s"],
        "bin_s": raw["bin_s"],
        "flows": flows,
        "bottleneck": bottleneck,
        "packets_sent": packets["sent"],
        "packets_delivered": packets["delivered"],
        "packets_dropped": packets["dropped"],
        "packets_in_flight": packets["in_flight"],
        "packets_data": packets.get("data"),
        "packets_acks": packets.get("acks"),
        "events": raw.get("events"),
        "jain_index": raw["jain_index"],
        "engine_version": engine_version,
        "l4slab_version": l4slab_version,
    }
    return _json_safe(summary)


def _column(values: list[Any]) -> np.ndarray:
    """An int64 column when every value is an integer, else float64 (None → NaN)."""
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=np.int64)
    if all(v is None or isinstance(v, (int, float)) for v in values):
        return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    return np.asarray(values, dtype=object)


def _series_frame(time_s: list[float], series: Mapping[str, list[Any]], **leading: Any) -> pd.DataFrame:
    columns: dict[str, Any] = {"time_s": _column(time_s)}
    for name, value in leading.items():
        columns[name] = np.full(len(time_s), value, dtype=np.int64)
    for name, values in series.items():
        columns[name] = _column(values)
    return pd.DataFrame(columns)


def flows_frame(flows: list[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per flow; numeric columns with nulls (e.g. ``fct_s``) become float with NaN."""
    frame = pd.DataFrame(list(flows))
    for name in frame.columns:
        values = frame[name].tolist()
        if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
            frame[name] = _column(values)
    return frame


def flow_series_frame(raw: Mapping[str, Any]) -> pd.DataFrame:
    """Long table: one row per (flow, bin): time_s, flow, goodput_mbps, ..., marks."""
    frames = [
        _series_frame(raw["time_s"], series, flow=flow["id"])
        for flow, series in zip(raw["flows"], raw["flow_series"], strict=True)
    ]
    if not frames:
        return pd.DataFrame({"time_s": [], "flow": []})
    return pd.concat(frames, ignore_index=True)


def bottleneck_series_frame(raw: Mapping[str, Any]) -> pd.DataFrame:
    """One row per bin: time_s, utilisation, sojourn_ms, backlog_*, drops, marks, arrivals."""
    return _series_frame(raw["time_s"], raw["bottleneck_series"])


def sojourn_frame(raw: Mapping[str, Any]) -> pd.DataFrame | None:
    """Per-packet sojourn trace (time_s, flow, class, sojourn_ms), or None if not traced."""
    trace = raw.get("sojourn_trace")
    if trace is None:
        return None
    return pd.DataFrame({name: _column(values) for name, values in trace.items()})


@dataclass
class RunResult:
    """One finished run: the scenario, the engine config, the results and derived tables."""

    scenario: Scenario
    config: dict[str, Any]
    raw: dict[str, Any] = field(repr=False)
    wall_s: float
    engine_version: str

    @cached_property
    def summary(self) -> dict[str, Any]:
        """Exactly the content of summary.json."""
        return build_summary(
            self.raw,
            scenario=self.scenario,
            config=self.config,
            engine_version=self.engine_version,
            l4slab_version=package_version(),
        )

    @cached_property
    def flows(self) -> pd.DataFrame:
        """One row per flow (the summary's flow entries)."""
        return flows_frame(self.summary["flows"])

    @cached_property
    def flow_series(self) -> pd.DataFrame:
        return flow_series_frame(self.raw)

    @cached_property
    def bottleneck_series(self) -> pd.DataFrame:
        return bottleneck_series_frame(self.raw)

    @cached_property
    def sojourn(self) -> pd.DataFrame | None:
        return sojourn_frame(self.raw)

    def write(self, out_dir) -> "Any":
        """Write the run's files into ``out_dir`` (see :func:`l4slab.output.write_run`)."""
        from .output import write_run

        return write_run(self, out_dir)

    def __repr__(self) -> str:
        goodputs = ", ".join(
            "nan" if f.get("goodput_mbps") is None else f"{f['goodput_mbps']:.1f}" for f in self.summary["flows"]
        )
        return (
            f"RunResult(scenario={self.scenario.name!r}, seed={self.scenario.seed}, "
            f"flows={len(self.summary['flows'])}, goodput_mbps=[{goodputs}], wall_s={self.wall_s:.3f})"
        )
