"""Quantities with units, written the way Linux ``tc`` writes them.

The engine works in base units (nanoseconds, bit/s, bytes, packets); users write
``"10ms"``, ``"100Mbit"``, ``"250000"`` or ``"2bdp"``. This module converts one
into the other with exact arithmetic (no float rounding surprises: ``"0.1ms"`` is
exactly 100000 ns) and truncates fractional results toward zero, as ``tc`` does.

Conventions (see the units table in README.md):

* time: ``s``/``sec``, ``ms``/``msec``, ``us``/``usec``/``µs``, ``ns``/``nsec``; a unit is
  required (a bare ``10`` could be seconds, as in ``iperf3 -t``, or microseconds, as
  in old ``tc`` output).
* rate: ``bit``, ``kbit``, ``mbit``, ``gbit``, ``tbit`` (1000-based) and ``kibit``,
  ``mibit``, ``gibit``, ``tibit`` (1024-based), case-insensitive, optionally followed
  by ``/s``. The ``bps`` family is rejected: ``tc`` reads ``mbps`` as megaBYTES per
  second while iperf3 and most papers mean megabits.
* size: a bare number or ``b`` is bytes; ``k``/``kb``, ``m``/``mb``, ``g``/``gb`` are
  1024-based bytes and ``kbit``/``mbit``/``gbit`` 1024-based bits, exactly as
  ``tc``'s ``get_size``.
* ``Nbdp``: a multiple of the bandwidth-delay product, resolved once the
  bottleneck rate and the base RTT are known.
* ``N%``: a fraction of the bottleneck rate (UDP sending rates).

Every function takes the field path (``"flows[1].rtt"``) used in its error message:
``ScenarioError("flows[1].rtt: '10' is not a time with a unit; expected e.g. ...")``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from .errors import ScenarioError

__all__ = [
    "UnitError",
    "BdpMultiple",
    "Percent",
    "parse_time",
    "parse_rate",
    "parse_size",
    "parse_packets",
    "parse_buffer",
    "parse_rate_or_percent",
    "bdp_bytes",
    "format_time",
    "format_rate",
    "format_size",
    "TIME_EXAMPLES",
    "RATE_EXAMPLES",
    "SIZE_EXAMPLES",
    "BUFFER_EXAMPLES",
    "PACKETS_EXAMPLES",
    "UDP_RATE_EXAMPLES",
]

TIME_EXAMPLES = "'10ms', '1s', '250us'"
RATE_EXAMPLES = "'100Mbit', '1gbit', '500kbit'"
SIZE_EXAMPLES = "'250000B', '250000', '64kb' (k = 1024 bytes, as in tc)"
BUFFER_EXAMPLES = "'2bdp', '0.5bdp', '250000B', '64kb'"
PACKETS_EXAMPLES = "167, '1000', '2bdp'"
UDP_RATE_EXAMPLES = "'50%' (of the bottleneck rate), '50Mbit'"

NS_PER_S = 1_000_000_000

_TIME_UNITS: dict[str, int] = {
    **dict.fromkeys(("s", "sec", "secs"), NS_PER_S),
    **dict.fromkeys(("ms", "msec", "msecs"), 1_000_000),
    **dict.fromkeys(("us", "usec", "usecs", "µs", "μs"), 1_000),
    **dict.fromkeys(("ns", "nsec", "nsecs"), 1),
}

_RATE_UNITS: dict[str, int] = {
    "bit": 1,
    "kbit": 10**3,
    "mbit": 10**6,
    "gbit": 10**9,
    "tbit": 10**12,
    "kibit": 2**10,
    "mibit": 2**20,
    "gibit": 2**30,
    "tibit": 2**40,
}

# tc's get_size(): bytes, with 1024-based multiples; the *bit forms are bits.
_SIZE_UNITS: dict[str, Fraction] = {
    "": Fraction(1),
    "b": Fraction(1),
    "k": Fraction(2**10),
    "kb": Fraction(2**10),
    "m": Fraction(2**20),
    "mb": Fraction(2**20),
    "g": Fraction(2**30),
    "gb": Fraction(2**30),
    "kbit": Fraction(2**10, 8),
    "mbit": Fraction(2**20, 8),
    "gbit": Fraction(2**30, 8),
}

# tc's byte-per-second rate units (and their look-alikes): ambiguous for iperf users.
_BYTE_RATE_UNIT = re.compile(r"^(?P<prefix>[kmgt]i?)?(?:bps|b/s|bytes?/s)$", re.IGNORECASE)

_NUMBER_WITH_UNIT = re.compile(r"^\s*(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>.*?)\s*$")


class UnitError(ValueError):
    """A value could not be parsed; the message has no field path (callers add it)."""


@dataclass(frozen=True)
class BdpMultiple:
    """``"2bdp"``: a buffer of ``factor`` bandwidth-delay products."""

    factor: Fraction

    def __str__(self) -> str:
        return f"{_format_number(self.factor)}bdp"


@dataclass(frozen=True)
class Percent:
    """``"140%"``: a fraction (here 7/5) of the bottleneck rate."""

    fraction: Fraction

    def __str__(self) -> str:
        return f"{_format_number(self.fraction * 100)}%"


def _format_number(value: Fraction) -> str:
    return str(int(value)) if value.denominator == 1 else f"{float(value):g}"


def _not_a(value: Any, what: str, examples: str) -> UnitError:
    return UnitError(f"{value!r} is not {what}; expected e.g. {examples}")


def _split(value: Any, what: str, examples: str) -> tuple[Fraction, str]:
    """Split ``"10.5ms"`` into ``(Fraction(21, 2), "ms")``; reject negatives and non-strings."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _not_a(value, what, examples)
    text = repr(value) if isinstance(value, float) else str(value)
    match = _NUMBER_WITH_UNIT.match(text)
    if match is None:
        raise _not_a(value, what, examples)
    if len(match["number"]) > 40:  # no setting needs more; 5 000 digits would outlive Python's int-str limit
        raise UnitError(f"{text[:40]!r}... has more than 40 digits; expected e.g. {examples}")
    try:
        decimal = Decimal(match["number"])
    except (InvalidOperation, ValueError):
        raise _not_a(value, what, examples) from None
    # 1e999999999 would build a number of a billion digits: no setting is beyond 10^30.
    if decimal.is_finite() and decimal != 0 and not -30 <= decimal.adjusted() <= 30:
        raise UnitError(f"{text[:40]!r} is out of range (beyond 10^±30); expected e.g. {examples}")
    try:
        number = Fraction(decimal)
    except (InvalidOperation, ValueError):
        raise _not_a(value, what, examples) from None
    if number < 0:
        raise UnitError(f"{value!r} is negative; expected e.g. {examples}")
    return number, match["unit"]


