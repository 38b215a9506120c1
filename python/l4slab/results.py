"""A finished run's results, shaped for pandas.

:class:`RunResult` wraps the engine's results JSON (``crates/l4slab-core/src/results.rs``):

* ``summary``: the dict written as ``summary.json`` (fixed schema, docs/outputs.md);
* ``flows``: one row per flow; ``flow_series``: long table, one row per flow and bin;
* ``bottleneck_series``: one row per bin, with the mark and drop probability per bin;
* ``classes``: sojourn per sub-queue of the qdisc (DualPI2 "C" and "L", else "all");
* ``qdisc_stats``: the ``tc -s qdisc`` counters and the qdisc's extras;
* ``sojourn``: per-packet trace or None;
* ``raw``: the results dict as the engine returned it; ``wall_s``: engine wall time.

:func:`rebin` aggregates either series into wider bins, e.g. the studies' 1-s mark
and drop probability: ``rebin(result.bottleneck_series, "1s")``; :func:`tc_stats_lines`
prints a summary's bottleneck as ``tc -s qdisc show`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import ScenarioError
from .io import write_json
from .qdisc import describe_engine_qdisc
from .records import FLOW_RECORDS, REQUESTS, RecordSpill, requests_frame
from .rundir import write_run
from .scenario import Scenario
from .units import UnitError, time_ns
from .version import PACKAGE_VERSION

__all__ = [
    "RunResult",
    "flows_frame",
    "links_frame",
    "build_summary",
    "rebin",
    "tc_stats_lines",
    "SUMMARY_SCHEMA",
]

#: Identifies the layout of summary.json; bumped only on incompatible changes.
SUMMARY_SCHEMA = "l4slab.summary/1"


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


def _registry_cc(spec: Any, engine_cc: Any) -> Any:
    """The flow table's ``cc``: the registry name the scenario chose (``prague-v06``, not
    the kernel module name ``prague`` that the engine reports for both Prague vintages),
    so runs of two vintages stay apart. A CC that fell back to its Reno ops (Prague
    without AccECN: ``prague_init`` switches to ``prague_reno``) keeps the engine's
    ``-reno`` suffix on the registry name. UDP flows keep ``udp``."""
    chosen = getattr(spec, "cc", None)
    if not isinstance(chosen, str) or not isinstance(engine_cc, str) or engine_cc == "udp":
        return engine_cc
    if engine_cc.endswith("-reno") and not chosen.endswith("-reno"):
        return f"{chosen}-reno"
    return chosen


def build_summary(
    raw: Mapping[str, Any],
    *,
    scenario: Scenario,
    config: Mapping[str, Any],
    engine_version: str,
    l4slab_version: str,
    model_version: int | None = None,
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
        entry = {**identity, **{k: v for k, v in flow.items() if k != "id"}}
        if 0 <= flow_id < len(expanded):
            entry["cc"] = _registry_cc(expanded[flow_id][1], entry.get("cc"))
        flows.append(entry)
    packets = raw["packets"]
    bottleneck_config = config["bottleneck"]
    bottleneck = {
        "rate_mbps": bottleneck_config["rate_bps"] / 1e6,
        "qdisc_config": describe_engine_qdisc(bottleneck_config["qdisc"]),
        **raw["bottleneck"],
    }
    links = [
        {"name": link["name"], **_link_identity(config, link["name"]), **link["summary"]}
        for link in raw.get("links") or []
    ]
    summary = {
        "schema": SUMMARY_SCHEMA,
        "scenario": scenario.name,
        "seed": raw["seed"],
        "duration_s": raw["duration_s"],
        "warmup_s": raw["warmup_s"],
        "bin_s": raw["bin_s"],
        "flows": flows,
        "bottleneck": bottleneck,
        **({"links": links} if links else {}),
        "packets_sent": packets["sent"],
        "packets_delivered": packets["delivered"],
        "packets_dropped": packets["dropped"],
        "packets_in_flight": packets["in_flight"],
        "packets_data": packets.get("data"),
        "packets_acks": packets.get("acks"),
        "events": raw.get("events"),
        "jain_index": raw["jain_index"],
        "engine_version": engine_version,
        "model_version": model_version,
        "l4slab_version": l4slab_version,
    }
    return _json_safe(summary)


def _link_identity(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Rate and qdisc of a measured link beyond the bottleneck, from the engine config: the
    reverse queue, or hop ``hopN`` of a parking lot (the bottleneck's qdisc) or chain."""
    if name == "reverse_bottleneck":
        link = config["reverse_bottleneck"]
    else:
        index = int(name.removeprefix("hop")) - 1
        topology = config["topology"]
        if topology["kind"] == "parking_lot":
            link = {**config["bottleneck"], "rate_bps": topology["rates_bps"][index]}
        else:
            link = topology["hops"][index]
    return {"rate_mbps": link["rate_bps"] / 1e6, "qdisc_config": describe_engine_qdisc(link["qdisc"])}


