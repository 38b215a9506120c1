"""Traffic sources of a scenario: ``[[sources]]`` entries beside ``[[flows]]``.

Web traffic as the DualQ paper (De Schepper et al., "Dual Queue Coupled AQM", Appendix C)
generated it, and a SYN flood as S2 (Zeynali et al., §5.3) ran it with hping3::

    [[sources]]
    kind = "web"
    rate = "2.5/s per Mbit"           # or "300/s"; per Mbit: scaled with the bottleneck rate
    sizes = "pareto(0.9, 1000B, 1000000B)"
    cc = "prague"
    rtt = "10ms"
    ecn = "accecn"
    receiver_ecn = "accecn"

    [[sources]]
    kind = "syn_flood"
    rate = "9Mbit"                    # or "90%" of the bottleneck, counted on the SYN frames
    ecn = "ect1"
    rtt = "10ms"

A web source takes every TCP knob of a ``[[flows]]`` entry (they apply to each
connection) except ``bytes``, ``count`` and ``direction``. Each request's record
(size, start, FCT, completion efficiency) is in ``Result.requests`` and a run
directory's ``requests.parquet``. The paper's loads are 1 (low) or 10 (high)
requests/s per 4 Mbit/s: ``rate = "0.25/s per Mbit"`` and ``"2.5/s per Mbit"``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from .. import units
from ..units import UnitError

__all__ = ["WebRate", "parse_web_rate", "parse_sizes", "PAPER_SIZES", "web_source_fields", "syn_flood_fields"]

#: The DualQ paper's Appendix C: Pareto with α = 0.9, 1 kB to 1 MB (decimal, as the paper writes them).
PAPER_SIZES = (0.9, 1000, 1_000_000)
#: hping3's bare SYN on the wire: Ethernet 14 + IPv4 20 + TCP 20 bytes.
HPING3_SYN_BYTES = 54

_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*/\s*s(?:\s+per\s+(\S+))?\s*$")
_SIZES = re.compile(r"^\s*pareto\s*\(\s*([^,]+),\s*([^,]+),\s*([^,)]+)\)\s*$", re.IGNORECASE)


class WebRate(tuple):
    """``(requests per second, per bit/s or None)``: absolute, or scaled with a link rate."""

    def per_second(self, bottleneck_rate_bps: int) -> float:
        value, per = self
        return value if per is None else value * bottleneck_rate_bps / per


def parse_web_rate(value: Any) -> WebRate:
    """``"300/s"`` or ``"2.5/s per Mbit"`` (``per 4Mbit`` etc.: any ``tc`` rate)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return WebRate((float(value), None))
    match = _RATE.match(value) if isinstance(value, str) else None
    if match is None:
        raise UnitError(f"{value!r} is not a request rate; expected e.g. '300/s' or '2.5/s per Mbit'")
    per = match.group(2)
    per_bps = None
    if per is not None:
        per_bps = units.rate_bps(per if per[0].isdigit() else "1" + per)
        if per_bps == 0:
            raise UnitError(f"{value!r}: 'per {per}' is a zero rate")
    return WebRate((float(match.group(1)), per_bps))


def parse_sizes(value: Any) -> tuple[float, int, int]:
    """``"pareto(ALPHA, MIN, MAX)"``: a Pareto of shape ALPHA truncated to [MIN, MAX]
    (sizes in ``tc`` units: ``1kB`` is 1024 B, so the paper's 1 kB is ``1000B``)."""
    if value == PAPER_SIZES:
        return PAPER_SIZES
    match = _SIZES.match(value) if isinstance(value, str) else None
    if match is None:
        raise UnitError(f"{value!r} is not a size distribution; expected e.g. 'pareto(0.9, 1000B, 1000000B)'")
    try:
        alpha = float(match.group(1))
    except ValueError:
        raise UnitError(f"{value!r}: shape {match.group(1).strip()!r} is not a number") from None
    low, high = units.size_bytes(match.group(2).strip()), units.size_bytes(match.group(3).strip())
    if not 0 < alpha <= 100:
        raise UnitError(f"{value!r}: shape {alpha} is out of range (0, 100]")
    if not 1 <= low <= high:
        raise UnitError(f"{value!r}: {low}..{high} B is not a range (1 ≤ min ≤ max)")
    return (alpha, low, high)


def _check(parser):
    def validate(value: Any) -> Any:
        try:
            return parser(value)
        except UnitError as err:
            raise PydanticCustomError("l4slab_scenario_error", "{message}", {"message": str(err)}) from None

    return validate


def web_source_fields(base: type) -> type:
    """The ``kind = "web"`` model: every TCP knob of ``base`` (the TcpFlow model)."""

    class WebSource(base):  # type: ignore[misc, valid-type]
        """Web requests: Poisson arrivals, one connection each, Pareto-sized responses."""

        kind: Literal["web"]  # type: ignore[assignment]
        rate: Any = Field(description="requests per second, or per second per link rate", examples=["300/s"])
        sizes: Any = Field(
            PAPER_SIZES,
            description="response sizes: a Pareto truncated to [min, max] (DualQ paper App. C)",
            examples=["pareto(0.9, 1000B, 1000000B)"],
        )
        drop_handshake_of: list[int] | None = Field(None, description="test drop injection (request indices)")

        @field_validator("rate", mode="before")
        @classmethod
        def _rate(cls, value: Any) -> WebRate:
            return _check(parse_web_rate)(value)

        @field_validator("sizes", mode="before")
        @classmethod
        def _sizes(cls, value: Any) -> tuple[float, int, int]:
            return _check(parse_sizes)(value)

    return WebSource


def syn_flood_fields(base: type) -> type:
    """The ``kind = "syn_flood"`` model (``base``: the UdpFlow model, for its rate and ECN)."""

    class SynFlood(base):  # type: ignore[misc, valid-type]
        """hping3-like SYN flood: inelastic SYNs at a rate (counted on their frames) and codepoint."""

        kind: Literal["syn_flood"]  # type: ignore[assignment]
        syn_size: int = Field(HPING3_SYN_BYTES, description="SYN frame bytes (54: hping3's bare SYN)")

    return SynFlood
