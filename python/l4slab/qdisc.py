"""The bottleneck's child qdisc, written as in ``tc qdisc add ... <qdisc>``.

Two spellings are accepted:

* a ``tc`` string: ``"bfifo limit 250000"``, ``"pfifo limit 167"``, ``"bfifo"``;
* a structured table: ``{kind = "bfifo", limit = "2bdp"}``.

Each kind is described once in :data:`REGISTRY` by a parameter table (type,
default, allowed range), which drives parsing, error messages, resolution into
the engine's config and the ``tc``-style description of the resolved qdisc.

Buffer limits may be given relative to the bandwidth-delay product, as the PAM 2025
study did (aqm.md §0): with ``BDP = rate × RTT / 8`` bytes and ``n`` BDPs,

* byte limits (bfifo): ``int(n · BDP)`` bytes;
* packet limits (pfifo and the AQMs): ``int(int(n · BDP) / 1500) + 1`` packets,

so ``2bdp`` at 100 Mbit/s and 10 ms is ``bfifo limit 250000`` or ``pfifo limit 167``.

Kinds and their ``tc`` parameters (defaults as Linux, aqm.md §2.2, §3.1, §4.1, §5.1,
§6.1; every parameter the engine models is accepted, the others are refused with a
one-line "not simulated" error instead of being ignored):

* ``bfifo`` / ``pfifo``: limit.
* ``fq``: limit, flow_limit, quantum, initial_quantum, refill_delay, orphan_mask,
  buckets, ce_threshold; l4slab extension ``fastpath``/``nofastpath`` (the Linux ≥ 6.7
  internal FIFO, off by default). Not simulated: maxrate, pacing/nopacing,
  low_rate_threshold, horizon, horizon_drop/horizon_cap, timer_slack, priomap, weights.
* ``pie``: limit, target, tupdate, alpha, beta, ecn/noecn, bytemode/nobytemode,
  dq_rate_estimator/no_dq_rate_estimator.
* ``codel``: limit, target, interval, ecn/noecn, ce_threshold.
* ``fq_codel``: limit, flows, target, interval, quantum, ecn/noecn, ce_threshold,
  ce_threshold_selector VALUE/MASK, memory_limit, drop_batch.
* ``dualpi2``: limit, memlimit, target, tupdate, alpha, beta, step_thresh (a time or
  ``Npkt``), min_qlen_step, coupling_factor, drop_on_overload/overflow,
  drop_enqueue/drop_dequeue, l4s_ect/any_ect (and mainline's cla_ect),
  classic_protection, split_gso/no_split_gso; l4slab extension ``variant
  mainline|l4steam`` (which kernel's DualPI2 to reproduce). Not simulated: max_rtt,
  typical_rtt (tc's helper deriving target/tupdate/alpha/beta).

Times are carried by ``tc`` as whole microseconds: ``"1500ns"`` becomes 1 µs, as tc
truncates. ``limit`` of every packet-limited qdisc (and fq's ``flow_limit``) accepts
``Nbdp`` with the packet rule above.
"""

from __future__ import annotations

import difflib
import math
import struct
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Callable, Mapping

from . import units
from .errors import ScenarioError
from .units import BdpMultiple, UnitError

__all__ = [
    "Param",
    "QdiscKind",
    "QdiscRequest",
    "PacketCount",
    "REGISTRY",
    "parse_qdisc",
    "resolve_qdisc",
    "describe_engine_qdisc",
    "bdp_to_bytes",
    "bytes_to_packets",
    "PAM_PACKET_BYTES",
]

