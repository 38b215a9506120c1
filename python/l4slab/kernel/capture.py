"""The kernel backend's packet capture: the guest's ``tcpdump`` file as the engine writes its own.

In the guest, ``tcpdump -w capture.pcap`` (``testbed._capture_lines``) writes classic pcap
with nanosecond timestamps on CLOCK_REALTIME. Here each packet is put on the probe's
clock, time since t0, which is the engine's time axis (a flow launched at ``start`` plus
its jitter on both), and the file becomes pcapng as the engine's ``capture.pcapng`` is:
one Ethernet interface named as the engine names it (``bottleneck-egress``,
``sender-N``, ``receiver-N``) with ``if_tsresol`` 9 (nanoseconds), one Enhanced Packet
Block a packet (the pcapng draft, draft-ietf-opsawg-pcapng §4). The first ``max_packets``
of the window are kept, the rest counted as missed, as the engine counts them.

Formats read and written here: pcap's file header (24 bytes, magic ``0xa1b23c4d`` for
nanosecond timestamps, in the writer's byte order) and record headers (16 bytes); pcapng's
Section Header, Interface Description and Enhanced Packet blocks, little-endian.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError
from ..version import PACKAGE_VERSION
from .guest import _last_line
from .testbed import CAPTURE_SNAPLEN, CapturePlan

__all__ = ["CaptureError", "KernelCapture", "read_capture"]

#: pcap's nanosecond-resolution magic and LINKTYPE_ETHERNET.
PCAP_MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1


class CaptureError(EngineError):
    """The guest's capture is missing, incomplete or not what tcpdump writes (one line)."""


@dataclass(frozen=True)
class KernelCapture:
    """The capture as the run's results carry it."""

    #: Packets written to the pcapng file.
    packets: int
    #: Packets of the window after the first ``max_packets``.
    missed: int
    pcapng: bytes


def read_capture(run_dir: Path, plan: CapturePlan) -> KernelCapture:
    """Read ``capture.pcap`` of ``run_dir`` (``plan``: the testbed's ``CapturePlan``); t0
    is the script's ``T0``, the instant every flow's launch is counted from.

    Refused, in one line: tcpdump failed or never wrote its file, the guest's kernel dropped
    packets before tcpdump read them (its own count at exit), or the file is not the
    nanosecond Ethernet pcap tcpdump writes."""
    if plan.stop_ns <= plan.start_ns:  # an empty window: tcpdump was not started
        return KernelCapture(packets=0, missed=0, pcapng=_pcapng(plan.name, []))
    err = _text(run_dir / "capture.err")
    last = _last_line(run_dir / "capture.err")
    rc = _text(run_dir / "capture.rc").strip()
    if rc not in ("0", ""):
        raise CaptureError(f"kernel run: the guest's tcpdump failed (exit status {rc}): {last}")
    dropped = re.search(r"(\d+) packets? dropped by kernel", err)
    if dropped is None:
        raise CaptureError(f"kernel run: the guest's tcpdump did not finish its capture: {last or 'no output'}")
    if int(dropped.group(1)) > 0:
        raise CaptureError(
            f"kernel run: the guest's kernel dropped {dropped.group(1)} packets before tcpdump read them; "
            "the capture is incomplete"
        )
    try:
        t0, mono, real = (int(v) for v in _text(run_dir / "capture-clocks.txt").split())
    except ValueError:
        raise CaptureError("kernel run: capture-clocks.txt does not hold t0 and the two clocks") from None
    try:
        data = (run_dir / "capture.pcap").read_bytes()
    except OSError:
        raise CaptureError(f"kernel run: the guest's tcpdump wrote no capture.pcap: {last}") from None
    offset = real - mono  # CLOCK_REALTIME - CLOCK_MONOTONIC, fixed for the run (no NTP in the guest)
    packets, missed = [], 0
    for stamp, caplen, origlen, frame in _pcap_records(data):
        t = stamp - offset - t0
        if t < plan.start_ns or t >= plan.stop_ns:
            continue
        if len(packets) < plan.max_packets:
            packets.append((t, caplen, origlen, frame))
        else:
            missed += 1
    return KernelCapture(packets=len(packets), missed=missed, pcapng=_pcapng(plan.name, packets))


def _pcap_records(data: bytes):
    """(timestamp ns, caplen, origlen, frame bytes) of each record of a nanosecond pcap."""
    if len(data) < 24:
        raise CaptureError(f"kernel run: capture.pcap has {len(data)} bytes, less than pcap's 24-byte header")
    for order in ("<", ">"):
        if struct.unpack(order + "I", data[:4])[0] == PCAP_MAGIC_NS:
            break
    else:
        raise CaptureError(f"kernel run: capture.pcap is not a nanosecond pcap (magic {data[:4].hex()})")
    linktype = struct.unpack(order + "I", data[20:24])[0] & 0x0FFFFFFF
    if linktype != LINKTYPE_ETHERNET:
        raise CaptureError(f"kernel run: capture.pcap has link type {linktype}, not Ethernet (1)")
    at = 24
    while at < len(data):
        if at + 16 > len(data):
            raise CaptureError(f"kernel run: capture.pcap ends inside a record header at byte {at}")
        sec, nsec, caplen, origlen = struct.unpack(order + "IIII", data[at : at + 16])
        if at + 16 + caplen > len(data):
            raise CaptureError(f"kernel run: capture.pcap ends inside a packet at byte {at}")
        yield sec * 1_000_000_000 + nsec, caplen, origlen, data[at + 16 : at + 16 + caplen]
        at += 16 + caplen


def _block(kind: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def _pcapng(name: str, packets) -> bytes:
    shb = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + _option(4, f"l4slab {PACKAGE_VERSION} kernel backend".encode())
    shb += _option(0, b"")
    idb = struct.pack("<HHI", LINKTYPE_ETHERNET, 0, CAPTURE_SNAPLEN)
    idb += _option(2, name.encode()) + _option(9, bytes([9])) + _option(0, b"")
    out = [_block(0x0A0D0D0A, shb), _block(1, idb)]
    for t, caplen, origlen, frame in packets:
        out.append(_block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, caplen, origlen) + frame))
    return b"".join(out)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
