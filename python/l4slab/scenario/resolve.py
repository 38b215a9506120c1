"""A validated scenario → the engine's config (``crates/l4slab-core/src/config.rs``).

Expands ``count``, converts ``bdp`` and ``%`` values, resolves the qdisc with its
defaults, sends optional TCP knobs only when set (so the engine's defaults apply),
fills the receiver defaults the engine lists for the flow's congestion control, and
lets the engine check what only it knows. Works on any object shaped like
:class:`l4slab.scenario.model.Scenario` (it does not import the model).
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

from .. import engine, schema
from ..errors import ScenarioError
from ..qdisc import resolve_qdisc
from ..units import Percent, UnitError
from . import links

__all__ = [
    "resolve_scenario",
    "resolving_for",
    "udp_rate_bps",
    "UDP_IP_UDP_HEADER_BYTES",
    "TCP_ENGINE_FIELDS",
    "PATH_KNOBS",
    "tcp_knob_field",
]

#: The backend a scenario is resolved for: ``sim`` (the engine: the default; also the
#: emulator) or ``kernel`` (the kernel backend, which also runs the scenario's own
#: congestion controls and patches of ``[kernel]``).
_BACKEND: ContextVar[str] = ContextVar("l4slab_resolve_backend", default="sim")


@contextmanager
def resolving_for(backend: str) -> Iterator[None]:
    """Resolve scenarios for ``backend`` inside the block (``kernel``: the config carries
    the ``[kernel]`` table's files by content hash, and a flow may name a congestion control
    they register; ``sim``: such a flow is refused in one line)."""
    token = _BACKEND.set(backend)
    try:
        yield
    finally:
        _BACKEND.reset(token)

#: IPv4 (20 B) + UDP (8 B) headers: a UDP flow's payload is ``packet_size - 28``.
UDP_IP_UDP_HEADER_BYTES = 28
#: The path's knobs: the engine lists them with the TCP flow's (its ``PathConfig`` is flattened
#: into ``TcpFlowConfig``), and every flow and source has them; the model declares them for all
#: kinds at once (``_FlowCommon``), ``reverse`` as ``direction = "reverse"``.
PATH_KNOBS = ("rtt_ns", "fwd_delay_ns", "start_ns", "stop_ns", "reverse")


def tcp_knob_field(spec: schema.ParamSpec) -> str:
    """The scenario's name of an engine TCP knob: the engine's, less a unit suffix the
    scenario writes in the value instead (``rto_min_ns`` → ``rto_min = "200ms"``,
    ``rwnd_bytes`` → ``rwnd = "4mb"``)."""
    suffix = {schema.ParamKind.TIME_NS: "_ns", schema.ParamKind.BYTES: "_bytes"}.get(spec.kind)
    return spec.name.removesuffix(suffix) if suffix and spec.name != suffix.lstrip("_") else spec.name


def _tcp_engine_fields() -> dict[str, str]:
    specs = schema.engine_schema().tcp_flow.values()
    return {spec.name: tcp_knob_field(spec) for spec in specs if spec.name not in (*PATH_KNOBS, "cc")}


#: The TCP knobs of a flow beyond its path and ``cc``: engine config key → TcpFlow field (its
#: value already in engine units), every knob of the engine's schema (``tcp_flow``).
TCP_ENGINE_FIELDS = _tcp_engine_fields()


def udp_rate_bps(rate: int | Percent, bottleneck_rate_bps: int) -> int:
    """A UDP flow's rate in bit/s (``%`` of the bottleneck resolved)."""
    if isinstance(rate, Percent):
        return int(rate.fraction * bottleneck_rate_bps)
    return rate


def _set_if_given(target: dict[str, Any], key: str, value: Any) -> None:
    """Optional expert knobs are sent only when set, so the engine's defaults apply."""
    if value is not None:
        target[key] = value