#: Linux's default ``tx_queue_len``: the default limit of pfifo (packets) and,
#: times ``psched_mtu`` = 1514 B, of bfifo (bytes).
LINUX_TX_QUEUE_LEN = 1000
LINUX_PSCHED_MTU = 1514
#: Bytes per packet in the PAM study's packet-limit rule ``int(bytes / 1500) + 1``.
PAM_PACKET_BYTES = 1500
U32_MAX = 2**32 - 1
U8_MAX = 255
NS_PER_US = 1_000
NS_PER_MS = 1_000_000
#: tc's time attributes are u32 microseconds.
TC_TIME_MAX_NS = U32_MAX * NS_PER_US
#: CoDel's time range (codel.rs ``MIN_TIME_PARAM_NS`` = one 1024-ns codel unit .. 100 s).
CODEL_TIME_MIN_NS = 1 << 10
CODEL_TIME_MAX_NS = 100_000_000_000
#: DualPI2 keeps tupdate and step_thresh as u32 nanoseconds.
DUALPI2_U32_NS_MAX = (U32_MAX // NS_PER_US) * NS_PER_US
#: tc's bound on dualpi2 alpha/beta: the kernel takes trunc(x·256) ≤ 2^31 − 1.
DUALPI2_GAIN_MAX_NL = 2**31 - 1


def bdp_to_bytes(multiple: BdpMultiple, bdp: Fraction) -> int:
    """``n`` BDPs in whole bytes, truncated as the study's ``int(...)``."""
    return int(multiple.factor * bdp)


def bytes_to_packets(nbytes: int) -> int:
    """The study's packet limit for a byte budget: ``int(bytes / 1500) + 1``."""
    return nbytes // PAM_PACKET_BYTES + 1


@dataclass(frozen=True)
class PacketCount:
    """``"5pkt"``: a threshold in packets where a time is also accepted (dualpi2 ``step_thresh``)."""

    count: int

    def __str__(self) -> str:
        return f"{self.count}pkt"


# --- value parsers (raise UnitError without a field path) ---------------------------------


def _unsigned(value: Any, examples: str = "0, 10, '0x3ff'") -> int:
    """A non-negative integer, decimal or ``0x`` hex as tc's ``get_unsigned(.., 0)``."""
    what = "a non-negative integer"
    if isinstance(value, bool):
        raise UnitError(f"{value!r} is not {what}; expected e.g. {examples}")
    if isinstance(value, int):
        if value < 0:
            raise UnitError(f"{value!r} is negative; expected e.g. {examples}")
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            number = int(text, 16) if text.startswith("0x") else int(text, 10)
        except ValueError:
            number = None
        if number is not None and number >= 0 and not text.startswith(("+", "-")):
            return number
    raise UnitError(f"{value!r} is not {what}; expected e.g. {examples}")


def _tc_time(value: Any) -> int:
    """A time in ns, truncated to whole microseconds as tc carries it."""
    ns = units.time_ns(value)
    return ns - ns % NS_PER_US


def _size(value: Any) -> int:
    return units.size_bytes(value)


def _selector(value: Any) -> tuple[int, int]:
    """``"0x01/0x01"`` (tc's VALUE/MASK, u8 each) or ``[1, 1]``."""
    examples = "'0x01/0x01' (ECT(1) and CE)"
    if isinstance(value, str) and value.count("/") == 1:
        parts: list[Any] = value.split("/")
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        parts = list(value)
    else:
        raise UnitError(f"{value!r} is not VALUE/MASK; expected e.g. {examples}")
    try:
        selector = tuple(_unsigned(part, examples) for part in parts)
    except UnitError:
        raise UnitError(f"{value!r} is not VALUE/MASK; expected e.g. {examples}") from None
    if any(part > U8_MAX for part in selector):
        raise UnitError(f"{value!r} is out of range: VALUE and MASK are bytes (0..0xff); expected e.g. {examples}")
    return selector[0], selector[1]


_PACKET_SUFFIXES = ("packets", "packet", "pkts", "pkt", "p")


def _step_thresh(value: Any) -> int | PacketCount:
    """dualpi2 ``step_thresh``: a time (whole µs) or ``Npkt`` / ``Npackets``."""
    examples = "'1ms', '500us', '5pkt'"
    if isinstance(value, str):
        text = value.strip().lower()
        for suffix in _PACKET_SUFFIXES:
            if text.endswith(suffix) and text[: -len(suffix)].strip().isdigit():
                return PacketCount(int(text[: -len(suffix)]))
    try:
        return _tc_time(value)
    except UnitError:
        raise UnitError(f"{value!r} is not a time or a packet count; expected e.g. {examples}") from None


def _hz(value: Any) -> float:
    """A gain in Hz as typed to tc (``alpha 0.16``), kept as a float."""
    examples = "0.16, '3.2'"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UnitError(f"{value!r} is not a number; expected e.g. {examples}")
    try:
        number = float(Decimal(value.strip()) if isinstance(value, str) else value)
    except (InvalidOperation, ValueError):
        raise UnitError(f"{value!r} is not a number; expected e.g. {examples}") from None
    if not math.isfinite(number) or number < 0:
        raise UnitError(f"{value!r} is not a non-negative number; expected e.g. {examples}")
    return number


def _choice(*allowed: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if isinstance(value, str) and value.strip().lower() in allowed:
            return value.strip().lower()
        raise UnitError(f"{value!r} is not one of {', '.join(allowed)}")

    return parse


def _tc_gain_nl(hz: float) -> int:
    """What tc sends for ``alpha``/``beta``: ``(uint32_t)(strtof(x) * 256)`` (dualpi2.rs)."""
    as_f32 = struct.unpack("f", struct.pack("f", hz))[0] if hz < 3.4e38 else math.inf
    return int(as_f32 * 256) if math.isfinite(as_f32) else DUALPI2_GAIN_MAX_NL + 1


# --- parameter tables ------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One ``tc`` parameter of a qdisc kind.

    ``parse`` turns the user's value into a number (or a :class:`BdpMultiple` for
    buffer-like parameters) and raises :class:`UnitError` with a field-less message.
    ``unit`` says how a value is converted and shown: ``"bytes"`` or ``"packets"``
    (BDP multiples), ``"ns"`` (times). A flag or choice lists its ``keywords``: the
    tc words and the value each sets (``ecn`` → True, ``noecn`` → False); it takes
    no value in a tc string and ``name = value`` or ``keyword = true`` in a table.
    """

    name: str
    parse: Callable[[Any], Any]
    default: Any
    minimum: int | None = None
    maximum: int | None = None
    unit: str = ""
    description: str = ""
    keywords: Mapping[str, Any] = field(default_factory=dict)
    #: Field of the engine config (default: ``name``).
    engine: str = ""
    #: Shown by :func:`describe_engine_qdisc` even at its default.
    always_shown: bool = False
    #: A value shown in "needs a value" errors when the default is unset.
    example: str = ""

    @property
    def is_flag(self) -> bool:
        return bool(self.keywords)

    @property
    def engine_field(self) -> str:
        return self.engine or self.name

    @property
    def tc_words(self) -> list[str]:
        """How the parameter is written in a tc string: its keywords, or its name."""
        return list(self.keywords) if self.keywords else [self.name]

    def keyword_for(self, value: Any) -> str:
        return next(k for k, v in self.keywords.items() if v == value and type(v) is type(value))

    def format(self, value: Any) -> str:
        """The tc spelling of a resolved value (``5000000`` ns → ``5ms``)."""
        if self.is_flag:
            return self.keyword_for(value)
        if isinstance(value, tuple):
            return "/".join(f"0x{part:02x}" for part in value)
        if isinstance(value, float):
            return str(int(value)) if value.is_integer() else repr(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return str(value)
        return units.format_time(value) if self.unit == "ns" else str(value)


def _time(name: str, default: int | None, minimum: int, maximum: int, description: str, **extra: Any) -> Param:
    return Param(
        name=name,
        parse=_tc_time,
        default=default,
        minimum=minimum,
        maximum=maximum,
        unit="ns",
        description=description,
        engine=f"{name}_ns",
        **extra,
    )


def _limit(default: int, maximum: int = U32_MAX, name: str = "limit", description: str = "") -> Param:
    return Param(
        name=name,
        parse=units.packets,
        default=default,
        minimum=1,
        maximum=maximum,
        unit="packets",
        description=description or "queue limit in packets (or Nbdp)",
        engine=f"{name}_packets",
        always_shown=name == "limit",
    )


def _flag(on: str, off: str, default: bool, description: str, engine: str = "", always_shown: bool = False) -> Param:
    return Param(
        name=on,
        parse=lambda value: value,
        default=default,
        description=description,
        keywords={on: True, off: False},
        engine=engine,
        always_shown=always_shown,
    )


@dataclass(frozen=True)
class QdiscKind:
    """A qdisc kind: its parameters and how resolved values map to the engine config."""

    name: str
    description: str
    params: tuple[Param, ...]
    #: The parameter that ``[bottleneck] buffer = ...`` fills (None: buffer not allowed).
    buffer_param: str | None = None
    #: tc parameters the engine does not model, with the reason (refused, never ignored).
    not_simulated: Mapping[str, str] = field(default_factory=dict)
    #: Checks across parameters on resolved values: ``(param, message)`` or None.
    check: Callable[[Mapping[str, Any]], tuple[str, str] | None] | None = None
    #: Resolved values → engine config (default: each param to its engine field, None omitted).
    to_engine: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    #: Engine config → resolved values (the inverse of ``to_engine``, for descriptions).
    from_engine: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def keyword(self, word: str) -> tuple[Param, Any] | None:
        """The flag/choice parameter a tc keyword belongs to, and the value it sets."""
        for param in self.params:
            if word in param.keywords:
                return param, param.keywords[word]
        return None

    @property
    def param_names(self) -> list[str]:
        """Every word the kind takes in a tc string, flags as ``on/off``."""
        return ["/".join(p.tc_words) for p in self.params]

    @property
    def tc_words(self) -> list[str]:
        return [word for p in self.params for word in p.tc_words]

    def engine_config(self, resolved: Mapping[str, Any]) -> dict[str, Any]:
        if self.to_engine is not None:
            return self.to_engine(resolved)
        return _engine_fields(self, resolved)

    def resolved_values(self, engine_config: Mapping[str, Any]) -> dict[str, Any]:
        if self.from_engine is not None:
            return self.from_engine(engine_config)
        return {p.name: engine_config.get(p.engine_field, p.default) for p in self.params}

    def describe(self, engine_config: Mapping[str, Any]) -> str:
        """The ``tc`` string of an engine config: every parameter shown or not at its default."""
        values = self.resolved_values(engine_config)
        parts = [self.name]
        for param in self.params:
            value = values.get(param.name)
            if value is None or (not param.always_shown and value == param.default):
                continue
            if isinstance(value, list):
                value = tuple(value)
            parts.append(param.format(value) if param.is_flag else f"{param.name} {param.format(value)}")
        return " ".join(parts)


def _engine_fields(kind: QdiscKind, resolved: Mapping[str, Any]) -> dict[str, Any]:
    """Each resolved parameter under its engine field; unset optional ones (None) omitted."""
    config: dict[str, Any] = {"kind": kind.name}
    for param in kind.params:
        if resolved.get(param.name) is not None:
            config[param.engine_field] = resolved[param.name]
    return config


REGISTRY: dict[str, QdiscKind] = {}


def register(kind: QdiscKind) -> QdiscKind:
    REGISTRY[kind.name] = kind
    return kind


register(
    QdiscKind(
        name="bfifo",
        description="byte-limited tail-drop FIFO (sch_fifo)",
        params=(
            Param(
                name="limit",
                parse=units.buffer,
                default=LINUX_TX_QUEUE_LEN * LINUX_PSCHED_MTU,
                minimum=1,
                maximum=U32_MAX,
                unit="bytes",
                description="queue limit in L2 bytes (incl. the 14-byte Ethernet header)",
                engine="limit_bytes",
                always_shown=True,
            ),
        ),
        buffer_param="limit",
    )
)

register(
    QdiscKind(
        name="pfifo",
        description="packet-limited tail-drop FIFO (sch_fifo)",
        params=(_limit(LINUX_TX_QUEUE_LEN, description="queue limit in packets"),),
        buffer_param="limit",
    )
)

_FQ_PACING = "pacing of local sockets; forwarded packets have no socket and are never paced"
_FQ_EDT = "departure-time (EDT) timestamps; forwarded packets have none"

register(
    QdiscKind(
        name="fq",
        description="per-flow fair queueing with a CE threshold (sch_fq; orphan_mask 0 = one FIFO)",
        params=(
            _limit(10_000, description="total packets queued (or Nbdp)"),
            _limit(100, name="flow_limit", description="packets per flow (or Nbdp)"),
            Param("quantum", _size, 2 * LINUX_PSCHED_MTU, 1, 1 << 20, "bytes", "DRR quantum", engine="quantum_bytes"),
            Param(
                "initial_quantum",
                _size,
                10 * LINUX_PSCHED_MTU,
                0,
                2**31 - 1,
                "bytes",
                "credit of a new flow",
                engine="initial_quantum_bytes",
            ),
            _time("refill_delay", 40 * NS_PER_MS, 0, TC_TIME_MAX_NS, "idle time after which a flow gets a quantum"),
            Param("orphan_mask", _unsigned, 1023, 0, U32_MAX, description="mask on the flow hash; 0 = one flow"),
            Param("buckets", _unsigned, 1024, 2, 256 * 1024, description="hash buckets (tc rounds down to 2^n)"),
            _time("ce_threshold", None, 0, TC_TIME_MAX_NS, "CE-mark packets whose sojourn exceeds it", example="5ms"),
            _flag("fastpath", "nofastpath", False, "l4slab extension: Linux ≥ 6.7's internal FIFO for idle flows"),
        ),
        buffer_param="limit",
        not_simulated={
            "maxrate": _FQ_PACING,
            "pacing": _FQ_PACING,
            "nopacing": _FQ_PACING,
            "low_rate_threshold": _FQ_PACING,
            "horizon": _FQ_EDT,
            "horizon_drop": _FQ_EDT,
            "horizon_cap": _FQ_EDT,
            "timer_slack": _FQ_EDT,
            "priomap": "priority bands; every packet has priority 0",
            "weights": "priority bands; every packet has priority 0",
        },
    )
)

register(
    QdiscKind(
        name="pie",
        description="Proportional Integral controller Enhanced (sch_pie, RFC 8033)",
        params=(
            _limit(1000),
            _time("target", 15 * NS_PER_MS, 0, TC_TIME_MAX_NS, "reference queueing delay", always_shown=True),
            _time("tupdate", 15 * NS_PER_MS, 1, TC_TIME_MAX_NS, "probability update period"),
            Param("alpha", _unsigned, 2, 0, 32, description="integral gain, 1/16 Hz"),
            Param("beta", _unsigned, 20, 0, 32, description="proportional gain, 1/16 Hz"),
            _flag("ecn", "noecn", False, "mark ECT packets while p ≤ 10 %", always_shown=True),
            _flag("bytemode", "nobytemode", False, "scale p by packet size"),
            _flag("dq_rate_estimator", "no_dq_rate_estimator", False, "delay from the dequeue rate"),
        ),
        buffer_param="limit",
    )
)

register(
    QdiscKind(
        name="codel",
        description="Controlled Delay (sch_codel, RFC 8289)",
        params=(
            _limit(1000, maximum=1_000_000),
            _time("target", 5 * NS_PER_MS, CODEL_TIME_MIN_NS, CODEL_TIME_MAX_NS, "target sojourn", always_shown=True),
            _time("interval", 100 * NS_PER_MS, CODEL_TIME_MIN_NS, CODEL_TIME_MAX_NS, "window", always_shown=True),
            _flag("ecn", "noecn", False, "mark ECT packets instead of dropping", always_shown=True),
            _time(
                "ce_threshold", None, 0, CODEL_TIME_MAX_NS, "CE-mark packets whose sojourn exceeds it", example="5ms"
            ),
        ),
        buffer_param="limit",
    )
)


def _selector_to_engine(resolved: Mapping[str, Any]) -> dict[str, Any]:
    config = _engine_fields(REGISTRY["fq_codel"], resolved)
    if "ce_threshold_selector" in config:
        config["ce_threshold_selector"] = list(config["ce_threshold_selector"])
    return config


register(
    QdiscKind(
        name="fq_codel",
        description="fair queueing with per-flow CoDel (sch_fq_codel, RFC 8290)",
        params=(
            _limit(10_240, maximum=1_000_000),
            Param("flows", _unsigned, 1024, 1, 65_536, description="hash buckets"),
            Param("quantum", _size, LINUX_PSCHED_MTU, 256, 1 << 20, "bytes", "DRR quantum", engine="quantum_bytes"),
            _time("target", 5 * NS_PER_MS, CODEL_TIME_MIN_NS, CODEL_TIME_MAX_NS, "target sojourn", always_shown=True),
            _time("interval", 100 * NS_PER_MS, CODEL_TIME_MIN_NS, CODEL_TIME_MAX_NS, "window", always_shown=True),
            _flag("ecn", "noecn", True, "mark ECT packets instead of dropping", always_shown=True),
            _time(
                "ce_threshold", None, 0, CODEL_TIME_MAX_NS, "CE-mark packets whose sojourn exceeds it", example="5ms"
            ),
            Param(
                "ce_threshold_selector",
                _selector,
                None,
                description="apply ce_threshold only where (ECN field & MASK) == VALUE",
                example="0x01/0x01",
            ),
            Param("memory_limit", _size, 32 << 20, 1, 1 << 31, "bytes", "truesize budget", engine="memory_limit_bytes"),
            Param(
                "drop_batch",
                _unsigned,
                64,
                1,
                65_536,
                description="packets dropped per overflow",
                engine="drop_batch_size",
            ),
        ),
        buffer_param="limit",
        to_engine=_selector_to_engine,
    )
)

_DUALPI2_VARIANTS = ("mainline", "l4steam")


def _dualpi2_to_engine(resolved: Mapping[str, Any]) -> dict[str, Any]:
    config = _engine_fields(REGISTRY["dualpi2"], resolved)
    step = config.get("step_thresh_ns")
    if isinstance(step, PacketCount):
        del config["step_thresh_ns"]
        config["step_thresh_packets"] = step.count
    return config


def _dualpi2_from_engine(config: Mapping[str, Any]) -> dict[str, Any]:
    values = {p.name: config.get(p.engine_field, p.default) for p in REGISTRY["dualpi2"].params}
    if config.get("step_thresh_packets") is not None:
        values["step_thresh"] = PacketCount(config["step_thresh_packets"])
    return values


def _dualpi2_check(values: Mapping[str, Any]) -> tuple[str, str] | None:
    mainline = values["variant"] == "mainline"
    if not mainline:
        if values["memlimit"] is not None:
            return "memlimit", "not supported by variant l4steam (the L4STeam kernel has no memlimit)"
        if values["min_qlen_step"] != 0:
            return "min_qlen_step", "not supported by variant l4steam (it steps when the L queue holds > 1 packet)"
        if values["ecn_mask"] == "cla_ect":
            return "ecn_mask", "cla_ect is not supported by variant l4steam; use l4s_ect or any_ect"
    for name in ("alpha", "beta"):
        hz = values[name]
        if hz is None:
            continue
        nl = _tc_gain_nl(hz)
        if nl > DUALPI2_GAIN_MAX_NL:
            return name, f"{hz:g} Hz is too large (tc sends trunc(x·256), at most 2^31 − 1)"
        if mainline and nl < 1:
            return name, f"{hz:g} Hz is sent as 0/256 Hz, refused by mainline DualPI2 (at least 0.00390625)"
    step = values["step_thresh"]
    if isinstance(step, PacketCount):
        if not 1 <= step.count <= U32_MAX:
            return "step_thresh", f"'{step}' is outside the allowed range 1pkt..{U32_MAX}pkt"
    elif not NS_PER_US <= step <= DUALPI2_U32_NS_MAX:
        return "step_thresh", (
            f"{units.format_time(step)!r} is outside the allowed range 1us..{units.format_time(DUALPI2_U32_NS_MAX)}"
        )
    return None


register(
    QdiscKind(
        name="dualpi2",
        description="DualQ Coupled PI2 AQM for L4S (sch_dualpi2, RFC 9332)",
        params=(
            _limit(10_000, description="packets in both queues (or Nbdp)"),
            Param(
                "memlimit",
                _size,
                None,
                1,
                U32_MAX,
                "bytes",
                "skb truesize budget, mainline only (default limit × 2 × 1514 B)",
                engine="memlimit_bytes",
                example="32mb",
            ),
            _time("target", 15 * NS_PER_MS, NS_PER_US, TC_TIME_MAX_NS, "PI reference delay", always_shown=True),
            _time("tupdate", 16 * NS_PER_MS, NS_PER_US, DUALPI2_U32_NS_MAX, "PI update period"),
            Param("alpha", _hz, None, description="integral gain, Hz (default: the kernel's 41/256)", example="0.16"),
            Param(
                "beta", _hz, None, description="proportional gain, Hz (default: the kernel's 819/256)", example="3.2"
            ),
            Param(
                "step_thresh",
                _step_thresh,
                NS_PER_MS,
                unit="ns",
                description="L-queue step threshold: a time, or Npkt (×1000 under variant l4steam, a kernel quirk)",
                engine="step_thresh_ns",
            ),
            Param("min_qlen_step", _unsigned, 0, 0, U32_MAX, description="mainline: step only above this L qlen"),
            Param("coupling_factor", _unsigned, 2, 1, U8_MAX, description="k: p_L = k · p'"),
            _flag("drop_on_overload", "overflow", True, "drop (not mark) when k · p' > 1"),
            _flag("drop_dequeue", "drop_enqueue", True, "where the PI mark/drop happens"),
            Param(
                "ecn_mask",
                _choice("l4s_ect", "any_ect", "cla_ect"),
                "l4s_ect",
                description="L-queue classifier",
                keywords={"l4s_ect": "l4s_ect", "any_ect": "any_ect", "cla_ect": "cla_ect"},
            ),
            Param("classic_protection", _unsigned, 10, 0, 100, description="C-queue WRR weight, %"),
            _flag("split_gso", "no_split_gso", True, "no effect: the simulator carries MTU frames only"),
            Param(
                "variant",
                _choice(*_DUALPI2_VARIANTS),
                "mainline",
                description="l4slab extension: the kernel to reproduce (mainline 6.18 or the L4STeam testing kernel)",
            ),
        ),
        buffer_param="limit",
        not_simulated={
            "max_rtt": "tc's helper deriving target/tupdate/alpha/beta; give those instead",
            "typical_rtt": "tc's helper deriving target/tupdate/alpha/beta; give those instead",
        },
        check=_dualpi2_check,
        to_engine=_dualpi2_to_engine,
        from_engine=_dualpi2_from_engine,
    )
)


@dataclass(frozen=True)
class QdiscRequest:
    """A parsed qdisc whose BDP-relative values are not resolved yet.

    ``params`` holds only the parameters the user gave (defaults are applied when
    resolving), so a ``[bottleneck] buffer`` can fill what was not given.
    """

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> QdiscKind:
        return REGISTRY[self.kind]

    def uses_bdp(self) -> bool:
        return any(isinstance(v, BdpMultiple) for v in self.params.values())

    def __str__(self) -> str:
        parts = [self.kind]
        for name, value in self.params.items():
            param = self.spec.param(name)
            if param is None:  # pragma: no cover - parse_qdisc only stores known names
                parts.append(f"{name} {value}")
            elif param.is_flag:
                parts.append(param.keyword_for(value))
            elif isinstance(value, BdpMultiple):
                parts.append(f"{name} {value}")
            else:
                parts.append(f"{name} {param.format(value)}")
        return " ".join(parts)


def _suggest(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _kind_or_error(kind: Any, field_path: str) -> QdiscKind:
    known = ", ".join(REGISTRY)
    if not isinstance(kind, str) or kind.strip() not in REGISTRY:
        shown = kind if not isinstance(kind, str) else kind.strip()
        hint = _suggest(shown, list(REGISTRY)) if isinstance(shown, str) else ""
        raise ScenarioError(f"{field_path}: unknown qdisc {shown!r}{hint}; supported: {known}")
    return REGISTRY[kind.strip()]


def _unknown_param(spec: QdiscKind, name: str, field_path: str) -> ScenarioError:
    if name in spec.not_simulated:
        return ScenarioError(
            f"{field_path}: {spec.name} parameter {name!r} is not simulated ({spec.not_simulated[name]})"
        )
    allowed = ", ".join(spec.param_names) or "no parameters"
    return ScenarioError(
        f"{field_path}: {spec.name} has no parameter {name!r}{_suggest(name, spec.tc_words)}; "
        f"{spec.name} takes: {allowed}"
    )


def _parse_value(param: Param, value: Any, field_path: str) -> Any:
    try:
        return param.parse(value)
    except UnitError as err:
        raise ScenarioError(f"{field_path}.{param.name}: {err}") from None


def _set_once(params: dict[str, Any], words: dict[str, str], param: Param, word: str, value: Any, where: str) -> None:
    """Store a value, refusing a parameter given twice (``ecn ... noecn``) with a one-line error."""
    if param.name in params:
        earlier = words[param.name]
        if earlier == word:
            raise ScenarioError(f"{where}: parameter {word!r} given twice")
        raise ScenarioError(f"{where}: {word!r} conflicts with {earlier!r}; give only one of them")
    params[param.name] = value
    words[param.name] = word


def parse_qdisc(value: Any, field_path: str = "bottleneck.qdisc") -> QdiscRequest:
    """Parse ``"bfifo limit 250000"`` or ``{"kind": "bfifo", "limit": "2bdp"}``."""
    if isinstance(value, QdiscRequest):
        return value
    if isinstance(value, str):
        return _parse_tc_string(value, field_path)
    if isinstance(value, Mapping):
        return _parse_table(value, field_path)
    raise ScenarioError(
        f"{field_path}: {value!r} is not a qdisc; expected e.g. 'bfifo limit 250000' "
        'or {kind = "pfifo", limit = "2bdp"}'
    )


def _parse_tc_string(text: str, field_path: str) -> QdiscRequest:
    tokens = text.split()
    if not tokens:
        raise ScenarioError(f"{field_path}: empty qdisc; expected e.g. 'bfifo limit 250000'")
    spec = _kind_or_error(tokens[0], field_path)
    params: dict[str, Any] = {}
    words: dict[str, str] = {}
    where = f"{field_path}: {spec.name}"
    position = 1
    while position < len(tokens):
        name = tokens[position]
        keyword = spec.keyword(name)
        if keyword is not None:
            flag, flag_value = keyword
            _set_once(params, words, flag, name, flag_value, f"{where} in {text.strip()!r}")
            position += 1
            continue
        param = spec.param(name)
        if param is None:
            raise _unknown_param(spec, name, field_path)
        if name in params:
            raise ScenarioError(f"{field_path}: {spec.name} parameter {name!r} given twice in {text!r}")
        if position + 1 >= len(tokens):
            example = param.example or param.format(param.default)
            raise ScenarioError(
                f"{field_path}: {spec.name} parameter {name!r} needs a value, e.g. '{spec.name} {name} {example}'"
            )
        _set_once(params, words, param, name, _parse_value(param, tokens[position + 1], field_path), where)
        position += 2
    return QdiscRequest(spec.name, params)


def _parse_table(table: Mapping[str, Any], field_path: str) -> QdiscRequest:
    if "kind" not in table:
        raise ScenarioError(
            f"{field_path}: a qdisc table needs 'kind' (one of {', '.join(REGISTRY)}), "
            'e.g. {kind = "bfifo", limit = "2bdp"}'
        )
    spec = _kind_or_error(table["kind"], f"{field_path}.kind")
    params: dict[str, Any] = {}
    words: dict[str, str] = {}
    where = f"{field_path}: {spec.name}"
    for name, value in table.items():
        if name == "kind":
            continue
        keyword = spec.keyword(name)
        param = spec.param(name)
        if keyword is not None and (param is None or not isinstance(param.default, bool)):
            # ``noecn = true``, ``any_ect = true``; ``noecn = false`` means ``ecn``.
            flag, flag_value = keyword
            if not isinstance(value, bool):
                raise ScenarioError(f"{field_path}.{name}: {value!r} is not a flag; expected true or false")
            if not value:
                others = [v for k, v in flag.keywords.items() if k != name]
                if len(others) != 1:
                    raise ScenarioError(f'{field_path}.{name}: false is ambiguous; set {flag.name} = "..." instead')
                flag_value = others[0]
            _set_once(params, words, flag, name, flag_value, where)
            continue
        if param is None:
            raise _unknown_param(spec, name, field_path)
        if param.is_flag:
            # ``ecn = true`` / ``ecn_mask = "any_ect"``.
            allowed = list(param.keywords.values())
            if isinstance(value, str) and value.strip() in param.keywords:
                value = param.keywords[value.strip()]
            if not any(value == v and type(value) is type(v) for v in allowed):
                expected = "true or false" if isinstance(param.default, bool) else ", ".join(map(str, allowed))
                raise ScenarioError(f"{field_path}.{name}: {value!r} is not allowed; expected {expected}")
            _set_once(params, words, param, name, value, where)
            continue
        _set_once(params, words, param, name, _parse_value(param, value, field_path), where)
    return QdiscRequest(spec.name, params)


def resolve_qdisc(
    request: QdiscRequest,
    *,
    buffer: int | BdpMultiple | None,
    bdp: Fraction | None,
    field_path: str = "bottleneck.qdisc",
    bdp_unavailable_reason: str = "",
) -> dict[str, Any]:
    """Apply defaults, ``buffer`` and BDP conversion; return the engine's qdisc config.

    ``bdp`` is the bandwidth-delay product in bytes (None when it cannot be known,
    in which case a ``bdp`` unit is an error explained by ``bdp_unavailable_reason``).
    """
    spec = request.spec
    given = dict(request.params)
    if buffer is not None:
        if spec.buffer_param is None:
            raise ScenarioError(f"bottleneck.buffer: {spec.name} has no buffer limit to set")
        if spec.buffer_param in given:
            raise ScenarioError(
                f"bottleneck.buffer: given together with {field_path} {spec.buffer_param!r}; set only one of them"
            )
        given[spec.buffer_param] = _BufferBytes(buffer)

    resolved: dict[str, Any] = {}
    for param in spec.params:
        raw = given.get(param.name, param.default)
        value = _to_base_unit(param, raw, bdp, field_path, bdp_unavailable_reason)
        if _out_of_range(param, value):
            shown = raw.value if isinstance(raw, _BufferBytes) else raw
            shown = param.format(shown) if param.unit == "ns" and isinstance(shown, int) else str(shown)
            source = "bottleneck.buffer" if isinstance(raw, _BufferBytes) else f"{field_path}.{param.name}"
            raise ScenarioError(
                f"{source}: {shown!r} gives {param.name} {_amount(param, value)}, outside the allowed "
                f"range {_amount(param, param.minimum, bare=True)}..{_amount(param, param.maximum, bare=True)}"
            )
        resolved[param.name] = value
    if spec.check is not None:
        problem = spec.check(resolved)
        if problem is not None:
            name, message = problem
            raise ScenarioError(f"{field_path}.{name}: {message}")
    return spec.engine_config(resolved)


def _out_of_range(param: Param, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return (param.minimum is not None and value < param.minimum) or (
        param.maximum is not None and value > param.maximum
    )


def _amount(param: Param, value: Any, bare: bool = False) -> str:
    if param.unit == "ns":
        return units.format_time(value)
    return str(value) if bare or not param.unit else f"{value} {param.unit}"


@dataclass(frozen=True)
class _BufferBytes:
    """A ``[bottleneck] buffer`` value: a byte budget, converted per parameter unit."""

    value: int | BdpMultiple


def _to_base_unit(param: Param, raw: Any, bdp: Fraction | None, field_path: str, bdp_unavailable_reason: str) -> Any:
    from_buffer = isinstance(raw, _BufferBytes)
    value = raw.value if from_buffer else raw
    if isinstance(value, BdpMultiple):
        if bdp is None:
            source = "bottleneck.buffer" if from_buffer else f"{field_path}.{param.name}"
            raise ScenarioError(f"{source}: {str(value)!r} needs a BDP, but {bdp_unavailable_reason}")
        value = bdp_to_bytes(value, bdp)
        return bytes_to_packets(value) if param.unit == "packets" else value
    if from_buffer and param.unit == "packets":
        return bytes_to_packets(value)
    return value


def describe_engine_qdisc(engine_qdisc: Mapping[str, Any]) -> str:
    """The ``tc`` string of a resolved engine qdisc.

    ``{"kind": "bfifo", "limit_bytes": 250000}`` → ``"bfifo limit 250000"``. Each
    kind shows its limit, its main knobs (target, interval, ecn/noecn) and every
    other parameter that differs from Linux's default, so the PAM study's strings
    come back as written (``fq limit 167 flow_limit 167 orphan_mask 0 ce_threshold 5ms``).
    """
    spec = REGISTRY.get(engine_qdisc.get("kind", ""))
    return spec.describe(engine_qdisc) if spec is not None else str(engine_qdisc.get("kind"))