def links_frame(summary: Mapping[str, Any]) -> pd.DataFrame:
    """One row per measured link, the bottleneck first, side by side: name, rate_mbps,
    utilisation, drops, marks, sojourn mean/p99 (ms) and, per sub-queue, its mean sojourn."""
    rows = []
    for link in [{"name": "bottleneck", **summary["bottleneck"]}, *(summary.get("links") or [])]:
        sojourn = link.get("sojourn_ms") or {}
        row = {
            "link": link["name"],
            "rate_mbps": link.get("rate_mbps"),
            "qdisc": link.get("qdisc_config"),
            "utilisation": link.get("utilisation"),
            "drops": link.get("drops"),
            "marks": link.get("marks"),
            "sojourn_mean_ms": sojourn.get("mean"),
            "sojourn_p99_ms": sojourn.get("p99"),
        }
        for entry in link.get("sojourn_by_class") or []:
            if len(link.get("sojourn_by_class") or []) > 1:
                row[class_sojourn_column(str(entry["class"]))] = (entry.get("sojourn_ms") or {}).get("mean")
        rows.append(row)
    frame = pd.DataFrame(rows)
    for name in frame.columns:
        if name not in ("link", "qdisc"):
            frame[name] = _column([np.nan if v is None else v for v in frame[name].tolist()])
    return frame


def _column(values: list[Any] | np.ndarray) -> np.ndarray:
    """An int64 column when every value is an integer, else float64 (None → NaN); an
    array (the engine's columns, :func:`l4slab.engine.simulate`) is taken as it is."""
    if isinstance(values, np.ndarray):
        return values
    # Fast path (a series is ~6 000 bins): the set of exact types, built in C, settles
    # the common all-int and int/float series; subclasses (bool), None and anything else
    # take the isinstance rules below, so the result is the same either way.
    kinds = set(map(type, values))
    if values and kinds <= {int}:
        return np.asarray(values, dtype=np.int64)
    if kinds <= {int, float}:
        return np.asarray(values, dtype=np.float64)
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
    # The numeric columns replaced in one construction, not one assignment each (an
    # assignment splits the frame's blocks: most of the function's time).
    columns: dict[Any, Any] = {}
    for name in frame.columns:
        values = frame[name].tolist()
        if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
            columns[name] = _column(values)
        else:
            columns[name] = frame[name]
    return pd.DataFrame(columns, index=frame.index) if columns else frame


#: The congestion control's model state (BBR's bandwidth estimate, min RTT, pacing gain,
#: inflight bounds, mode), sent by the engine only for flows whose CC has one.
CC_STATE_SERIES = ("bw_est_mbps", "min_rtt_ms", "pacing_gain", "inflight_hi", "inflight_lo", "cc_mode")


