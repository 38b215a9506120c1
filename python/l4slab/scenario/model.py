"""The scenario model: what a scenario file may say, validated field by field, in base units.

A scenario file looks like this (units as in ``tc``, see :mod:`l4slab.units`)::

    name = "reference"
    duration = "60s"
    seed = 1
    [bottleneck]
    rate = "100Mbit"
    qdisc = "bfifo limit 250000"
    [[flows]]
    cc = "cubic"
    rtt = "10ms"
    count = 2

:class:`Scenario` (pydantic v2) holds the validated values in base units (ns, bit/s,
bytes); :meth:`Scenario.check` adds the checks across fields and
:meth:`Scenario.resolve` gives the engine's config (:mod:`.resolve`). Congestion
control names and the TCP knobs' ranges are the engine's (:mod:`l4slab.schema`).
Field validators raise :data:`SCENARIO_ERROR` errors whose message :mod:`.errors`
turns into one line.
"""

from __future__ import annotations

import difflib
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Mapping, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
    ValidationInfo,
    create_model,
    field_validator,
)
from pydantic_core import PydanticCustomError

from .. import schema, units
from ..errors import ScenarioError
from ..qdisc import QdiscRequest, parse_qdisc
from ..units import BdpMultiple, Percent, UnitError
from . import links
from .resolve import TCP_ENGINE_FIELDS, UDP_IP_UDP_HEADER_BYTES, resolve_scenario, tcp_knob_field, udp_rate_bps
from .sources import syn_flood_fields, web_source_fields

__all__ = [
    "Scenario",
    "Bottleneck",
    "Topology",
    "TcpFlow",
    "UdpFlow",
    "UdpPragueFlow",
    "WebSource",
    "SynFlood",
    "KernelInputs",
    "SCENARIO_ERROR",
    "TCP_ECN_WORDS",
    "KERNEL_CCS_CONTEXT",
]

#: pydantic error type of the model's own checks: ``ctx["message"]`` is the one-line message.
SCENARIO_ERROR = "l4slab_scenario_error"
StrictInt = Annotated[int, Field(strict=True)]
StrictBool = Annotated[bool, Field(strict=True)]


# --- field types: unit strings parsed by PlainValidators --------------------------------


def _unit_validator(parser: Callable[[Any], Any]) -> PlainValidator:
    def validate(value: Any) -> Any:
        try:
            return parser(value)
        except UnitError as err:
            raise PydanticCustomError(SCENARIO_ERROR, "{message}", {"message": str(err)}) from None

    return PlainValidator(validate)


def _qdisc_validator(value: Any) -> QdiscRequest:
    try:
        return parse_qdisc(value, field_path="qdisc")
    except ScenarioError as err:
        # parse_qdisc names the path below the field (qdisc[.param]); the error line puts
        # the owning table (bottleneck or reverse_bottleneck) in front.
        raise PydanticCustomError(
            SCENARIO_ERROR, "{message}", {"message": str(err), "path_from_parent": True}
        ) from None


TimeNs = Annotated[int, _unit_validator(units.time_ns)]
NetemField = Annotated[dict, _unit_validator(links.parse_netem)]
AggregateField = Annotated[dict, _unit_validator(links.parse_aggregate)]
HopsField = Annotated[tuple, _unit_validator(links.parse_hops)]
RateBps = Annotated[int, _unit_validator(units.rate_bps)]
SizeBytes = Annotated[int, _unit_validator(units.size_bytes)]
BufferAmount = Annotated[Union[int, BdpMultiple], _unit_validator(units.buffer)]
RateOrPercent = Annotated[Union[int, Percent], _unit_validator(units.rate_or_percent)]
QdiscField = Annotated[QdiscRequest, PlainValidator(_qdisc_validator)]
#: A flow entry's count; the total is bounded by the engine's ``max_flows`` (:meth:`Scenario.check`,
#: before anything is expanded).
StrictCount = Annotated[int, Field(strict=True, ge=1)]

#: ``net.ipv4.tcp_ecn`` by friendly name (numbers in the engine's range are accepted as they are).
TCP_ECN_WORDS = {"off": 0, "classic": 1, "accecn": 3}
TCP_ECN_EXAMPLES = "2, 'off' (0), 'classic' (1), 'accecn' (3)"


def _tcp_ecn(value: Any) -> int:
    """``net.ipv4.tcp_ecn``: a mode in the engine's range (0–5), or off / classic / accecn."""
    if isinstance(value, str) and value.strip().lower() in TCP_ECN_WORDS:
        return TCP_ECN_WORDS[value.strip().lower()]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    low, high = schema.tcp_flow_param("ecn").int_range
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    raise UnitError(f"{value!r} is not a tcp_ecn mode; expected {low}..{high} or e.g. {TCP_ECN_EXAMPLES}")


