"""The bottleneck's child qdisc, written as in ``tc qdisc add ... <qdisc>``.

Two spellings are accepted:

* a ``tc`` string: ``"bfifo limit 250000"``, ``"pfifo limit 167"``, ``"bfifo"``;
* a structured table: ``{kind = "bfifo", limit = "2bdp"}``.

The engine describes each kind it implements (:mod:`l4slab.schema`: engine fields,
``ParamKind``, defaults, ranges, docs); this module keeps only how ``tc`` spells it:
keyword → engine field, the unit parser of each ``ParamKind``, flag pairs
(``ecn``/``noecn``), bare choices (``l4s_ect``), parameters tc has but the engine does
not model, and checks across parameters. :data:`REGISTRY` joins the two: every kind
the engine lists, spelled by :data:`SPELLINGS` or, for a kind without a table here,
by its engine fields without unit suffix (``target_ns`` → ``target``).

Buffer limits may be given relative to the bandwidth-delay product, as the PAM 2025
study did (aqm.md §0): with ``BDP = rate × RTT / 8`` bytes and ``n`` BDPs,

* byte limits (bfifo): ``int(n · BDP)`` bytes;
* packet limits (pfifo and the AQMs): ``int(int(n · BDP) / 1500) + 1`` packets,

so ``2bdp`` at 100 Mbit/s and 10 ms is ``bfifo limit 250000`` or ``pfifo limit 167``.

Kinds and their ``tc`` parameters (defaults as Linux, aqm.md §2.2, §3.1, §4.1, §5.1,
§6.1, as the engine's schema gives them; every parameter the engine models is accepted, the others are refused with a
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
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import cached_property
from typing import Any, Callable, Iterator, Mapping

from . import schema, units
from .errors import ScenarioError
from .schema import ParamKind, ParamSpec, QdiscSpec
from .units import BdpMultiple, UnitError

__all__ = [
    "Param",
    "QdiscKind",
    "QdiscRequest",
    "PacketCount",
    "REGISTRY",
    "SPELLINGS",
    "parse_qdisc",
    "resolve_qdisc",
    "describe_engine_qdisc",
    "bdp_to_bytes",
    "bytes_to_packets",
    "PAM_PACKET_BYTES",
]

#: Bytes per packet in the PAM study's packet-limit rule ``int(bytes / 1500) + 1``.
PAM_PACKET_BYTES = 1500
#: tc's ce_threshold_selector VALUE and MASK are bytes.
U8_MAX = 255
#: tc carries times as whole microseconds.
NS_PER_US = 1_000
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


# --- tc spelling of each kind ----------------------------------------------------------------

_UNIT_OF_KIND = {ParamKind.TIME_NS: "ns", ParamKind.BYTES: "bytes", ParamKind.PACKETS: "packets"}


def _parser_of_kind(spec: ParamSpec) -> Callable[[Any], Any]:
    """How a value of the engine's ``ParamKind`` is written in tc (times in whole µs, sizes
    with units, packet counts or ``Nbdp``, unsigned integers in decimal or hex)."""
    if spec.kind is ParamKind.TIME_NS:
        return _tc_time
    if spec.kind is ParamKind.BYTES:
        return _size
    if spec.kind is ParamKind.PACKETS:
        return units.packets
    if spec.kind is ParamKind.RATE_BPS:
        return units.rate_bps
    if spec.kind is ParamKind.FLOAT:
        return _hz
    if spec.kind is ParamKind.CHOICE:
        return _choice(*spec.choices)
    return _unsigned


@dataclass(frozen=True)
class Param:
    """One ``tc`` parameter of a qdisc kind: its tc spelling and the engine field it sets.

    Default, range, unit and doc are the engine's (schema ``ParamSpec`` of
    ``engine_field``). ``parse`` (default: by the engine's ``ParamKind``) turns the
    user's value into a number (or a :class:`BdpMultiple` for buffer-like parameters)
    and raises :class:`UnitError` with a field-less message. A flag lists its tc
    ``words`` and the value each sets (``ecn`` → True, ``noecn`` → False); a choice
    with ``bare_choices`` takes each choice as a word (``l4s_ect``). A flag or bare
    choice takes no value in a tc string and ``name = value`` or ``word = true`` in a table.
    """

    name: str
    parse: Callable[[Any], Any] | None = None
    #: Field of the engine config (default: ``name``).
    engine: str = ""
    words: Mapping[str, Any] = field(default_factory=dict)
    bare_choices: bool = False
    #: Shown by :func:`describe_engine_qdisc` even at its default.
    always_shown: bool = False
    #: A value shown in "needs a value" errors when the default is unset.
    example: str = ""
    #: The qdisc kind (filled in by :class:`QdiscKind`).
    qdisc: str = ""

    @property
    def engine_field(self) -> str:
        return self.engine or self.name

    @property
    def spec(self) -> ParamSpec:
        return schema.qdisc_spec(self.qdisc).param(self.engine_field)

    @property
    def default(self) -> Any:
        return self.spec.default

    @property
    def minimum(self) -> int | None:
        return self.spec.int_range[0]

    @property
    def maximum(self) -> int | None:
        return self.spec.int_range[1]

    @property
    def unit(self) -> str:
        return _UNIT_OF_KIND.get(self.spec.kind, "")

    @property
    def description(self) -> str:
        return self.spec.doc

    @property
    def keywords(self) -> Mapping[str, Any]:
        if self.bare_choices:
            return {choice: choice for choice in self.spec.choices}
        return self.words

    def parse_value(self, value: Any) -> Any:
        return (self.parse or _parser_of_kind(self.spec))(value)

    @property
    def is_flag(self) -> bool:
        return bool(self.keywords)

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


def _time(name: str, **extra: Any) -> Param:
    return Param(name, engine=f"{name}_ns", **extra)


def _limit(name: str = "limit") -> Param:
    return Param(name, engine=f"{name}_packets", always_shown=name == "limit")


def _flag(on: str, off: str, always_shown: bool = False) -> Param:
    return Param(on, words={on: True, off: False}, always_shown=always_shown)


@dataclass(frozen=True)
class QdiscKind:
    """A qdisc kind's tc spelling: its parameters and how resolved values map to the engine config."""

    name: str
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple(replace(p, qdisc=self.name) for p in self.params))

    @property
    def description(self) -> str:
        """The engine's one-line doc of the kind."""
        return schema.qdisc_spec(self.name).doc

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


