"""The engine's self-description, loaded once: the single source of qdisc, CC, TCP and metric facts.

The engine publishes an ``EngineSchema`` (``crates/l4slab-core/src/schema.rs``, read
through :func:`l4slab.engine.schema_json`): every qdisc kind with its parameters
(engine field, :class:`ParamKind`, default, inclusive range, choices, one-line doc)
and sub-queue classes, every congestion control with its flags and the receiver
defaults a testbed used for it, the TCP flow knobs and the metric names of each
result table. The front end derives its defaults, ranges, lists and messages from
here instead of repeating them; only ``tc`` spelling stays in :mod:`l4slab.qdisc`.
A lookup of something the engine does not describe is an :class:`EngineError`
(front end and engine disagree), one line like every engine failure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any, Mapping

from . import engine
from .errors import EngineError

__all__ = [
    "ParamKind",
    "ParamSpec",
    "QdiscSpec",
    "CcSpec",
    "EngineSchema",
    "parse_schema",
    "engine_schema",
    "qdisc_spec",
    "congestion_control_names",
    "receiver_defaults",
    "tcp_flow_param",
    "metric_names",
    "model_id",
    "model_version",
    "limit",
    "ecn_modes",
    "memory_sizes",
]


class ParamKind(str, Enum):
    """What a parameter holds, which fixes its unit in the engine config (schema.rs ``ParamKind``)."""

    TIME_NS = "time_ns"
    BYTES = "bytes"
    PACKETS = "packets"
    RATE_BPS = "rate_bps"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    CHOICE = "choice"
    OBJECT = "object"


@dataclass(frozen=True)
class ParamSpec:
    """One engine parameter: field name, kind, default and inclusive range in engine units."""

    name: str
    kind: ParamKind
    default: Any
    min: float | None
    max: float | None
    choices: tuple[str, ...]
    doc: str
    #: ``tc`` has a keyword for it (false: a device property or an l4slab model switch).
    tc_keyword: bool = True

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ParamSpec":
        return cls(
            name=data["name"],
            kind=ParamKind(data["kind"]),
            default=data.get("default"),
            min=data.get("min"),
            max=data.get("max"),
            choices=tuple(data.get("choices") or ()),
            doc=data.get("doc", ""),
            tc_keyword=data.get("tc_keyword", True),
        )

    @property
    def int_range(self) -> tuple[int | None, int | None]:
        """The bounds as integers (the engine serialises them as JSON numbers)."""
        return (
            None if self.min is None else int(self.min),
            None if self.max is None else int(self.max),
        )


@dataclass(frozen=True)
class QdiscSpec:
    """A qdisc the engine implements: its ``tc`` kind, doc, parameters by engine field, classes."""

    kind: str
    doc: str
    params: Mapping[str, ParamSpec]
    classes: tuple[str, ...]

    def param(self, engine_field: str) -> ParamSpec:
        try:
            return self.params[engine_field]
        except KeyError:
            raise EngineError(f"engine schema: qdisc {self.kind!r} has no parameter {engine_field!r}") from None


@dataclass(frozen=True)
class CcSpec:
    """A congestion control the engine implements (Linux name, L4S or not, flags, receiver defaults)."""

    name: str
    doc: str
    l4s: bool
    flags: tuple[str, ...]
    receiver_defaults: Mapping[str, Any]
    params: Mapping[str, ParamSpec]


@dataclass(frozen=True)
class EngineSchema:
    """Everything the engine says about itself (schema.rs ``EngineSchema``)."""

    version: str
    #: The model version (``model.rs``): bumped with every change of the engine's result corpus.
    model_version: int
    #: What a run id hashes for the model: ``"<version>:<corpus digest>"``.
    model_id: str
    qdiscs: Mapping[str, QdiscSpec]
    congestion_controls: Mapping[str, CcSpec]
    tcp_flow: Mapping[str, ParamSpec]
    metrics: Mapping[str, tuple[str, ...]]
    #: The scenario's bounds by the lowercase name of the engine's constant (``max_flows``).
    limits: Mapping[str, float] = field(default_factory=dict)
    #: The ECN modes a connection negotiates, in the kernel's ``tcpi_ecn_mode`` order.
    ecn_modes: tuple[str, ...] = ()
    #: What a run holds in memory (memory.rs ``sizes``): ``flow_series``,
    #: ``bottleneck_series``, ``series_value_bytes``, ``cc_state_series_bytes``,
    #: ``sojourn_record_bytes``, ``capture_record_bytes``, ``flow_state_bytes``,
    #: ``gro_bytes`` and ``cc_state_bytes`` by congestion control.
    memory: Mapping[str, Any] = field(default_factory=dict)
    #: Each receiving Linux version's host defaults the engine models (``tcp_rmem``: min,
    #: default, max), by the name a flow's ``receiver_rcvbuf`` takes.
    receiver_rcvbufs: Mapping[str, Any] = field(default_factory=dict)


def _params(items: Any) -> dict[str, ParamSpec]:
    return {spec.name: spec for spec in (ParamSpec.from_json(item) for item in items or ())}


def _metric_name(entry: Any) -> str:
    """A metric as the engine lists it: its name, or an object with a ``name``."""
    return entry if isinstance(entry, str) else entry["name"]


def parse_schema(text: str) -> EngineSchema:
    """An :class:`EngineSchema` from the engine's JSON."""
    data = json.loads(text)
    return EngineSchema(
        version=data["version"],
        qdiscs={
            q["kind"]: QdiscSpec(q["kind"], q.get("doc", ""), _params(q.get("params")), tuple(q.get("classes") or ()))
            for q in data["qdiscs"]
        },
        congestion_controls={
            c["name"]: CcSpec(
                name=c["name"],
                doc=c.get("doc", ""),
                l4s=bool(c.get("l4s")),
                flags=tuple(c.get("flags") or ()),
                receiver_defaults=dict(c.get("receiver_defaults") or {}),
                params=_params(c.get("params")),
            )
            for c in data["congestion_controls"]
        },
        tcp_flow=_params(data["tcp_flow"]),
        metrics={table: tuple(map(_metric_name, names)) for table, names in (data.get("metrics") or {}).items()},
        model_version=int(data["model_version"]),
        model_id=str(data["model_id"]),
        limits=dict(data["limits"]),
        ecn_modes=tuple(data["ecn_modes"]),
        memory=dict(data["memory"]),
        receiver_rcvbufs=dict(data["receiver_rcvbufs"]),
    )