TcpEcnMode = Annotated[int, _unit_validator(_tcp_ecn)]
#: TCP knobs a scenario may also write in words (:data:`TCP_ECN_WORDS`): engine key → field type.
TCP_WORD_VALUES = {"ecn": TcpEcnMode, "receiver_ecn": TcpEcnMode}


_ECN_ALIASES = {
    "not-ect": "not-ect",
    "not_ect": "not-ect",
    "notect": "not-ect",
    "ect0": "ect0",
    "ect_0": "ect0",
    "ect(0)": "ect0",
    "ect1": "ect1",
    "ect_1": "ect1",
    "ect(1)": "ect1",
    "ce": "ce",
}


# --- models --------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


#: The fields a command flow's templates may use (docs/emulator.md, "Command flows").
COMMAND_FIELDS = ("sender_addr", "receiver_addr", "port", "duration", "until_end", "out_dir", "flow")


class FlowCommand(_Strict):
    """The user's own sender and receiver for a flow in the emulator (a command flow).

    Each is one command line, split as a shell would (``shlex``, no shell is run), each word
    formatted with ``{sender_addr}``, ``{receiver_addr}``, ``{port}``, ``{duration}``
    (seconds the flow runs: stop − start), ``{until_end}`` (seconds from the command's
    launch until the emulator stops forwarding: a receiver that listens for it misses
    nothing), ``{out_dir}`` (a directory kept in the run directory) and ``{flow}`` (its index). The flow's own ``kind`` and fields describe the
    simulated flow that ``l4slab run`` and ``l4slab compare`` set against it."""

    sender: str = Field(
        description="the sender's command line, run in the flow's sender namespace",
        examples=["l4slab-udp-prague send --dst {receiver_addr} --port {port} --duration {duration}"],
    )
    receiver: str | None = Field(
        None,
        description="the receiver's command line, run in the receiver namespace before the sender starts",
        examples=["l4slab-udp-prague recv --bind {receiver_addr} --port {port} --duration {duration}"],
    )

    @field_validator("sender", "receiver")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        import shlex
        import string

        if value is None:
            return value
        try:
            words = shlex.split(value)
        except ValueError as err:
            raise PydanticCustomError(SCENARIO_ERROR, "{message}", {"message": f"{value!r}: {err}"}) from None
        if not words:
            raise PydanticCustomError(SCENARIO_ERROR, "{message}", {"message": "an empty command line"})
        for word in words:
            try:
                names = [name for _, name, _, _ in string.Formatter().parse(word) if name is not None]
            except ValueError as err:
                raise PydanticCustomError(SCENARIO_ERROR, "{message}", {"message": f"{word!r}: {err}"}) from None
            for name in names:
                if name not in COMMAND_FIELDS:
                    raise PydanticCustomError(
                        SCENARIO_ERROR,
                        "{message}",
                        {"message": f"{{{name}}} is not a template field; allowed: "
                         + ", ".join("{" + f + "}" for f in COMMAND_FIELDS)},
                    )
        return value


class _FlowCommon(_Strict):
    rtt: TimeNs = Field(description="base RTT (propagation only)", examples=["10ms"])
    count: StrictCount = Field(1, description="number of identical flows this entry expands to")
    start: TimeNs = Field(0, description="start time", examples=["0s", "5s"])
    stop: TimeNs | None = Field(None, description="stop sending new data at", examples=["60s"])
    fwd_delay: TimeNs | None = Field(
        None, description="sender→bottleneck propagation (default rtt/2)", examples=["5ms"]
    )
    label: str | None = Field(None, description="name shown in tables and plots")
    command: FlowCommand | None = Field(
        None,
        description="emulator only: the user's own sender and receiver commands replace iperf3 or the emulator's "
        "UDP source; the flow's other fields are its simulated counterpart",
    )
    hops: HopsField | None = Field(
        None,
        description="with a [topology]: the hops the flow's data crosses, first and last (hop 0 is "
        "[bottleneck]); unset: every hop",
        examples=[1, [0, 1], "0-1"],
    )
    direction: Literal["forward", "reverse"] = Field(
        "forward",
        description="forward: data crosses [bottleneck]; reverse: the sender sits on the receivers' side, "
        "its data crosses [reverse_bottleneck] and its ACKs [bottleneck]",
        examples=["reverse"],
    )