def flow_series_frame(raw: Mapping[str, Any]) -> pd.DataFrame:
    """Long table: one row per (flow, bin): time_s, flow, goodput_mbps, ..., marks.

    The CC-state columns (:data:`CC_STATE_SERIES`) are present, all six, only when the
    engine sent any of them for at least one flow of the run; rows of the other flows then
    hold NaN (and ``""`` for ``cc_mode``), as do a flow's bins before its CC first reported
    a state and quantities its CC does not have."""
    frames = [
        _series_frame(raw["time_s"], series, flow=flow["id"])
        for flow, series in zip(raw["flows"], raw["flow_series"], strict=True)
    ]
    if not frames:
        return pd.DataFrame({"time_s": [], "flow": []})
    frame = pd.concat(frames, ignore_index=True)
    if any(name in frame for name in CC_STATE_SERIES):
        # All six together, whichever the engine sent (BBRv1 has no inflight bounds).
        for name in CC_STATE_SERIES:
            if name not in frame:
                frame[name] = "" if name == "cc_mode" else np.nan
        frame["cc_mode"] = frame["cc_mode"].fillna("").astype(object)
    return frame


def _add_probabilities(frame: pd.DataFrame) -> pd.DataFrame:
    """``mark_prob`` = marks / arrivals and ``drop_prob`` = drops / arrivals (NaN without arrivals)."""
    if "arrivals" in frame:
        arrivals = frame["arrivals"].astype(np.float64).where(frame["arrivals"] > 0)
        for counter in ("marks", "drops"):
            if counter in frame:
                frame[f"{counter[:-1]}_prob"] = frame[counter] / arrivals
    return frame


def bottleneck_series_frame(raw: Mapping[str, Any], link: str = "bottleneck") -> pd.DataFrame:
    """One row per bin: time_s, utilisation, sojourn_ms, backlog_*, drops, marks, arrivals,
    mark_prob, drop_prob; for a qdisc with sub-queues also the mean sojourn per queue,
    ``sojourn_<class>_ms`` (DualPI2: ``sojourn_c_ms``, ``sojourn_l_ms``; NaN in a bin where
    the queue dequeued nothing). ``link``: another measured link's series (``hop1``,
    ``reverse_bottleneck``: the names of ``raw["links"]``)."""
    if link == "bottleneck":
        series, summary = dict(raw["bottleneck_series"]), raw.get("bottleneck") or {}
    else:
        found = [entry for entry in raw.get("links") or [] if entry["name"] == link]
        if not found:
            names = ", ".join(["bottleneck", *(entry["name"] for entry in raw.get("links") or [])])
            raise ScenarioError(f"link: {link!r} is not a measured link of this run; measured: {names}")
        series, summary = dict(found[0]["series"]), found[0]["summary"]
    per_class = series.pop("sojourn_class_ms", None) or []
    names = [str(c["class"]) for c in summary.get("sojourn_by_class") or []]
    if per_class and len(names) != len(per_class):
        names = [str(k) for k in range(len(per_class))]
    for name, values in zip(names, per_class, strict=False):
        series[class_sojourn_column(name)] = values
    return _add_probabilities(_series_frame(raw["time_s"], series))


def class_sojourn_column(name: str) -> str:
    """The ``bottleneck_series`` column of one sub-queue's per-bin mean sojourn."""
    return f"sojourn_{name.lower()}_ms"


def classes_frame(bottleneck: Mapping[str, Any]) -> pd.DataFrame:
    """One row per sub-queue of the qdisc: class, count, mean_ms, p50_ms, ..., max_ms."""
    rows = []
    for entry in bottleneck.get("sojourn_by_class") or []:
        stats = entry.get("sojourn_ms") or {}
        rows.append({"class": entry["class"], **{k if k == "count" else f"{k}_ms": v for k, v in stats.items()}})
    frame = pd.DataFrame(rows)
    for name in frame.columns:
        if name != "class":
            frame[name] = _column(frame[name].tolist())
    return frame


def qdisc_stats_series(bottleneck: Mapping[str, Any]) -> pd.Series:
    """The ``tc -s qdisc`` counters and the qdisc's extras (``extra_`` prefix only on a name clash)."""
    stats = dict(bottleneck.get("qdisc") or {})
    extra = stats.pop("extra", None) or {}
    for name, value in extra.items():
        stats[name if name not in stats else f"extra_{name}"] = value
    return pd.Series(stats, dtype=object)