def _flow_config(flow: Any, bottleneck_rate_bps: int) -> dict[str, Any]:
    path: dict[str, Any] = {"rtt_ns": flow.rtt, "start_ns": flow.start}
    _set_if_given(path, "fwd_delay_ns", flow.fwd_delay)
    _set_if_given(path, "stop_ns", flow.stop)
    if flow.direction == "reverse":
        path["reverse"] = True
    if getattr(flow, "hops", None) is not None:
        path["hops"] = list(flow.hops)
    if flow.kind == "udp":
        return {
            "kind": "udp",
            **path,
            "rate_bps": udp_rate_bps(flow.rate, bottleneck_rate_bps),
            "payload_bytes": flow.packet_size - UDP_IP_UDP_HEADER_BYTES,
            "ecn": flow.ecn,
        }
    if flow.kind == "udp_prague":
        config = {"kind": "udp_prague", **path}
        _set_if_given(config, "max_packet_bytes", flow.max_packet_size)
        _set_if_given(config, "fps", flow.fps)
        _set_if_given(config, "frame_budget_ns", flow.frame_budget)
        _set_if_given(config, "max_rate_bps", flow.max_rate)
        for what, key in (
            ("sender_wake", "sender_wake_latency"),
            ("receiver_wake", "receiver_wake_latency"),
            ("sender_timer", "sender_timer_latency"),
            ("sender_busy", "sender_busy_time"),
            ("receiver_busy", "receiver_busy_time"),
        ):
            late = getattr(flow, key)
            if isinstance(late, list):
                config[f"{what}_quantiles_ns"] = list(late)
            else:
                _set_if_given(config, f"{key}_ns", late or None)
            tail = getattr(flow, f"{key}_tail")
            if tail:
                config[f"{what}_tail_quantiles_ns"] = list(tail)
        return config
    config = {"kind": "tcp", "cc": flow.cc, **path}
    for engine_key, field_name in TCP_ENGINE_FIELDS.items():
        _set_if_given(config, engine_key, getattr(flow, field_name))
    # the receiving host's settings a testbed used for the cc, where the flow leaves them unset
    for key, value in sorted(schema.receiver_defaults(flow.cc).items()):
        config.setdefault(key, value)
    return config


def _source_config(source: Any, bottleneck_rate_bps: int) -> dict[str, Any]:
    """A ``[[sources]]`` entry → the engine's ``SourceConfig`` (config.rs)."""
    if source.kind == "syn_flood":
        path: dict[str, Any] = {"rtt_ns": source.rtt, "start_ns": source.start}
        _set_if_given(path, "fwd_delay_ns", source.fwd_delay)
        _set_if_given(path, "stop_ns", source.stop)
        rate = udp_rate_bps(source.rate, bottleneck_rate_bps)
        return {"kind": "syn_flood", **path, "rate_bps": rate, "syn_bytes": source.syn_size, "ecn": source.ecn}
    config = _flow_config(source, bottleneck_rate_bps)
    alpha, low, high = source.sizes
    config.update(
        kind="web",
        rate_per_s=source.rate.per_second(bottleneck_rate_bps),
        sizes={"alpha": alpha, "min_bytes": low, "max_bytes": high},
    )
    _set_if_given(config, "drop_handshake_of", source.drop_handshake_of)
    return config


def _link_config(scenario: Any, which: str, link: Any = None) -> dict[str, Any]:
    """The engine's ``BottleneckConfig`` of ``scenario.bottleneck`` or ``.reverse_bottleneck``
    (or of ``link``, a chain hop named ``which``)."""
    link = link if link is not None else getattr(scenario, which)
    bdp, bdp_reason = scenario.bdp_bytes(which, link)
    qdisc = resolve_qdisc(
        link.qdisc, buffer=link.buffer, bdp=bdp, field_path=f"{which}.qdisc", bdp_unavailable_reason=bdp_reason
    )
    config = {"rate_bps": link.rate, "burst_bytes": link.burst, "access_rate_bps": link.access_rate, "qdisc": qdisc}
    if link.timer_latency:  # absent when off: configs (and run keys) stay as they were
        config["timer_latency_ns"] = link.timer_latency
    _link_model(config, which, link)
    return config


def _link_model(config: dict[str, Any], which: str, link: Any) -> None:
    """The wire model and rate schedule of ``link`` (:mod:`.links`), only when given, so
    configs (and run keys) of links without them stay as they were."""
    config.update(getattr(link, "netem", None) or {})
    aggregate = getattr(link, "aggregate", None)
    if aggregate:
        config["aggregate"] = aggregate
    try:
        if getattr(link, "rate_schedule", None) is not None:
            field = "rate_schedule"
            config["rate_schedule"] = links.parse_rate_schedule(link.rate_schedule, link.rate)
        if getattr(link, "rate_trace", None) is not None:
            field = "rate_trace"
            config["rate_schedule"] = links.read_rate_trace(link.rate_trace)
    except UnitError as err:
        raise ScenarioError(f"{which}.{field}: {err}") from None


