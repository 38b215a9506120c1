"""Parsers of what the real tools print: ``iperf3 -J`` and ``ss -tin``.

Both are pure functions of text, tested against output captured on a Linux 6.18 host
(``tests/python/data/emulate/``).

* iperf3 3.12 JSON (``src/iperf_api.c:iperf_print_results``): the sender's per-stream
  ``end.streams[].sender`` carries ``bytes``, ``retransmits`` and ``mean_rtt`` (µs; the mean
  of the ``tcpi_rtt`` values read once per reporting interval, ``src/iperf_api.c``
  ``iperf_stats_callback``), ``end.sum_received`` the receiver's byte count as the server
  reported it; ``intervals[].streams[]`` one record per ``-i`` interval with ``rtt`` (µs) and
  ``snd_cwnd`` (bytes). A failed test has a top-level ``"error"`` string.
* ``ss -tin`` (iproute2 ``misc/ss.c:tcp_show_info``): per socket a line ``STATE Recv-Q
  Send-Q LOCAL PEER`` followed by a tab-indented line of ``key:value`` tokens (``rtt:SRTT/RTTVAR``
  in ms, ``cwnd:N`` packets, ``retrans:CUR/TOTAL``, ``bytes_acked:N``) and a few ``key VALUE``
  pairs (``send``, ``pacing_rate``, ``delivery_rate`` with a ``bps`` unit).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Iperf3Result", "SsSocket", "parse_iperf3", "parse_ss", "parse_rate_bps"]


class ToolOutputError(ValueError):
    """A tool's output could not be understood (the message names the tool and why)."""


@dataclass(frozen=True)
class Iperf3Result:
    """What one ``iperf3 -c … -J`` run reports for its (single) data stream."""

    #: Local and remote port of the data connection (to pick it out of ``ss`` samples).
    local_port: int | None
    remote_port: int | None
    #: Congestion control the sender used (``end.sender_tcp_congestion``).
    cc: str | None
    #: Seconds of the test as the sender counted them.
    seconds: float
    bytes_sent: int
    #: Payload bytes the receiver got (``end.sum_received.bytes``) and its rate, Mbit/s (10^6).
    bytes_received: int
    goodput_mbps: float
    retransmits: int
    #: Mean of the per-interval smoothed RTT samples, ms; NaN if the sender reported none.
    mean_rtt_ms: float
    #: Per-interval records: (start_s, end_s, bytes, rtt_ms, cwnd_bytes) from the sender's view.
    intervals: list[tuple[float, float, int, float, float]] = field(default_factory=list)


def _num(value: Any, default: float = math.nan) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def parse_iperf3(text: str, *, where: str = "iperf3") -> Iperf3Result:
    """Parse ``iperf3 -c … -J`` output. Raises :class:`ToolOutputError` (one line, naming
    ``where``) for non-JSON output or iperf3's own ``"error"``."""
    try:
        data = json.loads(text)
    except ValueError:
        first = text.strip().splitlines()[0] if text.strip() else "no output"
        raise ToolOutputError(f"{where}: not iperf3 JSON output: {first[:200]}") from None
    if not isinstance(data, Mapping):
        raise ToolOutputError(f"{where}: iperf3 JSON is not an object")
    if data.get("error"):
        raise ToolOutputError(f"{where}: iperf3 reported: {' '.join(str(data['error']).split())}")
    end = data.get("end") or {}
    streams = end.get("streams") or []
    if not streams:
        raise ToolOutputError(f"{where}: iperf3 JSON has no end.streams (the test did not finish)")
    sender = streams[0].get("sender") or {}
    received = end.get("sum_received") or {}
    connected = ((data.get("start") or {}).get("connected") or [{}])[0]
    seconds = _num(received.get("seconds"), _num(sender.get("seconds"), 0.0))
    bytes_received = int(_num(received.get("bytes"), 0.0))
    goodput = _num(received.get("bits_per_second"), 0.0) / 1e6
    intervals = []
    for interval in data.get("intervals") or []:
        stream = (interval.get("streams") or [{}])[0]
        intervals.append(
            (
                _num(stream.get("start"), 0.0),
                _num(stream.get("end"), 0.0),
                int(_num(stream.get("bytes"), 0.0)),
                _num(stream.get("rtt")) / 1e3,
                _num(stream.get("snd_cwnd")),
            )
        )
    return Iperf3Result(
        local_port=connected.get("local_port"),
        remote_port=connected.get("remote_port"),
        cc=end.get("sender_tcp_congestion"),
        seconds=seconds,
        bytes_sent=int(_num(sender.get("bytes"), 0.0)),
        bytes_received=bytes_received,
        goodput_mbps=goodput,
        retransmits=int(_num(sender.get("retransmits"), 0.0)),
        mean_rtt_ms=_num(sender.get("mean_rtt")) / 1e3,
        intervals=intervals,
    )


