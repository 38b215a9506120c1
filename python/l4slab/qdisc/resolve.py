"""A parsed qdisc → the engine's qdisc config: defaults, ``[bottleneck] buffer``, BDP units, ranges.

Buffer limits relative to the bandwidth-delay product follow the PAM 2025 study's rule
(PAM 2025 paper §3): ``int(n · BDP)`` bytes for byte limits, ``int(int(n · BDP) / 1500) + 1``
packets for packet limits. A resolved value outside the engine's range is one
:class:`~l4slab.errors.ScenarioError` line.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .. import units
from ..errors import ScenarioError
from ..units import BdpMultiple
from .parse import QdiscRequest
from .spelling import Param

__all__ = ["resolve_qdisc", "bdp_to_bytes", "bytes_to_packets", "PAM_PACKET_BYTES"]

#: Bytes per packet in the PAM study's packet-limit rule ``int(bytes / 1500) + 1``.
PAM_PACKET_BYTES = 1500


def bdp_to_bytes(multiple: BdpMultiple, bdp: Fraction) -> int:
    """``n`` BDPs in whole bytes, truncated as the study's ``int(...)``."""
    return int(multiple.factor * bdp)


def bytes_to_packets(nbytes: int) -> int:
    """The study's packet limit for a byte budget: ``int(bytes / 1500) + 1``."""
    return nbytes // PAM_PACKET_BYTES + 1


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
    # `buffer` sits beside `qdisc` in the same table (bottleneck or reverse_bottleneck).
    buffer_path = field_path.rpartition(".")[0] + ".buffer"
    if buffer is not None:
        if spec.buffer_param is None:
            raise ScenarioError(f"{buffer_path}: {spec.name} has no buffer limit to set")
        if spec.buffer_param in given:
            raise ScenarioError(
                f"{buffer_path}: given together with {field_path} {spec.buffer_param!r}; set only one of them"
            )
        given[spec.buffer_param] = _BufferBytes(buffer)

    resolved: dict[str, Any] = {}
    for param in spec.params:
        raw = given.get(param.name, param.default)
        value = _to_base_unit(param, raw, bdp, field_path, bdp_unavailable_reason)
        if _out_of_range(param, value):
            shown = raw.value if isinstance(raw, _BufferBytes) else raw
            shown = param.format(shown) if param.unit == "ns" and isinstance(shown, int) else str(shown)
            source = buffer_path if isinstance(raw, _BufferBytes) else f"{field_path}.{param.name}"
            raise ScenarioError(
                f"{source}: {shown!r} gives {param.name} {_amount(param, value)}, outside the allowed "
                f"range {_amount(param, param.minimum, bare=True)}..{_amount(param, param.maximum, bare=True)}"
            )
        resolved[param.name] = value
    config = spec.engine_config(resolved)
    _engine_check(spec, config, field_path)
    return config


_UNIT_SUFFIXES = ("_ns", "_bytes", "_packets", "_bps")


def _engine_check(spec: Any, config: dict[str, Any], field_path: str) -> None:
    """The engine's own rules for the qdisc config (its ranges, then the rules across
    parameters, e.g. DualPI2's mainline-only ones and alpha/beta as tc sends them:
    ``qdisc/dualpi2.rs``), in tc's words: the engine field the message names becomes the
    tc parameter that sets it."""
    from .. import engine

    try:
        engine.check_qdisc(config)
    except ScenarioError as err:
        field, sep, rest = str(err).partition(": ")
        names = [p.name for p in spec.params if p.engine_field == field]
        bare = next((field.removesuffix(s) for s in _UNIT_SUFFIXES if field.endswith(s)), field)
        name = names[0] if names else bare if sep and spec.param(bare) is not None else None
        raise ScenarioError(f"{field_path}.{name}: {rest}" if name else f"{field_path}: {err}") from None


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
            source = field_path.rpartition(".")[0] + ".buffer" if from_buffer else f"{field_path}.{param.name}"
            raise ScenarioError(f"{source}: {str(value)!r} needs a BDP, but {bdp_unavailable_reason}")
        value = bdp_to_bytes(value, bdp)
        return bytes_to_packets(value) if param.unit == "packets" else value
    if from_buffer and param.unit == "packets":
        return bytes_to_packets(value)
    return value
