"""The ``tc`` spelling of each qdisc kind, joined with the engine's description of it.

The engine (:mod:`l4slab.schema`) gives every parameter's engine field, ``ParamKind``,
default, range and doc; a :class:`Param` adds only how ``tc`` writes it: its keyword,
the engine field it sets, its flag words (``ecn``/``noecn``) or bare choices
(``l4s_ect``), and a value parser when the ``ParamKind``'s is not the right one.
A :class:`QdiscKind` adds the ``[bottleneck] buffer`` target, the tc parameters the
engine does not model, checks across parameters and the mapping to and from the
engine config. :data:`REGISTRY` has every kind the engine lists: spelled by
:data:`SPELLINGS`, or by its engine fields for a kind without a table here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Iterator, Mapping

from .. import schema, units
from ..schema import ParamKind, ParamSpec, QdiscSpec
from .values import (
    PacketCount,
    choice,
    hz,
    selector,
    size,
    step_thresh,
    tc_time,
    unsigned,
)

__all__ = ["Param", "QdiscKind", "SPELLINGS", "REGISTRY", "describe_engine_qdisc"]


_UNIT_OF_KIND = {ParamKind.TIME_NS: "ns", ParamKind.BYTES: "bytes", ParamKind.PACKETS: "packets"}


#: The value parser of each ``ParamKind`` (objects and flags are passed on as given: the engine checks them).
_PARSER_OF_KIND: dict[ParamKind, Callable[[Any], Any]] = {
    ParamKind.TIME_NS: tc_time,
    ParamKind.BYTES: size,
    ParamKind.PACKETS: units.packets,
    ParamKind.RATE_BPS: units.rate_bps,
    ParamKind.INT: unsigned,
    ParamKind.FLOAT: hz,
}


def _as_given(value: Any) -> Any:
    return value


def _parser_of_kind(spec: ParamSpec) -> Callable[[Any], Any]:
    """How a value of the engine's ``ParamKind`` is written in tc (times in whole µs, sizes
    with units, packet counts or ``Nbdp``, unsigned integers in decimal or hex, a choice)."""
    if spec.kind is ParamKind.CHOICE:
        return choice(*spec.choices)
    return _PARSER_OF_KIND.get(spec.kind, _as_given)


@dataclass(frozen=True)
class Param:
    """One ``tc`` parameter of a qdisc kind: its tc spelling and the engine field it sets.

    Default, range and unit are the engine's (schema ``ParamSpec`` of
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
    #: Resolved values → engine config (default: each param to its engine field, None omitted).
    to_engine: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    #: Engine config → resolved values (the inverse of ``to_engine``, for descriptions).
    from_engine: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple(replace(p, qdisc=self.name) for p in self.params))

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


#: tc spelling of the kinds l4slab knows by name, in Linux's words (iproute2 tc/q_*.c).
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
            _time("uptime", example="1000s"),  # engine word: the router's clock (codel_get_time)
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
            Param("ce_threshold_selector", selector, example="0x01/0x01"),
            Param("memory_limit", engine="memory_limit_bytes"),
            Param("drop_batch", engine="drop_batch_size"),
            _time("uptime", example="1000s"),  # engine word: the router's clock (codel_get_time)
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
            Param("step_thresh", step_thresh, engine="step_thresh_ns"),
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


def describe_engine_qdisc(engine_qdisc: Mapping[str, Any]) -> str:
    """The ``tc`` string of a resolved engine qdisc.

    ``{"kind": "bfifo", "limit_bytes": 250000}`` → ``"bfifo limit 250000"``. Each
    kind shows its limit, its main knobs (target, interval, ecn/noecn) and every
    other parameter that differs from Linux's default, so the PAM study's strings
    come back as written (``fq limit 167 flow_limit 167 orphan_mask 0 ce_threshold 5ms``).
    """
    spec = REGISTRY.get(engine_qdisc.get("kind", ""))
    return spec.describe(engine_qdisc) if spec is not None else str(engine_qdisc.get("kind"))