_RATE = re.compile(r"^([0-9.]+)([kKMGT]?)bps$")
_SCALE = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_rate_bps(token: str) -> float:
    """``46780414bps`` or ``46.8Mbps`` (ss's two spellings, ``misc/ss.c:sprint_bw``) → bit/s."""
    match = _RATE.match(token)
    if not match:
        return math.nan
    return float(match.group(1)) * _SCALE[match.group(2)]


@dataclass(frozen=True)
class SsSocket:
    """One TCP socket of an ``ss -tin`` listing (the fields l4slab records)."""

    state: str
    local: str
    peer: str
    local_port: int | None
    cc: str | None
    srtt_ms: float
    cwnd: float
    pacing_rate_bps: float
    delivery_rate_bps: float
    retrans_total: int
    bytes_acked: int
    ecn: bool
    fields: dict[str, str]


def _port(address: str) -> int | None:
    head, _, port = address.rpartition(":")
    return int(port) if head and port.isdigit() else None


#: Tokens ss prints as ``name VALUE`` (two words), not ``name:value``.
_PAIRS = ("send", "pacing_rate", "delivery_rate")
#: Bare flags ss prints before the congestion control's name (``misc/ss.c:tcp_stats_print``:
#: ts, sack, ecn, ecnseen, fastopen) or after it (app_limited, ...).
_FLAGS = {"ts", "sack", "ecn", "ecnseen", "fastopen", "app_limited", "dsack", "reord"}


def _info(line: str) -> tuple[str | None, dict[str, str], set[str]]:
    tokens = line.split()
    cc = None
    values: dict[str, str] = {}
    flags: set[str] = set()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in _PAIRS and index + 1 < len(tokens):
            values[token] = tokens[index + 1]
            index += 2
            continue
        if ":" in token:
            name, _, value = token.partition(":")
            values[name] = value
        elif cc is None and token not in _FLAGS:
            cc = token
        else:
            flags.add(token)
        index += 1
    return cc, values, flags


def parse_ss(text: str) -> list[SsSocket]:
    """The TCP sockets of one ``ss -tin`` listing (header line and ``----`` separators ignored)."""
    sockets: list[SsSocket] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        if not line.strip() or line.startswith("State") or line.startswith("----"):
            continue
        if line[0] in " \t":
            if pending is None:
                continue
            cc, values, flags = _info(line)
            rtt = values.get("rtt", "")
            retrans = values.get("retrans", "")
            sockets.append(
                SsSocket(
                    state=pending[0],
                    local=pending[3],
                    peer=pending[4],
                    local_port=_port(pending[3]),
                    cc=cc,
                    srtt_ms=_float(rtt.partition("/")[0]),
                    cwnd=_float(values.get("cwnd", "")),
                    pacing_rate_bps=parse_rate_bps(values.get("pacing_rate", "")),
                    delivery_rate_bps=parse_rate_bps(values.get("delivery_rate", "")),
                    retrans_total=int(_float(retrans.partition("/")[2], 0.0)),
                    bytes_acked=int(_float(values.get("bytes_acked", ""), 0.0)),
                    ecn="ecn" in flags,
                    fields=values,
                )
            )
            pending = None
        else:
            parts = line.split()
            pending = parts if len(parts) >= 5 else None
    return sockets


def _float(text: str, default: float = math.nan) -> float:
    try:
        return float(text)
    except ValueError:
        return default