def _tcp_knob_type(spec: schema.ParamSpec) -> Any:
    """How a scenario file writes a TCP knob of this engine kind (units in ``tc``'s spelling)."""
    if spec.name in TCP_WORD_VALUES:
        return TCP_WORD_VALUES[spec.name]
    kind = schema.ParamKind
    if spec.kind is kind.CHOICE and set(spec.choices) != set(schema.congestion_control_names()):
        return Literal[spec.choices]  # a congestion control is checked by TcpFlow._known_cc
    if spec.kind is kind.OBJECT:
        # a list of segment numbers (default []) or a table of module parameters (default unset)
        return list[Annotated[int, Field(strict=True, ge=0)]] if spec.default == [] else dict[str, Any]
    return {
        kind.TIME_NS: TimeNs,
        kind.BYTES: SizeBytes,
        kind.PACKETS: StrictInt,
        kind.INT: StrictInt,
        kind.RATE_BPS: RateBps,
        kind.FLOAT: float,
        kind.BOOL: StrictBool,
        kind.CHOICE: str,
    }[spec.kind]


def _tcp_knob_example(spec: schema.ParamSpec) -> list[Any] | None:
    """The engine's default as a scenario writes it (a time with its unit), as the field's example."""
    if spec.default is None or spec.default == []:
        return None
    if spec.name in TCP_WORD_VALUES:
        return [spec.default, *TCP_ECN_WORDS]
    if spec.kind is schema.ParamKind.TIME_NS:
        return [units.format_time(spec.default)]
    return [spec.default]


def _tcp_knob_fields() -> dict[str, Any]:
    """Every TCP knob of the engine's schema (``tcp_flow``) beyond the path, as a field named
    by :func:`~.resolve.tcp_knob_field`: its type from the engine's kind, its description from
    the engine's doc; unset (the engine's default applies) but for ``cc``, which a scenario may
    leave out and the engine may not."""
    fields: dict[str, Any] = {}
    for key, name in {"cc": "cc", **TCP_ENGINE_FIELDS}.items():
        spec = schema.tcp_flow_param(key)
        default = spec.default if key == "cc" else None
        typ = _tcp_knob_type(spec)
        field = Field(default, description=spec.doc, examples=_tcp_knob_example(spec))
        fields[name] = (typ if key == "cc" else typ | None, field)
    return fields


#: A TcpFlow's knobs, generated from the engine's schema (nothing of a knob is declared here).
_TcpKnobs = create_model("_TcpKnobs", __base__=_FlowCommon, __module__=__name__, **_tcp_knob_fields())
#: TcpFlow fields checked against the engine's range of their knob: field → engine key. The
#: knobs with word values are checked by their parser, which also reads the words.
TCP_RANGED_FIELDS = {
    tcp_knob_field(spec): key
    for key, spec in schema.engine_schema().tcp_flow.items()
    if key in TCP_ENGINE_FIELDS and key not in TCP_WORD_VALUES and (spec.min is not None or spec.max is not None)
}


#: TcpFlow fields that name a congestion control (``cc``, ``receiver_cc``): checked by
#: ``TcpFlow._known_cc``, which also knows the scenario's own kernel congestion controls.
TCP_CC_FIELDS = tuple(
    tcp_knob_field(spec)
    for key, spec in schema.engine_schema().tcp_flow.items()
    if spec.kind is schema.ParamKind.CHOICE and set(spec.choices) == set(schema.congestion_control_names())
)


