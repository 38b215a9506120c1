"""Scenarios: the user's TOML, validated, and resolved into the engine's config.

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

:class:`Scenario` (pydantic v2) holds the validated values in base units;
:meth:`Scenario.resolve` expands ``count``, converts ``bdp`` and ``%`` values and
returns the dict the engine deserialises (``crates/l4slab-core/src/config.rs``,
which rejects unknown fields). Every validation failure becomes one
:class:`~l4slab.errors.ScenarioError` line naming the field path, the value and
what is allowed.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PlainValidator, Tag, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from . import units
from .errors import ScenarioError
from .qdisc import QdiscRequest, parse_qdisc, resolve_qdisc
from .units import BdpMultiple, Percent, UnitError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "Scenario",
    "Bottleneck",
    "TcpFlow",
    "UdpFlow",
    "load_scenario",
    "scenario_from_toml",
    "scenario_from_dict",
    "coerce_scenario",
    "apply_overrides",
    "parse_override",
    "UDP_IP_UDP_HEADER_BYTES",
    "TCP_ECN_WORDS",
    "RECEIVER_DEFAULTS",
]

#: IPv4 (20 B) + UDP (8 B) headers: a UDP flow's payload is ``packet_size - 28``.
UDP_IP_UDP_HEADER_BYTES = 28
#: Largest IPv4 UDP payload.
MAX_UDP_PAYLOAD = 65_507

_SCENARIO_ERROR = "l4slab_scenario_error"


# --- field types: unit strings parsed by PlainValidators --------------------------------


def _unit_validator(parser: Callable[[Any], Any]) -> PlainValidator:
    def validate(value: Any) -> Any:
        try:
            return parser(value)
        except UnitError as err:
            raise PydanticCustomError(_SCENARIO_ERROR, "{message}", {"message": str(err)}) from None

    return PlainValidator(validate)


def _qdisc_validator(value: Any) -> QdiscRequest:
    try:
        return parse_qdisc(value)
    except ScenarioError as err:
        # parse_qdisc names the path itself (bottleneck.qdisc[.param]); keep it verbatim.
        raise PydanticCustomError(_SCENARIO_ERROR, "{message}", {"message": str(err), "has_path": True}) from None


TimeNs = Annotated[int, _unit_validator(units.time_ns)]
RateBps = Annotated[int, _unit_validator(units.rate_bps)]
SizeBytes = Annotated[int, _unit_validator(units.size_bytes)]
BufferAmount = Annotated[Union[int, BdpMultiple], _unit_validator(units.buffer)]
RateOrPercent = Annotated[Union[int, Percent], _unit_validator(units.rate_or_percent)]
QdiscField = Annotated[QdiscRequest, PlainValidator(_qdisc_validator)]
StrictCount = Annotated[int, Field(strict=True, ge=1)]

#: ``net.ipv4.tcp_ecn`` by friendly name (numbers 0–5 are accepted as they are).
TCP_ECN_WORDS = {"off": 0, "classic": 1, "accecn": 3}
TCP_ECN_EXAMPLES = "2, 'off' (0), 'classic' (1), 'accecn' (3)"
#: Receiver defaults a testbed would have for CCs that need a particular feedback
#: (sent only when the user left them unset): Prague needs an AccECN receiver, DCTCP a
#: DCTCP receiver that echoes CE DCTCP-style over classic ECN.
RECEIVER_DEFAULTS: dict[str, dict[str, Any]] = {
    "prague": {"receiver_ecn": 3},
    "prague-v06": {"receiver_ecn": 3},
    "dctcp": {"receiver_cc": "dctcp", "receiver_ecn": 1},
}


def _tcp_ecn(value: Any) -> int:
    """``net.ipv4.tcp_ecn``: 0–5, or off / classic / accecn."""
    if isinstance(value, str) and value.strip().lower() in TCP_ECN_WORDS:
        return TCP_ECN_WORDS[value.strip().lower()]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 5:
        return value
    raise UnitError(f"{value!r} is not a tcp_ecn mode; expected 0..5 or e.g. {TCP_ECN_EXAMPLES}")


TcpEcnMode = Annotated[int, _unit_validator(_tcp_ecn)]


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


def _engine_check(config: dict[str, Any]) -> None:
    """Let the engine validate what only it knows (e.g. ``cc_params``); its one-line
    message becomes a user error. Skipped when the engine is not built."""
    try:
        from . import _core
    except ImportError:
        return
    import json

    try:
        _core.check(json.dumps(config, allow_nan=False))
    except ValueError as err:
        raise ScenarioError(" ".join(str(err).split())) from None


@lru_cache(maxsize=1)
def known_congestion_controls() -> tuple[str, ...] | None:
    """The engine's congestion controls, or None when the engine is not built."""
    try:
        from . import _core
    except ImportError:
        return None
    return tuple(_core.congestion_controls())