_UNIT_SUFFIXES = ("_ns", "_bytes", "_packets", "_bps")


def _generic_kind(spec: QdiscSpec) -> QdiscKind:
    """The tc spelling of a kind l4slab has no table for: each engine field without its
    unit suffix (``target_ns`` → ``target``), flags as ``name``/``noname``."""
    params = []
    for param in spec.params.values():
        name = next((param.name.removesuffix(s) for s in _UNIT_SUFFIXES if param.name.endswith(s)), param.name)
        words = {name: True, f"no{name}": False} if param.kind is ParamKind.BOOL else {}
        params.append(Param(name, engine=param.name, words=words))
    limit = next((p.name for p in params if p.name == "limit"), None)
    return QdiscKind(spec.kind, tuple(params), buffer_param=limit)


#: tc spelling of the kinds l4slab knows by name, in Linux's words (aqm.md §2.2–§6.1).
SPELLINGS: dict[str, QdiscKind] = {}


def _spell(kind: QdiscKind) -> QdiscKind:
    SPELLINGS[kind.name] = kind
    return kind


_spell(
    QdiscKind("bfifo", (Param("limit", units.buffer, engine="limit_bytes", always_shown=True),), buffer_param="limit")
)
_spell(QdiscKind("pfifo", (_limit(),), buffer_param="limit"))

_FQ_PACING = "pacing of local sockets; forwarded packets have no socket and are never paced"
_FQ_EDT = "departure-time (EDT) timestamps; forwarded packets have none"

