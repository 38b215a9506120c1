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

TODO(registry): the engine implements only bfifo and pfifo so far. When it gains the
AQMs, register them here with all their ``tc`` parameters (defaults from aqm.md):

* ``fq``: limit (10000 pkts), flow_limit (100 pkts), quantum (3028 B),
  initial_quantum (15140 B), maxrate, pacing/nopacing, refill_delay (40ms),
  low_rate_threshold (550kbit), orphan_mask (1023), buckets (1024), ce_threshold
  (off), horizon (10s), horizon_drop/horizon_cap, timer_slack (10us).
* ``pie``: limit (1000 pkts), target (15ms), tupdate (15ms), alpha (2), beta (20),
  ecn/noecn (noecn), bytemode/nobytemode, dq_rate_estimator/no_dq_rate_estimator.
* ``codel``: limit (1000 pkts), target (5ms), interval (100ms), ecn/noecn (noecn),
  ce_threshold (off).
* ``fq_codel``: limit (10240 pkts), flows (1024), target (5ms), interval (100ms),
  quantum (1514 B), ecn/noecn (ecn), ce_threshold (off), ce_threshold_selector
  VALUE/MASK, memory_limit (32mb), drop_batch (64).
* ``dualpi2``: limit (10000 pkts), memlimit, target (15ms), tupdate (16ms), alpha
  (0.16), beta (3.2), step_thresh (1ms, or N``pkt``), min_qlen_step (0),
  coupling_factor (2), drop_on_overload/overflow, drop_enqueue/drop_dequeue,
  l4s_ect/any_ect, classic_protection (10), split_gso/no_split_gso,
  max_rtt/typical_rtt (tc helper that derives target/tupdate/alpha/beta).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping

from . import units
from .errors import ScenarioError
from .units import BdpMultiple, UnitError

__all__ = [
    "Param",
    "QdiscKind",
    "QdiscRequest",
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


def bdp_to_bytes(multiple: BdpMultiple, bdp: Fraction) -> int:
    """``n`` BDPs in whole bytes, truncated as the study's ``int(...)``."""
    return int(multiple.factor * bdp)


def bytes_to_packets(nbytes: int) -> int:
    """The study's packet limit for a byte budget: ``int(bytes / 1500) + 1``."""
    return nbytes // PAM_PACKET_BYTES + 1


@dataclass(frozen=True)
class Param:
    """One ``tc`` parameter of a qdisc kind.

    ``parse`` turns the user's value into a number (or a :class:`BdpMultiple` for
    buffer-like parameters) and raises :class:`UnitError` with a field-less message.
    ``unit`` says how a BDP multiple is converted: ``"bytes"`` or ``"packets"``.
    """

    name: str
    parse: Callable[[Any], Any]
    default: Any
    minimum: int | None = None
    maximum: int | None = None
    unit: str = ""
    description: str = ""
    is_flag: bool = False


@dataclass(frozen=True)
class QdiscKind:
    """A qdisc kind: its parameters and how resolved values map to the engine config."""

    name: str
    description: str
    params: tuple[Param, ...]
    to_engine: Callable[[Mapping[str, Any]], dict[str, Any]]
    #: The ``tc`` string of a resolved engine config of this kind.
    describe: Callable[[Mapping[str, Any]], str]
    #: The parameter that ``[bottleneck] buffer = ...`` fills (None: buffer not allowed).
    buffer_param: str | None = None

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def param_names(self) -> list[str]:
        return [p.name for p in self.params]


REGISTRY: dict[str, QdiscKind] = {}

#: Linux qdiscs the engine does not simulate yet (named in errors instead of "unknown").
PLANNED_KINDS = ("fq", "pie", "codel", "fq_codel", "dualpi2")


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
            ),
        ),
        to_engine=lambda p: {"kind": "bfifo", "limit_bytes": p["limit"]},
        describe=lambda e: f"bfifo limit {e['limit_bytes']}",
        buffer_param="limit",
    )
)