def _kernel_inputs(scenario: Any) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The ``[kernel]`` table as the config carries it (each file by name and content hash:
    a run's identity changes with the file) and {congestion control it registers: file}."""
    table = getattr(scenario, "kernel", None)
    if table is None or not (table.cc_sources or table.patches):
        return None, {}
    from ..kernel.sources import read_cc_source, read_patch

    try:
        sources = [read_cc_source(p, schema.congestion_control_names()) for p in table.cc_sources]
        patches = [read_patch(p) for p in table.patches]
    except ValueError as err:  # a file changed or vanished since the scenario was loaded
        raise ScenarioError(f"kernel: {err}") from None
    block = {
        "cc_sources": [{"file": s.path.name, "sha256": s.sha256, "ccs": list(s.names)} for s in sources],
        "patches": [{"file": p.path.name, "sha256": p.sha256} for p in patches],
    }
    return block, {name: s.path.name for s in sources for name in s.names}


def resolve_scenario(scenario: Any) -> dict[str, Any]:
    """The engine config (config.rs ``ScenarioConfig``) of a validated scenario, as a
    JSON-ready dict; runs the scenario's cross-field checks and the engine's own.

    A flow naming a congestion control of the scenario's ``[kernel] cc_sources`` is refused
    for the engine (one line); resolved for the kernel backend (:func:`resolving_for`), the
    config gets a ``kernel`` table (each file by name and content hash) and the engine checks
    the rest of it."""
    scenario.check()
    kernel, own = _kernel_inputs(scenario)
    if own:
        for group, flow in enumerate(getattr(scenario, "flows", [])):
            for field in ("cc", "receiver_cc"):
                name = getattr(flow, field, None)
                if name in own and _BACKEND.get() != "kernel":
                    raise ScenarioError(
                        f"flows[{group}].{field}: {name!r} is a kernel-only congestion control from "
                        "kernel.cc_sources; run it with --backend kernel"
                    )
                if field == "cc" and name in own and getattr(flow, "cc_params", None):
                    raise ScenarioError(
                        f"flows[{group}].cc_params: {name!r} is your own congestion control "
                        f"({own[name]}); give its parameters in its source, not here"
                    )
    config = {
        "seed": scenario.seed,
        "duration_ns": scenario.duration,
        "bin_ns": scenario.bin,
        "warmup_ns": scenario.warmup,
        "start_jitter_ns": scenario.start_jitter,
        "trace_sojourn": scenario.trace_sojourn,
        "bottleneck": _link_config(scenario, "bottleneck"),
        "flows": [_flow_config(flow, scenario.data_link(flow).rate) for _, flow in scenario.expanded_flows()],
    }
    sources = [_source_config(source, scenario.bottleneck.rate) for source in getattr(scenario, "sources", [])]
    if sources:
        config["sources"] = sources
    if scenario.delay_node_timer_latency:
        config["delay_node_timer_latency_ns"] = scenario.delay_node_timer_latency
    if scenario.reverse_bottleneck is not None:
        config["reverse_bottleneck"] = _link_config(scenario, "reverse_bottleneck")
    topology = getattr(scenario, "topology", None)
    if topology is not None and topology.kind == "parking_lot":
        config["topology"] = {"kind": "parking_lot", "rates_bps": list(topology.rates)}
    elif topology is not None:
        hops = [_link_config(scenario, f"topology.hops[{i}]", hop) for i, hop in enumerate(topology.hops)]
        config["topology"] = {"kind": "chain", "hops": hops}
    if scenario.capture is not None:
        c = scenario.capture
        config["capture"] = {"point": c.point, "flow": c.flow, "start_ns": c.start, "stop_ns": c.stop}
        config["capture"]["max_packets"] = c.max_packets
    if kernel is None or _BACKEND.get() != "kernel":
        engine.check(config)
        return config
    # the engine checks everything but the congestion controls it does not have
    checked = copy.deepcopy(config)
    for flow in checked["flows"]:
        if flow.get("cc") in own:
            flow["cc"] = "reno"
            flow.pop("cc_params", None)
        if flow.get("receiver_cc") in own:
            flow["receiver_cc"] = "reno"
    engine.check(checked)
    config["kernel"] = kernel
    return config