_spell(
    QdiscKind(
        "fq",
        (
            _limit(),
            _limit("flow_limit"),
            Param("quantum", engine="quantum_bytes"),
            Param("initial_quantum", engine="initial_quantum_bytes"),
            _time("refill_delay"),
            Param("orphan_mask"),
            Param("buckets"),
            _time("ce_threshold", example="5ms"),
            _flag("fastpath", "nofastpath"),
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

_spell(
    QdiscKind(
        "pie",
        (
            _limit(),
            _time("target", always_shown=True),
            _time("tupdate"),
            Param("alpha"),
            Param("beta"),
            _flag("ecn", "noecn", always_shown=True),
            _flag("bytemode", "nobytemode"),
            _flag("dq_rate_estimator", "no_dq_rate_estimator"),
        ),
        buffer_param="limit",
    )
)

_spell(
    QdiscKind(
        "codel",
        (
            _limit(),
            _time("target", always_shown=True),
            _time("interval", always_shown=True),
            _flag("ecn", "noecn", always_shown=True),
            _time("ce_threshold", example="5ms"),
        ),
        buffer_param="limit",
    )
)


def _selector_to_engine(resolved: Mapping[str, Any]) -> dict[str, Any]:
    config = _engine_fields(SPELLINGS["fq_codel"], resolved)
    if "ce_threshold_selector" in config:
        config["ce_threshold_selector"] = list(config["ce_threshold_selector"])
    return config


_spell(
    QdiscKind(
        "fq_codel",
        (
            _limit(),
            Param("flows"),
            Param("quantum", engine="quantum_bytes"),
            _time("target", always_shown=True),
            _time("interval", always_shown=True),
            _flag("ecn", "noecn", always_shown=True),
            _time("ce_threshold", example="5ms"),
            Param("ce_threshold_selector", _selector, example="0x01/0x01"),
            Param("memory_limit", engine="memory_limit_bytes"),
            Param("drop_batch", engine="drop_batch_size"),
        ),
        buffer_param="limit",
        to_engine=_selector_to_engine,
    )
)


def _dualpi2_to_engine(resolved: Mapping[str, Any]) -> dict[str, Any]:
    config = _engine_fields(SPELLINGS["dualpi2"], resolved)
    step = config.get("step_thresh_ns")
    if isinstance(step, PacketCount):
        del config["step_thresh_ns"]
        config["step_thresh_packets"] = step.count
    return config


def _dualpi2_from_engine(config: Mapping[str, Any]) -> dict[str, Any]:
    values = {p.name: config.get(p.engine_field, p.default) for p in SPELLINGS["dualpi2"].params}
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
    as_time = SPELLINGS["dualpi2"].param("step_thresh")
    if isinstance(step, PacketCount):
        low, high = schema.qdisc_spec("dualpi2").param("step_thresh_packets").int_range
        if not low <= step.count <= high:
            return "step_thresh", f"'{step}' is outside the allowed range {low}pkt..{high}pkt"
    elif not as_time.minimum <= step <= as_time.maximum:
        return "step_thresh", (
            f"{units.format_time(step)!r} is outside the allowed range "
            f"{units.format_time(as_time.minimum)}..{units.format_time(as_time.maximum)}"
        )
    return None


_spell(
    QdiscKind(
        "dualpi2",
        (
            _limit(),
            Param("memlimit", engine="memlimit_bytes", example="32mb"),
            _time("target", always_shown=True),
            _time("tupdate"),
            Param("alpha", example="0.16"),
            Param("beta", example="3.2"),
            Param("step_thresh", _step_thresh, engine="step_thresh_ns"),
            Param("min_qlen_step"),
            Param("coupling_factor"),
            _flag("drop_on_overload", "overflow"),
            _flag("drop_dequeue", "drop_enqueue"),
            Param("ecn_mask", bare_choices=True),
            Param("classic_protection"),
            _flag("split_gso", "no_split_gso"),
            Param("variant"),
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


class _Registry(Mapping[str, QdiscKind]):
    """The engine's qdisc kinds (schema order), each with its tc spelling; built on first use."""

    @cached_property
    def _kinds(self) -> dict[str, QdiscKind]:
        qdiscs = schema.engine_schema().qdiscs
        return {kind: SPELLINGS.get(kind) or _generic_kind(spec) for kind, spec in qdiscs.items()}

    def __getitem__(self, kind: str) -> QdiscKind:
        return self._kinds[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)


#: Every qdisc kind the engine implements, by tc name.
REGISTRY: Mapping[str, QdiscKind] = _Registry()


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
        return param.parse_value(value)
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