# --- models --------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class _FlowCommon(_Strict):
    rtt: TimeNs = Field(description="base RTT (propagation only)", examples=["10ms"])
    count: StrictCount = Field(1, description="number of identical flows this entry expands to")
    start: TimeNs = Field(0, description="start time", examples=["0s", "5s"])
    stop: TimeNs | None = Field(None, description="stop sending new data at", examples=["60s"])
    fwd_delay: TimeNs | None = Field(
        None, description="sender→bottleneck propagation (default rtt/2)", examples=["5ms"]
    )
    label: str | None = Field(None, description="name shown in tables and plots")


class TcpFlow(_FlowCommon):
    """A bulk TCP transfer (iperf3-like)."""

    kind: Literal["tcp"] = "tcp"
    cc: str = Field(
        "cubic", description="congestion control by its Linux name", examples=["cubic", "reno", "dctcp", "prague"]
    )
    bytes: SizeBytes | None = Field(
        None, description="bytes to send (iperf3 -n); unbounded if absent", examples=["10mb"]
    )
    mss: Annotated[int, Field(strict=True, ge=88, le=65_000)] | None = Field(None, examples=[1448])
    init_cwnd: Annotated[int, Field(strict=True, ge=1)] | None = Field(None, examples=[10])
    rto_min: TimeNs | None = Field(None, examples=["200ms"])
    rwnd: SizeBytes | None = Field(None, description="receive window limit", examples=["4mb"])
    delayed_ack: Annotated[bool, Field(strict=True)] | None = Field(None, examples=[True])
    drop_segments: list[Annotated[int, Field(strict=True, ge=0)]] | None = Field(None, examples=[[10, 11]])
    ecn: TcpEcnMode | None = Field(
        None, description="sender's net.ipv4.tcp_ecn (Linux default 2)", examples=[2, "accecn", "classic", "off"]
    )
    receiver_ecn: TcpEcnMode | None = Field(
        None,
        description="receiver's net.ipv4.tcp_ecn (default 2; 3 for prague, 1 for dctcp)",
        examples=[2, "accecn", "classic", "off"],
    )
    ecn_option: Annotated[int, Field(strict=True, ge=0, le=3)] | None = Field(
        None, description="net.ipv4.tcp_ecn_option on both hosts (default 2)", examples=[2]
    )
    receiver_cc: str | None = Field(
        None, description="receiving socket's congestion control (default cubic; dctcp for dctcp)", examples=["dctcp"]
    )
    fq_pacing: Annotated[bool, Field(strict=True)] | None = Field(
        None, description="the sender host has fq as its qdisc, so every CC is paced", examples=[True]
    )
    tso: Annotated[bool, Field(strict=True)] | None = Field(
        None,
        description="TSO/GSO on the sender (ethtool -K tso/gso; Linux default on): paced senders emit "
        "bursts of tso_segs segments; off, one segment per skb (the PAM 2025 testbed)",
        examples=[False],
    )
    cc_params: dict[str, Any] | None = Field(
        None,
        description="module parameters of the congestion control (checked by the engine)",
        examples=[{"segment_sizing": {"scheme": "logarithmic", "k": 4.0}}, {"beta": 717}],
    )

    @field_validator("cc", "receiver_cc")
    @classmethod
    def _known_cc(cls, value: str | None) -> str | None:
        known = known_congestion_controls()
        if value is not None and known is not None and value not in known:
            close = difflib.get_close_matches(value, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PydanticCustomError(
                _SCENARIO_ERROR,
                "{message}",
                {"message": f"{value!r} is not a known congestion control{hint}; known: {', '.join(known)}"},
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
                _SCENARIO_ERROR,
                "{message}",
                {"message": f"{value!r} is not an ECN codepoint; expected not-ect, ect0, ect1 or ce"},
            )
        return codepoint


def _flow_kind(value: Any) -> str | None:
    if isinstance(value, Mapping):
        return value.get("kind", "tcp")
    return getattr(value, "kind", None)


Flow = Annotated[
    Union[Annotated[TcpFlow, Tag("tcp")], Annotated[UdpFlow, Tag("udp")]],
    Discriminator(_flow_kind),
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
    bdp_rtt: TimeNs | None = Field(
        None, description="RTT of the 'bdp' unit (default: the flows' base RTT)", examples=["10ms"]
    )


class Scenario(_Strict):
    """A validated scenario, values in base units (ns, bit/s, bytes)."""

    name: str = "scenario"
    duration: TimeNs = Field(examples=["60s"])
    seed: Annotated[int, Field(strict=True, ge=0, le=2**64 - 1)] = 1
    bin: TimeNs = Field(100_000_000, description="width of time-series bins", examples=["100ms"])
    warmup: TimeNs = Field(0, description="start of the summary window", examples=["0s", "5s"])
    start_jitter: TimeNs = Field(1_000_000, description="random per-flow start offset in [0, x]", examples=["1ms"])
    trace_sojourn: Annotated[bool, Field(strict=True)] = False
    bottleneck: Bottleneck
    flows: list[Flow] = Field(min_length=1, description="at least one [[flows]] entry")

    # --- derived views -------------------------------------------------------------

    def expanded_flows(self) -> list[tuple[int, TcpFlow | UdpFlow]]:
        """``(group, flow)`` per engine flow, in engine flow-id order (``count`` expanded)."""
        return [(group, flow) for group, flow in enumerate(self.flows) for _ in range(flow.count)]

    def flow_labels(self) -> list[str]:
        """A display label per engine flow: the entry's ``label``, else its cc (or "udp")."""
        return [flow.label or (flow.cc if isinstance(flow, TcpFlow) else "udp") for _, flow in self.expanded_flows()]

    def bdp_bytes(self) -> tuple[Fraction | None, str]:
        """The BDP in bytes and, when it is undefined, the reason (for error messages)."""
        if self.bottleneck.bdp_rtt is not None:
            return units.bdp_bytes(self.bottleneck.rate, self.bottleneck.bdp_rtt), ""
        rtts = sorted({flow.rtt for flow in self.flows})
        if len(rtts) == 1:
            return units.bdp_bytes(self.bottleneck.rate, rtts[0]), ""
        shown = ", ".join(units.format_time(r) for r in rtts)
        return None, f"the flows have different base RTTs ({shown}); set bottleneck.bdp_rtt"

    # --- checks across fields ------------------------------------------------------------

    def check(self) -> None:
        """Cross-field checks the field types cannot express; raises ScenarioError."""
        if self.duration == 0:
            raise ScenarioError("duration: must be > 0; expected e.g. '60s'")
        if self.bin == 0:
            raise ScenarioError("bin: must be > 0; expected e.g. '100ms'")
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
        for index, flow in enumerate(self.flows):
            path = f"flows[{index}]"
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
            if isinstance(flow, UdpFlow):
                payload = flow.packet_size - UDP_IP_UDP_HEADER_BYTES
                if not 1 <= payload <= MAX_UDP_PAYLOAD:
                    raise ScenarioError(
                        f"{path}.packet_size: {flow.packet_size} B leaves a UDP payload of {payload} B; "
                        f"expected {UDP_IP_UDP_HEADER_BYTES + 1}..{UDP_IP_UDP_HEADER_BYTES + MAX_UDP_PAYLOAD} B, "
                        "e.g. '1500B'"
                    )
                if self._udp_rate_bps(flow) == 0:
                    raise ScenarioError(
                        f"{path}.rate: {str(flow.rate)!r} is a zero rate; expected e.g. '50%', '50Mbit'"
                    )

    def _udp_rate_bps(self, flow: UdpFlow) -> int:
        if isinstance(flow.rate, Percent):
            return int(flow.rate.fraction * self.bottleneck.rate)
        return flow.rate

    # --- resolution ------------------------------------------------------------------------

    def resolve(self) -> dict[str, Any]:
        """The engine config (config.rs ``ScenarioConfig``) as a JSON-ready dict."""
        self.check()
        config = self._engine_config()
        _engine_check(config)
        return config

    def _engine_config(self) -> dict[str, Any]:
        bdp, bdp_reason = self.bdp_bytes()
        qdisc = resolve_qdisc(
            self.bottleneck.qdisc,
            buffer=self.bottleneck.buffer,
            bdp=bdp,
            bdp_unavailable_reason=bdp_reason,
        )
        return {
            "seed": self.seed,
            "duration_ns": self.duration,
            "bin_ns": self.bin,
            "warmup_ns": self.warmup,
            "start_jitter_ns": self.start_jitter,
            "trace_sojourn": self.trace_sojourn,
            "bottleneck": {
                "rate_bps": self.bottleneck.rate,
                "burst_bytes": self.bottleneck.burst,
                "access_rate_bps": self.bottleneck.access_rate,
                "qdisc": qdisc,
            },
            "flows": [self._resolve_flow(flow) for _, flow in self.expanded_flows()],
        }

    def _resolve_flow(self, flow: TcpFlow | UdpFlow) -> dict[str, Any]:
        path: dict[str, Any] = {"rtt_ns": flow.rtt, "start_ns": flow.start}
        _set_if_given(path, "fwd_delay_ns", flow.fwd_delay)
        _set_if_given(path, "stop_ns", flow.stop)
        if isinstance(flow, UdpFlow):
            return {
                "kind": "udp",
                **path,
                "rate_bps": self._udp_rate_bps(flow),
                "payload_bytes": flow.packet_size - UDP_IP_UDP_HEADER_BYTES,
                "ecn": flow.ecn,
            }
        config: dict[str, Any] = {"kind": "tcp", "cc": flow.cc, **path}
        for engine_key, field_name in _TCP_ENGINE_FIELDS.items():
            _set_if_given(config, engine_key, getattr(flow, field_name))
        receiver = {**RECEIVER_DEFAULTS.get(flow.cc, {})}
        _set_if_given(receiver, "receiver_ecn", flow.receiver_ecn)
        _set_if_given(receiver, "receiver_cc", flow.receiver_cc)
        config.update(sorted(receiver.items()))
        return config


#: Optional TCP knobs: engine config key → TcpFlow field (already in engine units).
_TCP_ENGINE_FIELDS = {
    "bytes": "bytes",
    "mss": "mss",
    "init_cwnd": "init_cwnd",
    "rto_min_ns": "rto_min",
    "rwnd_bytes": "rwnd",
    "delayed_ack": "delayed_ack",
    "drop_segments": "drop_segments",
    "fq_pacing": "fq_pacing",
    "tso": "tso",
    "cc_params": "cc_params",
    "ecn": "ecn",
    "ecn_option": "ecn_option",
}


def _set_if_given(target: dict[str, Any], key: str, value: Any) -> None:
    """Optional expert knobs are sent only when set, so the engine's defaults apply."""
    if value is not None:
        target[key] = value


# --- pydantic errors → one line ------------------------------------------------------------


def _format_loc(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "scenario"


def _strip_tags(loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], str | None]:
    """Remove the union tag pydantic inserts after a flow index: ('flows', 1, 'udp', 'rate')."""
    cleaned: list[Any] = []
    tag = None
    for i, part in enumerate(loc):
        if part in ("tcp", "udp") and i > 0 and isinstance(loc[i - 1], int):
            tag = part
            continue
        cleaned.append(part)
    return tuple(cleaned), tag


def _model_at(loc: tuple[Any, ...], tag: str | None) -> type[BaseModel] | None:
    if not loc:
        return Scenario
    if loc[0] == "bottleneck" and len(loc) == 1:
        return Bottleneck
    if loc[0] == "flows" and len(loc) == 2:
        return UdpFlow if tag == "udp" else TcpFlow
    return None


def _example_for(loc: tuple[Any, ...], tag: str | None) -> str:
    model = _model_at(loc[:-1], tag)
    if model is None or not loc or loc[-1] not in model.model_fields:
        return ""
    examples = model.model_fields[loc[-1]].examples
    return f"; expected e.g. {', '.join(repr(e) for e in examples)}" if examples else ""


def _error_line(error: Mapping[str, Any]) -> str:
    loc, tag = _strip_tags(tuple(error["loc"]))
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == _SCENARIO_ERROR:
        message = ctx["message"]
        return message if ctx.get("has_path") else f"{_format_loc(loc)}: {message}"
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _model_at(loc[:-1], tag)
        allowed = sorted(model.model_fields, key=lambda name: name != "kind") if model else []
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        where = f" in a {tag} flow" if tag else ""
        return f"{_format_loc(loc)}: unknown key{where}{hint}; allowed: {', '.join(allowed)}"
    if kind == "missing":
        if loc == ("bottleneck",):
            return (
                'bottleneck: missing; add a [bottleneck] table, e.g. rate = "100Mbit" and qdisc = "bfifo limit 250000"'
            )
        if loc == ("flows",):
            return 'flows: missing; add at least one [[flows]] entry, e.g. cc = "cubic" and rtt = "10ms"'
        return f"{_format_loc(loc)}: missing{_example_for(loc, tag)}"
    if kind == "union_tag_invalid":
        return f"{_format_loc(loc)}.kind: {ctx.get('tag')!r} is not a flow kind; expected 'tcp' or 'udp'"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{_format_loc(loc)}: {value!r} is not a table; expected e.g. [{_format_loc(loc)}] with keys"
    if kind == "too_short" and loc == ("flows",):
        return "flows: at least one [[flows]] entry is required"
    message = error["msg"][0].lower() + error["msg"][1:]
    return f"{_format_loc(loc)}: {value!r} is invalid: {message}{_example_for(loc, tag)}"


def _one_line(err: ValidationError) -> ScenarioError:
    # An unknown key is usually a typo that also causes a "missing" error; report the typo.
    errors = sorted(err.errors(), key=lambda e: e["type"] != "extra_forbidden")
    line = _error_line(errors[0])
    if len(errors) > 1:
        line += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return ScenarioError(line)


# --- loading ---------------------------------------------------------------------------------


def scenario_from_dict(data: Mapping[str, Any], *, default_name: str | None = None) -> Scenario:
    """Validate a plain dict (as parsed from TOML); raise ScenarioError on the first problem."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"scenario: {data!r} is not a table of settings")
    if default_name is not None and "name" not in data:
        data = {"name": default_name, **data}
    try:
        scenario = Scenario.model_validate(dict(data))
    except ValidationError as err:
        raise _one_line(err) from None
    scenario.check()
    return scenario


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{source}: invalid TOML: {err}") from None


def scenario_from_toml(text: str, *, source: str = "scenario", overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Validate a TOML document, applying ``overrides`` (see :func:`apply_overrides`) first."""
    data = _parse_toml(text, source)
    if overrides:
        data = apply_overrides(data, overrides)
    return scenario_from_dict(data)


def read_toml_file(file: Path, what: str) -> tuple[dict[str, Any], str]:
    """Parse a TOML file, returning its tables and its text; a missing, unreadable or
    malformed ``what`` file ("scenario", "study") is a one-line :class:`ScenarioError`."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{file}: no such {what} file") from None
    except IsADirectoryError:
        raise ScenarioError(f"{file}: is a directory, not a {what} file") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{file}: not a UTF-8 text file") from None
    return _parse_toml(text, str(file)), text


def load_scenario(path: str | os.PathLike[str], *, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Load and validate a scenario file; its name defaults to the file's stem."""
    file = Path(path)
    data, _ = read_toml_file(file, "scenario")
    if overrides:
        data = apply_overrides(data, overrides)
    return scenario_from_dict(data, default_name=file.stem)


def coerce_scenario(scenario: Any, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Accept a Scenario, a dict, a path or a TOML string; apply ``overrides``."""
    if isinstance(scenario, Scenario):
        if not overrides:
            return scenario
        raise ScenarioError(
            "overrides: cannot be applied to an already validated Scenario; pass the path, TOML or dict instead"
        )
    if isinstance(scenario, Mapping):
        data = apply_overrides(scenario, overrides) if overrides else scenario
        return scenario_from_dict(data)
    if isinstance(scenario, os.PathLike):
        return load_scenario(scenario, overrides=overrides)
    if isinstance(scenario, str):
        looks_like_toml = "\n" in scenario or "=" in scenario
        if looks_like_toml and not Path(scenario).is_file():
            return scenario_from_toml(scenario, overrides=overrides)
        return load_scenario(scenario, overrides=overrides)
    raise ScenarioError(f"scenario: {type(scenario).__name__} is not a path, TOML string, dict or Scenario")


# --- overrides (--set key=value, run(**overrides)) ---------------------------------------

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _split_path(key: str) -> list[str | int]:
    """``"flows[0].cc"`` / ``"flows.0.cc"`` / ``"flows__0__cc"`` → ``["flows", 0, "cc"]``."""
    text = key.replace("__", ".")
    parts: list[str | int] = []
    position = 0
    for match in _PATH_PART.finditer(text):
        between = text[position : match.start()]
        if between not in ("", "."):
            raise ScenarioError(f"--set: {key!r} is not a key path; expected e.g. 'bottleneck.rate' or 'flows[0].cc'")
        name, index = match.groups()
        parts.append(int(index) if index is not None else int(name) if name.isdigit() else name)
        position = match.end()
    if not parts or text[position:] not in ("",):
        raise ScenarioError(f"--set: {key!r} is not a key path; expected e.g. 'bottleneck.rate' or 'flows[0].cc'")
    return parts


def parse_override(assignment: str) -> tuple[str, Any]:
    """``"flows[0].count=3"`` → ``("flows[0].count", 3)``. Values are read as TOML when they
    parse (numbers, booleans, quoted strings, inline tables), else taken as plain strings
    (``100Mbit``, ``bfifo limit 1000``)."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise ScenarioError(f"--set: {assignment!r} is not key=value; expected e.g. bottleneck.rate=50Mbit")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``data`` with each ``path → value`` of ``overrides`` set.

    Missing tables are created; an index one past the end of a list appends an entry.
    """
    import copy

    result: dict[str, Any] = copy.deepcopy(dict(data))
    for key, value in overrides.items():
        parts = _split_path(key)
        node: Any = result
        walked = ""
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            shown = f"{walked}[{part}]" if isinstance(part, int) else (f"{walked}.{part}" if walked else part)
            if isinstance(part, int):
                if not isinstance(node, list):
                    raise ScenarioError(f"{key}: {walked or 'scenario'} is not a list; cannot index it with [{part}]")
                if part == len(node):
                    # One past the end appends an entry: flows[2].rtt=10ms adds a third flow.
                    node.append(value if last else {})
                    if last:
                        break
                elif not 0 <= part < len(node):
                    raise ScenarioError(
                        f"{key}: no such entry; {walked} has {len(node)} (index 0..{len(node)} to change or append one)"
                    )
            elif not isinstance(node, dict):
                raise ScenarioError(f"{key}: {walked} is not a table; set it as a whole instead, e.g. {walked}='...'")
            if last:
                node[part] = value
            else:
                if isinstance(node, dict) and part not in node:
                    node[part] = {}
                node = node[part]
            walked = shown
    return result