register(
    QdiscKind(
        name="pfifo",
        description="packet-limited tail-drop FIFO (sch_fifo)",
        params=(
            Param(
                name="limit",
                parse=units.packets,
                default=LINUX_TX_QUEUE_LEN,
                minimum=1,
                maximum=U32_MAX,
                unit="packets",
                description="queue limit in packets",
            ),
        ),
        to_engine=lambda p: {"kind": "pfifo", "limit_packets": p["limit"]},
        describe=lambda e: f"pfifo limit {e['limit_packets']}",
        buffer_param="limit",
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
            parts.append(name if value is True else f"{name} {value}")
        return " ".join(parts)


def _suggest(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _kind_or_error(kind: Any, field_path: str) -> QdiscKind:
    known = ", ".join(REGISTRY)
    if isinstance(kind, str) and kind.strip() in PLANNED_KINDS:
        raise ScenarioError(f"{field_path}: {kind.strip()!r} is not simulated yet; supported: {known}")
    if not isinstance(kind, str) or kind not in REGISTRY:
        shown = kind if not isinstance(kind, str) else kind.strip()
        hint = _suggest(shown, list(REGISTRY)) if isinstance(shown, str) else ""
        raise ScenarioError(f"{field_path}: unknown qdisc {shown!r}{hint}; supported: {known}")
    return REGISTRY[kind]


def _unknown_param(spec: QdiscKind, name: str, field_path: str) -> ScenarioError:
    allowed = ", ".join(spec.param_names) or "no parameters"
    return ScenarioError(
        f"{field_path}: {spec.name} has no parameter {name!r}{_suggest(name, spec.param_names)}; "
        f"{spec.name} takes: {allowed}"
    )


def _parse_value(param: Param, value: Any, field_path: str) -> Any:
    if param.is_flag:
        if not isinstance(value, bool):
            raise ScenarioError(f"{field_path}.{param.name}: {value!r} is not a flag; expected true or false")
        return value
    try:
        return param.parse(value)
    except UnitError as err:
        raise ScenarioError(f"{field_path}.{param.name}: {err}") from None


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
    position = 1
    while position < len(tokens):
        name = tokens[position]
        param = spec.param(name)
        if param is None:
            raise _unknown_param(spec, name, field_path)
        if name in params:
            raise ScenarioError(f"{field_path}: {spec.name} parameter {name!r} given twice in {text!r}")
        if param.is_flag:
            params[name] = True
            position += 1
            continue
        if position + 1 >= len(tokens):
            raise ScenarioError(
                f"{field_path}: {spec.name} parameter {name!r} needs a value, e.g. '{spec.name} {name} {param.default}'"
            )
        params[name] = _parse_value(param, tokens[position + 1], field_path)
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
    for name, value in table.items():
        if name == "kind":
            continue
        param = spec.param(name)
        if param is None:
            raise _unknown_param(spec, name, field_path)
        params[name] = _parse_value(param, value, field_path)
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
        if param.minimum is not None and value < param.minimum or param.maximum is not None and value > param.maximum:
            shown = raw.value if isinstance(raw, _BufferBytes) else raw
            source = "bottleneck.buffer" if isinstance(raw, _BufferBytes) else f"{field_path}.{param.name}"
            raise ScenarioError(
                f"{source}: {str(shown)!r} gives {param.name} {value} {param.unit}, outside the allowed "
                f"range {param.minimum}..{param.maximum}"
            )
        resolved[param.name] = value
    return spec.to_engine(resolved)


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

    ``{"kind": "bfifo", "limit_bytes": 250000}`` → ``"bfifo limit 250000"``.
    """
    spec = REGISTRY.get(engine_qdisc.get("kind", ""))
    return spec.describe(engine_qdisc) if spec is not None else str(engine_qdisc.get("kind"))