# --- re-binning --------------------------------------------------------------------------------

#: How each series column is aggregated into a wider bin: counters are summed, states
#: at the end of a bin take the last value, rates and per-bin means are averaged.
_SUM_COLUMNS = {"drops", "marks", "arrivals", "retransmits", "ce_packets"}
_LAST_COLUMNS = {"backlog_bytes", "backlog_packets", "srtt_ms", "cwnd", "alpha", "pacing_rate_mbps", *CC_STATE_SERIES}


def rebin(frame: pd.DataFrame, width: str | float = "1s", *, bin_s: float | None = None) -> pd.DataFrame:
    """Aggregate a bottleneck or flow series into bins of ``width`` (``"1s"`` or seconds).

    Counters (drops, marks, arrivals, retransmits, ce_packets) are summed, states at
    the end of a bin (backlog, srtt, cwnd, alpha, pacing rate, the CC state) keep the last value, rates and
    per-bin means (utilisation, goodput, sojourn, rtt) are averaged over the bins
    that have a value, and ``mark_prob``/``drop_prob`` are recomputed from the sums:
    with ``width = "1s"`` they are the studies' 1-s mark and drop probability. A flow
    series (with a ``flow`` column) is re-binned per flow. ``width`` must be a whole
    multiple of the series' bin (``bin_s``, inferred from ``time_s`` when not given).
    """
    if isinstance(width, str):
        try:
            width_s = time_ns(width) / 1e9
        except UnitError as err:
            raise ScenarioError(f"rebin width: {err}") from None
    else:
        width_s = float(width)
    if frame.empty:
        return frame.copy()
    if bin_s is None:
        times = np.unique(frame["time_s"].to_numpy())
        bin_s = float(times[1] - times[0]) if len(times) > 1 else width_s
    factor = round(width_s / bin_s)
    if width_s <= 0 or factor < 1 or not math.isclose(factor * bin_s, width_s, rel_tol=1e-9):
        raise ScenarioError(f"rebin width: {width_s:g} s is not a whole multiple of the series' {bin_s:g} s bins")
    keys = ["flow"] if "flow" in frame else []
    work = frame.copy()
    work["time_s"] = (np.round(work["time_s"].to_numpy() / bin_s).astype(np.int64) // factor) * width_s
    aggregations: dict[str, str] = {}
    for name in work.columns:
        if name == "time_s" or name in keys or name in ("mark_prob", "drop_prob"):
            continue
        aggregations[name] = "sum" if name in _SUM_COLUMNS else "last" if name in _LAST_COLUMNS else "mean"
    grouped = work.groupby([*keys, "time_s"], sort=True).agg(aggregations).reset_index()
    ordered = ["time_s", *keys, *aggregations]
    return _add_probabilities(grouped[ordered].sort_values([*keys, "time_s"], ignore_index=True))


# --- tc -s text --------------------------------------------------------------------------------


def _stat(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def tc_stats_lines(bottleneck: Mapping[str, Any], *, per_line: int = 6) -> list[str]:
    """A ``tc -s qdisc show``-like block for a summary's ``bottleneck``: counters, the
    qdisc's extras and, for multi-queue qdiscs (DualPI2), one sojourn line per class."""
    stats = bottleneck.get("qdisc") or {}
    lines = [f"qdisc {bottleneck.get('qdisc_config') or stats.get('kind', '?')} (tc -s, whole run)"]
    if stats:
        lines.append(
            f" Sent {stats.get('sent_bytes', 0)} bytes {stats.get('sent_packets', 0)} pkt "
            f"(dropped {stats.get('drops', 0)}, overlimits {stats.get('overlimits', 0)} "
            f"requeues {stats.get('requeues', 0)})"
        )
        lines.append(
            f" backlog {stats.get('backlog_bytes', 0)}b {stats.get('backlog_packets', 0)}p "
            f"requeues {stats.get('requeues', 0)}"
        )
        maxq = stats.get("maxq_packets")
        # A backend that cannot know the largest queue (the kernel's qdiscs other than
        # dualpi2 and pie keep no maxq) leaves it out rather than print a made-up number.
        lines.append(f" marks {stats.get('marks', 0)}" + ("" if maxq is None else f" maxq {maxq}p"))
        extra = list((stats.get("extra") or {}).items())
        for start in range(0, len(extra), per_line):
            lines.append(" " + " ".join(f"{name} {_stat(value)}" for name, value in extra[start : start + per_line]))
    classes = bottleneck.get("sojourn_by_class") or []
    if len(classes) > 1:
        for entry in classes:
            sojourn = entry.get("sojourn_ms") or {}

            def ms(key: str, sojourn: Mapping[str, Any] = sojourn) -> str:
                value = sojourn.get(key)
                return "–" if value is None else f"{value:.3g}"

            lines.append(
                f" class {entry['class']}: {sojourn.get('count', 0)} pkts, sojourn mean/p50/p99/max "
                f"{ms('mean')}/{ms('p50')}/{ms('p99')}/{ms('max')} ms"
            )
    return lines


def sojourn_frame(raw: Mapping[str, Any], class_names: Sequence[str] | None = None) -> pd.DataFrame | None:
    """Per-packet sojourn trace (time_s, flow, class, sojourn_ms), or None if not traced.
    With ``class_names`` (the summary's ``sojourn_by_class`` order: DualPI2's "C", "L"), the
    engine's sub-queue index in ``class`` becomes that name, as in the summary."""
    trace = raw.get("sojourn_trace")
    if trace is None:
        return None
    frame = pd.DataFrame({name: _column(values) for name, values in trace.items()})
    if class_names and "class" in frame and len(frame):
        names = list(class_names)
        index = frame["class"].astype("int64")
        if index.between(0, len(names) - 1).all():
            frame["class"] = np.asarray(names, dtype=object)[index.to_numpy()]
    return frame


@dataclass
class RunResult:
    """One finished run: the scenario, the engine config, the results and derived tables."""

    scenario: Scenario
    config: dict[str, Any]
    raw: dict[str, Any] = field(repr=False)
    wall_s: float
    engine_version: str
    #: Where a run with traffic sources streamed its per-request and closed-flow
    #: records (Parquet files; None: they are in ``raw``).
    records: RecordSpill | None = field(default=None, repr=False)
    #: The engine's model version (:func:`l4slab.schema.model_version`) for an engine
    #: run; None for a run on another backend (emulator, kernel guest).
    model_version: int | None = None

    def records_file(self, name: str) -> Path | None:
        """The streamed records' Parquet file (``requests.parquet``,
        ``flow_records.parquet``), or None."""
        return None if self.records is None else self.records.parquet(name)

    @cached_property
    def summary(self) -> dict[str, Any]:
        """Exactly the content of summary.json."""
        return build_summary(
            self.raw,
            scenario=self.scenario,
            config=self.config,
            engine_version=self.engine_version,
            l4slab_version=PACKAGE_VERSION,
            model_version=self.model_version,
        )

    @cached_property
    def flows(self) -> pd.DataFrame:
        """One row per flow (the summary's flow entries)."""
        return flows_frame(self.summary["flows"])

    @property
    def files(self) -> dict[str, bytes]:
        """The files the run's measurement writers wrote beside the results, by name (e.g.
        ``capture.pcapng``); :func:`~l4slab.rundir.write_run` writes them into the run directory."""
        return dict(self.raw.get("files") or {})

    @property
    def capture_pcapng(self) -> bytes | None:
        """The pcapng file of the scenario's ``[capture]`` (open it in Wireshark), or None."""
        return self.files.get("capture.pcapng")

    @cached_property
    def flow_records(self) -> pd.DataFrame | None:
        """One row per flow that closed and released its slot during the run (the short
        flows of a traffic source; rates over each flow's own lifetime), or None."""
        path = self.records_file(FLOW_RECORDS)
        if path is not None:
            return pd.read_parquet(path)
        records = self.raw.get("flow_records") or []
        return flows_frame(records) if records else None

    @cached_property
    def requests(self) -> pd.DataFrame | None:
        """One row per web request (``[[sources]] kind = "web"``): source, id, start_s,
        size_bytes, fct_s (NaN if incomplete), ideal_fct_s, efficiency, cc, ecn_mode,
        syn_retransmits, ...; or None when the scenario has no web source."""
        path = self.records_file(REQUESTS)
        if path is not None:
            return pd.read_parquet(path)
        records = self.raw.get("requests") or []
        return requests_frame(records) if records else None

    @cached_property
    def flow_series(self) -> pd.DataFrame:
        return flow_series_frame(self.raw)

    @cached_property
    def bottleneck_series(self) -> pd.DataFrame:
        return bottleneck_series_frame(self.raw)

    @cached_property
    def links(self) -> pd.DataFrame:
        """The measured links side by side, one row each, the bottleneck first (:func:`links_frame`)."""
        return links_frame(self.summary)

    def link_series(self, name: str) -> pd.DataFrame:
        """The per-bin series of measured link ``name`` (``bottleneck``, ``hop1``, ``reverse_bottleneck``)."""
        return bottleneck_series_frame(self.raw, name)

    @cached_property
    def classes(self) -> pd.DataFrame:
        """Sojourn per sub-queue of the qdisc over the window (DualPI2: "C" and "L")."""
        return classes_frame(self.summary["bottleneck"])

    @cached_property
    def qdisc_stats(self) -> pd.Series:
        """The ``tc -s qdisc`` counters and the qdisc's extras (whole run)."""
        return qdisc_stats_series(self.summary["bottleneck"])

    @cached_property
    def sojourn(self) -> pd.DataFrame | None:
        """Per-packet trace; ``class`` named as in the summary (DualPI2: "C", "L"; else "all")."""
        classes = self.summary["bottleneck"].get("sojourn_by_class") or []
        return sojourn_frame(self.raw, [entry["class"] for entry in classes])

    def write(self, out_dir) -> Path:
        """Write the run's files into ``out_dir`` (see :func:`l4slab.rundir.write_run`)."""
        return write_run(self, out_dir)

    def __repr__(self) -> str:
        goodputs = ", ".join(
            "nan" if f.get("goodput_mbps") is None else f"{f['goodput_mbps']:.1f}" for f in self.summary["flows"]
        )
        return (
            f"RunResult(scenario={self.scenario.name!r}, seed={self.scenario.seed}, "
            f"flows={len(self.summary['flows'])}, goodput_mbps=[{goodputs}], wall_s={self.wall_s:.3f})"
        )


@dataclass
class BackendRunResult(RunResult):
    """A run on a backend other than the engine (the emulator, the kernel guest): its
    summary also names the backend (``backend``) and carries the backend's own block
    (under ``block``, built from ``meta`` by :meth:`backend_block`); :meth:`write` puts
    ``meta`` into ``meta_file`` first, then the run files with ``summary.json`` last
    (complete)."""

    meta: dict[str, Any] = field(default_factory=dict)

    backend: ClassVar[str] = ""
    block: ClassVar[str] = ""
    meta_file: ClassVar[str] = ""

    def backend_block(self) -> dict[str, Any]:
        """The summary's backend block: by default the run's ``meta`` as it is; a backend
        that reports a shaped subset (units, derived fields) overrides this."""
        return dict(self.meta)

    @cached_property
    def summary(self) -> dict[str, Any]:
        summary = dict(super().summary)
        summary["backend"] = self.backend
        summary[self.block] = _json_safe(self.backend_block())
        return summary

    def write_extra(self, directory: Path) -> None:
        """The backend's own files beside the run files (none by default)."""

    def write(self, out_dir) -> Path:
        directory = Path(out_dir)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "summary.json").unlink(missing_ok=True)
        write_json(directory / self.meta_file, _json_safe(self.meta))
        self.write_extra(directory)
        return write_run(self, directory)
