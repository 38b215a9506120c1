"""How ``tc`` writes parameter values: times in whole microseconds, sizes with units,
unsigned integers in decimal or hex, gains in Hz, ``VALUE/MASK`` selectors, thresholds
as a time or ``Npkt``. Each parser raises :class:`~l4slab.units.UnitError` with a
field-less message; the caller adds the path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from .. import units
from ..units import UnitError

__all__ = [
    "PacketCount", "unsigned", "tc_time", "size", "selector", "step_thresh", "hz", "choice", "NS_PER_US",
]  # fmt: skip

#: tc's ce_threshold_selector VALUE and MASK are bytes.
U8_MAX = 255
#: tc carries times as whole microseconds.
NS_PER_US = 1_000


@dataclass(frozen=True)
class PacketCount:
    """``"5pkt"``: a threshold in packets where a time is also accepted (dualpi2 ``step_thresh``)."""

    count: int

    def __str__(self) -> str:
        return f"{self.count}pkt"


def unsigned(value: Any, examples: str = "0, 10, '0x3ff'") -> int:
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


def tc_time(value: Any) -> int:
    """A time in ns, truncated to whole microseconds as tc carries it."""
    ns = units.time_ns(value)
    return ns - ns % NS_PER_US


def size(value: Any) -> int:
    return units.size_bytes(value)


def selector(value: Any) -> tuple[int, int]:
    """``"0x01/0x01"`` (tc's VALUE/MASK, u8 each) or ``[1, 1]``."""
    examples = "'0x01/0x01' (ECT(1) and CE)"
    if isinstance(value, str) and value.count("/") == 1:
        parts: list[Any] = value.split("/")
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        parts = list(value)
    else:
        raise UnitError(f"{value!r} is not VALUE/MASK; expected e.g. {examples}")
    try:
        selector = tuple(unsigned(part, examples) for part in parts)
    except UnitError:
        raise UnitError(f"{value!r} is not VALUE/MASK; expected e.g. {examples}") from None
    if any(part > U8_MAX for part in selector):
        raise UnitError(f"{value!r} is out of range: VALUE and MASK are bytes (0..0xff); expected e.g. {examples}")
    return selector[0], selector[1]


_PACKET_SUFFIXES = ("packets", "packet", "pkts", "pkt", "p")


def step_thresh(value: Any) -> int | PacketCount:
    """dualpi2 ``step_thresh``: a time (whole µs) or ``Npkt`` / ``Npackets``."""
    examples = "'1ms', '500us', '5pkt'"
    if isinstance(value, str):
        text = value.strip().lower()
        for suffix in _PACKET_SUFFIXES:
            if text.endswith(suffix) and text[: -len(suffix)].strip().isdigit():
                return PacketCount(int(text[: -len(suffix)]))
    try:
        return tc_time(value)
    except UnitError:
        raise UnitError(f"{value!r} is not a time or a packet count; expected e.g. {examples}") from None


def hz(value: Any) -> float:
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


def choice(*allowed: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if isinstance(value, str) and value.strip().lower() in allowed:
            return value.strip().lower()
        raise UnitError(f"{value!r} is not one of {', '.join(allowed)}")

    return parse