class TcpFlow(_TcpKnobs):
    """A bulk TCP transfer (iperf3-like). Its knobs are the engine's (schema ``tcp_flow``,
    config.rs ``tcp_flow_params``), generated: a scenario names each as the engine does, less a
    unit suffix (:func:`~.resolve.tcp_knob_field`); ``ecn``/``receiver_ecn`` also take words
    (:data:`TCP_ECN_WORDS`)."""

    kind: Literal["tcp"] = "tcp"

    @field_validator(*TCP_CC_FIELDS)
    @classmethod
    def _known_cc(cls, value: str | None, info: ValidationInfo) -> str | None:
        known = schema.congestion_control_names()
        # a congestion control of the scenario's own ([kernel] cc_sources), for --backend kernel
        own = tuple((info.context or {}).get(KERNEL_CCS_CONTEXT, ()))
        if value is not None and value not in known and value not in own:
            close = difflib.get_close_matches(value, [*known, *own], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            mine = f"; yours: {', '.join(own)}" if own else "; or your own: [kernel] cc_sources = ['tcp_NAME.c']"
            raise PydanticCustomError(
                SCENARIO_ERROR,
                "{message}",
                {"message": f"{value!r} is not a known congestion control{hint}; known: {', '.join(known)}{mine}"},
            )
        return value

    @field_validator(*TCP_RANGED_FIELDS)
    @classmethod
    def _in_engine_range(cls, value: Any, info: ValidationInfo) -> Any:
        """The engine's range of the knob, reported as pydantic reports bounds (times with units)."""
        knob = schema.engine_schema().tcp_flow.get(TCP_RANGED_FIELDS[info.field_name])
        if knob is None or isinstance(value, bool) or not isinstance(value, int):
            return value
        low, high = knob.int_range
        shown = units.format_time if knob.kind is schema.ParamKind.TIME_NS else str
        if low is not None and value < low:
            raise PydanticCustomError(
                "greater_than_equal", "Input should be greater than or equal to {ge}", {"ge": shown(low)}
            )
        if high is not None and value > high:
            raise PydanticCustomError(
                "less_than_equal", "Input should be less than or equal to {le}", {"le": shown(high)}
            )
        return value


class UdpFlow(_FlowCommon):
    """An unresponsive constant-bit-rate UDP source (iperf3 -u -b)."""

    kind: Literal["udp"]
    rate: RateOrPercent = Field(
        description="rate counted on L2 frames, or % of the bottleneck", examples=["50%", "50Mbit"]
    )
    packet_size: SizeBytes = Field(1500, description="IP packet size (payload + 28)", examples=["1500B"])
    ecn: str = Field("not-ect", description="ECN codepoint", examples=["not-ect", "ect0", "ect1", "ce"])

    @field_validator("ecn", mode="before")
    @classmethod
    def _ecn_codepoint(cls, value: Any) -> str:
        codepoint = _ECN_ALIASES.get(str(value).strip().lower()) if isinstance(value, str) else None
        if codepoint is None:
            raise PydanticCustomError(
                SCENARIO_ERROR,
                "{message}",
                {"message": f"{value!r} is not an ECN codepoint; expected not-ect, ect0, ect1 or ce"},
            )
        return codepoint


class UdpPragueFlow(_FlowCommon):
    """A scalable UDP sender: L4STeam's udp_prague algorithm (the engine's ``cc/udp_prague.rs``), ECT(1)
    datagrams each answered by a per-packet ACK with the receiver's counters; bulk, or real-time frames
    with ``fps``. Unset knobs take the engine's defaults (the reference program's)."""

    kind: Literal["udp_prague"]
    max_packet_size: SizeBytes | None = Field(
        None, description="largest UDP payload (engine default 1400 B, as udp_prague's)", examples=["1400B"]
    )
    fps: Annotated[int, Field(strict=True, ge=0, le=255)] | None = Field(
        None, description="frames per second of the real-time mode (0 or unset: bulk)", examples=[30]
    )
    frame_budget: TimeNs | None = Field(
        None,
        description="real-time mode: the time each frame is paced over (default the frame interval); "
        "a frame carries the pacing rate's bytes over it",
        examples=["10ms"],
    )
    max_rate: RateBps | None = Field(
        None, description="the sender's rate cap, UDP payload (engine default 100Gbit)", examples=["20Mbit"]
    )
    sender_wake_latency: TimeNs | list[TimeNs] | None = Field(
        None,
        description="the sending program's wake-up latency on its host: an ACK arriving while it sleeps is "
        "read this much later, with every ACK that came meanwhile. One "
        "value: the mean of an exponential; a list: the measured quantiles at evenly spaced probabilities "
        "from 0 to 1 (l4slab-udp-prague's send.json wake_us quantiles). Unset or 0: an ideal host",
        examples=["150us", ["10us", "40us", "6ms"]],
    )
    receiver_wake_latency: TimeNs | list[TimeNs] | None = Field(
        None,
        description="the receiving program's, for the data it answers (recv.json wake_us)",
        examples=["150us"],
    )
    sender_timer_latency: TimeNs | list[TimeNs] | None = Field(
        None,
        description="how late the sending program's pacing timer wakes it, a mean or measured quantiles "
        "(send.json timer_late_us); unset or 0: on time",
        examples=["30us"],
    )
    sender_busy_time: TimeNs | list[TimeNs] | None = Field(
        None,
        description="how long the sending program is busy with each ACK it reads (its recvmsg, the data "
        "the ACK releases, whatever takes its CPU meanwhile): it reads the next only then, and an ACK "
        "arriving meanwhile waits for that, not for a wake-up. A mean or measured quantiles (send.json "
        "busy_us); unset or 0: reads take no time",
        examples=["20us"],
    )
    receiver_busy_time: TimeNs | list[TimeNs] | None = Field(
        None,
        description="the receiving program's, with each data packet it reads and answers (recv.json busy_us)",
        examples=["30us"],
    )
    sender_wake_latency_tail: list[TimeNs] | None = Field(
        None,
        description="with measured quantiles: their top step (the last 1/(n-1) of probability) as quantiles "
        "of its own, evenly spaced across it (the program's tail list): a draw there follows them instead "
        "of spreading evenly up to the maximum, which one rare sample (a program's first reads) can put far "
        "above the rest",
        examples=[["190us", "200us", "4ms"]],
    )
    receiver_wake_latency_tail: list[TimeNs] | None = Field(
        None, description="receiver_wake_latency's tail (recv.json wake_us tail)", examples=[["180us", "4ms"]]
    )
    sender_timer_latency_tail: list[TimeNs] | None = Field(
        None, description="sender_timer_latency's tail (send.json timer_late_us tail)", examples=[["120us", "300us"]]
    )
    sender_busy_time_tail: list[TimeNs] | None = Field(
        None, description="sender_busy_time's tail (send.json busy_us tail)", examples=[["40us", "150us"]]
    )
    receiver_busy_time_tail: list[TimeNs] | None = Field(
        None, description="receiver_busy_time's tail (recv.json busy_us tail)", examples=[["300us", "3ms"]]
    )


def _flow_kind(value: Any) -> str | None:
    if isinstance(value, Mapping):
        return value.get("kind", "tcp")
    return getattr(value, "kind", None)


Flow = Annotated[
    Union[
        Annotated[TcpFlow, Tag("tcp")],
        Annotated[UdpFlow, Tag("udp")],
        Annotated[UdpPragueFlow, Tag("udp_prague")],
    ],
    Discriminator(_flow_kind),
]


WebSource = web_source_fields(TcpFlow)
SynFlood = syn_flood_fields(UdpFlow)
# Built inside a function (their base is TcpFlow/UdpFlow), they live here: name them so, or pickle
# cannot find them and a scenario or RunResult with a web source cannot come back from a worker process.
for _source in (WebSource, SynFlood):
    _source.__module__, _source.__qualname__ = __name__, _source.__name__


def _source_kind(value: Any) -> str | None:
    if isinstance(value, Mapping):
        return value.get("kind")
    return getattr(value, "kind", None)


Source = Annotated[
    Union[Annotated[WebSource, Tag("web")], Annotated[SynFlood, Tag("syn_flood")]],
    Discriminator(_source_kind),
]


class Bottleneck(_Strict):
    """``htb rate R burst B`` with one child qdisc."""

    rate: RateBps = Field(examples=["100Mbit"])
    qdisc: QdiscField = Field(
        QdiscRequest("pfifo"),
        description="child qdisc in tc syntax; default pfifo (Linux's HTB leaf default)",
        examples=["bfifo limit 250000"],
    )
    buffer: BufferAmount | None = Field(None, description="qdisc limit as bytes or BDPs", examples=["2bdp"])
    burst: SizeBytes = Field(1600, description="HTB bucket (tc default 1600 B)", examples=["1600B"])
    access_rate: RateBps = Field(10_000_000_000, description="senders' NIC rate", examples=["10Gbit"])
    timer_latency: TimeNs = Field(
        0,
        description="mean lateness of the router's HTB watchdog (hrtimer + softirq), exponential; "
        "0 = on time (a VM guest: a few to ~15 us; docs/fidelity-pam-hosts.md, timer latency)",
        examples=["10us"],
    )
    bdp_rtt: TimeNs | None = Field(
        None, description="RTT of the 'bdp' unit (default: the flows' base RTT)", examples=["10ms"]
    )
    netem: NetemField | None = Field(
        None,
        description="the wire after the queue, as netem: 'delay D [J] [inorder]', 'loss [random] P', "
        "'loss gemodel p r [1-h [1-k]]' (l4slab.scenario.links)",
        examples=["delay 5ms 1ms loss gemodel 1% 25%"],
    )
    rate_schedule: list[str] | None = Field(
        None,
        description="tc class change ... rate R at given times: 'T rate R', or a ramp 'T1..T2 rate R step S'",
        examples=[["10s rate 20Mbit", "20s rate 100Mbit"]],
    )
    rate_trace: str | None = Field(
        None,
        description="a capacity trace file (relative to the scenario file): one 'TIME RATE' per line",
        examples=["cellular.csv"],
    )
    aggregate: AggregateField | None = Field(
        None,
        description="batched release: a grant every INTERVAL of at most MAX_BYTES (Wi-Fi, DOCSIS)",
        examples=["4ms 64kb"],
    )


class Topology(_Strict):
    """``[topology]``: links beyond ``[bottleneck]`` (hop 0), in series.

    ``kind = "parking_lot"`` with ``rates``: each further hop a copy of ``[bottleneck]`` at
    its rate; ``kind = "chain"`` with ``[[topology.hops]]``: each further hop described as
    ``[bottleneck]`` is. A flow's ``hops`` chooses where it enters and leaves."""

    kind: Literal["parking_lot", "chain"] = Field(examples=["parking_lot"])
    rates: list[RateBps] | None = Field(None, description="parking_lot: the rates of hops 1..", examples=[["50Mbit"]])
    hops: list[Bottleneck] | None = Field(None, description="chain: hops 1.., each as [bottleneck]")


class Capture(_Strict):
    """``[capture]``: write the packets passing one point to ``capture.pcapng`` (as
    ``tcpdump -w``), headers only, with per-packet comments (flow, sojourn, queue)."""

    point: Literal["bottleneck", "sender", "receiver"] = Field(
        description="bottleneck egress (after the qdisc), or a flow's sending or receiving host",
        examples=["bottleneck"],
    )
    flow: Annotated[int, Field(strict=True, ge=0)] | None = Field(
        None,
        description="the flow id (as in flows.parquet); required at a host, all flows at the bottleneck if unset",
        examples=[0],
    )
    start: TimeNs = Field(0, description="start of the capture window", examples=["10s"])
    stop: TimeNs | None = Field(None, description="end of the capture window (default: end of run)", examples=["11s"])
    max_packets: Annotated[int, Field(strict=True, ge=1)] = Field(
        int(schema.limit("capture_max_packets_default")),
        description="packets kept at most (the rest are counted as missed)",
        examples=[100_000],
    )


#: Validation context key: the congestion-control names the scenario's ``[kernel]
#: cc_sources`` register (:func:`l4slab.scenario.load.scenario_from_dict` reads them first).
KERNEL_CCS_CONTEXT = "kernel_ccs"
#: At most this many files in each list of ``[kernel]``.
MAX_KERNEL_FILES = 16


def _kernel_file(reader: Callable[[str], Any]) -> PlainValidator:
    """A ``[kernel]`` file path: checked by ``reader`` (l4slab.kernel.sources), kept absolute."""

    def validate(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise PydanticCustomError(SCENARIO_ERROR, "{message}", {"message": f"{value!r} is not a file path"})
        try:
            return str(reader(value).path)
        except ValueError as err:  # l4slab.kernel.sources.SourceError
            raise PydanticCustomError(SCENARIO_ERROR, "{message}", {"message": str(err)}) from None

    return PlainValidator(validate)


def _read_cc_source(path: str) -> Any:
    from ..kernel.sources import read_cc_source

    return read_cc_source(path, schema.congestion_control_names())


def _read_patch(path: str) -> Any:
    from ..kernel.sources import read_patch

    return read_patch(path)


class KernelInputs(_Strict):
    """``[kernel]``: your own congestion controls and kernel patches, built into the kernel
    backend's guest (``--backend kernel``; docs/kernel.md). Paths are relative to the
    scenario file (absolute once loaded); a flow names a congestion control a file registers
    (``cc = "mycc"``), which only the kernel backend runs."""

    cc_sources: list[Annotated[str, _kernel_file(_read_cc_source)]] = Field(
        default_factory=list,
        max_length=MAX_KERNEL_FILES,
        description='tcp_NAME.c files, each registering a struct tcp_congestion_ops (.name = "...")',
        examples=[["tcp_mycc.c"]],
    )
    patches: list[Annotated[str, _kernel_file(_read_patch)]] = Field(
        default_factory=list,
        max_length=MAX_KERNEL_FILES,
        description="unified diffs (patch -p1) to the kernel's C sources and headers, applied in order",
        examples=[["tcp-output.patch"]],
    )


class Scenario(_Strict):
    """A validated scenario, values in base units (ns, bit/s, bytes)."""

    name: str = "scenario"
    duration: TimeNs = Field(examples=["60s"])
    seed: Annotated[int, Field(strict=True, ge=0, le=2**64 - 1)] = 1
    bin: TimeNs = Field(100_000_000, description="width of time-series bins", examples=["100ms"])
    warmup: TimeNs = Field(0, description="start of the summary window", examples=["0s", "5s"])
    start_jitter: TimeNs = Field(1_000_000, description="random per-flow start offset in [0, x]", examples=["1ms"])
    delay_node_timer_latency: TimeNs = Field(
        0,
        description="mean lateness of the delay node's netem watchdog, exponential: every flow's propagation "
        "crosses one netem tfifo per direction, released at the late firing or the next enqueue; "
        "0 = on time (docs/fidelity-pam-hosts.md, timer latency)",
        examples=["10us"],
    )
    trace_sojourn: Annotated[bool, Field(strict=True)] = False
    bottleneck: Bottleneck
    topology: Topology | None = Field(
        None, description="[topology]: further hops after [bottleneck] (parking_lot, chain); unset: the dumbbell"
    )
    reverse_bottleneck: Bottleneck | None = Field(
        None,
        description="a shaped queue on the reverse path, met by forward flows' ACKs and by the data of "
        "direction = 'reverse' flows (unset: the reverse path never queues)",
    )
    kernel: KernelInputs | None = Field(
        None, description="[kernel]: your own congestion controls and patches for --backend kernel"
    )
    flows: list[Flow] = Field(default_factory=list, description="[[flows]] entries (at least one flow or source)")
    sources: list[Source] = Field(
        default_factory=list, description="[[sources]]: web requests, SYN floods (l4slab.scenario.sources)"
    )
    capture: Capture | None = Field(None, description="a packet capture written as capture.pcapng")

    # --- derived views -------------------------------------------------------------

    def expanded_flows(self) -> list[tuple[int, TcpFlow | UdpFlow | UdpPragueFlow]]:
        """``(group, flow)`` per engine flow, in engine flow-id order (``count`` expanded)."""
        return [(group, flow) for group, flow in enumerate(self.flows) for _ in range(flow.count)]

    def flow_labels(self) -> list[str]:
        """A display label per engine flow: the entry's ``label``, else its cc (or its kind: "udp", "udp_prague")."""
        return [flow.label or (flow.cc if isinstance(flow, TcpFlow) else flow.kind) for _, flow in self.expanded_flows()]

    def bdp_bytes(self, which: str = "bottleneck", link: Bottleneck | None = None) -> tuple[Fraction | None, str]:
        """The BDP in bytes of ``bottleneck`` or ``reverse_bottleneck`` (or of ``link``, named
        ``which``) and, when it is undefined, the reason (for error messages)."""
        link = link if link is not None else getattr(self, which)
        if link.bdp_rtt is not None:
            return units.bdp_bytes(link.rate, link.bdp_rtt), ""
        rtts = sorted({flow.rtt for flow in [*self.flows, *self.sources]})
        if len(rtts) == 1:
            return units.bdp_bytes(link.rate, rtts[0]), ""
        shown = ", ".join(units.format_time(r) for r in rtts)
        return None, f"the flows have different base RTTs ({shown}); set {which}.bdp_rtt"

    def links_by_field(self) -> list[tuple[str, Bottleneck]]:
        """Every shaped link with its field path: ``bottleneck``, each chain hop, the reverse queue."""
        out = [("bottleneck", self.bottleneck)]
        if self.topology is not None and self.topology.hops:
            out += [(f"topology.hops[{i}]", hop) for i, hop in enumerate(self.topology.hops)]
        if self.reverse_bottleneck is not None:
            out.append(("reverse_bottleneck", self.reverse_bottleneck))
        return out

    def data_link(self, flow: TcpFlow | UdpFlow | UdpPragueFlow) -> Bottleneck:
        """The shaped link a flow's data crosses (its UDP ``%`` rates are shares of it):
        the reverse bottleneck for a reverse flow when there is one."""
        if flow.direction == "reverse" and self.reverse_bottleneck is not None:
            return self.reverse_bottleneck
        return self.bottleneck

    # --- checks across fields ------------------------------------------------------------

    def check(self) -> None:
        """Cross-field checks the field types cannot express; raises ScenarioError."""
        if self.duration == 0:
            raise ScenarioError("duration: must be > 0; expected e.g. '60s'")
        if self.bin == 0:
            raise ScenarioError("bin: must be > 0; expected e.g. '100ms'")
        if self.bin > self.duration:
            raise ScenarioError(
                f"bin: {units.format_time(self.bin)!r} is longer than the run ({units.format_time(self.duration)!r})"
            )
        if self.start_jitter > self.duration:
            raise ScenarioError(
                f"start_jitter: {units.format_time(self.start_jitter)!r} is longer than the run "
                f"({units.format_time(self.duration)!r})"
            )
        reverse = self.reverse_bottleneck
        max_latency = int(schema.limit("max_timer_latency_ns"))
        for field, latency in (
            ("bottleneck.timer_latency", self.bottleneck.timer_latency),
            ("delay_node_timer_latency", self.delay_node_timer_latency),
            ("reverse_bottleneck.timer_latency", reverse.timer_latency if reverse else 0),
        ):
            if latency > max_latency:
                raise ScenarioError(
                    f"{field}: {units.format_time(latency)!r} is out of range; allowed "
                    f"0s..{units.format_time(max_latency)} (a mean lateness)"
                )
        total = sum(flow.count for flow in self.flows)
        max_flows = int(schema.limit("max_flows"))
        if total > max_flows:
            raise ScenarioError(f"flows: {total} flows in all (counts included); at most {max_flows}")
        if self.warmup >= self.duration:
            raise ScenarioError(
                f"warmup: {units.format_time(self.warmup)!r} must be shorter than duration "
                f"{units.format_time(self.duration)!r}"
            )
        if self.bottleneck.rate == 0:
            raise ScenarioError("bottleneck.rate: must be > 0; expected e.g. '100Mbit'")
        if self.bottleneck.access_rate == 0:
            raise ScenarioError("bottleneck.access_rate: must be > 0; expected e.g. '10Gbit'")
        if self.bottleneck.bdp_rtt == 0:
            raise ScenarioError("bottleneck.bdp_rtt: must be > 0; expected e.g. '10ms'")
        if self.reverse_bottleneck is not None:
            if self.reverse_bottleneck.rate == 0:
                raise ScenarioError("reverse_bottleneck.rate: must be > 0; expected e.g. '100Mbit'")
            if self.reverse_bottleneck.bdp_rtt == 0:
                raise ScenarioError("reverse_bottleneck.bdp_rtt: must be > 0; expected e.g. '10ms'")
        if self.topology is not None:
            t = self.topology
            if t.kind == "parking_lot" and (not t.rates or t.hops is not None):
                raise ScenarioError("topology.rates: a parking_lot lists the rates of its hops after [bottleneck], "
                                    "e.g. rates = ['50Mbit'] (and no [[topology.hops]])")
            if t.kind == "chain" and (not t.hops or t.rates is not None):
                raise ScenarioError("topology.hops: a chain describes its hops after [bottleneck] as "
                                    "[[topology.hops]] tables (and no rates)")
        for field, link in self.links_by_field():
            if link.rate_schedule is not None and link.rate_trace is not None:
                raise ScenarioError(f"{field}.rate_trace: give a rate_schedule or a rate_trace, not both")
        if self.kernel is not None:
            owner: dict[str, str] = {}
            for path in self.kernel.cc_sources:
                for name in _read_cc_source(path).names:
                    if name in owner:
                        raise ScenarioError(
                            f"kernel.cc_sources: {name!r} is registered by both {owner[name]} and {Path(path).name}"
                        )
                    owner[name] = Path(path).name
        if not self.flows and not self.sources:
            raise ScenarioError("flows: at least one [[flows]] entry is required (or a [[sources]] entry)")
        entries = [(f"flows[{i}]", flow) for i, flow in enumerate(self.flows)]
        entries += [(f"sources[{i}]", source) for i, source in enumerate(self.sources)]
        for path, flow in entries:
            if path.startswith("sources") and flow.count != 1:
                raise ScenarioError(f"{path}.count: a source is one entry; use its rate instead")
            if isinstance(flow, WebSource) and flow.bytes is not None:
                raise ScenarioError(f"{path}.bytes: not allowed on a web source; sizes draws each response")
            if isinstance(flow, (WebSource, SynFlood)) and flow.direction != "forward":
                raise ScenarioError(f"{path}.direction: a source's traffic crosses [bottleneck] (forward only)")
            if flow.rtt == 0:
                raise ScenarioError(f"{path}.rtt: must be > 0; expected e.g. '10ms'")
            if flow.fwd_delay is not None and flow.fwd_delay > flow.rtt:
                raise ScenarioError(
                    f"{path}.fwd_delay: {units.format_time(flow.fwd_delay)!r} exceeds the rtt "
                    f"{units.format_time(flow.rtt)!r}"
                )
            if flow.start >= self.duration:
                raise ScenarioError(
                    f"{path}.start: {units.format_time(flow.start)!r} is not before the end of the run "
                    f"({units.format_time(self.duration)!r})"
                )
            if flow.stop is not None and flow.stop <= flow.start:
                raise ScenarioError(
                    f"{path}.stop: {units.format_time(flow.stop)!r} is not after "
                    f"start {units.format_time(flow.start)!r}"
                )
            if isinstance(flow, UdpFlow) and not isinstance(flow, SynFlood):
                payload = flow.packet_size - UDP_IP_UDP_HEADER_BYTES
                max_payload = int(schema.limit("max_udp_payload_bytes"))
                if not 1 <= payload <= max_payload:
                    raise ScenarioError(
                        f"{path}.packet_size: {flow.packet_size} B leaves a UDP payload of {payload} B; "
                        f"expected {UDP_IP_UDP_HEADER_BYTES + 1}..{UDP_IP_UDP_HEADER_BYTES + max_payload} B, "
                        "e.g. '1500B'"
                    )
                if udp_rate_bps(flow.rate, self.data_link(flow).rate) == 0:
                    raise ScenarioError(
                        f"{path}.rate: {str(flow.rate)!r} is a zero rate; expected e.g. '50%', '50Mbit'"
                    )

    # --- resolution ------------------------------------------------------------------------

    def resolve(self) -> dict[str, Any]:
        """The engine config (config.rs ``ScenarioConfig``) as a JSON-ready dict
        (:func:`l4slab.scenario.resolve.resolve_scenario`)."""
        return resolve_scenario(self)