def _with_field(field: str, parse, value: Any):
    try:
        return parse(value)
    except UnitError as err:
        raise ScenarioError(f"{field}: {err}") from None


# --- unit-less parsers (raise UnitError); used by the pydantic models --------------


def _scaled(value: Any, number: float, scale: float | None, what: str, examples: str) -> int:
    """``number`` in the unit whose factor is ``scale``; no factor: the unit is unknown."""
    if scale is None:
        raise _not_a(value, what, examples)
    return int(number * scale)


def time_ns(value: Any) -> int:
    """``"10ms"`` → 10_000_000. A unit is required."""
    what = "a time with a unit"
    number, unit = _split(value, what, TIME_EXAMPLES)
    return _scaled(value, number, _TIME_UNITS.get(unit.lower()), what, TIME_EXAMPLES)


def rate_bps(value: Any) -> int:
    """``"100Mbit"`` or ``"100Mbit/s"`` → 100_000_000. A unit is required."""
    what = "a rate in bits per second"
    number, unit = _split(value, what, RATE_EXAMPLES)
    unit_lower = unit.lower()
    byte_unit = _BYTE_RATE_UNIT.match(unit_lower)
    if byte_unit is not None:
        prefix = byte_unit["prefix"] or ""
        bit_unit = (prefix[:1].upper() if prefix != "k" else "k") + prefix[1:] + "bit"
        as_bytes = _format_number(number * 8)
        raise UnitError(
            f"{value!r} is ambiguous: tc reads {unit!r} as bytes per second, iperf3 as bits per second; "
            f"write '{_format_number(number)}{bit_unit}' if you meant bits or '{as_bytes}{bit_unit}' if you meant bytes"
        )
    if unit_lower.endswith("/s"):
        unit_lower = unit_lower[:-2]
    return _scaled(value, number, _RATE_UNITS.get(unit_lower), what, RATE_EXAMPLES)