@lru_cache(maxsize=1)
def engine_schema() -> EngineSchema:
    """The compiled engine's schema (read once per process)."""
    text = engine.schema_json()
    try:
        return parse_schema(text)
    except (KeyError, TypeError, ValueError) as err:
        raise EngineError(f"engine schema: not an EngineSchema ({type(err).__name__}: {err})") from None


def qdisc_spec(kind: str) -> QdiscSpec:
    """The engine's description of qdisc ``kind``."""
    try:
        return engine_schema().qdiscs[kind]
    except KeyError:
        raise EngineError(f"engine schema: no qdisc {kind!r}") from None


def congestion_control_names() -> tuple[str, ...]:
    """The engine's congestion controls by Linux name."""
    return tuple(engine_schema().congestion_controls)


def receiver_defaults(cc: str) -> dict[str, Any]:
    """Receiver settings a testbed used for ``cc`` (e.g. Prague: an AccECN receiver)."""
    spec = engine_schema().congestion_controls.get(cc)
    return dict(spec.receiver_defaults) if spec is not None else {}


def tcp_flow_param(engine_field: str) -> ParamSpec:
    """A TCP flow knob by its engine field (``mss``, ``ecn_option``, ...)."""
    try:
        return engine_schema().tcp_flow[engine_field]
    except KeyError:
        raise EngineError(f"engine schema: the TCP flow has no knob {engine_field!r}") from None


def metric_names(table: str) -> tuple[str, ...]:
    """Metric names of a result table: ``flow_summary``, ``flow_series``,
    ``bottleneck_summary`` or ``bottleneck_series``."""
    return engine_schema().metrics.get(table, ())


def limit(name: str) -> int | float:
    """A bound of the scenario the engine enforces, by the lowercase name of its constant
    (``max_flows``, ``max_timer_latency_ns``; config.rs ``limits``)."""
    try:
        return engine_schema().limits[name]
    except KeyError:
        raise EngineError(f"engine schema: no limit {name!r}") from None


def ecn_modes() -> tuple[str, ...]:
    """The names of the ECN modes a connection negotiates (cc ``EcnMode``), in the
    kernel's ``tcpi_ecn_mode`` order: off, rfc3168, accecn."""
    return engine_schema().ecn_modes


def memory_sizes() -> Mapping[str, Any]:
    """What a run holds in memory, as the engine derives it from its own types
    (``crates/l4slab-core/src/memory.rs``): read by :mod:`l4slab.memory`."""
    return engine_schema().memory


def model_version() -> int:
    """The engine's model version (bumped with every change of its result corpus)."""
    return engine_schema().model_version


def model_id() -> str:
    """What a run id hashes for the model: the version and its corpus digest."""
    return engine_schema().model_id