def size_bytes(value: Any) -> int:
    """``"64kb"`` → 65536, ``"250000"`` / ``250000`` → 250000 (tc's get_size)."""
    what = "a size in bytes"
    number, unit = _split(value, what, SIZE_EXAMPLES)
    return _scaled(value, number, _SIZE_UNITS.get(unit.lower()), what, SIZE_EXAMPLES)


def _bdp_factor(value: Any) -> BdpMultiple | None:
    if isinstance(value, str):
        match = _NUMBER_WITH_UNIT.match(value)
        if match is not None and match["unit"].lower() == "bdp":
            number, _ = _split(value, "a BDP multiple", BUFFER_EXAMPLES)
            return BdpMultiple(number)
    return None


def buffer(value: Any) -> int | BdpMultiple:
    """A byte amount: a size, or ``"Nbdp"`` (resolved later)."""
    multiple = _bdp_factor(value)
    if multiple is not None:
        return multiple
    try:
        return size_bytes(value)
    except UnitError:
        raise _not_a(value, "a buffer size", BUFFER_EXAMPLES) from None


def packets(value: Any) -> int | BdpMultiple:
    """A packet count (``167``, ``"167"``), or ``"Nbdp"`` (resolved later)."""
    multiple = _bdp_factor(value)
    if multiple is not None:
        return multiple
    what = "a packet count"
    if isinstance(value, bool):
        raise _not_a(value, what, PACKETS_EXAMPLES)
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise _not_a(value, what, PACKETS_EXAMPLES)


def rate_or_percent(value: Any) -> int | Percent:
    """``"50%"`` (of the bottleneck) or an absolute rate."""
    if isinstance(value, str) and value.strip().endswith("%"):
        number, _ = _split(value.strip()[:-1], "a percentage", UDP_RATE_EXAMPLES)
        return Percent(number / 100)
    try:
        return rate_bps(value)
    except UnitError as err:
        if "ambiguous" in str(err):
            raise
        raise _not_a(value, "a rate", UDP_RATE_EXAMPLES) from None


# --- public parsers with a field path (raise ScenarioError) -------------------------


def parse_time(value: Any, field: str = "time") -> int:
    """Parse a time to integer nanoseconds: ``parse_time("10ms", "flows[0].rtt") == 10_000_000``."""
    return _with_field(field, time_ns, value)


def parse_rate(value: Any, field: str = "rate") -> int:
    """Parse a rate to integer bit/s: ``parse_rate("100Mbit") == 100_000_000``."""
    return _with_field(field, rate_bps, value)


def parse_size(value: Any, field: str = "size") -> int:
    """Parse a size to integer bytes as tc does: ``parse_size("64kb") == 65536``."""
    return _with_field(field, size_bytes, value)


def parse_packets(value: Any, field: str = "packets") -> int | BdpMultiple:
    """Parse a packet count, or a BDP multiple to be resolved later."""
    return _with_field(field, packets, value)


def parse_buffer(value: Any, field: str = "buffer") -> int | BdpMultiple:
    """Parse a byte amount, or a BDP multiple to be resolved later."""
    return _with_field(field, buffer, value)


def parse_rate_or_percent(value: Any, field: str = "rate") -> int | Percent:
    """Parse an absolute rate (bit/s) or a percentage of the bottleneck rate."""
    return _with_field(field, rate_or_percent, value)


def bdp_bytes(rate_bps_value: int, rtt_ns: int) -> Fraction:
    """Bandwidth-delay product in bytes, exact: 100 Mbit/s × 10 ms = 125000."""
    return Fraction(rate_bps_value * rtt_ns, 8 * NS_PER_S)


# --- formatting (for tables and resolved descriptions) -------------------------------


def format_time(ns: int) -> str:
    """10_000_000 → ``"10ms"`` (largest unit that represents the value exactly)."""
    if ns == 0:
        return "0s"
    for unit, scale in (("s", NS_PER_S), ("ms", 1_000_000), ("us", 1_000)):
        if ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"


def format_rate(bps: int) -> str:
    """100_000_000 → ``"100Mbit"``."""
    for unit, scale in (("Tbit", 10**12), ("Gbit", 10**9), ("Mbit", 10**6), ("kbit", 10**3)):
        if bps and bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bit"


def format_size(nbytes: int) -> str:
    """250000 → ``"250000B"`` (bytes are kept exact; tc's k is 1024, easy to misread)."""
    return f"{nbytes}B"
